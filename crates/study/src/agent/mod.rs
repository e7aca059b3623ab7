//! `bakeoff agent`: what bakeoff runs on another machine over ssh. It reads requests from
//! stdin and writes replies to stdout (see `wire`), never listens on a port, and when its
//! stdin closes or goes silent (Ctrl-C, a lost link, bakeoff killed) it stops what it runs:
//! the run in progress ends, every server it started is stopped and its directories removed.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::net::IpAddr;

mod load;
mod out;

use out::Out;

use crate::{parse, run_study, Results, StudyError};
use bakeoff_server::{Listen, Server, ServerSpec};
use bakeoff_store::{ProbeRecord, RunKey, RunRecord};
use bakeoff_telemetry::{read_process, several_nodes};

use bakeoff_remote::wire::{
    read_line, Password, Reply, Request, MAX_LINE, PROTOCOL, SILENCE_S, WATCHED,
};

/// Seconds a study gets to wind down after the link is lost before the agent exits anyway
/// (its servers die with it: they are started with a parent-death signal).
const GRACE_S: u64 = 20;

/// Serve requests on stdin until it closes. `interrupt` is the flag the runner watches.
pub fn serve(interrupt: &'static AtomicBool) {
    let out = Out::stdout();
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let heard = Arc::new(AtomicU64::new(0));
    let lost = Arc::new(AtomicBool::new(false));
    let gate = Arc::new(load::Gate::default());
    {
        let (heard, lost, gate) = (heard.clone(), lost.clone(), gate.clone());
        let out = out.clone();
        std::thread::spawn(move || {
            let link = Link {
                interrupt,
                heard: &heard,
                lost: &lost,
                gate: &gate,
                started,
            };
            read_requests(tx, &out, link)
        });
    }
    {
        let (heard, lost) = (heard.clone(), lost.clone());
        std::thread::spawn(move || watch(interrupt, &heard, &lost, started));
    }
    // Discarded (killed, directories removed) when the link is gone.
    let mut servers: Vec<Option<Server>> = Vec::new();
    // A process found by `Watch` (a given server), sampled as `WATCHED`.
    let mut watched: Option<u32> = None;
    loop {
        let req = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) if !lost.load(Ordering::Relaxed) => continue,
            Err(_) => break,
        };
        let reply = match req {
            Request::Hello { .. } => hello(),
            start @ Request::ServerStart { .. } => start_server(&mut servers, start, &lost),
            Request::Sample { id } => Reply::Sample {
                id,
                reading: match id {
                    WATCHED => watched,
                    _ => servers
                        .get(id as usize)
                        .and_then(Option::as_ref)
                        .and_then(Server::pid),
                }
                .and_then(|pid| read_process(pid, several_nodes())),
            },
            Request::Watch { port } => match bakeoff_telemetry::listening_process(port) {
                Ok((pid, command)) => {
                    watched = Some(pid);
                    Reply::Watching {
                        pid: Some(pid),
                        command,
                        why: None,
                    }
                }
                Err(why) => Reply::Watching {
                    pid: None,
                    command: String::new(),
                    why: Some(why),
                },
            },
            Request::ServerStop { id } => {
                if let Some(s) = servers.get_mut(id as usize).and_then(Option::take) {
                    s.stop();
                }
                Reply::ServerStopped { id }
            }
            Request::Study {
                text,
                stem,
                platform,
                finished,
                probes_done,
            } => study(
                &text,
                &stem,
                &platform,
                finished,
                probes_done,
                &out,
                interrupt,
            ),
            Request::Load(part) => {
                if lost.load(Ordering::Relaxed) {
                    break;
                }
                load::run_part(part, &out, interrupt, &gate)
            }
            Request::Ping | Request::Interrupt | Request::Go | Request::CallOff => continue,
        };
        if out.send(&reply).is_err() {
            break;
        }
    }
    for s in servers.into_iter().flatten() {
        s.discard();
    }
}

/// What the request reader shares with the rest of the agent.
struct Link<'a> {
    interrupt: &'static AtomicBool,
    heard: &'a AtomicU64,
    lost: &'a AtomicBool,
    gate: &'a load::Gate,
    started: Instant,
}

/// Requests that steer work in progress (interrupt, the load's barrier) act at once; the rest
/// queue for the main loop.
fn read_requests(tx: mpsc::Sender<Request>, out: &Out, link: Link<'_>) {
    let Link {
        interrupt,
        heard,
        lost,
        gate,
        started,
    } = link;
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    let mut buf = Vec::new();
    loop {
        match read_line(&mut stdin, &mut buf, MAX_LINE) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                // Said before the link is taken as lost: bakeoff names it in its error.
                let _ = out.send(&Reply::Error {
                    message: format!("agent {}: {e}", env!("CARGO_PKG_VERSION")),
                });
                eprintln!("bakeoff agent: {e}; stopping");
                break;
            }
        }
        heard.store(started.elapsed().as_secs(), Ordering::Relaxed);
        match serde_json::from_slice::<Request>(&buf) {
            Ok(Request::Interrupt) => interrupt.store(true, Ordering::Relaxed),
            // A new part starts afresh: its barrier closed, an interrupt of the previous part
            // spent. Done here, in line order, so a `call_off` or `interrupt` sent right
            // after it (before the main loop picks it up) still counts.
            Ok(req @ Request::Load(_)) => {
                gate.reset();
                if !lost.load(Ordering::Relaxed) {
                    interrupt.store(false, Ordering::Relaxed);
                }
                if tx.send(req).is_err() {
                    break;
                }
            }
            Ok(Request::Go) => gate.go(),
            Ok(Request::CallOff) => gate.call_off(),
            Ok(Request::Ping) => {}
            Ok(req) => {
                if tx.send(req).is_err() {
                    break;
                }
            }
            // A request of a later protocol this agent does not know: said, not fatal.
            Err(e) => {
                let _ = out.send(&Reply::Error {
                    message: format!(
                        "agent {}: unreadable request ({e})",
                        env!("CARGO_PKG_VERSION")
                    ),
                });
            }
        }
    }
    lost.store(true, Ordering::Relaxed);
    interrupt.store(true, Ordering::Relaxed);
}

/// Silence for SILENCE_S counts as a lost link; a lost link gets GRACE_S to wind down.
fn watch(interrupt: &AtomicBool, heard: &AtomicU64, lost: &AtomicBool, started: Instant) {
    let mut lost_at: Option<Instant> = None;
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let silent = silence(started.elapsed().as_secs(), heard.load(Ordering::Relaxed));
        if silent > SILENCE_S {
            lost.store(true, Ordering::Relaxed);
            interrupt.store(true, Ordering::Relaxed);
        }
        if lost.load(Ordering::Relaxed) {
            let at = *lost_at.get_or_insert_with(Instant::now);
            if at.elapsed() > Duration::from_secs(GRACE_S) {
                std::process::exit(3);
            }
        }
    }
}

/// Seconds since a request was last heard. The reader may store a later second than the
/// clock this thread read just before: that is no silence, not an overflow.
fn silence(now_s: u64, heard_s: u64) -> u64 {
    now_s.saturating_sub(heard_s)
}

/// The two ends of this ssh session, from sshd's SSH_CONNECTION ("client port server port"):
/// the address bakeoff came from and the one it reached this host by.
fn session_addresses() -> Option<(IpAddr, IpAddr)> {
    let v = std::env::var("SSH_CONNECTION").ok()?;
    let parts: Vec<&str> = v.split_whitespace().collect();
    Some((parts.first()?.parse().ok()?, parts.get(2)?.parse().ok()?))
}

/// Start a server as a `ServerStart` request asks. While it starts, requests are still read
/// (pings keep the link), and a link lost half-way abandons the start: what it launched is
/// killed and removed.
fn start_server(servers: &mut Vec<Option<Server>>, start: Request, lost: &AtomicBool) -> Reply {
    let Request::ServerStart {
        binary,
        options,
        variant,
        listen,
        clients,
        start_timeout_s,
        tls,
        engine,
    } = start
    else {
        return Reply::Error {
            message: "not a server start".into(),
        };
    };
    let loopback = IpAddr::from([127, 0, 0, 1]);
    let (came_from, came_to) = session_addresses().unwrap_or((loopback, loopback));
    let spec = ServerSpec {
        engine,
        binary: binary.map(Into::into),
        options,
        variant,
        listen: Some(Listen {
            address: listen.unwrap_or(came_to),
            // bakeoff itself loads the tables and reads the server's status from where it is.
            clients: std::iter::once(came_from)
                .chain(clients.into_iter().filter(|c| *c != came_from))
                .collect(),
        }),
        start_timeout: start_timeout_s
            .map(Duration::from_secs)
            .unwrap_or(bakeoff_server::DEFAULT_START_TIMEOUT),
        tls,
        ..ServerSpec::default()
    };
    match Server::start_watched(&spec, lost) {
        Ok(s) => {
            let up = Reply::ServerUp {
                id: servers.len() as u32,
                address: spec.listen.as_ref().map_or(loopback, |l| l.address),
                port: s.port(),
                user: s.user().into(),
                password: Password::new(s.password()),
                database: s.database().into(),
                version: s.version().into(),
                binary: s.binary().display().to_string(),
                pid: s.pid(),
                checks: s.checks().to_vec(),
                binary_sha256: bakeoff_server::file_sha256(s.binary()),
                machine: serde_json::to_value(crate::manifest::Host::read()).ok(),
            };
            servers.push(Some(s));
            up
        }
        Err(e) => Reply::Error {
            message: format!("the server did not start: {e}"),
        },
    }
}

fn hello() -> Reply {
    let (peer, address) = session_addresses().unzip();
    Reply::Hello {
        peer,
        address,
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").into(),
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

fn study(
    text: &str,
    stem: &str,
    platform: &str,
    finished: Vec<RunKey>,
    probes_done: Vec<(String, u32)>,
    out: &Out,
    interrupt: &AtomicBool,
) -> Reply {
    let mut spec = match parse(text, stem) {
        Ok(s) => s,
        Err(problems) => {
            let said: Vec<String> = problems
                .iter()
                .map(|p| format!("line {}: {}", p.line, p.message))
                .collect();
            return Reply::Error {
                message: format!(
                    "the agent's bakeoff reads the study file differently: {}",
                    said.join("; ")
                ),
            };
        }
    };
    for v in spec.variants.iter().filter(|v| v.binary.is_none()) {
        if let Err(e) = v.engine.default_binary() {
            return Reply::Error {
                message: e.to_string(),
            };
        }
    }
    spec.platform = Some(platform.to_string());
    let mut results = Streamed {
        out: out.clone(),
        finished: finished.into_iter().collect(),
        probes_done: probes_done.into_iter().collect(),
        rows: Vec::new(),
    };
    let mut obs = out.clone();
    let hash = crate::study_sha256(text, &spec);
    match run_study(&spec, &hash, &mut results, interrupt, &mut obs) {
        Ok(o) => Reply::Done {
            ok: o.ok,
            failed: o.failed,
            invalid: o.invalid,
            interrupted: o.interrupted,
        },
        Err(e) => Reply::Error {
            message: e.to_string(),
        },
    }
}

/// Results go back over the link; a run counts as kept once its line is written (bakeoff
/// commits it to its database on arrival). What bakeoff already holds is skipped.
struct Streamed {
    out: Out,
    finished: HashSet<RunKey>,
    probes_done: HashSet<(String, u32)>,
    /// What this invocation recorded, for an auto study's judgement.
    rows: Vec<bakeoff_store::Row>,
}

impl Streamed {
    fn send(&self, r: &Reply) -> Result<(), StudyError> {
        self.out
            .send(r)
            .map_err(|e| StudyError::Results(format!("the link back to bakeoff was lost ({e})")))
    }
}

impl Results for Streamed {
    fn finished(&self) -> Result<HashSet<RunKey>, StudyError> {
        Ok(self.finished.clone())
    }
    fn probes_done(&self) -> Result<HashSet<(String, u32)>, StudyError> {
        Ok(self.probes_done.clone())
    }
    fn record(&mut self, r: &RunRecord) -> Result<(), StudyError> {
        self.rows.push(r.row());
        self.send(&Reply::Run {
            record: Box::new(r.clone()),
        })
    }
    /// The runs of this invocation only: a resumed study on a fleet judges its precision
    /// without the blocks an earlier invocation ran, so it may run more, never fewer.
    fn rows(&self) -> Result<Vec<bakeoff_store::Row>, StudyError> {
        Ok(self.rows.clone())
    }
    fn record_probe(&mut self, p: &ProbeRecord) -> Result<(), StudyError> {
        self.send(&Reply::Probe { record: p.clone() })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_request_heard_after_the_clock_was_read_is_no_silence() {
        assert_eq!(super::silence(10, 11), 0);
        assert_eq!(super::silence(25, 11), 14);
    }
}
