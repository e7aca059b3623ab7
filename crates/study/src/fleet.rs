//! A study on a fleet of machines: the whole study runs on each (server and load local to it),
//! all at once, and every run comes back into this machine's one results database as it
//! finishes, under the machine's name as its platform, so compare, report and prices treat
//! them as after `bakeoff merge`. One machine failing stops only that machine; running the
//! same fleet again resumes each where it stopped.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::StudySpec;
use bakeoff_store::{RunRecord, Store, StoreError};

use bakeoff_remote::session::{Agent, Sender};
use bakeoff_remote::wire::{Reply, Request};
use bakeoff_remote::{HostUrl, RemoteError};

/// One machine of the fleet: its name (the platform its results go under) and address.
#[derive(Debug, Clone)]
pub struct Machine {
    pub name: String,
    pub host: HostUrl,
}

impl Machine {
    /// `NAME=URL` as given to `--on`.
    pub fn parse(s: &str) -> Result<Machine, String> {
        let (name, url) = s.split_once('=').ok_or_else(|| {
            format!("--on '{s}': write NAME=ADDRESS, e.g. --on x86=ssh://bench@db1")
        })?;
        let ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !ok {
            return Err(format!("--on '{s}': the name '{name}' must be letters, digits, '.', '_' or '-' (it labels the machine's results)"));
        }
        Ok(Machine {
            name: name.into(),
            host: HostUrl::parse(url).map_err(|e| format!("--on '{s}': {e}"))?,
        })
    }
}

/// What the fleet tells whoever shows progress, each with the machine's name.
pub trait FleetObserver {
    fn on_note(&mut self, _machine: &str, _text: &str) {}
    fn on_run_start(&mut self, _machine: &str, _done: usize, _total: usize, _what: &str) {}
    fn on_tick(&mut self, _machine: &str, _tps: f64) {}
    fn on_run_done(&mut self, _machine: &str, _record: &RunRecord) {}
}

/// How one machine's part ended.
#[derive(Debug)]
pub struct MachineOutcome {
    pub name: String,
    pub host: HostUrl,
    pub ok: usize,
    pub failed: usize,
    pub invalid: usize,
    pub interrupted: bool,
    /// Why the machine stopped before its study ended (unreachable, lost, refused).
    pub error: Option<RemoteError>,
}

enum Event {
    Started(Sender),
    Reply(Reply),
    Ended(Option<RemoteError>),
}

/// Run the study (`text`, read from a file named `stem`, parsed as `spec`) on every machine,
/// keeping results in `store`. Store errors end it (nothing more could be kept).
pub fn run_fleet(
    text: &str,
    stem: &str,
    spec: &StudySpec,
    machines: &[Machine],
    store: &mut Store,
    new: bool,
    interrupt: &AtomicBool,
    obs: &mut dyn FleetObserver,
) -> Result<Vec<MachineOutcome>, StoreError> {
    let hash = crate::study_sha256(text, spec);
    let mut studies = Vec::new();
    let (tx, rx) = mpsc::channel::<(usize, Event)>();
    for (i, m) in machines.iter().enumerate() {
        let mut own = spec.clone();
        own.platform = Some(m.name.clone());
        let json = serde_json::to_string(&own).unwrap_or_else(|_| "{}".into());
        let study = store.begin_platform_study(&spec.name, &m.name, &hash, &json, new)?;
        let request = Request::Study {
            text: text.into(),
            stem: stem.into(),
            platform: m.name.clone(),
            finished: store.finished(study)?.into_iter().collect(),
            probes_done: store.probes_done(study)?.into_iter().collect(),
        };
        studies.push(study);
        let (tx, host) = (tx.clone(), m.host.clone());
        std::thread::spawn(move || drive(i, &host, &request, &tx));
    }
    drop(tx);
    let mut outcomes: Vec<MachineOutcome> = machines
        .iter()
        .map(|m| MachineOutcome {
            name: m.name.clone(),
            host: m.host.clone(),
            ok: 0,
            failed: 0,
            invalid: 0,
            interrupted: false,
            error: None,
        })
        .collect();
    let mut senders: Vec<Option<Sender>> = vec![None; machines.len()];
    let mut told_to_stop = false;
    loop {
        if interrupt.load(Ordering::Relaxed) && !told_to_stop {
            told_to_stop = true;
            for s in senders.iter().flatten() {
                let _ = s.send(&Request::Interrupt);
            }
        }
        // Each agent's link keeps itself alive (bakeoff_remote::session).
        let (i, ev) = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(x) => x,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let name = machines[i].name.as_str();
        match ev {
            Event::Started(s) => {
                if told_to_stop {
                    let _ = s.send(&Request::Interrupt);
                }
                senders[i] = Some(s);
            }
            Event::Reply(r) => {
                keep(r, store, studies[i], &mut outcomes[i], name, obs)?;
            }
            Event::Ended(err) => {
                senders[i] = None;
                if err.is_some() {
                    outcomes[i].error = err;
                }
            }
        }
    }
    Ok(outcomes)
}

/// Store or show one reply of machine `name`.
fn keep(
    r: Reply,
    store: &mut Store,
    study: i64,
    out: &mut MachineOutcome,
    name: &str,
    obs: &mut dyn FleetObserver,
) -> Result<(), StoreError> {
    match r {
        Reply::Run { record } => {
            store.record(study, &record)?;
            match record.status.as_str() {
                "ok" => out.ok += 1,
                "invalid" => out.invalid += 1,
                "interrupted" => out.interrupted = true,
                _ => out.failed += 1,
            }
            obs.on_run_done(name, &record);
        }
        Reply::Probe { record } => store.record_probe(study, &record)?,
        Reply::Note { text } => obs.on_note(name, &text),
        Reply::RunStart { done, total, what } => obs.on_run_start(name, done, total, &what),
        Reply::Tick { tps } => obs.on_tick(name, tps),
        Reply::Done { interrupted, .. } => out.interrupted |= interrupted,
        Reply::Error { message } => {
            out.error = Some(RemoteError::Refused {
                host: out.host.to_string(),
                what: message,
            })
        }
        Reply::Hello { .. }
        | Reply::ServerUp { .. }
        | Reply::ServerStopped { .. }
        | Reply::Watching { .. }
        | Reply::Sample { .. }
        | Reply::LoadReady
        | Reply::LoadTick { .. }
        | Reply::Loaded { .. } => {}
    }
    Ok(())
}

/// One machine's thread: start its agent, ask for the study, pass every reply on.
fn drive(i: usize, host: &HostUrl, request: &Request, tx: &mpsc::Sender<(usize, Event)>) {
    let mut agent = match Agent::start(host) {
        Ok(a) => a,
        Err(e) => {
            let _ = tx.send((i, Event::Ended(Some(e))));
            return;
        }
    };
    let sender = agent.sender();
    let _ = tx.send((i, Event::Started(sender.clone())));
    if sender.send(request).is_err() {
        let e = agent.lost();
        let _ = tx.send((i, Event::Ended(Some(e))));
        return;
    }
    loop {
        match agent.recv() {
            Ok(Some(r)) => {
                let last = matches!(r, Reply::Done { .. } | Reply::Error { .. });
                if tx.send((i, Event::Reply(r))).is_err() {
                    return;
                }
                if last {
                    sender.close();
                    let _ = tx.send((i, Event::Ended(None)));
                    return;
                }
            }
            Ok(None) => {
                let e = agent.lost();
                let _ = tx.send((i, Event::Ended(Some(e))));
                return;
            }
            Err(e) => {
                let _ = tx.send((i, Event::Ended(Some(e))));
                return;
            }
        }
    }
}

/// Names given twice, which would mix two machines' results.
pub fn duplicate_names(machines: &[Machine]) -> Option<String> {
    let mut seen = HashSet::new();
    machines
        .iter()
        .find(|m| !seen.insert(m.name.as_str()))
        .map(|m| m.name.clone())
}
