//! The coordinator: starts the client threads, opens the clock once every connection is
//! ready, closes a tick every `spec.tick`, ends the run and enforces the grace period.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bakeoff_telemetry::{Checkpoints, Sampler, Window};
use bakeoff_workload::Source;
use tokio::sync::watch;

use crate::shared::Shared;
use crate::worker::{Recorder, Worker};
use crate::{ConnTotals, EngineError, Observer, RunResult, RunSpec, RunStatus, Tick};

/// Run the workload as `spec` says. `interrupt` is set by the caller (Ctrl-C): the run then
/// stops starting events, lets in-flight ones finish within the grace period, and reports
/// what it measured with status `Interrupted`.
pub fn run<S: Source>(
    ctx: Arc<S>,
    spec: &RunSpec,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<RunResult, EngineError> {
    run_sampled(ctx, spec, interrupt, observer, None)
}

/// [`run`], with `sampler` read at the start, at every tick and at the end: the server
/// process, the host and the client over the same intervals as the load's own figures.
pub fn run_sampled<S: Source>(
    ctx: Arc<S>,
    spec: &RunSpec,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
    mut sampler: Option<&mut Sampler>,
) -> Result<RunResult, EngineError> {
    let spec = &crate::as_source_runs(&*ctx, spec);
    crate::files::room_for_clients(spec, 1)?;
    let entered = Instant::now();
    let spec = Arc::new(spec.clone());
    let shared = Arc::new(Shared::default());
    if let Some(s) = sampler.as_deref_mut() {
        s.discount_client(shared.idle_poll_ns.clone());
    }
    let threads = spec.client_threads.clamp(1, spec.connections.max(1));
    let (ready_tx, ready_rx) = mpsc::channel();
    let (start_tx, start_rx) = watch::channel(None);
    let tids_of = |index: u32| -> Vec<u32> {
        (index..spec.connections)
            .step_by(threads as usize)
            .map(|t| t + spec.first_tid)
            .collect()
    };
    let recorders = recorders_for(threads, &tids_of);
    let shares = recorders.len() as u32;
    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    // Where each thread's connections start in its recorder's list.
    let mut filled = vec![0usize; recorders.len()];
    for index in 0..threads {
        let tids = tids_of(index);
        let slot = (index % shares) as usize;
        let rec = recorders[slot].clone();
        let conn_base = filled[slot];
        filled[slot] += tids.len();
        let worker = Worker {
            ctx: ctx.clone(),
            spec: spec.clone(),
            shared: shared.clone(),
            rec,
            conn_base,
            tids,
            index,
            gate: Arc::new(tokio::sync::Semaphore::new(crate::worker::connect_slots(
                threads,
            ))),
        };
        let (ready, start) = (ready_tx.clone(), start_rx.clone());
        let bell = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("bakeoff-client-{index}"))
            .spawn(move || {
                let _ending = bell.doorbell.hold();
                worker.run(ready, start)
            })
            .map_err(|e| EngineError::Thread(e.to_string()))?;
        handles.push(h);
    }
    drop(ready_tx);
    // Every thread reports; a thread that gave up because another failed says only that, so
    // the error returned is the failure itself.
    let mut failure: Option<EngineError> = None;
    for _ in 0..threads {
        let r = ready_rx.recv().unwrap_or_else(|_| {
            Err(EngineError::Thread(
                "a client thread exited while connecting".into(),
            ))
        });
        match r {
            Ok(()) => {}
            Err(EngineError::Stopped) => {}
            Err(e) => {
                shared.stop.store(true, Ordering::SeqCst);
                match (&mut failure, e) {
                    (None, e) => failure = Some(e),
                    // Another thread's connections failed too: the first error names them.
                    (
                        Some(EngineError::Connect { also, .. }),
                        EngineError::Connect {
                            reason, also: more, ..
                        },
                    ) => {
                        also.push(reason);
                        also.extend(more);
                    }
                    (Some(_), _) => {}
                }
            }
        }
    }
    if failure.is_none() && shared.stop.load(Ordering::Relaxed) {
        failure = Some(EngineError::Thread(
            "the run stopped while connecting".into(),
        ));
    }
    if failure.is_none() && !observer.on_ready() {
        shared.stop.store(true, Ordering::SeqCst);
        failure = Some(EngineError::CalledOff(
            "another part of the run did not get ready".into(),
        ));
    }
    if let Some(e) = failure {
        drop(start_tx); // wakes threads still waiting for the start, which then return
        return Err(e);
    }
    // Without a warmup the sampler starts before the load is released, so the server's
    // counters and the engine's cover exactly the same events.
    if spec.warmup.is_zero() {
        if let Some(s) = sampler.as_deref_mut() {
            s.begin();
        }
    }
    let connect = shared.connects.cost(entered.elapsed());
    let started = Instant::now();
    let clock_from = if spec.time_includes_connecting {
        entered
    } else {
        started
    };
    // Connecting may have used up the time (pgbench then runs no transaction): the end is
    // then the start of measuring, never before it.
    let _ = shared.end.set(
        spec.time
            .map(|t| (clock_from + spec.warmup + t).max(started + spec.warmup)),
    );
    observer.on_start();
    let _ = start_tx.send(Some(started));
    let mut result = coordinate(
        &spec, &shared, &recorders, &handles, started, interrupt, observer, sampler,
    )?;
    result.setup_seconds = (started - entered).as_secs_f64();
    result.connect = connect;
    Ok(result)
}

/// The recorders the client threads record into. One per thread when the threads multiplex
/// their connections (as many as CPUs, the native workloads'); threads that hold one
/// connection each (a script's, a thousand of them) share, as many per recorder as it takes
/// to keep to four per CPU: a recorder's HDR window is ~300 KB once written, and one per
/// thread made a thousand-connection script run twice sysbench's size. Its lock is held for
/// an event's bookkeeping only.
fn recorders_for(threads: u32, tids_of: &dyn Fn(u32) -> Vec<u32>) -> Vec<Arc<Mutex<Recorder>>> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let shares = threads.min(cpus * 4).max(1);
    (0..shares)
        .map(|slot| {
            let conns: usize = (slot..threads)
                .step_by(shares as usize)
                .map(|i| tids_of(i).len())
                .sum();
            Arc::new(Mutex::new(Recorder {
                window: Window::default(),
                conns: vec![ConnTotals::default(); conns],
            }))
        })
        .collect()
}

/// How often the coordinator looks at the interrupt flag between its deadlines: Ctrl-C is
/// answered within this, and an idle coordinator wakes 20 times a second, not 200.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

// The run's parts, each owned by `run` and lent for the run's length.
#[allow(clippy::too_many_arguments)]
fn coordinate(
    spec: &RunSpec,
    shared: &Shared,
    recorders: &[Arc<Mutex<Recorder>>],
    handles: &[JoinHandle<()>],
    started: Instant,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
    mut sampler: Option<&mut Sampler>,
) -> Result<RunResult, EngineError> {
    let mut total = Window::default();
    let mut tick = Window::default();
    let mut ticks = Vec::new();
    let mut checkpoints = Checkpoints::new(&spec.checkpoints, started, spec.percentile);
    // Warmup: the load runs, nothing is recorded; then statistics start from zero.
    let mut measuring = spec.warmup.is_zero();
    let mut started = started;
    let mut last_tick = started;
    let mut next_tick = started + spec.tick;
    let mut interrupted = false;
    let mut stopping_since: Option<Instant> = None;
    let mut wake = started;
    loop {
        shared.doorbell.wait_until(wake);
        let now = Instant::now();
        if interrupt.load(Ordering::Relaxed) && !shared.stop.load(Ordering::Relaxed) {
            interrupted = true;
            shared.stop.store(true, Ordering::SeqCst);
        }
        let ended = shared.stop.load(Ordering::Relaxed)
            || matches!(shared.end.get(), Some(Some(e)) if now >= *e);
        if ended && stopping_since.is_none() {
            stopping_since = Some(now);
        }
        if !measuring && now >= started + spec.warmup {
            // The measured span starts at the boundary itself, so ticks line up with the end.
            let boundary = started + spec.warmup;
            // Sample first, then drop what was recorded: the two cannot be atomic, and this
            // order leaves only the sampler's reply time (~0.5 ms of events) between them.
            if let Some(s) = sampler.as_deref_mut() {
                s.begin();
            }
            drain(recorders, &mut Window::default());
            reset_connections(recorders);
            checkpoints.restart(boundary);
            shared.events_started.store(0, Ordering::SeqCst);
            observer.on_measure();
            measuring = true;
            started = boundary;
            last_tick = boundary;
            next_tick = boundary + spec.tick;
        }
        let done = shared.doorbell.ended() as usize >= handles.len();
        // The interval that ends at --time is still reported, as sysbench does ([ 10s ] of a
        // 10 s run); an interval cut short by an interrupt or failure is not.
        let tick_due = measuring
            && now >= next_tick
            && match shared.end.get() {
                Some(Some(end)) => next_tick <= *end && !shared.stop.load(Ordering::Relaxed),
                _ => !done && !ended,
            };
        if tick_due {
            drain_kept(recorders, &mut tick, &mut checkpoints);
            let secs = (now - last_tick).as_secs_f64();
            let window = tick.summary(secs, spec.percentile);
            let histogram = tick.sb_histogram().buckets().collect();
            let t = Tick {
                t: (now - started).as_secs_f64(),
                threads: shared.running.load(Ordering::Relaxed),
                queue_length: shared.queued.load(Ordering::Relaxed),
                concurrency: shared.in_flight.load(Ordering::Relaxed),
                telemetry: sampler
                    .as_deref_mut()
                    .and_then(|s| s.tick(secs, window.events)),
                window,
                histogram,
            };
            observer.on_window(&t, &tick);
            observer.on_tick(&t);
            ticks.push(t);
            total.add(&tick);
            tick.reset();
            last_tick = now;
            next_tick += spec.tick;
        }
        if measuring && !ended && checkpoints.due(now - started) {
            drain_kept(recorders, &mut tick, &mut checkpoints);
            let c = checkpoints.take(now, started, connections_of(recorders));
            observer.on_checkpoint(&c);
        }
        let out_of_grace = stopping_since.is_some_and(|s| now - s >= spec.grace);
        if done || out_of_grace {
            break;
        }
        // The next thing due (what is already past was looked at just now, and is not due
        // again: a tick is not closed during the warmup or after the end); an interrupt (a
        // flag set by a signal handler, which cannot ring) is looked at every INTERRUPT_POLL.
        let end = match shared.end.get() {
            Some(Some(e)) if !ended => Some(*e),
            _ => None,
        };
        let warmup_end = (!measuring).then(|| started + spec.warmup);
        let checkpoint = (measuring && !ended)
            .then(|| checkpoints.next().map(|d| started + d))
            .flatten();
        let grace_end = stopping_since.map(|s| s + spec.grace);
        wake = [Some(next_tick), end, warmup_end, checkpoint, grace_end]
            .into_iter()
            .flatten()
            .filter(|&d| d > now)
            .fold(now + INTERRUPT_POLL, Instant::min);
    }
    let elapsed = started.elapsed();
    // What a checkpoint drained into a tick that never closed (the run ended first).
    total.add(&tick);
    drain_kept(recorders, &mut total, &mut checkpoints);
    let summary = total.summary(elapsed.as_secs_f64(), spec.percentile);
    let telemetry = sampler.and_then(|s| s.total(elapsed.as_secs_f64(), summary.events));
    let connections = connections_of(recorders);
    let (checkpoints, after_checkpoint) =
        checkpoints.finish(started + elapsed, started, &connections);
    let status = match (shared.failure(), interrupted) {
        (Some(reason), _) => RunStatus::Failed(reason),
        (None, true) => RunStatus::Interrupted,
        (None, false) => RunStatus::Completed,
    };
    // A thread stuck past the grace period is abandoned (its server stopped answering); it
    // holds only a socket and ends with the process.
    Ok(RunResult {
        status,
        setup_seconds: 0.0,
        elapsed_seconds: elapsed.as_secs_f64(),
        total: summary,
        telemetry,
        ticks,
        connections,
        unfinished_events: shared.in_flight.load(Ordering::Relaxed),
        histogram: total.sb_histogram().clone(),
        window: total,
        checkpoints,
        after_checkpoint,
        connect: None,
    })
}

fn reset_connections(recorders: &[Arc<Mutex<Recorder>>]) {
    for r in recorders {
        if let Ok(mut r) = r.lock() {
            r.conns.iter_mut().for_each(|c| *c = ConnTotals::default());
        }
    }
}

/// Every connection's totals so far, in the recorders' order.
fn connections_of(recorders: &[Arc<Mutex<Recorder>>]) -> Vec<ConnTotals> {
    let mut connections = Vec::new();
    for r in recorders {
        if let Ok(r) = r.lock() {
            connections.extend_from_slice(&r.conns);
        }
    }
    connections
}

/// [`drain`], through the checkpoints (which keep the stretch since the last one, if asked).
fn drain_kept(recorders: &[Arc<Mutex<Recorder>>], into: &mut Window, cps: &mut Checkpoints) {
    cps.collect(into, |w| drain(recorders, w));
}

fn drain(recorders: &[Arc<Mutex<Recorder>>], into: &mut Window) {
    for r in recorders {
        if let Ok(mut r) = r.lock() {
            into.add(&r.window);
            r.window.reset();
        }
    }
}
