//! One measured run against a set of servers, the same for `bakeoff run` and every cell of a
//! study: on this machine (the engine, the servers and this machine sampled every tick) or
//! spread over client hosts (each its block of connections, the ticks merged here); timed
//! ([`measure`]) or fixed work ([`measure_fixed`]).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_engine::{
    run_iterations, run_sampled, EngineError, FixedWork, Observer, Quiet, RunResult, RunSpec,
};
use bakeoff_telemetry::Sampler;
use bakeoff_workload::{SessionContext, Source};

use crate::lab::Servers;
use crate::spread::{ClientHosts, HostShare, INTERRUPTED_BEFORE_START};

/// What a run reports beyond the engine's ticks: the phases around the measured load.
pub trait RunObserver: Observer {
    /// A run spread over client hosts warms up first, as a run of its own (so the servers'
    /// figures cover the measured span only).
    fn on_warmup(&mut self, _seconds: Duration) {}
    /// The measured run (as `run` says, its warmup included or already done) is about to
    /// start connecting.
    fn on_measuring(&mut self, _run: &RunSpec) {}
}

/// Nothing to tell (an unmeasured warmup, a study's fixed work).
impl RunObserver for Quiet {}

/// One run to measure.
pub struct Measure<'a> {
    pub servers: &'a Servers,
    /// The sessions' context on this machine (the endpoints, the workload, unique values).
    pub session: Arc<SessionContext>,
    pub run: &'a RunSpec,
    /// The threads over which this machine's CPU is counted as the client's.
    pub sampled_client_threads: u32,
    pub interrupt: &'a AtomicBool,
}

/// What was measured, and each client host's share when the load was spread.
pub struct Measured {
    /// The run as measured (a spread run's warmup was a run of its own).
    pub run: RunSpec,
    pub result: RunResult,
    pub hosts: Vec<HostShare>,
}

#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Ctrl-C came while the client hosts were connecting: nothing was measured.
    #[error("{INTERRUPTED_BEFORE_START}")]
    InterruptedBeforeStart,
    /// The spread over client hosts failed (a host named in the text).
    #[error("{0}")]
    Spread(String),
}

/// Measure a run of any workload `source` on this machine, the servers and this machine
/// sampled every tick: the native workloads (through [`measure`]) and sysbench Lua scripts.
pub fn measure_here<S: Source, O: RunObserver>(
    servers: &Servers,
    source: Arc<S>,
    run: &RunSpec,
    sampled_client_threads: u32,
    interrupt: &AtomicBool,
    obs: &mut O,
) -> Result<Measured, MeasureError> {
    let mut sampler = Sampler::new(servers.sample_targets(), sampled_client_threads);
    obs.on_measuring(run);
    let result = run_sampled(source, run, interrupt, obs, Some(&mut sampler))?;
    Ok(Measured {
        run: run.clone(),
        result,
        hosts: Vec::new(),
    })
}

/// Measure `m`: here, or over `clients` when the load is spread.
pub fn measure<O: RunObserver>(
    m: Measure<'_>,
    clients: Option<&mut ClientHosts>,
    obs: &mut O,
) -> Result<Measured, MeasureError> {
    let Some(hosts) = clients else {
        return measure_here(
            m.servers,
            m.session,
            m.run,
            m.sampled_client_threads,
            m.interrupt,
            obs,
        );
    };
    let mut sampler = Sampler::new(m.servers.sample_targets(), m.sampled_client_threads);
    let reach = m.servers.reach();
    let workload = &m.session.spec;
    if !m.run.warmup.is_zero() {
        let warm = RunSpec {
            time: Some(m.run.warmup),
            warmup: Duration::ZERO,
            events: None,
            ..m.run.clone()
        };
        obs.on_warmup(m.run.warmup);
        hosts
            .run(&reach, workload, &warm, m.interrupt, &mut Quiet, None)
            .map_err(spread_error)?;
    }
    let measured = RunSpec {
        warmup: Duration::ZERO,
        ..m.run.clone()
    };
    obs.on_measuring(&measured);
    let spread = hosts
        .run(
            &reach,
            workload,
            &measured,
            m.interrupt,
            obs,
            Some(&mut sampler),
        )
        .map_err(spread_error)?;
    Ok(Measured {
        run: measured,
        result: spread.result,
        hosts: spread.hosts,
    })
}

/// Fixed work, as measured: every iteration, and each client host's share when spread.
pub struct MeasuredWork {
    pub work: FixedWork,
    pub hosts: Vec<HostShare>,
}

/// Fixed work, mysqlslap's way: every connection runs its events (`m.run`'s
/// `events_per_connection`), `iterations` times over; here, or each client host its block of
/// connections from one barrier.
pub fn measure_fixed<O: RunObserver>(
    m: Measure<'_>,
    iterations: u32,
    clients: Option<&mut ClientHosts>,
    obs: &mut O,
) -> Result<MeasuredWork, MeasureError> {
    obs.on_measuring(m.run);
    match clients {
        None => Ok(MeasuredWork {
            work: run_iterations(m.session, m.run, iterations, m.interrupt, obs)?,
            hosts: Vec::new(),
        }),
        Some(hosts) => {
            let reach = m.servers.reach();
            let (work, hosts) = hosts
                .run_fixed(&reach, &m.session.spec, m.run, iterations, m.interrupt, obs)
                .map_err(spread_error)?;
            Ok(MeasuredWork { work, hosts })
        }
    }
}

/// A spread's error: Ctrl-C before the start is no failure.
fn spread_error(e: String) -> MeasureError {
    match e.as_str() {
        INTERRUPTED_BEFORE_START => MeasureError::InterruptedBeforeStart,
        _ => MeasureError::Spread(e),
    }
}
