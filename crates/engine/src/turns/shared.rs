//! What the client threads of a turn-taking run and its coordinator share.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// No server's turn: connections wait.
pub(crate) const NOBODY: usize = usize::MAX;
/// The run is over: connections finish and close.
pub(crate) const STOP: usize = usize::MAX - 1;

/// State the client threads and the coordinator share.
pub(crate) struct TurnShared {
    /// Whose turn it is (a server's index, NOBODY or STOP); connections check it per event.
    pub active: AtomicUsize,
    /// The same, for connections waiting for their turn to be woken.
    pub turn: watch::Sender<usize>,
    /// Each server's events in flight: a switch waits for the last server's to end.
    pub in_flight: Vec<AtomicU64>,
    /// Nanoseconds client threads polled without finding a response (`ClientWait::Poll`).
    pub idle_poll_ns: Arc<AtomicU64>,
    pub stop: AtomicBool,
    /// Why each server's load failed, if it did: that server gets no more turns, the others
    /// go on.
    pub failures: Vec<Mutex<Option<String>>>,
    /// Each server's connections whose source ended their events (a script's event()
    /// returned): when all have, the server has nothing left to measure.
    pub ended: Vec<AtomicU64>,
}

impl TurnShared {
    pub(crate) fn set_turn(&self, who: usize) {
        self.active.store(who, Ordering::SeqCst);
        self.turn.send_replace(who);
    }

    /// Server `server`'s load failed (the first reason is kept); the run stops when no
    /// server is left.
    pub fn fail(&self, server: usize, reason: String) {
        if let Ok(mut f) = self.failures[server].lock() {
            f.get_or_insert(reason);
        }
        if (0..self.failures.len()).all(|s| self.failure(s).is_some()) {
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    pub fn failure(&self, server: usize) -> Option<String> {
        self.failures[server].lock().ok()?.clone()
    }
}

/// One event of `server` counted in flight while it lives: dropped when the event ends, or
/// when its task ends any other way (a panic included), so a switch never waits on an event
/// that no longer exists.
pub(crate) struct InFlight<'a>(&'a AtomicU64);

impl<'a> InFlight<'a> {
    pub fn enter(shared: &'a TurnShared, server: usize) -> Self {
        let c = &shared.in_flight[server];
        c.fetch_add(1, Ordering::SeqCst);
        InFlight(c)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
