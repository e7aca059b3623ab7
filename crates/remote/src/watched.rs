//! A server bakeoff did not start, on a host reached over ssh: the agent there finds the
//! process listening on the server's port and reads its counters when asked, so a given
//! server's CPU and memory are measured as a started one's are. Nothing there is started,
//! stopped or changed; dropping the watch ends the agent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use bakeoff_telemetry::{ProcReading, RemoteProcess};

use crate::session::{Agent, Sender};
use crate::url::HostUrl;
use crate::wire::{Reply, Request, WATCHED};
use crate::RemoteError;

/// The process found, and a reader of its counters.
pub struct Watched {
    pub host: HostUrl,
    /// The TCP port it was found listening on.
    pub port: u16,
    pub pid: u32,
    pub command: String,
    reader: RemoteProcess,
}

/// The agent's end: closed (the agent exits) when the last reader goes.
struct Link {
    tx: Sender,
    samples: Mutex<mpsc::Receiver<Option<ProcReading>>>,
    done: Arc<AtomicBool>,
    reader: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        self.tx.close();
        if let Some(r) = self.reader.lock().ok().and_then(|mut r| r.take()) {
            let _ = r.join();
        }
    }
}

impl Watched {
    /// Find the process listening on `port` on `host`; an error says why none was found.
    pub fn start(host: &HostUrl, port: u16) -> Result<Watched, RemoteError> {
        let mut agent = Agent::start(host)?;
        let tx = agent.sender();
        let _ = tx.send(&Request::Watch { port });
        let refused = |what: String| RemoteError::Refused {
            host: host.to_string(),
            what,
        };
        let (pid, command) = loop {
            match agent.recv()? {
                Some(Reply::Watching {
                    pid: Some(pid),
                    command,
                    ..
                }) => break (pid, command),
                Some(Reply::Watching { why, .. }) => {
                    return Err(refused(why.unwrap_or_else(|| "no process found".into())))
                }
                Some(Reply::Error { message }) => return Err(refused(message)),
                Some(_) => continue,
                None => return Err(agent.lost()),
            }
        };
        let (sample_tx, samples) = mpsc::channel();
        let done = Arc::new(AtomicBool::new(false));
        // A lost link is seen by the readings stopping (the sampler then records none, as
        // for a server host cut off): nobody asks why.
        let lost = Arc::new(Mutex::new(None));
        let reader = crate::server::watch(agent, done.clone(), lost, sample_tx);
        let link = Arc::new(Link {
            tx,
            samples: Mutex::new(samples),
            done,
            reader: Mutex::new(Some(reader)),
        });
        let reader: RemoteProcess =
            Arc::new(move || crate::server::sample(&link.tx, &link.samples, WATCHED));
        Ok(Watched {
            host: host.clone(),
            port,
            pid,
            command,
            reader,
        })
    }

    /// Reads the process's counters there (the link ends when every reader is dropped).
    pub fn reader(&self) -> RemoteProcess {
        self.reader.clone()
    }
}
