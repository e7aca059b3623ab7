//! Paced terminals (`RunSpec::terminals`): users that are not connections.
//!
//! Each client thread holds its share of the terminals and one pacer task: a heap of the
//! terminals' next submissions, slept on until the earliest. A terminal whose wait (think,
//! then keying) has ended submits its order to the thread's queue, and the first free
//! connection runs it; when it is done, the terminal waits again from then. A terminal
//! costs its own state and a heap entry, not a task, a timer or a connection: a hundred
//! thousand wait on one thread.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bakeoff_workload::Terminal;
use tokio::sync::Notify;

use crate::pacing::{Arrival, Queue};
use crate::shared::Shared;

/// One client thread's terminals and when each submits next.
pub(crate) struct Pacer {
    terminals: RefCell<Vec<Box<dyn Terminal>>>,
    /// (when, terminal) of every terminal that is waiting (thinking or keying).
    due: RefCell<BinaryHeap<Reverse<(Instant, usize)>>>,
    /// Rung when a terminal is back in `due`: its time may be the earliest.
    wake: Notify,
}

impl Pacer {
    /// Terminals `ids`, made by `make` (None where the workload has none to make).
    pub fn new(
        ids: impl Iterator<Item = u32>,
        mut make: impl FnMut(u32) -> Option<Box<dyn Terminal>>,
    ) -> Option<Pacer> {
        let terminals = ids.map(&mut make).collect::<Option<Vec<_>>>()?;
        Some(Pacer {
            terminals: RefCell::new(terminals),
            due: RefCell::new(BinaryHeap::new()),
            wake: Notify::new(),
        })
    }

    pub fn len(&self) -> usize {
        self.terminals.borrow().len()
    }

    /// Terminal `i`'s order (class `class`, 0 for none yet) is done at `now`: it waits again.
    pub fn done(&self, i: usize, class: u8, now: Instant) {
        let at = now + self.terminals.borrow_mut()[i].wait(class);
        let mut due = self.due.borrow_mut();
        // The pacer sleeps until the earliest wait ends: only an earlier one needs it awake.
        let earliest = due.peek().is_none_or(|Reverse((first, _))| at < *first);
        due.push(Reverse((at, i)));
        if earliest {
            self.wake.notify_one();
        }
    }

    /// Submit every terminal's order as its wait ends, from `started` until the run is over.
    pub async fn run(&self, queue: &Queue, shared: &Shared, started: Instant) {
        for i in 0..self.len() {
            self.done(i, 0, started);
        }
        loop {
            let next = self.due.borrow().peek().map(|Reverse((at, _))| *at);
            let now = Instant::now();
            if shared.over(now) {
                break;
            }
            if next.is_some_and(|at| at <= now) {
                self.submit_due(queue, shared, now);
                continue;
            }
            // Wake at least every 100 ms to notice the end of the run.
            let until = (now + Duration::from_millis(100))
                .min(next.unwrap_or(now + Duration::from_secs(1)));
            let _ = tokio::time::timeout_at(until.into(), self.wake.notified()).await;
        }
        queue.notify.notify_waiters();
    }

    /// Every terminal whose wait has ended by `now` submits its order.
    fn submit_due(&self, queue: &Queue, shared: &Shared, now: Instant) {
        let mut due = self.due.borrow_mut();
        let mut terminals = self.terminals.borrow_mut();
        while let Some(Reverse((at, i))) = due.peek().copied() {
            if at > now {
                break;
            }
            due.pop();
            let order = terminals[i].order();
            queue.q.borrow_mut().push_back(Arrival {
                at,
                order: Some((i, order)),
            });
            shared.queued.fetch_add(1, Ordering::Relaxed);
            queue.notify.notify_one();
        }
    }
}
