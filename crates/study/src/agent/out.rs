//! The agent's one way out: replies, one JSON line each, on its stdout (nothing else is ever
//! written there).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bakeoff_remote::wire::{line, Reply};

use crate::StudyObserver;

/// The agent's stdout, shared by the runner and the request reader.
#[derive(Clone)]
pub(super) struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    pub(super) fn stdout() -> Out {
        Out(Arc::new(Mutex::new(std::io::stdout())))
    }

    /// One reply, as one line.
    pub(super) fn send(&self, r: &Reply) -> std::io::Result<()> {
        let mut o = self.0.lock().unwrap_or_else(|p| p.into_inner());
        o.write_all(line(r).as_bytes())?;
        o.flush()
    }
}

impl StudyObserver for Out {
    fn on_run_start(&mut self, done: usize, total: usize, what: &str, _left: Duration) {
        let _ = self.send(&Reply::RunStart {
            done,
            total,
            what: what.into(),
        });
    }
    fn on_tick(&mut self, tps: f64) {
        let _ = self.send(&Reply::Tick { tps });
    }
    fn on_note(&mut self, text: &str) {
        let _ = self.send(&Reply::Note { text: text.into() });
    }
}
