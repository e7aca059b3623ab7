//! What a run's client threads and its coordinator share: the stop flag, the counts the
//! ticks read (events started, in flight, queued, connections running), why connections
//! failed, when measuring ends, and the doorbell the coordinator waits on.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// State all client threads and the coordinator share. Touched a few times per event.
#[derive(Default)]
pub(crate) struct Shared {
    pub stop: AtomicBool,
    pub events_started: AtomicU64,
    pub in_flight: AtomicU64,
    pub queued: AtomicU64,
    pub running: AtomicU32,
    /// Connections opened so far (for the error when one cannot be).
    pub connected: AtomicU32,
    /// Why connections failed, each distinct reason once, in the order they came: a script's
    /// different errors in several threads are several lines, as sysbench prints them, while a
    /// thousand connections lost alike are one line (sysbench's logger folds such repeats too),
    /// not a thousand in the report and the results database.
    pub failures: Mutex<Vec<String>>,
    /// Measurement ends here (start + --time), once started.
    pub end: OnceLock<Option<Instant>>,
    /// Nanoseconds client threads spent polling without finding a response (ClientWait::Poll):
    /// CPU the client burnt by choice, not CPU the load needed.
    pub idle_poll_ns: Arc<AtomicU64>,
    /// What opening the connections cost (their times, the threads' CPU).
    pub connects: crate::connect::ConnectMeter,
    /// Rung when a client thread ends or the run stops (see `fail`).
    pub doorbell: crate::doorbell::Doorbell,
}

impl Shared {
    pub fn fail(&self, reason: String) {
        if let Ok(mut f) = self.failures.lock() {
            if !f.contains(&reason) {
                f.push(reason);
            }
        }
        self.stop.store(true, Ordering::SeqCst);
        self.doorbell.ring();
    }

    /// The run's failure: every connection's reason, one per line; None if none failed.
    pub fn failure(&self) -> Option<String> {
        let f = self.failures.lock().ok()?;
        (!f.is_empty()).then(|| f.join("\n"))
    }

    pub(crate) fn over(&self, now: Instant) -> bool {
        self.stop.load(Ordering::Relaxed)
            || matches!(self.end.get(), Some(Some(end)) if now >= *end)
    }
}
