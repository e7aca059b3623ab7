//! What a run prints before and while it runs: sysbench's header, the interval printer, and
//! the header of every JSON document (the workload, the run's options, the server, the client).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use bakeoff_engine::{Checkpoint, ClientWait, IgnoreErrors, Iteration, Observer, RunSpec, Tick};
use bakeoff_remote::HostUrl;
use bakeoff_server::placement::ClientPlacement;
use bakeoff_server::ServerSpec;
use bakeoff_study::cell::CellObserver;
use bakeoff_study::lab::Running;
use bakeoff_study::measure::RunObserver;
use bakeoff_workload::dataset::Progress;
use bakeoff_workload::WorkloadSpec;
use serde::Serialize;

use crate::args::{Format, LoadArgs};
use crate::output;
use crate::progress::LoadLine;
use bakeoff_study::lab::{InstanceCheck, Servers};

/// The workload options given on the command line that this workload does not read.
pub(crate) fn ignored_options(a: &LoadArgs, spec: &WorkloadSpec) -> Vec<String> {
    a.given
        .iter()
        .filter(|name| !spec.kind.uses(name))
        .map(|name| format!("--{name}"))
        .collect()
}

/// sysbench's header once the measured run starts. In sysbench's dialect after its banner,
/// what bakeoff adds (the distribution, options the workload ignores) on stderr; in bakeoff's,
/// after bakeoff's banner, all on stdout, the seed always said.
fn print_header(p: &Printer<'_>, r: &RunSpec) {
    use crate::dialect::{notice, said};
    let sysbench = crate::dialect::is_sysbench();
    let seed = (p.seed_given || !sysbench).then_some(r.seed);
    let head = output::run_options(&output::RunHeader::of(r, p.interval, p.validate, seed));
    let mut extras = vec![match (&p.spec.script, p.spec.kind) {
        // A script draws its own keys, as its code says.
        (Some(s), _) => script_line(s),
        // TPC-C draws its own inputs (NURand, uniform); the key distribution is sysbench's.
        (None, bakeoff_workload::WorkloadKind::Tpcc) => tpcc_line(p.spec),
        (None, _) => distribution_line(p.spec),
    }];
    let server = p.embedded.clone();
    if !p.ignored.is_empty() {
        extras.push(ignored_line(p.spec, &p.ignored));
    }
    if sysbench {
        notice!("{head}");
        extras.iter().for_each(|e| said!("{e}"));
        // stdout is sysbench's alone (a parser reads it line for line), so on stderr, at
        // every verbosity: sysbench would have measured the server at its default socket,
        // and a log of this run (`2>&1`, as most are kept) must not read as if it had.
        server.iter().for_each(|s| eprintln!("{s}"));
    } else {
        println!(
            "bakeoff {} (sysbench 1.0.20 compatible)\n",
            env!("CARGO_PKG_VERSION")
        );
        println!("{head}");
        extras.iter().chain(&server).for_each(|e| println!("{e}"));
    }
    notice!("{}", output::WORKERS_STARTING);
}

fn distribution_line(spec: &WorkloadSpec) -> String {
    format!(
        "Random distribution: {} (sysbench 1.0.20's default is special; master's is uniform)",
        spec.distribution.kind
    )
}

fn script_line(s: &bakeoff_workload::scripting::user::UserScript) -> String {
    use bakeoff_workload::scripting::user::UserScript;
    match s {
        UserScript::Lua { path, text, .. } => {
            match bakeoff_workload::scripting::lua::waits_in_c(text) {
                None => format!(
                    "Workload: your Lua script {path} (each connection a Lua state of its own, as in sysbench; they share the client threads, each on a fiber of its own)"
                ),
                Some(call) => format!(
                    "Workload: your Lua script {path} (each connection a Lua state and a client thread of its own, as in sysbench: the script calls {call}, which waits outside the event loop)"
                ),
            }
        }
        UserScript::Pgbench { scripts, scale, .. } => {
            let list: Vec<String> = scripts
                .iter()
                .map(|f| format!("{}@{}", f.name, f.weight))
                .collect();
            format!(
                "Workload: pgbench scripts {} at scale {scale}",
                list.join(", ")
            )
        }
    }
}

fn tpcc_line(spec: &WorkloadSpec) -> String {
    let o = &spec.tpcc;
    let all = match (o.keying > 0.0, o.all_warehouses) {
        (true, _) => match o.terminals {
            0 => "ten paced terminals a warehouse (--keying), sharing the connections".to_string(),
            n => format!("{n} paced terminals (--keying), sharing the connections"),
        },
        (false, true) => "every terminal over several warehouses (--all-warehouses)".to_string(),
        (false, false) => "one home warehouse per terminal".to_string(),
    };
    let how = match spec.tpcc.procedures {
        true => "each transaction one call of the server's routines (--procedures)",
        false => "client-side statements",
    };
    match spec.tpcc.warehouses {
        0 => format!("TPC-C: the warehouses the tables hold, {all}, {how}"),
        w => format!("TPC-C: {w} warehouses, {all}, {how}"),
    }
}

fn ignored_line(spec: &WorkloadSpec, ignored: &[String]) -> String {
    format!(
        "Options {} does not use (accepted, as sysbench does): {}",
        spec.kind,
        ignored.join(" ")
    )
}

/// Prints `bakeoff run` as it goes: each server as it is up, loading's progress, then, as
/// sysbench does, the header once the measured run starts, "Threads started!" and an interval
/// line every tick when asked (text output); for fixed work a line per iteration instead.
pub(crate) struct Printer<'a> {
    text: bool,
    interval: bool,
    percentile: f64,
    open_loop: bool,
    spec: &'a WorkloadSpec,
    ignored: Vec<String>,
    /// Fixed work: the iterations in all.
    iterations: Option<u32>,
    /// Servers a variant starts (an instance's number is said when there are several).
    instances: u32,
    load: LoadLine,
    tty: bool,
    /// --rand-seed was given (else sysbench seeds from the clock and says so).
    seed_given: bool,
    /// --validate (said in the header, as sysbench says it).
    validate: bool,
    /// --db-driver: which embedded server starts (mysql or pgsql).
    engine: String,
    /// The embedded server this run measures, said on stdout with the header: a DBA who
    /// forgot --mysql-socket reads there that it was not theirs.
    embedded: Option<String>,
    /// `--metrics-addr`: where each tick is published for a scraper.
    pub(crate) live: Option<bakeoff_telemetry::live::Live>,
}

impl<'a> Printer<'a> {
    pub(crate) fn new(
        a: &LoadArgs,
        spec: &'a WorkloadSpec,
        iterations: Option<u32>,
    ) -> Printer<'a> {
        Printer {
            text: a.general.format == Format::Text,
            interval: a.general.report_interval > 0,
            percentile: 0.0,
            open_loop: false,
            spec,
            ignored: ignored_options(a, spec),
            iterations,
            instances: a.general.embedded.variant.instances,
            load: LoadLine::new(),
            tty: std::io::stderr().is_terminal(),
            seed_given: a.general.rand_seed != 0,
            validate: a.general.validate,
            engine: a.general.embedded.db_driver.clone(),
            embedded: None,
            live: None,
        }
    }
}

impl CellObserver for Printer<'_> {
    fn on_starting(&mut self, host: Option<&HostUrl>) {
        match host {
            Some(h) => eprintln!("Starting the server on {h}..."),
            None if self.engine == "pgsql" => eprintln!("Starting the embedded PostgreSQL..."),
            None => eprintln!(
                "Starting the embedded MariaDB (no --mysql-host or --mysql-socket given)..."
            ),
        }
    }

    fn on_server_up(&mut self, index: usize, _of: usize, server: &Running, spec: &ServerSpec) {
        crate::target::print_server_up(server, index, self.instances, spec);
        if let (Running::Here(s), 0) = (server, index) {
            let yours = match self.engine.as_str() {
                "pgsql" => "--server postgresql://... measures yours",
                _ => "--mysql-socket or --mysql-host measures yours",
            };
            self.embedded = Some(format!(
                "Server: embedded {}, started by bakeoff for this run ({yours})",
                s.version()
            ));
        }
    }

    fn on_note(&mut self, note: &str) {
        crate::dialect::said!("note: {note}");
    }

    fn on_load(&self, p: Progress) {
        match p {
            Progress::Rows { .. } => self.load.show(p),
            Progress::Loaded { rows } => {
                self.load.end();
                crate::dialect::said!("Loaded {rows} rows into the server");
            }
            _ => {}
        }
    }

    fn on_loading_stopped(&mut self) {
        self.load.end();
    }

    fn on_prewarmed(&mut self, tables: u32) {
        eprintln!(
            "Prewarmed {tables} table(s): primary key and secondary index read into the buffer pool"
        );
    }
}

impl RunObserver for Printer<'_> {
    fn on_warmup(&mut self, seconds: Duration) {
        eprintln!("Warming up for {} s...", seconds.as_secs());
    }

    fn on_measuring(&mut self, run: &RunSpec) {
        self.percentile = run.percentile;
        self.open_loop = run.rate.is_some();
        match (self.text, self.iterations) {
            (false, _) => {}
            (true, None) => print_header(self, run),
            // mysqlslap prints no header; the options this workload does not read are said.
            (true, Some(_)) if !self.ignored.is_empty() => println!(
                "Options {} does not use (accepted, as sysbench does): {}",
                self.spec.kind,
                self.ignored.join(" ")
            ),
            (true, Some(_)) => {}
        }
    }
}

impl Observer for Printer<'_> {
    /// Fixed work: one line per iteration on stderr (rewritten in place on a terminal).
    fn on_iteration(&mut self, index: usize, it: &Iteration) {
        let total = self.iterations.unwrap_or(0);
        let line = format!("iteration {}/{total}: {:.3} s", index + 1, it.seconds);
        if self.tty {
            eprint!("\r{line}");
            if index + 1 == total as usize {
                eprintln!();
            }
        } else {
            eprintln!("{line}");
        }
    }

    fn on_start(&mut self) {
        if self.text && self.iterations.is_none() {
            crate::dialect::notice!("Threads started!\n");
        }
    }

    fn on_checkpoint(&mut self, c: &Checkpoint) {
        if self.text {
            crate::dialect::notice!("[ {:.0}s ] Checkpoint report:", c.t);
            if crate::dialect::shows(crate::dialect::NOTICE) {
                print!("{}", output::checkpoint_report(c, 0, self.percentile));
            }
        }
    }

    fn on_tick(&mut self, t: &Tick) {
        if let Some(live) = &self.live {
            live.tick(&t.window, t.telemetry.as_ref());
        }
        if self.text && self.interval && self.iterations.is_none() {
            crate::dialect::notice!(
                "{}",
                output::interval_line(t, self.percentile, self.open_loop)
            );
        }
    }
}

/// What every JSON document starts with: the tool, the workload, the run's options and the
/// server it ran against.
#[derive(Serialize)]
pub(crate) struct JsonHeader<'a> {
    bakeoff_version: &'static str,
    workload: &'a WorkloadSpec,
    run: RunEcho,
    server_version: Option<String>,
    /// Each axis of each embedded server's variant: asked for, seen on the process, ok.
    server_checks: Vec<InstanceCheck>,
    /// SHOW GLOBAL VARIABLES at the start of the run.
    server_variables: BTreeMap<String, String>,
    /// Where the load ran: its CPUs, how they were chosen, and CPUs shared with a server.
    client: ClientPlacement,
    /// What may make the figures mislead (client sharing the server's CPUs).
    warnings: Vec<String>,
    /// Workload options given that this workload does not read (sysbench accepts them too).
    ignored_options: Vec<String>,
}

impl<'a> JsonHeader<'a> {
    pub(crate) fn new(
        spec: &'a WorkloadSpec,
        run_spec: &RunSpec,
        target: &Servers,
        placement: &ClientPlacement,
        ignored_options: Vec<String>,
    ) -> Self {
        JsonHeader {
            ignored_options,
            client: placement.clone(),
            warnings: placement.warning().into_iter().collect(),
            bakeoff_version: crate::args::VERSION,
            workload: spec,
            run: RunEcho::of(run_spec),
            server_version: target.server_version(),
            server_checks: target.checks(),
            server_variables: target.variables(),
        }
    }
}

#[derive(Serialize)]
pub(crate) struct RunEcho {
    threads: u32,
    client_threads: u32,
    time_seconds: Option<u64>,
    warmup_seconds: u64,
    events: Option<u64>,
    events_per_connection: Option<u64>,
    rate: Option<f64>,
    tick_seconds: f64,
    percentile: f64,
    seed: u64,
    ignore_errors: IgnoreErrors,
    client_sched: &'static str,
    client_wait: ClientWait,
}

impl RunEcho {
    pub(crate) fn of(r: &RunSpec) -> RunEcho {
        RunEcho {
            threads: r.connections,
            client_threads: r.client_threads,
            time_seconds: r.time.map(|t| t.as_secs()),
            warmup_seconds: r.warmup.as_secs(),
            events: r.events,
            events_per_connection: r.events_per_connection,
            rate: r.rate,
            tick_seconds: r.tick.as_secs_f64(),
            percentile: r.percentile,
            seed: r.seed,
            ignore_errors: r.ignore_errors.clone(),
            client_sched: if r.batch_scheduling {
                "batch"
            } else {
                "normal"
            },
            client_wait: r.client_wait,
        }
    }
}
