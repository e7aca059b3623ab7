//! sysbench's `threads` and `mutex` tests: the scheduler and the mutex implementation under
//! contention, event for event as sysbench runs them.
//!
//! - threads: an event takes the next of `locks` mutexes (round-robin over all threads) and
//!   `yields` times locks it, yields the CPU and unlocks it.
//! - mutex: each thread runs one event: `locks` times, spin `loops` empty iterations, then
//!   lock a random one of `num` mutexes and bump a shared counter under it.

use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bakeoff_workload::Rng;

use crate::runner::Worker;

pub struct Threads {
    locks: Arc<Vec<Mutex<()>>>,
    next: Arc<AtomicU64>,
    yields: u32,
}

/// One threads-test worker per thread, sharing the mutexes and the round-robin counter.
pub fn threads_workers(threads: u32, yields: u32, locks: u32) -> Vec<Threads> {
    let shared = Arc::new(
        (0..locks.max(1))
            .map(|_| Mutex::new(()))
            .collect::<Vec<_>>(),
    );
    let next = Arc::new(AtomicU64::new(0));
    (0..threads)
        .map(|_| Threads {
            locks: shared.clone(),
            next: next.clone(),
            yields,
        })
        .collect()
}

impl Worker for Threads {
    fn event(&mut self) -> Result<bool, String> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) as usize % self.locks.len();
        for _ in 0..self.yields {
            let held = self.locks[i].lock().map_err(|e| e.to_string())?;
            std::thread::yield_now();
            drop(held);
        }
        Ok(true)
    }
}

pub struct Mutexes {
    locks: Arc<Vec<Mutex<u64>>>,
    rng: Rng,
    count: u32,
    loops: u32,
    done: bool,
}

/// One mutex-test worker per thread, sharing `num` mutexes.
pub fn mutex_workers(threads: u32, num: u32, count: u32, loops: u32, seed: u64) -> Vec<Mutexes> {
    let shared = Arc::new((0..num.max(1)).map(|_| Mutex::new(0)).collect::<Vec<_>>());
    (0..threads)
        .map(|t| Mutexes {
            locks: shared.clone(),
            rng: Rng::seeded(seed ^ u64::from(t)),
            count,
            loops,
            done: false,
        })
        .collect()
}

impl Worker for Mutexes {
    /// The thread's one event; afterwards it has no more work (sysbench: one request a thread).
    fn event(&mut self) -> Result<bool, String> {
        if self.done {
            return Ok(false);
        }
        self.done = true;
        let last = self.locks.len() as u32 - 1;
        for _ in 0..self.count.max(1) {
            let i = self.rng.uniform(0, last) as usize;
            for _ in 0..self.loops {
                compiler_fence(Ordering::SeqCst); // sysbench's ck_pr_barrier(): an empty loop kept
            }
            *self.locks[i].lock().map_err(|e| e.to_string())? += 1;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutex_thread_runs_one_event_of_every_lock_then_stops() {
        let mut w = mutex_workers(2, 4, 10, 3, 1);
        assert!(w[0].event().unwrap());
        assert!(!w[0].event().unwrap());
        let total: u64 = w[0].locks.iter().map(|m| *m.lock().unwrap()).sum();
        assert_eq!(total, 10);
        assert!(w[1].event().unwrap());
        let total: u64 = w[1].locks.iter().map(|m| *m.lock().unwrap()).sum();
        assert_eq!(total, 20, "the two threads share the mutexes");
    }

    #[test]
    fn threads_events_take_the_locks_round_robin() {
        let mut w = threads_workers(2, 5, 3);
        for _ in 0..4 {
            assert!(w[0].event().unwrap());
        }
        assert_eq!(w[1].next.load(Ordering::Relaxed), 4);
    }
}
