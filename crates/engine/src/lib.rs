//! The load engine.
//!
//! A few OS threads, each running a single-threaded async runtime that drives many
//! connections ([`Session`](bakeoff_workload::Session)s), one event in flight per connection.
//! That is what makes it lean: 1024 connections cost 1024 sockets and small state machines,
//! not 1024 threads with their stacks and context switches.
//!
//! Two pacing models:
//! - closed loop (default): each connection starts its next event when the last one ends;
//!   latency is the event's service time, as sysbench measures it without `--rate`;
//! - open loop (`rate`): Poisson arrivals queue up and free connections take them; latency is
//!   measured from each event's *intended* start (its arrival), so a stalled server shows as
//!   latency rather than silently lowering the offered load (coordinated omission). A queue
//!   that outgrows its bound ends the run with a clear error instead of measuring the queue.
//!
//! - paced terminals (a source that is [`paced`](bakeoff_workload::Source::paced)): a workload's own users (TPC-C's, with keying and think
//!   time) wait on the engine's pacer, many to a connection, and hand their orders to the
//!   connections free; latency is measured from each order's submission, a wait for a
//!   connection included.
//!
//! The run never overruns its end by more than [`RunSpec::grace`]: after that, connections
//! still waiting on the server are abandoned and their events counted as unfinished.
//!
//! What it must not do: print or exit. Ticks go to an [`Observer`]; the CLI prints.

mod connect;
mod doorbell;
pub mod files;
mod fixed;
mod pacing;
mod run;
mod sched;
mod shared;
mod terminals;
mod turns;
mod worker;

use std::time::Duration;

use bakeoff_telemetry::{Telemetry, Window, WindowSummary};
use serde::{Deserialize, Serialize};

pub use bakeoff_telemetry::Checkpoint;
pub use connect::ConnectCost;
pub use fixed::{run_iterations, run_rounds, FixedWork, Iteration};
pub use run::{run, run_sampled};
pub use turns::{run_turns, NoTurns, ServerTurns, Slice, TurnObserver, TurnSpec, TurnsResult};

/// Error codes that restart the event instead of stopping the run (`--mysql-ignore-errors`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum IgnoreErrors {
    All,
    Codes(Vec<u16>),
}

impl IgnoreErrors {
    /// sysbench's default: deadlock, "record has changed since last read", lock wait timeout.
    pub fn sysbench_default() -> Self {
        IgnoreErrors::Codes(vec![1213, 1020, 1205])
    }

    pub fn contains(&self, code: u16) -> bool {
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Codes(c) => c.contains(&code),
        }
    }

    /// Whether the engine restarts the event after `e`. A PostgreSQL error (no number, a
    /// SQLSTATE) is ignorable when sysbench's pgsql driver ignores it, whatever the MySQL
    /// list says: deadlock_detected, unique_violation, serialization_failure.
    pub fn covers(&self, e: &bakeoff_driver::ServerError) -> bool {
        match e.code {
            0 => PG_IGNORABLE.contains(&e.sql_state.as_str()),
            code => self.contains(code),
        }
    }
}

/// Client threads for connections to a server that runs a process per connection on the
/// client's own CPUs (PostgreSQL's backends): the scheduler shares CPU time among runnable
/// threads, so a client of 2 threads serving 1024 connections gets about 2/1026 of it while
/// every backend is busy, and its connections wait on it. One thread per 64 connections keeps
/// its share in proportion to its work. Measured on 2 CPUs, oltp_read_write at 1024
/// connections against sysbench's pgsql driver (bench/vs-sysbench-pgsql): 0.97x sysbench's
/// qps with 2 threads (7 A/B pairs), 1.12x with 16 (3 pairs); at 64 connections 2 threads
/// stay (1.20x).
pub fn threads_beside_processes(threads: u32, connections: u32) -> u32 {
    threads
        .max(connections.div_ceil(64))
        .clamp(1, connections.max(1))
}

/// `spec` as `source` can run it: a source whose sessions block their thread on each
/// statement (a Lua script's) gets a client thread per connection, whatever was asked, since
/// connections sharing a thread would wait on each other's statements.
pub(crate) fn as_source_runs<S: bakeoff_workload::Source>(source: &S, spec: &RunSpec) -> RunSpec {
    let mut spec = spec.clone();
    if source.blocks() {
        spec.client_threads = spec.connections.max(1);
    }
    spec
}

/// The SQLSTATEs sysbench 1.0.20's pgsql driver ignores (drv_pgsql.c's check_status).
pub use bakeoff_driver::PG_IGNORABLE;

/// Where the ignorable SQLSTATEs are counted among the error codes of a run's windows
/// (which are MySQL's numbers): above every MySQL and MariaDB code, one each.
const PG_CODE_BASE: u16 = 60_000;

/// The code an ignored error is counted under: MySQL's number, or for PostgreSQL's
/// ignorable SQLSTATEs a code of their own (see [`error_label`]); 0 for any other.
pub fn error_key(e: &bakeoff_driver::ServerError) -> u16 {
    match e.code {
        0 => PG_IGNORABLE
            .iter()
            .position(|s| *s == e.sql_state)
            .map_or(0, |i| PG_CODE_BASE + i as u16),
        code => code,
    }
}

/// How a counted error code reads in a report: the number, or PostgreSQL's SQLSTATE.
pub fn error_label(code: u16) -> String {
    match code
        .checked_sub(PG_CODE_BASE)
        .and_then(|i| PG_IGNORABLE.get(i as usize))
    {
        Some(state) => format!("SQLSTATE {state}"),
        None => code.to_string(),
    }
}

#[cfg(test)]
mod ignore_tests {
    use super::*;
    use bakeoff_driver::ServerError;

    fn pg(state: &str) -> ServerError {
        ServerError {
            code: 0,
            sql_state: state.into(),
            message: String::new(),
            position: 0,
            pg: None,
        }
    }

    #[test]
    fn beside_a_server_of_processes_the_client_keeps_a_thread_per_64_connections() {
        assert_eq!(threads_beside_processes(2, 1024), 16);
        assert_eq!(threads_beside_processes(2, 64), 2);
        assert_eq!(threads_beside_processes(2, 1), 1);
        assert_eq!(threads_beside_processes(32, 100), 32);
    }

    #[test]
    fn postgres_errors_are_ignored_as_sysbenchs_pgsql_driver_ignores_them() {
        let mysql_list = IgnoreErrors::sysbench_default();
        for s in PG_IGNORABLE {
            assert!(mysql_list.covers(&pg(s)), "{s}");
            assert_eq!(error_label(error_key(&pg(s))), format!("SQLSTATE {s}"));
        }
        // Not by the MySQL list's numbers, nor by --mysql-ignore-errors=all.
        assert!(!IgnoreErrors::All.covers(&pg("42P01")));
        let mysql = ServerError {
            code: 1213,
            sql_state: "40001".into(),
            message: String::new(),
            position: 0,
            pg: None,
        };
        assert!(mysql_list.covers(&mysql));
        assert_eq!(
            (error_key(&mysql), error_label(1213)),
            (1213, "1213".to_string())
        );
    }
}

/// How to run: validated plain data (it crosses to client hosts as it is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Connections (sysbench's --threads).
    pub connections: u32,
    /// OS threads driving them.
    pub client_threads: u32,
    pub time: Option<Duration>,
    /// `time` counts from before the connections open, as pgbench's -T does (its clock
    /// starts as its threads do, and they connect first), not from when the load starts, as
    /// sysbench's --time. At 1024 SCRAM logins that is seconds of difference. One host's:
    /// a client host of a run spread over several clears it (they start at a shared gate).
    #[serde(default)]
    pub time_includes_connecting: bool,
    pub events: Option<u64>,
    /// Load before measuring: statistics (and the events limit) start from zero after it,
    /// and the run lasts `time` more.
    pub warmup: Duration,
    /// Each connection stops after this many events (fixed work, as mysqlslap's clients).
    pub events_per_connection: Option<u64>,
    /// Events per second, Poisson arrivals (open loop); `None` = closed loop.
    pub rate: Option<f64>,
    /// Tick length: per-interval lines and the JSON series.
    pub tick: Duration,
    pub percentile: f64,
    pub ignore_errors: IgnoreErrors,
    /// Longest the run may outlast its end while in-flight events finish.
    pub grace: Duration,
    pub seed: u64,
    /// Most events that may wait for a connection in open loop before the run fails.
    pub queue_limit: usize,
    /// Run client threads that multiplex connections under SCHED_BATCH: a response then does
    /// not preempt the server thread that sent it, so the client wakes less often and finds
    /// more responses ready (measured on 2 CPUs: half the client CPU per query at 64
    /// connections). Threads with a single connection keep the default policy.
    pub batch_scheduling: bool,
    /// The first connection's id: a client host that runs connections 40..80 of a run spread
    /// over several hosts says 40, so per-connection seeds and key ranges stay those of one
    /// client running them all (the workload's `threads` is the whole run's).
    pub first_tid: u32,
    /// How a client thread that multiplexes connections waits for responses.
    #[serde(default)]
    pub client_wait: ClientWait,
    /// sysbench's --report-checkpoints: times into the measured run at which the report
    /// since the previous one is taken ([`Observer::on_checkpoint`]).
    #[serde(default)]
    pub checkpoints: Vec<Duration>,
}

/// How a client thread waits for the server's responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientWait {
    /// Sleep in epoll_wait until a response arrives: each response the server sends to a
    /// sleeping client thread costs the server a wakeup of it. The right choice when client
    /// and server share CPUs: a polling client would take the server's CPU.
    #[default]
    Sleep,
    /// Keep polling the sockets while the load runs: the server never pays to wake the
    /// client (measured on 2 CPUs, server on CPU 0 and client on CPU 1, point_select at 64
    /// connections, 6 A/B rounds: the server's CPU per query fell 17% and qps rose 21%
    /// against sleeping; in the profile of the server, sleeping clients cost it the wakeup in
    /// `sock_def_readable`, 16-20% of its CPU).
    /// Only for a client on CPUs of its own: it keeps them busy. The time spent polling
    /// without finding a response is not counted as the client's CPU.
    Poll,
}

impl ClientWait {
    /// The default choice: poll on CPUs known to be none of any server's (`client_apart`),
    /// else sleep.
    pub fn auto(client_apart: bool) -> ClientWait {
        if client_apart {
            ClientWait::Poll
        } else {
            ClientWait::Sleep
        }
    }
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            connections: 1,
            client_threads: 1,
            time: Some(Duration::from_secs(10)),
            time_includes_connecting: false,
            events: None,
            warmup: Duration::ZERO,
            events_per_connection: None,
            rate: None,
            tick: Duration::from_secs(1),
            percentile: 95.0,
            ignore_errors: IgnoreErrors::sysbench_default(),
            grace: Duration::from_secs(5),
            seed: 0,
            queue_limit: 131_072,
            batch_scheduling: true,
            first_tid: 0,
            client_wait: ClientWait::Sleep,
            checkpoints: Vec::new(),
        }
    }
}

/// One interval of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Tick {
    /// Seconds since the start, at the end of this interval.
    pub t: f64,
    /// Connections still running.
    pub threads: u32,
    /// Open loop: events waiting for a connection, and events in flight.
    pub queue_length: u64,
    pub concurrency: u64,
    #[serde(flatten)]
    pub window: WindowSummary,
    /// The server process, host and client over this interval, when a sampler ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// The interval's latency histogram: (bucket value in ms, events) for the nonempty
    /// buckets of sysbench's 1024-bucket log histogram, so stored ticks can be merged later.
    pub histogram: Vec<(f64, u64)>,
}

/// Per-connection totals, for sysbench's "threads fairness".
pub type ConnTotals = bakeoff_telemetry::Totals;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", content = "reason", rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    Interrupted,
    /// A statement failed with an error that is not ignored, or the rate could not be held.
    Failed(String),
}

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub status: RunStatus,
    /// Connecting and preparing statements, before the clock started.
    pub setup_seconds: f64,
    pub elapsed_seconds: f64,
    pub total: WindowSummary,
    /// The server process, host and client over the whole measured span.
    pub telemetry: Option<Telemetry>,
    pub ticks: Vec<Tick>,
    pub connections: Vec<ConnTotals>,
    /// Events still in flight when the grace period ran out.
    pub unfinished_events: u64,
    #[serde(skip)]
    pub histogram: bakeoff_telemetry::SbHistogram,
    /// Everything the measured span recorded, to merge with other client hosts' exactly.
    #[serde(skip)]
    pub window: Window,
    /// The reports taken at --report-checkpoints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Checkpoint>,
    /// After checkpoints: the stretch since the last one, which is what sysbench's final
    /// report shows then (`total` stays the whole run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_checkpoint: Option<Checkpoint>,
    /// What opening the connections cost, before the clock started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect: Option<ConnectCost>,
}

impl RunResult {
    /// What sysbench's final report covers: the run, or the stretch after the last checkpoint.
    pub fn last_stretch(&self) -> Checkpoint {
        self.after_checkpoint.clone().unwrap_or_else(|| {
            Checkpoint::whole(self.elapsed_seconds, &self.total, &self.connections)
        })
    }
}

/// Receives each tick as it closes (the CLI prints it; a study stores it).
pub trait Observer {
    fn on_tick(&mut self, _tick: &Tick) {}
    /// All connections are open and prepared, the clock not started yet. Blocking here holds
    /// the start (a client host waits at the barrier for the others); false calls the run off.
    fn on_ready(&mut self) -> bool {
        true
    }
    /// All connections are open and prepared; the load starts now (the clock too, unless
    /// there is a warmup).
    fn on_start(&mut self) {}
    /// A tick closes, with everything it recorded (before `on_tick`).
    fn on_window(&mut self, _tick: &Tick, _window: &Window) {}
    /// The warmup is over: statistics start from zero now.
    fn on_measure(&mut self) {}
    /// A --report-checkpoints report: the run since the previous one.
    fn on_checkpoint(&mut self, _c: &Checkpoint) {}
    /// Fixed work: iteration `index` (from 0) finished.
    fn on_iteration(&mut self, _index: usize, _it: &Iteration) {}
}

/// What to do about a connection that could not be opened: connects that time out or find
/// the listen queue full want room; a missing table wants `prepare`; anything else says
/// enough itself.
pub fn connect_hint(e: &bakeoff_workload::EventError) -> String {
    use bakeoff_driver::DriverError;
    use bakeoff_workload::EventError;
    match e {
        // A refused connect before any was accepted says itself what to check (nothing
        // listens); a queue that stayed full, or a server that never answered, is this.
        EventError::Driver(DriverError::ConnectTimeout { .. }) => {
            format!(". If connects time out or find the server's listen queue full, raise the server's back_log, the kernel's net.core.somaxconn{} or the connect timeout (--mysql-connect-timeout)", bakeoff_driver::somaxconn().map(|n| format!(" (now {n})")).unwrap_or_default())
        }
        // MySQL's "table doesn't exist"; PostgreSQL's undefined_table (its statements are
        // parsed while connecting, so a missing table is found there).
        EventError::Driver(DriverError::Server(s)) | EventError::Server { error: s, .. }
            if s.code == 1146 || s.sql_state == "42P01" =>
        {
            ". The workload's tables are not there: load them first (`bakeoff prepare` with the same options)".into()
        }
        _ => String::new(),
    }
}

/// An observer that wants nothing (a warmup, an unmeasured run).
pub struct Quiet;

impl Observer for Quiet {}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A connection could not be opened before the run: the run does not start. `hint` says
    /// what to do about it, where the failure tells (see [`connect_hint`]).
    #[error("opened {opened} of {wanted} connections; connection {tid} failed: {reason}{hint}")]
    Connect {
        tid: u32,
        reason: String,
        opened: u32,
        wanted: u32,
        hint: String,
        /// The other connections that failed while this one did, each its reason (sysbench
        /// prints every thread's failed `thread_init`).
        also: Vec<String>,
    },
    #[error("a client thread failed: {0}")]
    Thread(String),
    /// A client thread stopped opening its connections because another thread failed.
    #[error("stopped while another client thread failed to connect")]
    Stopped,
    /// Every connection was ready, and the observer called the run off before it started.
    #[error("called off before the start: {0}")]
    CalledOff(String),
    /// The open-files limit has no room for the run's connections (see [`files`]): refused
    /// before any client is built.
    #[error("{connections} connections: {reason}")]
    OpenFiles { connections: u64, reason: String },
}
