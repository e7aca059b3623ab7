//! The event loop host probes share: N OS threads, each running its own [`Worker`]'s events
//! back to back until the time is up, the events run out or the worker has no more work, as
//! sysbench's worker threads do. Latency per event into a thread-local window, merged into the
//! shared one in batches (a lock per event would cost as much as a 1 KiB memory pass).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bakeoff_telemetry::{Checkpoint, Checkpoints, SbHistogram, Window, WindowSummary};
use serde::Serialize;

/// One thread's work. `event` runs one event, or returns Ok(false) without doing anything
/// when this thread's work is done (memory's total size, say).
pub trait Worker: Send {
    fn event(&mut self) -> Result<bool, String>;
    /// After the last event (fileio's fsync at the end); not timed.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct ProbeSpec {
    pub time: Option<Duration>,
    pub events: Option<u64>,
    pub tick: Duration,
    pub percentile: f64,
    /// Events per second, Poisson arrivals queued for the threads (sysbench's --rate); an
    /// event's latency then runs from its arrival. None: each thread runs events back to back.
    pub rate: Option<f64>,
    /// sysbench's --report-checkpoints: times into the run at which the report since the
    /// previous one is taken.
    pub checkpoints: Vec<Duration>,
}

/// sysbench's event queue (MAX_QUEUE_LEN): arrivals the threads have not taken yet. A full
/// queue ends the run: the threads cannot keep up with the rate.
const QUEUE_LIMIT: usize = 131_072;

/// What sysbench says when its queue fills.
pub const QUEUE_FULL: &str = "The event queue is full. This means the worker threads are unable to keep up with the specified event generation rate";

/// Arrivals waiting for a thread (open loop).
#[derive(Default)]
struct Arrivals {
    queue: Mutex<std::collections::VecDeque<Instant>>,
    ready: std::sync::Condvar,
}

impl Arrivals {
    /// The next arrival, waiting for one; None once the run stops.
    fn next(&self, shared: &Shared, end: Option<Instant>) -> Option<Instant> {
        let mut q = self.queue.lock().ok()?;
        loop {
            if shared.stop.load(Ordering::Relaxed) || end.is_some_and(|e| Instant::now() >= e) {
                return None;
            }
            if let Some(t) = q.pop_front() {
                return Some(t);
            }
            q = self
                .ready
                .wait_timeout(q, Duration::from_millis(50))
                .ok()?
                .0;
        }
    }
}

/// The generator: Poisson arrivals at `rate` until the end, the stop, or a full queue.
fn generate(arrivals: &Arrivals, shared: &Shared, rate: f64, end: Option<Instant>, seed: u64) {
    let mut rng = bakeoff_workload::Rng::seeded(seed);
    let mean_ns = 1e9 / rate.max(1e-9);
    let mut next = Instant::now();
    loop {
        // Exponential gaps: -ln(U) x mean, U uniform in (0, 1].
        let u = (f64::from(rng.uniform(1, u32::MAX)) / f64::from(u32::MAX)).max(1e-12);
        next += Duration::from_nanos((-u.ln() * mean_ns) as u64);
        let now = Instant::now();
        if shared.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
            break;
        }
        if next > now {
            std::thread::sleep(next - now);
        }
        let Ok(mut q) = arrivals.queue.lock() else {
            break;
        };
        if q.len() >= QUEUE_LIMIT {
            let _ = shared.failure.set(QUEUE_FULL.to_string());
            shared.stop.store(true, Ordering::SeqCst);
            break;
        }
        q.push_back(Instant::now());
        drop(q);
        arrivals.ready.notify_one();
    }
    arrivals.ready.notify_all();
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeTick {
    pub t: f64,
    #[serde(flatten)]
    pub window: WindowSummary,
}

/// One thread's events and latency sum, for sysbench's "threads fairness".
pub type ThreadTotals = bakeoff_telemetry::Totals;

#[derive(Debug, Clone, Serialize)]
pub struct ProbeResult {
    pub elapsed_seconds: f64,
    pub total: WindowSummary,
    pub ticks: Vec<ProbeTick>,
    pub threads: Vec<ThreadTotals>,
    pub interrupted: bool,
    pub failure: Option<String>,
    #[serde(skip)]
    pub histogram: SbHistogram,
    /// The reports taken at --report-checkpoints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Checkpoint>,
    /// After checkpoints: the stretch since the last one (sysbench's final report then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_checkpoint: Option<Checkpoint>,
}

impl ProbeResult {
    /// What sysbench's final report covers: the run, or the stretch after the last checkpoint.
    pub fn last_stretch(&self) -> Checkpoint {
        self.after_checkpoint
            .clone()
            .unwrap_or_else(|| Checkpoint::whole(self.elapsed_seconds, &self.total, &self.threads))
    }
}

/// What a probe's run tells as it goes.
pub trait ProbeObserver {
    fn on_tick(&mut self, _t: &ProbeTick) {}
    fn on_checkpoint(&mut self, _c: &Checkpoint) {}
}

/// An observer that wants nothing (the study's host profile).
pub struct Quiet;

impl ProbeObserver for Quiet {}

struct Shared {
    stop: AtomicBool,
    started: AtomicU64,
    failure: OnceLock<String>,
}

struct Slot {
    window: Window,
    totals: ThreadTotals,
}

/// How often a thread hands its recordings over: whichever comes first.
const FLUSH_EVENTS: u64 = 4096;
const FLUSH_EVERY: Duration = Duration::from_millis(20);

pub fn run(
    spec: &ProbeSpec,
    workers: Vec<Box<dyn Worker>>,
    interrupt: &AtomicBool,
    observer: &mut dyn ProbeObserver,
) -> ProbeResult {
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        started: AtomicU64::new(0),
        failure: OnceLock::new(),
    });
    let slots: Vec<Arc<Mutex<Slot>>> = workers
        .iter()
        .map(|_| {
            Arc::new(Mutex::new(Slot {
                window: Window::default(),
                totals: ThreadTotals::default(),
            }))
        })
        .collect();
    let start = Instant::now();
    let end = spec.time.map(|t| start + t);
    // Threads say when they are done, so the coordinator can sleep until the next tick
    // instead of polling every few milliseconds on the CPUs the probe measures.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let arrivals = spec.rate.map(|_| Arc::new(Arrivals::default()));
    let handles: Vec<_> = workers
        .into_iter()
        .zip(&slots)
        .map(|(w, slot)| {
            let (shared, slot, max, done) =
                (shared.clone(), slot.clone(), spec.events, done_tx.clone());
            let arrivals = arrivals.clone();
            std::thread::spawn(move || {
                thread_loop(w, &shared, &slot, end, max, arrivals.as_deref());
                let _ = done.send(());
            })
        })
        .collect();
    drop(done_tx);
    let generator = match (&arrivals, spec.rate) {
        (Some(a), Some(rate)) => {
            let (a, shared) = (a.clone(), shared.clone());
            Some(std::thread::spawn(move || {
                generate(&a, &shared, rate, end, 0x5eed)
            }))
        }
        _ => None,
    };
    let mut running = handles.len();
    let mut total = Window::default();
    let mut tick = Window::default();
    let mut ticks = Vec::new();
    let mut checkpoints = Checkpoints::new(&spec.checkpoints, start, spec.percentile);
    let (mut last, mut next) = (start, start + spec.tick);
    let mut interrupted = false;
    while running > 0 {
        // Wake for the next tick, a thread finishing, or every 100 ms to see Ctrl-C.
        let wait = Duration::from_millis(100).min(next.saturating_duration_since(Instant::now()));
        match done_rx.recv_timeout(wait) {
            Ok(()) => running -= 1,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => running = 0,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if interrupt.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            shared.stop.store(true, Ordering::SeqCst);
        }
        let now = Instant::now();
        if now >= next && end.is_none_or(|e| next <= e) && !interrupted {
            drain_kept(&slots, &mut tick, &mut checkpoints);
            let t = ProbeTick {
                t: (now - start).as_secs_f64(),
                window: tick.summary((now - last).as_secs_f64(), spec.percentile),
            };
            observer.on_tick(&t);
            ticks.push(t);
            total.add(&tick);
            tick.reset();
            (last, next) = (now, next + spec.tick);
        }
        let over = interrupted || end.is_some_and(|e| now >= e);
        if running > 0 && !over && checkpoints.due(now - start) {
            drain_kept(&slots, &mut tick, &mut checkpoints);
            let c = checkpoints.take(now, start, totals_of(&slots));
            observer.on_checkpoint(&c);
        }
    }
    for h in handles {
        let _ = h.join();
    }
    shared.stop.store(true, Ordering::SeqCst);
    if let Some(g) = generator {
        let _ = g.join();
    }
    let elapsed = start.elapsed();
    // What a checkpoint drained into a tick that never closed (the run ended first).
    total.add(&tick);
    drain_kept(&slots, &mut total, &mut checkpoints);
    let threads = totals_of(&slots);
    let (checkpoints, after_checkpoint) = checkpoints.finish(start + elapsed, start, &threads);
    ProbeResult {
        elapsed_seconds: elapsed.as_secs_f64(),
        total: total.summary(elapsed.as_secs_f64(), spec.percentile),
        ticks,
        threads,
        interrupted,
        failure: shared.failure.get().cloned(),
        histogram: total.sb_histogram().clone(),
        checkpoints,
        after_checkpoint,
    }
}

fn totals_of(slots: &[Arc<Mutex<Slot>>]) -> Vec<ThreadTotals> {
    slots
        .iter()
        .map(|s| s.lock().map(|s| s.totals).unwrap_or_default())
        .collect()
}

/// [`drain`], through the checkpoints (which keep the stretch since the last one, if asked).
fn drain_kept(slots: &[Arc<Mutex<Slot>>], into: &mut Window, cps: &mut Checkpoints) {
    cps.collect(into, |w| drain(slots, w));
}

fn drain(slots: &[Arc<Mutex<Slot>>], into: &mut Window) {
    for s in slots {
        if let Ok(mut s) = s.lock() {
            into.add(&s.window);
            s.window.reset();
        }
    }
}

fn thread_loop(
    mut w: Box<dyn Worker>,
    shared: &Shared,
    slot: &Mutex<Slot>,
    end: Option<Instant>,
    max: Option<u64>,
    arrivals: Option<&Arrivals>,
) {
    let mut local = Window::default();
    let mut totals = ThreadTotals::default();
    let mut last_flush = Instant::now();
    let flush = |local: &mut Window, totals: &mut ThreadTotals| {
        if let Ok(mut s) = slot.lock() {
            s.window.add(local);
            s.totals.events += totals.events;
            s.totals.latency_sum_ns += totals.latency_sum_ns;
        }
        local.reset();
        *totals = ThreadTotals::default();
    };
    loop {
        // Three clock reads per event, where sysbench's worker loop makes them: the time
        // limit (sb_more_events), the event's start and its stop. Reusing one reading for
        // two would be leaner, but a short event's figure (a 1 KiB memory pass takes about
        // 50 ns) would then not mean what sysbench's means.
        let now = Instant::now();
        if shared.stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
            break;
        }
        // Open loop: the event starts when it arrived, waiting in the queue included.
        let arrived = match arrivals {
            Some(a) => match a.next(shared, end) {
                Some(t) => Some(t),
                None => break,
            },
            None => None,
        };
        if max.is_some_and(|m| shared.started.fetch_add(1, Ordering::Relaxed) >= m) {
            break;
        }
        let t0 = arrived.unwrap_or_else(Instant::now);
        match w.event() {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                let _ = shared.failure.set(e);
                shared.stop.store(true, Ordering::SeqCst);
                break;
            }
        }
        let now = Instant::now();
        let ns = (now - t0).as_nanos() as u64;
        local.record_event(ns);
        totals.events += 1;
        totals.latency_sum_ns += ns;
        if totals.events >= FLUSH_EVENTS || now - last_flush >= FLUSH_EVERY {
            flush(&mut local, &mut totals);
            last_flush = now;
        }
    }
    if let Err(e) = w.finish() {
        let _ = shared.failure.set(e);
    }
    flush(&mut local, &mut totals);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events of 5 ms each.
    struct Sleepy;

    impl Worker for Sleepy {
        fn event(&mut self) -> Result<bool, String> {
            std::thread::sleep(Duration::from_millis(5));
            Ok(true)
        }
    }

    #[derive(Default)]
    struct Taken(Vec<Checkpoint>);

    impl ProbeObserver for Taken {
        fn on_checkpoint(&mut self, c: &Checkpoint) {
            self.0.push(c.clone());
        }
    }

    #[test]
    fn a_run_that_ends_between_ticks_after_a_checkpoint_keeps_every_event() {
        // 300 events of 5 ms: the run ends near 1.5 s, its 10 s tick never closes, and the
        // checkpoint at 1 s drained part of the run into that tick.
        let spec = ProbeSpec {
            time: None,
            events: Some(300),
            tick: Duration::from_secs(10),
            percentile: 95.0,
            rate: None,
            checkpoints: vec![Duration::from_secs(1)],
        };
        let mut taken = Taken::default();
        let r = run(
            &spec,
            vec![Box::new(Sleepy)],
            &AtomicBool::new(false),
            &mut taken,
        );
        assert_eq!(r.total.events, 300, "the whole run's total");
        assert_eq!(taken.0.len(), 1);
        let after = r
            .after_checkpoint
            .expect("the stretch after the checkpoint");
        assert_eq!(taken.0[0].total.events + after.total.events, 300);
        assert!(taken.0[0].total.events > 0 && after.total.events > 0);
    }
}
