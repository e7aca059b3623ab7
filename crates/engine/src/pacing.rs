//! Events that wait for a connection: the queue a client thread's connections take them
//! from, filled by open-loop arrivals (Poisson: exponential gaps, mean 1/rate, scheduled
//! cumulatively so that a late generator catches up with a burst instead of lowering the
//! offered rate) or by paced terminals' orders (`terminals.rs`).

use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bakeoff_workload::Rng;
use tokio::sync::Notify;

use crate::shared::Shared;
use crate::RunSpec;

/// An event waiting for a connection: its intended start and, for a terminal's, which
/// terminal (this thread's index) and its order.
pub(crate) struct Arrival {
    pub at: Instant,
    pub order: Option<(usize, Box<dyn Any>)>,
}

/// Events waiting for a connection (open loop and paced terminals), local to one client
/// thread.
#[derive(Default)]
pub(crate) struct Queue {
    pub q: RefCell<VecDeque<Arrival>>,
    pub notify: Notify,
}

pub struct Arrivals {
    rng: Rng,
    mean_gap_s: f64,
    next: Instant,
}

impl Arrivals {
    pub fn new(rate: f64, start: Instant, seed: u64) -> Arrivals {
        Arrivals {
            rng: Rng::seeded(seed),
            mean_gap_s: 1.0 / rate,
            next: start,
        }
    }

    /// The next intended start.
    pub fn next(&mut self) -> Instant {
        // 1 - u is in (0, 1], so the logarithm is finite.
        let gap = -(1.0 - self.rng.unit()).ln() * self.mean_gap_s;
        self.next += Duration::from_secs_f64(gap);
        self.next
    }
}

/// A timer to the microsecond for the arrivals: a timerfd the runtime's reactor watches.
/// tokio's own timer fires on millisecond ticks, so an arrival waited for with it started up
/// to a millisecond late (0.5 ms on average): pgbench's --rate reports that as schedule lag,
/// and the latency of an open-loop run counts it.
pub struct FineTimer {
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
}

impl FineTimer {
    /// Inside the runtime that will wait on it.
    pub fn new() -> std::io::Result<FineTimer> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscall; the descriptor is owned from here on.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        // SAFETY: an OwnedFd's descriptor stays open, and the same, until the AsyncFd drops it.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE)
        }
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(FineTimer { fd })
    }

    /// Wait until `at` (now when it has passed).
    pub async fn sleep_until(&self, at: Instant) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let fd = self.fd.get_ref().as_raw_fd();
        // A relative expiry: Instant is CLOCK_MONOTONIC, but its value is not exposed.
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: a valid timerfd and a valid itimerspec; no old value asked for.
        if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The expirations are never read: arming the timer again (above) zeroes their count,
        // and the reactor reports each expiration once (edge-triggered), so clearing its
        // readiness is enough. A read per arrival cost the open loop a system call per event
        // (pgbench -R waits in the poll it makes anyway). A wake before `at` (a readiness
        // left from an earlier arming) waits again.
        loop {
            let mut ready = self.fd.readable().await?;
            ready.clear_ready();
            if Instant::now() >= at {
                return Ok(());
            }
        }
    }
}

/// Open loop: this thread's share of the arrivals, queued for its connections.
pub(crate) async fn generate(
    spec: &RunSpec,
    shared: &Shared,
    index: u32,
    queue: &Queue,
    rate: f64,
    started: Instant,
) {
    // The threads the run has: as many as asked, at most one per connection.
    let threads = spec.client_threads.clamp(1, spec.connections.max(1));
    let mut arrivals = Arrivals::new(
        rate / threads as f64,
        started,
        spec.seed ^ (0xa5a5 + index as u64),
    );
    let limit = (spec.queue_limit / threads as usize).max(1);
    let fine = FineTimer::new().ok();
    loop {
        let at = arrivals.next();
        if at > Instant::now() {
            let precise = match &fine {
                Some(t) => t.sleep_until(at).await.is_ok(),
                None => false,
            };
            if !precise {
                tokio::time::sleep_until(at.into()).await;
            }
        }
        if shared.over(at) {
            break;
        }
        if queue.q.borrow().len() >= limit {
            shared.fail(format!(
                "the event queue is full ({} events waiting): the server or the {} connections cannot keep up with --rate={rate}; lower --rate or raise --threads",
                spec.queue_limit, spec.connections
            ));
            break;
        }
        queue.q.borrow_mut().push_back(Arrival { at, order: None });
        shared.queued.fetch_add(1, Ordering::Relaxed);
        queue.notify.notify_one();
    }
    queue.notify.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_rate_matches_and_gaps_are_exponential() {
        let start = Instant::now();
        let mut a = Arrivals::new(1000.0, start, 5);
        let mut last = start;
        let mut gaps = Vec::new();
        for _ in 0..100_000 {
            let t = a.next();
            gaps.push((t - last).as_secs_f64());
            last = t;
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00002, "mean gap {mean}");
        // Exponential: P(gap > mean) = 1/e.
        let over = gaps.iter().filter(|&&g| g > 0.001).count() as f64 / gaps.len() as f64;
        assert!(
            (over - (-1.0f64).exp()).abs() < 0.01,
            "P(gap > mean) = {over}"
        );
    }
}
