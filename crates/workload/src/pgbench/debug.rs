//! `-d`: pgbench's debug lines, the same words at the same points of a client's work, so a
//! user who reads pgbench's trace reads bakeoff's alike: the script a transaction runs, each
//! meta-command executed, each statement prepared, sent and waited for, a pipeline's end.
//!
//! One thing is pgbench's timing, not its logic: it says "receiving" each time it looks for
//! a reply, which is twice per statement where the reply was not there at the first look
//! (the usual case) and once more per reply at a pipeline's end. bakeoff says it that often
//! always.

use super::script::Kind;
use super::session::{PgbenchSession, QueryMode};
use super::trace::Debug;

impl PgbenchSession {
    fn debug(&self) -> Option<&Debug> {
        self.src.debug.as_ref()
    }

    /// A transaction starts script `s`.
    pub(super) fn debug_script(&self, s: usize) {
        if let Some(d) = self.debug() {
            let name = &self.src.scripts[s].name;
            (d.say)(&format!("client {} executing script \"{name}\"", self.tid));
        }
    }

    /// Meta-command `pc` of script `s` is executed (an \elif also when it is judged after a
    /// false condition; an \else or \endif skipped over is not).
    pub(super) fn debug_meta(&self, s: usize, pc: usize) {
        if let Some(d) = self.debug() {
            let argv = &self.src.scripts[s].commands[pc].argv;
            (d.say)(&format!("client {} executing \\{argv}", self.tid));
        }
    }

    /// SQL command `pc` is sent: its text in the simple and extended protocols, its name in
    /// the prepared one, after "preparing" the first time this connection uses it.
    pub(super) fn debug_send(&mut self, s: usize, pc: usize, text: &str) {
        let src = self.src.clone();
        let Some(d) = src.debug.as_ref() else {
            return;
        };
        let line = match self.src.mode {
            QueryMode::Prepared => {
                self.debug_prepare(s, pc);
                format!("client {} sending P_{}", self.tid, d.numbers[s][pc])
            }
            _ => format!("client {} sending {text}", self.tid),
        };
        (d.say)(&line);
    }

    /// At \startpipeline in the prepared protocol pgbench prepares every statement up to the
    /// \endpipeline at once.
    pub(super) fn debug_pipeline(&mut self, s: usize, pc: usize) {
        if self.debug().is_none() || self.src.mode != QueryMode::Prepared {
            return;
        }
        let src = self.src.clone();
        for (j, c) in src.scripts[s].commands.iter().enumerate().skip(pc + 1) {
            match c.kind {
                Kind::EndPipeline => break,
                Kind::Sql(_) => self.debug_prepare(s, j),
                _ => {}
            }
        }
    }

    fn debug_prepare(&mut self, s: usize, pc: usize) {
        let Some(d) = self.src.debug.as_ref() else {
            return;
        };
        if self.announced.is_empty() {
            self.announced = self
                .src
                .scripts
                .iter()
                .map(|s| vec![false; s.commands.len()])
                .collect();
        }
        if !std::mem::replace(&mut self.announced[s][pc], true) {
            (d.say)(&format!(
                "client {} preparing P_{}",
                self.tid, d.numbers[s][pc]
            ));
        }
    }

    /// The client looks for replies `n` times.
    pub(super) fn debug_receiving(&self, n: usize) {
        if let Some(d) = self.debug() {
            for _ in 0..n {
                (d.say)(&format!("client {} receiving", self.tid));
            }
        }
    }

    /// A pipeline's synchronisation point was read.
    pub(super) fn debug_pipeline_end(&self) {
        if let Some(d) = self.debug() {
            (d.say)(&format!("client {} pipeline ending", self.tid));
        }
    }

    /// A line of pgbench's own words (\setshell's result).
    pub(super) fn debug_line(&self, line: &str) {
        if let Some(d) = self.debug() {
            (d.say)(line);
        }
    }

    /// A new connection has prepared nothing yet.
    pub(super) fn debug_reconnected(&mut self) {
        self.announced.clear();
    }
}
