//! `bakeoff study ...`: study files from the command line.

use bakeoff_workload::WorkloadKind;
use std::path::Path;

use bakeoff_server::placement::{launch_cpus, online_cpus, ClientPlacement};
use std::process::ExitCode;

use anyhow::{Context, Result};
use bakeoff_store::Store;
use bakeoff_study::{
    estimate, parse_in, pending, run_study, series, study_sha256, StoredStudy, StudySpec,
};

use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, INTERRUPTED};
use crate::study_status::{hours_minutes, Progress};

/// The study file's text and its spec, or the problems already printed.
pub(crate) fn load(file: &Path) -> Result<Result<(String, StudySpec), ExitCode>> {
    let src = std::fs::read_to_string(file)
        .with_context(|| format!("reading the study file {}", file.display()))?;
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("study");
    let dir = file.parent().unwrap_or(Path::new(""));
    match parse_in(&src, stem, dir) {
        Ok(s) => Ok(Ok((src, s))),
        Err(problems) => {
            for p in &problems {
                eprintln!("{}:{}:{}: {}", file.display(), p.line, p.column, p.message);
            }
            eprintln!(
                "{}: {} problem(s); nothing was run",
                file.display(),
                problems.len()
            );
            Ok(Err(ExitCode::from(EXIT_USAGE)))
        }
    }
}

pub fn check(file: &Path) -> Result<ExitCode> {
    let spec = match load(file)? {
        Ok((_, s)) => s,
        Err(code) => return Ok(code),
    };
    print!("{}", describe(&spec, file));
    for note in environment_notes(&spec) {
        eprintln!("note: {note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What a study does not do with a workload of the user's own, said before it runs.
fn script_notes(s: &StudySpec) -> Vec<String> {
    s.workloads
        .iter()
        .filter_map(|w| {
            let hooks = &w.uncalled;
            (!hooks.is_empty()).then(|| format!(
                "workload '{}' defines {}: a study calls none of them (it reports the runs itself, and runs each connection's thread_init, event and thread_done); a script that sets up in init() needs that done in its prepare",
                w.label,
                hooks.join(", ")
            ))
        })
        .collect()
}

/// What each workload loads, in a line: sysbench's tables, TPC-C's warehouses, a script's own.
fn dataset_line(s: &StudySpec) -> String {
    use bakeoff_workload::scripting::user::UserScript;
    let mut parts: Vec<String> = Vec::new();
    let mut add = |part: String| {
        if !parts.contains(&part) {
            parts.push(part);
        }
    };
    for w in &s.workloads {
        match (&w.spec.script, w.spec.kind) {
            (Some(UserScript::Lua { .. }), _) => {
                add(format!("{}: what the script's own prepare makes", w.label))
            }
            (Some(UserScript::Pgbench { scale, .. }), _) => add(format!(
                "{}: pgbench's tables at scale {scale} (pgbench -i)",
                w.label
            )),
            (None, WorkloadKind::Tpcc) => {
                add(format!("TPC-C, {} warehouses", w.spec.tpcc.warehouses))
            }
            (None, _) => add(format!("{} table(s) x {} rows", s.tables, s.table_size)),
        }
    }
    parts.join("; ")
}

/// How the repetitions are run and judged, in a line.
fn blocks_line(s: &StudySpec) -> String {
    let turns = bakeoff_study::why_not_alternate(s).is_none();
    let design = match (s.paired, turns) {
        (true, true) => "each repetition a block with every variant's server up at once, taking turns; ratios paired within blocks",
        (true, false) => "each repetition a block with every variant's series once, in an order shuffled per block; ratios paired within blocks",
        (false, _) => "sequential: each variant's series back to back; ratios unpaired (Welch)",
    };
    let auto = match s.auto {
        Some(a) => format!(
            "; repetitions = \"auto\": a pilot of {} blocks, whose spread fixes how many (at most {}) make every comparison's family-adjusted interval within +-{:.1}% (the estimate counts the pilot)",
            a.pilot,
            a.max_repetitions,
            a.precision * 100.0,
        ),
        None => String::new(),
    };
    let first = &s.variants[0].name;
    let noise = match (s.noise_check, s.noise_twin) {
        (true, Some(i)) => format!(
            "; A/A check: '{}' is '{first}' in all but its name, so the check compares those two and adds no hidden '{first} (A/A)' server (that interval should hold 1; its spread is the noise between runs and blocks)",
            s.variants[i].name
        ),
        (true, None) => format!(
            "; A/A check: '{first}' runs twice in every block (their interval should hold 1; their spread is the noise between runs and blocks)"
        ),
        (false, _) => String::new(),
    };
    format!("blocks: {design}{auto}{noise}")
}

/// The expanded matrix, as a reader checks it before hours of machine time.
fn describe(s: &StudySpec, file: &Path) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let series = series(s);
    let runs = series.len() * s.threads.len();
    let _ = writeln!(out, "study {} ({})", s.name, file.display());
    if let Some(d) = &s.description {
        let _ = writeln!(out, "  {d}");
    }
    let _ = writeln!(
        out,
        "{} variant(s) x {} workload(s) x {} thread count(s) = {} cells; x {} repetition(s) = {runs} runs in {} series",
        s.variants.len(),
        s.workloads.len(),
        s.threads.len(),
        s.cells(),
        s.repetitions,
        series.len()
    );
    let data = dataset_line(s);
    let _ = writeln!(
        out,
        "order: {} (seed {}); dataset: {data}, {}",
        s.order, s.seed, s.dataset_policy
    );
    let _ = writeln!(out, "{}", blocks_line(s));
    let _ = writeln!(out, "{}", bakeoff_study::alternation_line(s));
    if let Some(caveat) = bakeoff_study::alternation_caveat(s) {
        let _ = writeln!(out, "{caveat}");
    }
    let _ = match bakeoff_study::why_not_alternate(s) {
        None => writeln!(
            out,
            "each block: every variant's server up at once, {} s warmup each, then per workload and thread count {:?} {} s each in turns",
            s.warmup.as_secs(),
            s.threads,
            s.duration.as_secs(),
        ),
        Some(_) => writeln!(
            out,
            "each series: {} s warmup, then one {} s run per thread count {:?}",
            s.warmup.as_secs(),
            s.duration.as_secs(),
            s.threads
        ),
    };
    bakeoff_study::lab_lines(s).iter().for_each(|l| {
        let _ = writeln!(out, "{l}");
    });
    let _ = writeln!(out, "variants:");
    for (i, v) in s.variants.iter().enumerate() {
        let mut about = Vec::new();
        if let Some(g) = &v.given {
            about.push(format!("a server you run: {}", g.url));
        }
        if let Some(p) = v.price_per_hour {
            about.push(format!("{p}/h"));
        }
        // The engine, where the name does not say it (a study of one engine).
        let named = v.name.contains("engine=");
        if v.given.is_none() && v.engine != bakeoff_server::Engine::MariaDb && !named {
            about.push(v.engine.title().to_string());
        }
        if !v.engine_settings.is_empty() {
            let set: Vec<String> = v
                .engine_settings
                .iter()
                .map(|x| format!("{}={}", x.name, x.value))
                .collect();
            about.push(format!("[{}] {}", v.engine, set.join(" ")));
        }
        let about = match about.is_empty() {
            true => String::new(),
            false => format!(" ({})", about.join(", ")),
        };
        let _ = writeln!(out, "  {:>3}  {}{about}", i + 1, v.name);
    }
    let _ = writeln!(out, "workloads:");
    for (i, w) in s.workloads.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}  {} ({})", i + 1, w.label, w.spec.kind);
    }
    if !s.probes.is_empty() {
        let names: Vec<&str> = s.probes.iter().map(|p| p.name()).collect();
        let _ = writeln!(
            out,
            "host probes first: {} at {:?} thread(s), {} s each",
            names.join(", "),
            s.probe_threads,
            s.probe_seconds.as_secs()
        );
    }
    let servers = s.server_host.as_deref().unwrap_or("this machine");
    let load = if s.client_hosts.is_empty() {
        "this machine".to_string()
    } else {
        s.client_hosts.join(", ")
    };
    if s.server_host.is_some() || !s.client_hosts.is_empty() {
        let _ = writeln!(out, "servers on {servers}, load from {load}");
    }
    if let Some((platform, price)) = s.own_price() {
        let _ = writeln!(out, "platform: {platform} at {price:.2}/hour on demand");
    }
    let _ = writeln!(out, "estimated duration: {}", hours_minutes(estimate(s)));
    out
}

/// What this machine lacks for the study (allocators not installed, CPUs or nodes missing, a
/// client that would share the server's CPUs): not problems of the file, but worth knowing
/// before starting it here. The last note says what runs anyway.
fn environment_notes(s: &StudySpec) -> Vec<String> {
    let mut notes = script_notes(s);
    if let Some(host) = &s.server_host {
        // This machine's allocators, CPUs and nodes say nothing of the server's.
        notes.push(format!(
            "the servers run on {host}: each variant is applied and verified there when it starts"
        ));
        return notes;
    }
    let online = online_cpus().ok();
    let own = launch_cpus();
    if let (Some(c), Some(on)) = (&s.client_cpus, &online) {
        if !c.is_subset(on) {
            notes.push(format!("client_cpus = \"{c}\": this machine has CPUs {on} online; the load will run where bakeoff runs"));
        }
    }
    // One line per problem, naming every variant it affects.
    let mut by_problem: Vec<(String, Vec<&str>)> = Vec::new();
    fn note<'s>(by_problem: &mut Vec<(String, Vec<&'s str>)>, problem: String, variant: &'s str) {
        match by_problem.iter_mut().find(|(p, _)| *p == problem) {
            Some((_, names)) => names.push(variant),
            None => by_problem.push((problem, vec![variant])),
        }
    }
    let mut runnable = Vec::new();
    for v in &s.variants {
        let problems: Vec<String> = v
            .instances
            .iter()
            .filter_map(|inst| bakeoff_server::variant::preflight(inst).err())
            .collect();
        if problems.is_empty() {
            runnable.push(v.name.as_str());
            let servers: Vec<_> = v.instances.iter().map(|i| i.cpus.as_ref()).collect();
            let given = v.client_cpus.as_ref().or(s.client_cpus.as_ref());
            if let Some(w) = ClientPlacement::choose(given, &servers, &own).warning() {
                note(&mut by_problem, format!("{w} here"), &v.name);
            }
        }
        for e in problems {
            note(&mut by_problem, e, &v.name);
        }
    }
    let v_names = |names: &[&str]| -> String {
        if names.len() == s.variants.len() && names.len() > 1 {
            "every variant".into()
        } else {
            format!(
                "variant(s) {}",
                names
                    .iter()
                    .map(|n| format!("'{n}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    for (problem, names) in &by_problem {
        notes.push(format!("{}: {problem}", v_names(names)));
    }
    if runnable.len() < s.variants.len() {
        notes.push(if runnable.is_empty() {
            "none of the variants can start on this machine: every run would be recorded as failed".to_string()
        } else {
            format!(
                "on this machine {} of {} variants run ({}); the others are recorded as failed with the reason above",
                runnable.len(),
                s.variants.len(),
                runnable.join(", ")
            )
        });
    }
    notes
}

pub fn run(file: &Path, db: Option<&Path>, new: bool, metrics: Option<&str>) -> Result<ExitCode> {
    let (src, spec) = match load(file)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let db = db
        .map(Path::to_path_buf)
        .unwrap_or_else(|| file.with_extension("db"));
    for note in environment_notes(&spec) {
        eprintln!("note: {note}");
    }
    if let Some(caveat) = bakeoff_study::alternation_caveat(&spec) {
        eprintln!("{caveat}");
    }
    // Before the store: an address that cannot be had leaves no study row behind.
    let metrics = crate::metrics::serve(metrics)?;
    let mut store = Store::open(&db)?;
    let hash = study_sha256(&src, &spec);
    let spec_json = serde_json::to_string(&spec)?;
    let study = store.begin_study(&spec.name, &hash, &spec_json, new)?;
    let mut spec = spec;
    spec.keep_layout_of(&store.study_spec(study)?);
    let left = pending(&spec, &store.finished(study)?);
    let total = series(&spec).len() * spec.threads.len();
    eprintln!(
        "study {}: {left} of {total} runs to do, results in {}",
        spec.name,
        db.display()
    );
    let mut progress = Progress::new().counting(&spec);
    if let Some((live, _)) = &metrics {
        progress = progress.publishing(live.clone(), &spec.name);
    }
    let mut results = StoredStudy {
        store: &mut store,
        study,
    };
    let out = run_study(&spec, &hash, &mut results, &INTERRUPTED, &mut progress)?;
    progress.clear();
    if let Some((live, _)) = &metrics {
        live.end_run();
    }
    eprintln!(
        // The next step a reader wants is the answer; export is for spreadsheets (the book).
        "study {}: {} ok, {} failed, {} invalid{}; results in {} (the answer: bakeoff compare {})",
        spec.name,
        out.ok,
        out.failed,
        out.invalid,
        if out.resumed > 0 {
            format!(", {} kept from before", out.resumed)
        } else {
            String::new()
        },
        db.display(),
        db.display()
    );
    Ok(if out.interrupted {
        match bakeoff_study::why_not_alternate(&spec) {
            // A block whose servers take turns is kept whole or not at all; a check block
            // (one server at a time) keeps the runs it finished.
            None if spec.alternation.validate_every > 0 => eprintln!("Interrupted: a block whose servers took turns is not kept if it was under way (its runs are kept together), a check block keeps the runs it finished; run the same command again to resume from there."),
            None => eprintln!("Interrupted: the block under way is not kept (its servers took turns, so its runs are kept together); run the same command again to resume from it."),
            Some(_) => eprintln!("Interrupted: the current run is stored as interrupted; run the same command again to resume."),
        }
        ExitCode::from(EXIT_INTERRUPTED)
    } else if out.failed + out.invalid > 0 {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
