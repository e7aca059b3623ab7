//! `sysbench SCRIPT run`: the script's main state (`init`, the report hooks, `done`) in this
//! thread, its events driven by the engine (one Lua state and one client thread per
//! connection, as sysbench runs them) through the study's measure, against the servers the
//! line names, printed as sysbench prints a run unless the script's hooks print it.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_engine::{Checkpoint, Observer, RunSpec, RunStatus, Tick};
use bakeoff_study::lab::{GivenServers, Servers};
use bakeoff_study::measure::{measure_here, RunObserver};
use bakeoff_telemetry::WindowSummary;
use bakeoff_workload::scripting::lua::{Main, Script, Stat};
use bakeoff_workload::StmtCounts;

use super::grammar::Line;
use crate::dialect::notice;
use crate::exit::INTERRUPTED;
use crate::output;

/// Run `script`'s events as the line says; the exit code sysbench would give.
pub(super) fn run(line: &Line, script: Script, main: Main) -> Result<ExitCode, String> {
    let number = |names: &[&str], default: u64| -> Result<u64, String> {
        match names.iter().find_map(|n| line.value(n).map(|v| (n, v))) {
            Some((n, v)) => v
                .parse()
                .map_err(|_| format!("Invalid value for --{n}: '{v}'")),
            None => Ok(default),
        }
    };
    let threads = number(&["threads", "num-threads"], 1)?.max(1) as u32;
    let time = number(&["time", "max-time"], 10)?;
    let events = number(&["events", "max-requests"], 0)?;
    let rate = number(&["rate", "tx-rate"], 0)?;
    let interval = number(&["report-interval"], 0)?;
    let percentile = number(&["percentile"], 95)? as f64;
    let seed = number(&["rand-seed"], 0)?;
    let checkpoints = match line.value("report-checkpoints") {
        Some(v) => {
            crate::args::parse_seconds(v)
                .map_err(|e| format!("Invalid value for --report-checkpoints: {e}"))?
                .0
        }
        None => Vec::new(),
    };
    let lua_failed = |e: bakeoff_workload::scripting::lua::ScriptError| e.to_string();
    if !main.has_events().map_err(lua_failed)? {
        return Err(format!(
            "cannot find the event() function in {}",
            script.name()
        ));
    }
    let init = main.init().map_err(lua_failed)?;
    let spec = RunSpec {
        connections: threads,
        client_threads: client_threads(&script, threads, line.value("db-driver") == Some("pgsql")),
        time: (time > 0).then(|| Duration::from_secs(time)),
        events: (events > 0).then_some(events),
        rate: (rate > 0).then_some(rate as f64),
        tick: Duration::from_secs(interval.max(1)),
        percentile,
        seed,
        checkpoints: checkpoints
            .iter()
            .map(|&s| Duration::from_secs(s))
            .collect(),
        ..RunSpec::default()
    };
    // The server is not sampled: a script's report is sysbench's, which shows nothing of it,
    // and SHOW GLOBAL STATUS and /proc every tick cost the server and this client for nothing
    // (under callgrind, 1.04x sysbench's instructions per point select instead of 0.8x).
    let servers = Servers::Given(GivenServers::here(Vec::new()));
    let mut printer = Printer {
        main: &main,
        interval: interval > 0,
        seed_given: seed != 0,
        validate: line.on("validate"),
        percentile,
        init_tick: Some(init),
        init_total: Some(init),
    };
    let measured = measure_here(
        &servers,
        Arc::new(script),
        &spec,
        threads,
        &INTERRUPTED,
        &mut printer,
    )
    .map_err(thread_init_failed)?;
    let r = &measured.result;
    // A thread's script failed: sysbench prints each failed thread's FATAL line (the order
    // the threads failed in) and no report, and does not call done().
    if let RunStatus::Failed(why) = &r.status {
        for line in why.lines() {
            crate::dialect::fatal(line.strip_prefix("FATAL: ").unwrap_or(line));
        }
        return Ok(ExitCode::from(1));
    }
    if line.on("histogram") && crate::dialect::shows(crate::dialect::NOTICE) {
        print!("{}", output::histogram(&r.histogram));
    }
    // After checkpoints, sysbench's final report covers the stretch since the last one.
    let mut last = r.last_stretch();
    printer.count_init(&mut last);
    let last = &last;
    // A hook or done() that fails is said, as sysbench says it, and the run still succeeds.
    let hooked = main
        .report(&cumulative(last), true)
        .unwrap_or_else(|e| said_failed(&e));
    if !hooked {
        notice!(
            "{}",
            report(last, r.unfinished_events, percentile).trim_end_matches('\n')
        );
        notice!();
    }
    if let Err(e) = main.done() {
        said_failed(&e);
    }
    Ok(match &r.status {
        RunStatus::Interrupted => ExitCode::from(crate::exit::EXIT_INTERRUPTED),
        _ => ExitCode::SUCCESS,
    })
}

/// The client threads for a script's connections: each has a Lua state of its own, as in
/// sysbench, and they share client threads, each on a fiber on the thread's reactor, one
/// thread per CPU this process may use (beside a PostgreSQL, at least one per 64 connections
/// to keep the client's share among its backends; see `threads_beside_processes`). A script
/// whose calls wait inside C gets a thread per connection (the engine's `as_source_runs`).
fn client_threads(script: &Script, threads: u32, pgsql: bool) -> u32 {
    use bakeoff_workload::Source;
    if script.blocks() {
        return threads;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let shared = cpus.clamp(1, threads);
    match pgsql {
        true => bakeoff_engine::threads_beside_processes(shared, threads),
        false => shared,
    }
}

/// A script's hook (or done()) that failed: sysbench's FATAL line, and the run goes on; true,
/// as a hook that ran (nothing else reports in its place).
fn said_failed(e: &bakeoff_workload::scripting::lua::ScriptError) -> bool {
    crate::dialect::fatal(&e.to_string());
    true
}

/// A run that could not start, in sysbench's words: a script's `thread_init` that failed is
/// its own FATAL line, then sysbench's "Thread initialization failed!".
fn thread_init_failed(e: bakeoff_study::measure::MeasureError) -> String {
    use bakeoff_engine::EngineError;
    use bakeoff_study::measure::MeasureError;
    match e {
        MeasureError::Engine(EngineError::Connect { reason, also, .. })
            if reason.starts_with("`thread_init' function failed") =>
        {
            let mut lines = vec![reason];
            lines.extend(also);
            lines.push("Thread initialization failed!".into());
            lines.join("\n")
        }
        e => e.to_string(),
    }
}

/// sysbench's report of a stretch of the run (all of it, or one between checkpoints). Its
/// SQL block belongs to runs that used its SQL driver; a script that ran no statement gets
/// the general block alone (its first line is blank, as sysbench's).
fn report(c: &Checkpoint, unfinished: u64, percentile: f64) -> String {
    match c.total.queries {
        0 => format!(
            "\n{}",
            output::general_block(
                c.t,
                &c.total,
                unfinished,
                percentile,
                c.connections.iter().map(|c| (c.events, c.latency_sum_ns)),
            )
        ),
        _ => output::checkpoint_report(c, unfinished, percentile),
    }
}

/// What a report hook gets for a window of the run.
fn stat(w: &WindowSummary, threads: u32, total: f64) -> Stat {
    Stat {
        threads_running: threads,
        time_interval: w.seconds,
        time_total: total,
        latency_pct: w.latency.sysbench_percentile_ms / 1000.0,
        events: w.events,
        reads: w.reads,
        writes: w.writes,
        other: w.others,
        errors: w.errors,
        reconnects: w.reconnects,
        latency: None,
    }
}

/// The cumulative report's stat: a stretch of the run, no thread running any more.
fn cumulative(c: &Checkpoint) -> Stat {
    let l = &c.total.latency;
    Stat {
        latency: Some([l.min_ms, l.max_ms, l.avg_ms, l.sum_ms].map(|ms| ms / 1000.0)),
        ..stat(&c.total, 0, c.t)
    }
}

/// sysbench's lines around a script's run, or the script's own report hooks.
struct Printer<'a> {
    main: &'a Main,
    interval: bool,
    seed_given: bool,
    validate: bool,
    percentile: f64,
    /// What `init()` ran, not yet in the first interval line / the first report: sysbench
    /// counts a script's init statements in both.
    init_tick: Option<StmtCounts>,
    init_total: Option<StmtCounts>,
}

impl Printer<'_> {
    /// The first report printed (a checkpoint's or the final one) counts init's statements.
    fn count_init(&mut self, c: &mut Checkpoint) {
        if let Some(i) = self.init_total.take() {
            c.total.add_statements(i.reads, i.writes, i.others);
        }
    }
}

impl RunObserver for Printer<'_> {
    fn on_measuring(&mut self, run: &RunSpec) {
        let seed = self.seed_given.then_some(run.seed);
        let head = output::run_options(&output::RunHeader::of(
            run,
            self.interval,
            self.validate,
            seed,
        ));
        notice!("{head}");
        notice!("{}", output::WORKERS_STARTING);
    }
}

impl Observer for Printer<'_> {
    fn on_start(&mut self) {
        notice!("Threads started!\n");
    }

    /// The checkpoint's line, then the script's report_cumulative hook or sysbench's report.
    fn on_checkpoint(&mut self, c: &Checkpoint) {
        let mut c = c.clone();
        self.count_init(&mut c);
        let c = &c;
        notice!("[ {:.0}s ] Checkpoint report:", c.t);
        match self.main.report(&cumulative(c), true) {
            Ok(true) => {}
            Ok(false) => {
                if crate::dialect::shows(crate::dialect::NOTICE) {
                    print!("{}", report(c, 0, self.percentile));
                }
            }
            Err(e) => {
                said_failed(&e);
            }
        }
    }

    fn on_tick(&mut self, t: &Tick) {
        if !self.interval {
            return;
        }
        let mut t = t.clone();
        if let Some(i) = self.init_tick.take() {
            t.window.add_statements(i.reads, i.writes, i.others);
        }
        let t = &t;
        match self.main.report(&stat(&t.window, t.threads, t.t), false) {
            Ok(true) => {}
            Ok(false) => notice!("{}", output::interval_line(t, self.percentile, false)),
            Err(e) => {
                said_failed(&e);
            }
        }
    }
}
