//! `bakeoff study run FILE --on NAME=ADDRESS ...`: the study on a fleet of machines, results
//! into one database here.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use bakeoff_store::{RunRecord, Store};
use bakeoff_study::fleet::{duplicate_names, run_fleet, FleetObserver, Machine};

use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, INTERRUPTED};

pub fn run_on(file: &Path, db: Option<&Path>, new: bool, on: &[String]) -> Result<ExitCode> {
    let mut machines = Vec::new();
    for s in on {
        match Machine::parse(s) {
            Ok(m) => machines.push(m),
            Err(e) => {
                eprintln!("bakeoff: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if let Some(name) = duplicate_names(&machines) {
        eprintln!("bakeoff: --on names '{name}' twice; give each machine its own name");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let (src, spec) = match crate::study::load(file)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    if let Some(w) = spec.workloads.iter().find(|w| w.spec.script.is_some()) {
        // Each machine reads the study file's text only: a script's file is not there.
        eprintln!("bakeoff: {}: workload '{}' is a script of yours, and --on sends each machine the study file alone, not its scripts: run the study on each machine (scripts beside it) and `bakeoff merge` the databases", file.display(), w.label);
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    if let Some(host) = &spec.server_host {
        eprintln!("bakeoff: {}: `[hosts] server = \"{host}\"` puts the servers on one machine and the load here; --on runs the whole study on each machine instead. Use one or the other", file.display());
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let db = db
        .map(Path::to_path_buf)
        .unwrap_or_else(|| file.with_extension("db"));
    let mut store = Store::open(&db)?;
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("study");
    let names: Vec<String> = machines
        .iter()
        .map(|m| format!("{} ({})", m.name, m.host))
        .collect();
    eprintln!(
        "study {} on {}: results in {}",
        spec.name,
        names.join(", "),
        db.display()
    );
    let outcomes = run_fleet(
        &src,
        stem,
        &spec,
        &machines,
        &mut store,
        new,
        &INTERRUPTED,
        &mut Lines,
    )?;
    let mut trouble = false;
    let mut interrupted = false;
    for o in &outcomes {
        let mut line = format!(
            "{} ({}): {} ok, {} failed, {} invalid",
            o.name, o.host, o.ok, o.failed, o.invalid
        );
        if let Some(e) = &o.error {
            line.push_str(&format!("; stopped: {e}"));
        }
        eprintln!("{line}");
        trouble |= o.error.is_some() || o.failed + o.invalid > 0;
        interrupted |= o.interrupted;
    }
    if outcomes.iter().any(|o| o.error.is_some()) {
        eprintln!("Run the same command again to resume the machines that stopped; finished runs are kept.");
    }
    eprintln!(
        "results in {}; `bakeoff compare {}` shows the machines side by side",
        db.display(),
        db.display()
    );
    Ok(
        if interrupted && INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("Interrupted: run the same command again to resume every machine.");
            ExitCode::from(EXIT_INTERRUPTED)
        } else if trouble {
            ExitCode::from(EXIT_FAILED)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// One line per finished run and per note, each led by the machine's name (several machines
/// interleave, so no line is rewritten in place).
struct Lines;

impl FleetObserver for Lines {
    fn on_note(&mut self, machine: &str, text: &str) {
        eprintln!("{machine}: note: {text}");
    }

    fn on_run_done(&mut self, machine: &str, r: &RunRecord) {
        eprintln!("{machine}: {}", crate::study_status::run_line(r));
    }
}
