//! Running a study: block after block. Where the servers can take turns (`alternate`), a block
//! starts every variant's server at once and measures them in turns, its runs stored together;
//! elsewhere series after series, each a server lifetime (start the variant, verify it, load
//! the data, warm up, one run per thread count), every run stored before the next starts.
//! A variant that fails to start, a server that dies, an invalid variant: recorded with the
//! reason, and the study goes on. Runs already finished are skipped, so running the same
//! study again resumes it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bakeoff_hostbench::profile::profile;
use bakeoff_remote::HostUrl;
use bakeoff_server::placement::{
    launch_cpus, pin_this_thread, place_this_thread, ClientPlacement, WhenRefused,
};
use bakeoff_store::{ProbeRecord, RunKey};

use crate::alternate::BlockRun;
use crate::manifest::Host;
use crate::matrix::{block_series, series, Series};
use crate::results::{Results, StudyError, StudyObserver, StudyOutcome};
use crate::series::{key, SeriesCtx};
use crate::spread::ClientHosts;
use crate::StudySpec;

/// Run (or resume) `spec`, keeping its results in `store`.
pub fn run_study(
    spec: &StudySpec,
    hash: &str,
    store: &mut dyn Results,
    interrupt: &AtomicBool,
    obs: &mut dyn StudyObserver,
) -> Result<StudyOutcome, StudyError> {
    let finished = store.finished()?;
    let host = Host::read();
    // With "auto", the blocks planned are the pilot's until it has run, then what it asked
    // for; the ETA follows.
    let mut planned = spec.repetitions;
    let mut out = StudyOutcome {
        resumed: finished.len(),
        ..Default::default()
    };
    probe_host(spec, store, interrupt, obs)?;
    let started = Instant::now();
    let mut done_now = 0usize;
    let mut templates = HashMap::new();
    // Notes a study says once however many blocks repeat them (see `BlockRun::said`).
    let mut said = HashSet::new();
    let mut last_client: Option<ClientPlacement> = None;
    // Checked when the file was read; an address that no longer parses runs here.
    let server_host = spec
        .server_host
        .as_deref()
        .and_then(|h| HostUrl::parse(h).ok());
    let mut clients: Option<ClientHosts> = None;
    let last_block = spec.auto.map_or(spec.repetitions, |a| a.max_repetitions);
    let spec_json = serde_json::to_string(spec).unwrap_or_default();
    // Every block's servers take turns where they can (`alternate`), else one at a time.
    let alternating = crate::alternate::why_not(spec).is_none();
    for block in 1..=last_block {
        // A block an earlier invocation began one server at a time (an older bakeoff, or
        // less memory then) is finished that way: a block's runs come from one way of
        // measuring.
        let left: Vec<usize> = block_series(spec, block)
            .iter()
            .map(|s| todo(spec, s, &finished).len())
            .collect();
        let begun = left.iter().any(|&n| n < spec.threads.len());
        let turns = alternating && !begun;
        // A block taken by turns, now or by an earlier invocation (all its runs stored), gets
        // its check block: one interrupted there, or before it began, is finished on resume.
        let by_turns = alternating && (!begun || left.iter().all(|&n| n == 0));
        if turns {
            if interrupt.load(Ordering::Relaxed) {
                out.interrupted = true;
                break;
            }
            let client = place_client(spec, spec.variant(0));
            note_client(&client, None, &mut last_client, obs);
            let total = runs_planned(spec, planned, alternating);
            BlockRun {
                spec,
                hash,
                host: &host,
                store,
                out: &mut out,
                obs,
                interrupt,
                progress: (started, &mut done_now, finished.len(), total),
                templates: &mut templates,
                client,
                said: &mut said,
            }
            .run(block, &finished)?;
        }
        // After every validate_every-th block by turns, a check block one server at a time
        // (numbered apart, `bakeoff_store::check_block`): the report tests that the two
        // ways agree.
        let one_at_a_time: Vec<Series> = match crate::matrix::check_after(spec, block) {
            Some(check) if by_turns => crate::matrix::check_series(spec, check),
            _ if by_turns => Vec::new(),
            _ => block_series(spec, block),
        };
        for s in &one_at_a_time {
            if interrupt.load(Ordering::Relaxed) {
                out.interrupted = true;
                break;
            }
            let todo = todo(spec, s, &finished);
            if todo.is_empty() {
                continue;
            }
            if clients.is_none() && !spec.client_hosts.is_empty() {
                clients = Some(connect_clients(spec, obs)?);
            }
            let client = place_client(spec, spec.variant(s.variant));
            let v = spec.variant_name(s.variant);
            note_client(&client, Some(&v), &mut last_client, obs);
            let total = runs_planned(spec, planned, alternating);
            let mut ctx = SeriesCtx {
                spec,
                series: s,
                hash,
                host: &host,
                store,
                out: &mut out,
                obs,
                interrupt,
                progress: (started, &mut done_now, finished.len(), total),
                templates: &mut templates,
                client,
                server_host: server_host.clone(),
                clients: clients.as_mut(),
            };
            ctx.run(&todo)?;
            if out.interrupted {
                break;
            }
        }
        if out.interrupted {
            break;
        }
        let step = crate::sizing::after_block(spec, &spec_json, block, planned, || store.rows())?;
        planned = step.planned;
        if let Some(note) = &step.note {
            obs.on_note(note);
        }
        if step.stop {
            break;
        }
    }
    Ok(out)
}

/// Say where the load runs (for variant `v`, when it is one variant's), when it moved.
fn note_client(
    client: &ClientPlacement,
    v: Option<&str>,
    last: &mut Option<ClientPlacement>,
    obs: &mut dyn StudyObserver,
) {
    if last.as_ref() == Some(client) {
        return;
    }
    for line in client.note().into_iter().chain(client.warning()) {
        obs.on_note(&match v {
            Some(v) => format!("{v}: {line}"),
            None => line,
        });
    }
    *last = Some(client.clone());
}

/// Agents on the study's client hosts, started once for all its series.
fn connect_clients(
    spec: &StudySpec,
    obs: &mut dyn StudyObserver,
) -> Result<ClientHosts, StudyError> {
    let urls = spec
        .client_hosts
        .iter()
        .map(|h| HostUrl::parse(h))
        .collect::<Result<Vec<_>, _>>()
        .map_err(StudyError::Hosts)?;
    let hosts = ClientHosts::connect(&urls).map_err(|e| StudyError::Hosts(e.to_string()))?;
    obs.on_note(&format!(
        "the load is spread over {}",
        hosts.names().join(", ")
    ));
    Ok(hosts)
}

/// The machine's profile, once per study (kept across resumes), before any server starts: the
/// host probes the study asks for, then an auto study's steadiness check.
fn probe_host(
    spec: &StudySpec,
    store: &mut dyn Results,
    interrupt: &AtomicBool,
    obs: &mut dyn StudyObserver,
) -> Result<(), StudyError> {
    let done = store.probes_done()?;
    // The probes measure the machine from where the load will run, when the study says.
    if let Some(cpus) = &spec.client_cpus {
        let _ = pin_this_thread(cpus);
    }
    let scratch = std::env::temp_dir();
    for &probe in &spec.probes {
        for &threads in &spec.probe_threads {
            if done.contains(&(probe.name().to_string(), threads))
                || interrupt.load(Ordering::Relaxed)
            {
                continue;
            }
            obs.on_note(&format!(
                "host probe {} at {threads} thread(s), {} s",
                probe.name(),
                spec.probe_seconds.as_secs()
            ));
            let rec = match profile(probe, threads, spec.probe_seconds, &scratch, interrupt) {
                Ok(p) => ProbeRecord {
                    probe: probe.name().into(),
                    threads,
                    figure: p.figure,
                    unit: p.unit.into(),
                    status: if p.result.interrupted {
                        "interrupted"
                    } else {
                        "ok"
                    }
                    .into(),
                    reason: p.result.failure.clone(),
                    summary_json: serde_json::to_string(&p).unwrap_or_else(|_| "{}".into()),
                },
                Err(e) => ProbeRecord {
                    probe: probe.name().into(),
                    threads,
                    status: "failed".into(),
                    reason: Some(e),
                    summary_json: "{}".into(),
                    ..Default::default()
                },
            };
            store.record_probe(&rec)?;
        }
    }
    probe_steadiness(spec, &done, store, interrupt, obs)
}

/// An auto study's machine check (`steady.rs`), once (kept across resumes), before any server
/// starts and before the pilot it helps explain.
fn probe_steadiness(
    spec: &StudySpec,
    done: &HashSet<(String, u32)>,
    store: &mut dyn Results,
    interrupt: &AtomicBool,
    obs: &mut dyn StudyObserver,
) -> Result<(), StudyError> {
    let n = crate::steady::cpus().len() as u32;
    if spec.auto.is_none()
        || interrupt.load(Ordering::Relaxed)
        || done.contains(&(crate::steady::PROBE.to_string(), n))
    {
        return Ok(());
    }
    obs.on_note(&format!(
        "how steady this machine is: a fixed loop timed on each of its {n} CPUs for 3 s"
    ));
    let measured = crate::steady::measure();
    if interrupt.load(Ordering::Relaxed) {
        return Ok(());
    }
    store.record_probe(&crate::steady::record(&measured))?;
    Ok(())
}

/// The runs a study of `planned` blocks makes: its blocks' and, by turns, its check blocks'
/// (one server at a time, without the hidden A/A twin).
fn runs_planned(spec: &StudySpec, planned: u32, alternating: bool) -> usize {
    let cells = spec.workloads.len() * spec.threads.len();
    let every = spec.alternation.validate_every;
    let checks = match alternating && every > 0 {
        true => (planned / every) as usize * spec.variants.len() * cells,
        false => 0,
    };
    planned as usize * spec.block_variants() * cells + checks
}

/// How many of the study's runs are not finished in the store yet.
pub fn pending(spec: &StudySpec, finished: &HashSet<RunKey>) -> usize {
    series(spec)
        .iter()
        .map(|s| todo(spec, s, finished).len())
        .sum()
}

/// The thread counts of series `s` still to run.
fn todo(spec: &StudySpec, s: &Series, finished: &HashSet<RunKey>) -> Vec<u32> {
    spec.threads
        .iter()
        .copied()
        .filter(|&t| !finished.contains(&key(s, t)))
        .collect()
}

/// Where a series of variant `v` runs its load: the variant's `client_cpus`, else the
/// study's, else the CPUs outside its servers' (when pinned and any are left). This thread is
/// pinned there, so every load thread started for the series (load, warmup, runs) inherits
/// it. A pin the kernel refuses (CPUs this machine lacks; `study check` names them) leaves the
/// load on bakeoff's own CPUs, recorded as such, with the sharing warning where it applies.
fn place_client(spec: &StudySpec, v: &crate::NamedVariant) -> ClientPlacement {
    let (given, servers) = spec.client_request(v);
    place_this_thread(given, &servers, WhenRefused::RunEverywhere)
        .unwrap_or_else(|_| ClientPlacement::unplaced(&servers, &launch_cpus()))
}
