//! Fixed work, mysqlslap's way: C connections each run N events, and the whole is repeated
//! K times. The figure is seconds per iteration, from the start of connecting to the last
//! connection finishing (mysqlslap times its clients' connects too), so min/avg/max are
//! over iterations, not over statements.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bakeoff_workload::Source;
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

/// Run `iterations` rounds of `spec`, whose `events_per_connection` must be set, in this
/// process. Stops early (keeping what was measured) when a round fails or `interrupt` is set.
pub fn run_iterations<S: Source>(
    ctx: Arc<S>,
    spec: &RunSpec,
    iterations: u32,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<FixedWork, EngineError> {
    let per_conn = spec
        .events_per_connection
        .expect("run_iterations needs events_per_connection");
    let shape = (spec.connections, per_conn, iterations);
    run_rounds(shape, interrupt, observer, |obs| {
        run(ctx.clone(), spec, interrupt, obs)
    })
}

/// `iterations` rounds of fixed work, each run by `round` (in this process, or spread over
/// client hosts), for `connections` x `events_per_connection` events. A round's seconds run
/// from the start of connecting to the last connection finishing. A round that cannot start
/// is the caller's error when it is the first; after that the rounds already measured are
/// kept, and the work ends failed (or interrupted, when Ctrl-C was why).
pub fn run_rounds<E: std::fmt::Display>(
    (connections, events_per_connection, iterations): (u32, u64, u32),
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
    mut round: impl FnMut(&mut dyn Observer) -> Result<RunResult, E>,
) -> Result<FixedWork, E> {
    let mut out = FixedWork {
        connections,
        events_per_connection,
        iterations: Vec::new(),
        status: RunStatus::Completed,
        runs: Vec::new(),
    };
    for _ in 0..iterations {
        if interrupt.load(Ordering::Relaxed) {
            out.status = RunStatus::Interrupted;
            break;
        }
        let r = match round(observer) {
            Ok(r) => r,
            Err(e) if out.iterations.is_empty() => return Err(e),
            Err(_) if interrupt.load(Ordering::Relaxed) => {
                out.status = RunStatus::Interrupted;
                break;
            }
            Err(e) => {
                out.status = RunStatus::Failed(format!(
                    "iteration {} did not start: {e}",
                    out.iterations.len() + 1
                ));
                break;
            }
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_telemetry::Window;

    /// A round of `events` one-millisecond events that took `seconds` (set up in a tenth).
    fn round(events: u64, seconds: f64) -> RunResult {
        let mut w = Window::default();
        for _ in 0..events {
            w.record_event(1_000_000);
        }
        RunResult {
            status: RunStatus::Completed,
            setup_seconds: seconds / 10.0,
            elapsed_seconds: seconds * 0.9,
            total: w.summary(seconds, 95.0),
            telemetry: None,
            ticks: Vec::new(),
            connections: Vec::new(),
            unfinished_events: 0,
            histogram: w.sb_histogram().clone(),
            window: w,
            checkpoints: Vec::new(),
            after_checkpoint: None,
            connect: None,
        }
    }

    #[test]
    fn a_round_that_cannot_start_keeps_the_rounds_before_it() {
        let stop = AtomicBool::new(false);
        let mut n = 0;
        let fw = run_rounds((4, 10, 5), &stop, &mut crate::Quiet, |_| {
            n += 1;
            if n == 3 {
                Err("client host ssh://b: gone")
            } else {
                Ok(round(40, 2.0))
            }
        })
        .unwrap();
        assert_eq!(fw.iterations.len(), 2);
        assert_eq!(fw.iterations[0].events, 40);
        assert!((fw.avg_seconds() - 2.0).abs() < 1e-9);
        assert_eq!(
            fw.status,
            RunStatus::Failed("iteration 3 did not start: client host ssh://b: gone".into())
        );
    }

    #[test]
    fn a_first_round_that_cannot_start_is_the_callers_error_and_ctrl_c_is_an_interrupt() {
        let stop = AtomicBool::new(false);
        let r = run_rounds((4, 10, 5), &stop, &mut crate::Quiet, |_| {
            Err::<RunResult, _>("refused")
        });
        assert_eq!(r.err(), Some("refused"));
        let mut n = 0;
        let fw = run_rounds((4, 10, 5), &stop, &mut crate::Quiet, |_| {
            n += 1;
            if n == 2 {
                stop.store(true, Ordering::Relaxed);
                return Err("called off");
            }
            Ok(round(40, 1.0))
        })
        .unwrap();
        assert_eq!(fw.iterations.len(), 1);
        assert_eq!(fw.status, RunStatus::Interrupted);
    }
}
