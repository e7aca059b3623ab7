//! `bakeoff run` is a study of one cell: its servers (given, or started here or on a server
//! host), their tables loaded and warmed, one measured run (timed or fixed work, here or
//! spread over client hosts). This file runs that sequence; the caller turns its arguments
//! into a [`Cell`] and prints what the [`CellObserver`] is told and what comes back.
//!
//! A study's series runs the same [`set_up`] (servers, checks, tables), then measures each of
//! its thread counts on those servers.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_driver::ConnectOptions;
use bakeoff_engine::{Quiet, RunSpec};
use bakeoff_remote::HostUrl;
use bakeoff_server::{preflight, ServerError, ServerSpec};
use bakeoff_workload::dataset::{self, Adopt, DatasetError, Prepared, Progress};
use bakeoff_workload::scripting::user::UserScript;
use bakeoff_workload::{SessionContext, Unique, WorkloadSpec};

use crate::lab::{self, GivenServers, Running, Servers, StartError};
use crate::measure::{
    measure, measure_fixed, Measure, MeasureError, Measured, MeasuredWork, RunObserver,
};
use crate::spread::ClientHosts;

/// Where a cell's servers come from.
pub enum ServerPlan<'a> {
    /// Running already (the user's); each one's process where it can be read.
    Given(GivenServers),
    /// Started for the cell, one per spec (a variant's instances): here, or on `host`.
    Launch {
        host: Option<&'a HostUrl>,
        specs: Vec<ServerSpec>,
    },
}

/// One cell: what to run against what.
pub struct Cell<'a> {
    pub servers: ServerPlan<'a>,
    pub workload: &'a WorkloadSpec,
    pub run: &'a RunSpec,
    /// Fixed work, mysqlslap's way: this many iterations; None: a timed run.
    pub iterations: Option<u32>,
    /// Tables are created for this many connections (sysbench's --threads), loaded by
    /// `loaders` connections at once.
    pub threads: u32,
    pub loaders: u32,
    /// Read every table into the buffer pool before the run.
    pub prewarm: bool,
    pub connect_timeout: Duration,
    /// How long a statement of the run may wait before the server counts as stalled
    /// (`--stall-timeout`); None: for ever.
    pub stall_timeout: Option<Duration>,
    /// The threads over which this machine's CPU counts as the client's.
    pub sampled_client_threads: u32,
    pub interrupt: &'a AtomicBool,
    /// On a given server, whose tables the run may write to: only those `bakeoff prepare`
    /// made and marked (`Marked`), the user's own that pass the ownership checks
    /// (`Existing`, `--existing-tables=use`), or None: sysbench's grammar, which uses them
    /// as sysbench does, unchecked.
    pub adopt: Option<Adopt>,
}

/// What a cell tells as it goes, beyond the run's own ticks.
pub trait CellObserver: RunObserver {
    /// Servers are about to be started, here (`None`) or on `host`.
    fn on_starting(&mut self, _host: Option<&HostUrl>) {}
    /// Server `index` (from 0) of `of` is up and verified.
    fn on_server_up(&mut self, _index: usize, _of: usize, _server: &Running, _spec: &ServerSpec) {}
    fn on_note(&mut self, _note: &str) {}
    /// Loading's progress (called from the loader threads).
    fn on_load(&self, _progress: Progress) {}
    /// Loading stopped half-way (Ctrl-C).
    fn on_loading_stopped(&mut self) {}
    fn on_prewarmed(&mut self, _tables: u32) {}
}

/// Nothing to tell (a study's series, which records its runs instead).
impl CellObserver for Quiet {}

/// A cell's observer that passes loading's rows on to the study's observer, and nothing else.
pub(crate) struct LoadTell<'a>(pub Option<&'a (dyn Fn(u64, u64) + Sync)>);

impl bakeoff_engine::Observer for LoadTell<'_> {}
impl crate::measure::RunObserver for LoadTell<'_> {}
impl CellObserver for LoadTell<'_> {
    fn on_load(&self, p: Progress) {
        if let (Some(say), Progress::Rows { done, total }) = (self.0, p) {
            say(done, total)
        }
    }
}

/// How a cell ended.
pub enum CellEnd {
    /// The variant did not take effect (failed axes, one a line): nothing was measured.
    NotInEffect(String),
    /// Ctrl-C while loading the tables, with this many of the rows loaded.
    InterruptedLoading {
        rows: u64,
        total: u64,
    },
    /// Ctrl-C while the client hosts were connecting.
    InterruptedBeforeStart,
    Timed(Measured),
    Fixed(MeasuredWork),
}

/// The cell's servers (still running: dropping them stops what was started) and its end.
pub struct CellOutcome {
    pub servers: Servers,
    pub end: CellEnd,
}

#[derive(Debug, thiserror::Error)]
pub enum CellError {
    /// A server here did not start; `context` says which.
    #[error("{context}")]
    StartHere {
        context: String,
        #[source]
        source: ServerError,
    },
    #[error(transparent)]
    Start(StartError),
    /// Not enough room or connections for the cell.
    #[error("{0}")]
    Preflight(String),
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error(transparent)]
    Measure(#[from] MeasureError),
    #[error("{0}")]
    Runtime(#[from] std::io::Error),
}

/// Run `cell`, spread over `clients` when given.
pub fn run_cell<O: CellObserver + Sync>(
    cell: &Cell<'_>,
    mut clients: Option<&mut ClientHosts>,
    obs: &mut O,
) -> Result<CellOutcome, CellError> {
    let setup = SetUp {
        servers: &cell.servers,
        tables: Load {
            workload: cell.workload,
            threads: cell.threads,
            loaders: cell.loaders,
            seed: cell.run.seed,
            interrupt: cell.interrupt,
            shared: false,
        },
        // `bakeoff run` against a server you give runs on the tables `bakeoff prepare` made.
        load: matches!(cell.servers, ServerPlan::Launch { .. }),
        check: match cell.servers {
            ServerPlan::Given(_) => cell.adopt,
            _ => None,
        },
        prewarm: cell.prewarm,
        connections: Some(cell.run.connections),
    };
    let Ready { servers, stop } = set_up(&setup, clients.as_deref(), obs)?;
    match stop {
        None => {}
        Some(Stop::NotInEffect(problems)) => return ended(servers, CellEnd::NotInEffect(problems)),
        Some(Stop::InterruptedLoading { rows, total }) => {
            return ended(servers, CellEnd::InterruptedLoading { rows, total })
        }
        Some(Stop::Failed(e)) => return Err(e),
    }
    let endpoints = servers
        .endpoints()
        .into_iter()
        .map(|o| ConnectOptions {
            connect_timeout: cell.connect_timeout,
            limits: bakeoff_driver::Limits {
                stall_timeout: cell.stall_timeout,
                ..o.limits
            },
            ..o
        })
        .collect();
    let session = Arc::new(SessionContext::new(
        endpoints,
        cell.workload.clone(),
        cell.run.connections,
        Unique::new(cell.run.seed),
        cell.run.seed,
    ));
    let m = Measure {
        servers: &servers,
        session,
        run: cell.run,
        sampled_client_threads: cell.sampled_client_threads,
        interrupt: cell.interrupt,
    };
    let ran = match cell.iterations {
        Some(n) => measure_fixed(m, n, clients.as_deref_mut(), obs).map(CellEnd::Fixed),
        None => measure(m, clients.as_deref_mut(), obs).map(CellEnd::Timed),
    };
    match ran {
        Ok(e) => ended(servers, e),
        Err(MeasureError::InterruptedBeforeStart) => {
            ended(servers, CellEnd::InterruptedBeforeStart)
        }
        Err(e) => Err(e.into()),
    }
}

/// What comes before measuring, for a cell and a study's series alike: the servers, checked,
/// with their tables.
pub struct SetUp<'a> {
    pub servers: &'a ServerPlan<'a>,
    pub tables: Load<'a>,
    /// Load the tables (false: a copied datadir holds them, or a given server's tables are
    /// the user's, loaded by `bakeoff prepare`).
    pub load: bool,
    /// Before using tables it did not load: whose they must be (`dataset::check_tables`).
    pub check: Option<Adopt>,
    /// Read every table into the buffer pool.
    pub prewarm: bool,
    /// Check that the servers take this many connections (raising what can be raised).
    pub connections: Option<u32>,
}

/// The servers, up (dropping them stops what was started), and why nothing may be measured
/// on them, if so.
pub struct Ready {
    pub servers: Servers,
    pub stop: Option<Stop>,
}

pub enum Stop {
    /// The variant did not take effect (failed axes, one a line).
    NotInEffect(String),
    /// Ctrl-C while loading the tables, with this many of the rows loaded.
    InterruptedLoading { rows: u64, total: u64 },
    /// Checking, loading or warming failed.
    Failed(CellError),
}

/// Start (or take) the servers, check them, load and warm their tables. An error means no
/// server is up; anything after the start comes back with the servers, so a caller can still
/// say what they were.
pub fn set_up<O: CellObserver + Sync>(
    setup: &SetUp<'_>,
    clients: Option<&ClientHosts>,
    obs: &mut O,
) -> Result<Ready, CellError> {
    let servers = start(setup.servers, setup.tables.workload, clients, obs)?;
    let stop = ready(setup, &servers, obs).err();
    Ok(Ready { servers, stop })
}

fn ready<O: CellObserver + Sync>(
    setup: &SetUp<'_>,
    servers: &Servers,
    obs: &mut O,
) -> Result<(), Stop> {
    if let Some(n) = setup.connections {
        let notes = servers
            .check_connections(n)
            .map_err(|e| Stop::Failed(CellError::Preflight(e)))?;
        for note in notes {
            obs.on_note(&note);
        }
    }
    if let Some(problems) = servers.variant_problems() {
        return Err(Stop::NotInEffect(problems));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Stop::Failed(e.into()))?;
    if let Some(adopt) = setup.check {
        let t = &setup.tables;
        for opts in servers.endpoints() {
            let check = dataset::check_tables(&opts, t.workload, t.threads, adopt);
            rt.block_on(check).map_err(|e| Stop::Failed(e.into()))?;
        }
    }
    if setup.load {
        match load_tables(&rt, &servers.endpoints(), &setup.tables, &|p| {
            obs.on_load(p)
        }) {
            Err(DatasetError::Interrupted { rows, total }) => {
                obs.on_loading_stopped();
                return Err(Stop::InterruptedLoading { rows, total });
            }
            Err(e) => return Err(Stop::Failed(e.into())),
            Ok(_) => {}
        }
    }
    if setup.prewarm {
        let t = &setup.tables;
        for opts in servers.endpoints() {
            let prewarm = dataset::prewarm(&opts, t.workload, t.threads, t.loaders, &|_| {});
            let tables = rt.block_on(prewarm).map_err(|e| Stop::Failed(e.into()))?;
            obs.on_prewarmed(tables);
        }
    }
    Ok(())
}

/// What loading the tables takes: the workload's tables, created for `threads` connections
/// (sysbench's --threads), loaded by `loaders` connections at once, from `seed`.
pub struct Load<'a> {
    pub workload: &'a WorkloadSpec,
    pub threads: u32,
    pub loaders: u32,
    pub seed: u64,
    pub interrupt: &'a AtomicBool,
    /// Tables shared with sysbench (its grammar): no marker table, sysbench's order and
    /// cleanup (see `dataset::prepare_shared`); false: bakeoff's marked, parallel load.
    pub shared: bool,
}

/// Load the tables into every server at `endpoints` (the same seed everywhere: every
/// instance holds the same rows), telling `progress` (from the loader threads); what each
/// load did.
pub fn load_tables(
    rt: &tokio::runtime::Runtime,
    endpoints: &[ConnectOptions],
    load: &Load<'_>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<Prepared>, DatasetError> {
    let mut done = Vec::with_capacity(endpoints.len());
    for opts in endpoints {
        let job = bakeoff_workload::dataset::Loading {
            spec: load.workload,
            threads: load.threads,
            parallel: load.loaders,
            seed: load.seed,
            interrupt: load.interrupt,
            progress,
        };
        done.push(rt.block_on(bakeoff_workload::prepare_tables(opts, &job))?);
    }
    Ok(done)
}

fn ended(servers: Servers, end: CellEnd) -> Result<CellOutcome, CellError> {
    Ok(CellOutcome { servers, end })
}

/// The cell's servers: the given ones, or each spec started (room for the tables first).
fn start<O: CellObserver>(
    plan: &ServerPlan<'_>,
    workload: &WorkloadSpec,
    clients: Option<&ClientHosts>,
    obs: &mut O,
) -> Result<Servers, CellError> {
    let (host, specs) = match plan {
        ServerPlan::Given(g) => return Ok(Servers::Given(g.clone())),
        ServerPlan::Launch { host, specs } => (*host, specs),
    };
    // ~300 bytes a row with its indexes, as sysbench's tables measure in InnoDB; pgbench's
    // 100,000 accounts a unit of scale (a Lua script's tables are its own secret).
    let o = &workload.options;
    let rows = match &workload.script {
        Some(UserScript::Pgbench { scale, .. }) => u64::from(*scale) * 100_000,
        Some(UserScript::Lua { .. }) => 0,
        None => u64::from(o.tables) * u64::from(o.table_size),
    };
    preflight::check_space(&std::env::temp_dir(), rows * 300).map_err(CellError::Preflight)?;
    obs.on_starting(host);
    let of = specs.len();
    let up =
        |i: usize, running: &Running, spec: &ServerSpec| obs.on_server_up(i, of, running, spec);
    start_servers(host, specs, clients, up)
}

/// Start one server per spec (`lab::start_all`); a server here that fails says which one in
/// its error ("starting the embedded server", "starting embedded server 2 of 4").
pub fn start_servers(
    host: Option<&HostUrl>,
    specs: &[ServerSpec],
    clients: Option<&ClientHosts>,
    on_up: impl FnMut(usize, &Running, &ServerSpec),
) -> Result<Servers, CellError> {
    lab::start_all(host, specs, clients, on_up).map_err(|(i, e)| match e {
        StartError::Server(source) if host.is_none() => CellError::StartHere {
            context: match specs.len() {
                1 => "starting the embedded server".to_string(),
                n => format!("starting embedded server {} of {n}", i + 1),
            },
            source,
        },
        other => CellError::Start(other),
    })
}
