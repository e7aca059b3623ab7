//! How client threads wake the coordinator. The coordinator's work has deadlines it knows
//! (the next tick, the warmup's end, the run's end, a checkpoint, the grace period) and two
//! events it does not: a client thread ending, and the run stopping on a failure. Threads
//! ring for those, so the coordinator sleeps to its next deadline instead of waking every few
//! milliseconds to look (200 wakeups a second, each one taking a CPU from the load and the
//! server it measures).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

#[derive(Default)]
pub(crate) struct Doorbell {
    rung: Mutex<bool>,
    bell: Condvar,
    /// Client threads that have ended, counted as they end (a panic included).
    ended: AtomicU32,
}

impl Doorbell {
    pub fn ring(&self) {
        if let Ok(mut rung) = self.rung.lock() {
            *rung = true;
        }
        self.bell.notify_one();
    }

    /// Sleep until `deadline` or a ring, whichever comes first; a ring that came while the
    /// coordinator was awake ends the next wait at once, so none is missed.
    pub fn wait_until(&self, deadline: Instant) {
        let Ok(mut rung) = self.rung.lock() else {
            return;
        };
        while !*rung {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match self.bell.wait_timeout(rung, deadline - now) {
                Ok((r, _)) => rung = r,
                Err(_) => return,
            }
        }
        *rung = false;
    }

    /// A guard a client thread holds for its life: dropped when the thread ends, however it
    /// ends, it counts the thread and rings.
    pub fn hold(&self) -> Ending<'_> {
        Ending(self)
    }

    pub fn ended(&self) -> u32 {
        self.ended.load(Ordering::SeqCst)
    }
}

pub(crate) struct Ending<'a>(&'a Doorbell);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
        self.0.ring();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_wait_ends_at_its_deadline_or_at_a_ring_even_one_rung_before_it_began() {
        let bell = Arc::new(Doorbell::default());
        let t = Instant::now();
        bell.wait_until(t + Duration::from_millis(30));
        assert!(t.elapsed() >= Duration::from_millis(30));

        bell.ring();
        let t = Instant::now();
        bell.wait_until(t + Duration::from_secs(30));
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "a ring before the wait was lost"
        );

        let b = bell.clone();
        let h = std::thread::spawn(move || {
            let _end = b.hold();
            std::thread::sleep(Duration::from_millis(20));
            panic!("a client thread that panics still counts as ended");
        });
        let t = Instant::now();
        while bell.ended() == 0 && t.elapsed() < Duration::from_secs(30) {
            bell.wait_until(Instant::now() + Duration::from_secs(30));
        }
        assert!(h.join().is_err());
        assert_eq!(bell.ended(), 1);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
