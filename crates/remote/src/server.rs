//! A server variant on another host, driven from this one: the agent there launches and
//! verifies it, listening only on the address this host reaches it by, with a fresh password
//! that travels only inside the ssh session and an account that admits only this host.
//! Dropping it (or losing the link) stops the server and removes its directories.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use bakeoff_driver::{ConnectOptions, Endpoint};
use bakeoff_server::{Check, Variant};
use bakeoff_telemetry::{ProcReading, RemoteProcess};

use crate::session::{Agent, Sender};
use crate::url::HostUrl;
use crate::wire::{Reply, Request};
use crate::RemoteError;

/// What to start.
#[derive(Debug, Clone)]
pub struct RemoteSpec {
    /// The engine asked for (see `ServerSpec::engine`).
    pub engine: Option<bakeoff_server::Engine>,
    pub binary: Option<String>,
    pub options: Vec<String>,
    pub variant: Variant,
    /// Client hosts whose load it admits, beside this machine (the address it came from).
    pub clients: Vec<IpAddr>,
    /// How long the server may take to become ready there (see `ServerSpec::start_timeout`).
    pub start_timeout: Duration,
}

pub struct RemoteServer {
    pub host: HostUrl,
    pub address: IpAddr,
    pub port: u16,
    pub version: String,
    pub binary: String,
    pub pid: Option<u32>,
    pub checks: Vec<Check>,
    pub binary_sha256: Option<String>,
    /// The server host's profile, as its agent read it.
    pub machine: Option<serde_json::Value>,
    options: ConnectOptions,
    tx: Sender,
    /// Sample replies, as the watcher reads them.
    samples: Arc<Mutex<mpsc::Receiver<Option<ProcReading>>>>,
    done: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
    /// Why the link went, once it has.
    lost: Arc<Mutex<Option<String>>>,
}

impl RemoteServer {
    pub fn start(host: &HostUrl, spec: &RemoteSpec) -> Result<RemoteServer, RemoteError> {
        let mut agent = Agent::start(host)?;
        let tx = agent.sender();
        let refused = |what: String| RemoteError::Refused {
            host: host.to_string(),
            what,
        };
        // It listens on the address this ssh session reached its host by (the agent's
        // hello says which): its certificate names that address.
        let Some(listen) = agent.address else {
            return Err(refused("its agent could not say which address this machine reaches it by (no SSH_CONNECTION there), so no certificate can name it".into()));
        };
        let tls = bakeoff_server::lab_ca()
            .and_then(|ca| ca.server_tls(listen))
            .map_err(refused)?;
        let _ = tx.send(&Request::ServerStart {
            binary: spec.binary.clone(),
            options: spec.options.clone(),
            variant: spec.variant.clone(),
            listen: Some(listen),
            clients: spec.clients.clone(),
            start_timeout_s: Some(spec.start_timeout.as_secs()),
            tls: Some(tls.clone()),
            engine: spec.engine,
        });
        let up = loop {
            match agent.recv()? {
                Some(r @ Reply::ServerUp { .. }) => break r,
                Some(Reply::Error { message }) => return Err(refused(message)),
                Some(_) => continue,
                None => return Err(agent.lost()),
            }
        };
        let Reply::ServerUp {
            address,
            port,
            user,
            password,
            database,
            version,
            binary,
            pid,
            checks,
            binary_sha256,
            machine,
            ..
        } = up
        else {
            unreachable!("matched above")
        };
        let mut options = ConnectOptions::new(
            Endpoint::Tcp {
                host: address.to_string(),
                port,
            },
            &user,
            password.secret().expose(),
        )
        .with_database(&database);
        options.tls = tls.client();
        let done = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(Mutex::new(None));
        let (sample_tx, samples) = mpsc::channel();
        let watcher = Some(watch(agent, done.clone(), lost.clone(), sample_tx));
        Ok(RemoteServer {
            host: host.clone(),
            address,
            port,
            version,
            binary,
            pid,
            checks,
            binary_sha256,
            machine,
            options,
            tx,
            samples: Arc::new(Mutex::new(samples)),
            done,
            watcher,
            lost,
        })
    }

    /// How the load connects (TCP to the server's address).
    pub fn connect_options(&self) -> ConnectOptions {
        self.options.clone()
    }

    /// Checks that did not pass, as in `Server::variant_problems`.
    pub fn variant_problems(&self) -> Option<String> {
        let bad: Vec<String> = self
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{} wanted {}, seen {}", c.axis, c.wanted, c.seen))
            .collect();
        (!bad.is_empty()).then(|| bad.join("; "))
    }

    /// A reader of the server process's counters, for the sampler: one round trip to the
    /// agent per reading (once a tick), None if it does not answer within 2 s.
    pub fn process_reader(&self) -> RemoteProcess {
        let (tx, samples) = (self.tx.clone(), self.samples.clone());
        Arc::new(move || sample(&tx, &samples, 0))
    }

    /// The link to the server's host went, and why.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().ok()?.clone()
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.tx.send(&Request::ServerStop { id: 0 });
        self.tx.close();
        // Until the agent has stopped the server and exited (the agent's own drop bounds it).
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

/// One reading of process `id` through the agent: one round trip, None if it does not answer
/// within 2 s.
pub(crate) fn sample(
    tx: &Sender,
    samples: &Mutex<mpsc::Receiver<Option<ProcReading>>>,
    id: u32,
) -> Option<ProcReading> {
    let rx = samples.lock().ok()?;
    while rx.try_recv().is_ok() {} // a late answer to an earlier reading
    tx.send(&Request::Sample { id }).ok()?;
    rx.recv_timeout(Duration::from_secs(2)).ok().flatten()
}

/// Read the agent's remaining replies, passing samples on; an end before we closed it is a
/// lost link.
pub(crate) fn watch(
    mut agent: Agent,
    done: Arc<AtomicBool>,
    lost: Arc<Mutex<Option<String>>>,
    samples: mpsc::Sender<Option<ProcReading>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || loop {
        match agent.recv() {
            Ok(Some(Reply::Sample { reading, .. })) => {
                let _ = samples.send(reading);
            }
            Ok(Some(_)) => continue,
            Ok(None) | Err(_) => {
                if !done.load(Ordering::Relaxed) {
                    let e = agent.lost();
                    if let Ok(mut l) = lost.lock() {
                        *l = Some(e.to_string());
                    }
                }
                return;
            }
        }
    })
}
