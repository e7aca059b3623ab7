//! Fixed work, mysqlslap's way: C connections each run N events, and the whole is repeated
//! K times. The figure is seconds per iteration, from the start of connecting to the last
//! connection finishing (mysqlslap times its clients' connects too), so min/avg/max are
//! over iterations, not over statements.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bakeoff_workload::SessionContext;
use serde::Serialize;

use crate::{run, EngineError, Observer, RunResult, RunSpec, RunStatus};

#[derive(Debug, Clone, Serialize)]
pub struct Iteration {
    /// Connecting, preparing statements, all events, and closing.
    pub seconds: f64,
    /// The part of `seconds` spent connecting and preparing statements.
    pub setup_seconds: f64,
    pub events: u64,
    pub statements: u64,
    pub errors: u64,
    pub reconnects: u64,
}

/// All iterations, each with the run that measured it (its latency histogram and totals).
#[derive(Debug, Clone, Serialize)]
pub struct FixedWork {
    pub connections: u32,
    pub events_per_connection: u64,
    pub iterations: Vec<Iteration>,
    /// Completed, or why the iterations stopped early.
    #[serde(flatten)]
    pub status: RunStatus,
    #[serde(skip)]
    pub runs: Vec<RunResult>,
}

impl FixedWork {
    fn seconds(&self) -> impl Iterator<Item = f64> + '_ {
        self.iterations.iter().map(|i| i.seconds)
    }

    pub fn min_seconds(&self) -> f64 {
        self.seconds().fold(f64::INFINITY, f64::min)
    }

    pub fn max_seconds(&self) -> f64 {
        self.seconds().fold(0.0, f64::max)
    }

    pub fn avg_seconds(&self) -> f64 {
        self.seconds().sum::<f64>() / self.iterations.len().max(1) as f64
    }

    /// Sample standard deviation over iterations (0 for fewer than two).
    pub fn stddev_seconds(&self) -> f64 {
        let n = self.iterations.len();
        if n < 2 {
            return 0.0;
        }
        let avg = self.avg_seconds();
        let ss: f64 = self.seconds().map(|s| (s - avg).powi(2)).sum();
        (ss / (n - 1) as f64).sqrt()
    }
}

/// Run `iterations` rounds of `spec`, whose `events_per_connection` must be set. Stops early
/// (keeping what was measured) when a round fails or `interrupt` is set.
pub fn run_iterations(
    ctx: Arc<SessionContext>,
    spec: &RunSpec,
    iterations: u32,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<FixedWork, EngineError> {
    let per_conn = spec
        .events_per_connection
        .expect("run_iterations needs events_per_connection");
    let mut out = FixedWork {
        connections: spec.connections,
        events_per_connection: per_conn,
        iterations: Vec::new(),
        status: RunStatus::Completed,
        runs: Vec::new(),
    };
    for _ in 0..iterations {
        if interrupt.load(Ordering::Relaxed) {
            out.status = RunStatus::Interrupted;
            break;
        }
        let r = run(ctx.clone(), spec, interrupt, observer)?;
        if r.status != RunStatus::Completed {
            // A partial round would read as a fast one: report the rounds that finished.
            out.status = r.status.clone();
            out.runs.push(r);
            break;
        }
        let t = &r.total;
        let it = Iteration {
            seconds: r.setup_seconds + r.elapsed_seconds,
            setup_seconds: r.setup_seconds,
            events: t.events,
            statements: t.queries,
            errors: t.errors,
            reconnects: t.reconnects,
        };
        observer.on_iteration(out.iterations.len(), &it);
        out.iterations.push(it);
        out.runs.push(r);
    }
    Ok(out)
}
