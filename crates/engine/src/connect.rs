//! What connecting cost: each connection's open timed (connect, TLS and auth handshakes, and
//! the statements its session prepares), and the client threads' own CPU while they opened
//! them. A connect storm (a thousand connections at once, a pool's reconnects) costs the
//! client and the server before any event runs, and TLS multiplies it: this is how much.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

/// The figures of a run's connecting phase.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConnectCost {
    pub connections: u32,
    /// From the first open to the last connection ready.
    pub seconds: f64,
    /// Each connection's open: median, 99th percentile and the slowest.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Client CPU (the client threads', user + system) per connection opened.
    pub client_cpu_us_per_connection: f64,
}

/// Gathered by the client threads as they open their connections.
#[derive(Default)]
pub(crate) struct ConnectMeter {
    cpu_ns: AtomicU64,
    opens_us: Mutex<Vec<u64>>,
}

impl ConnectMeter {
    /// This thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
    pub(crate) fn thread_cpu_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given and nothing else.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc != 0 {
            return 0;
        }
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// A client thread spent `ns` of CPU opening its connections.
    pub(crate) fn add_cpu(&self, ns: u64) {
        self.cpu_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// One connection opened in `took`.
    pub(crate) fn add_open(&self, took: Duration) {
        if let Ok(mut v) = self.opens_us.lock() {
            v.push(took.as_micros() as u64);
        }
    }

    /// The figures, once every connection is open; None before any was.
    pub(crate) fn cost(&self, phase: Duration) -> Option<ConnectCost> {
        let mut us = self.opens_us.lock().ok()?.clone();
        if us.is_empty() {
            return None;
        }
        us.sort_unstable();
        let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
        let n = us.len() as u32;
        Some(ConnectCost {
            connections: n,
            seconds: phase.as_secs_f64(),
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: at(1.0),
            client_cpu_us_per_connection: self.cpu_ns.load(Ordering::Relaxed) as f64
                / 1000.0
                / f64::from(n),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opens_give_percentiles_and_the_cpu_is_shared_out() {
        let m = ConnectMeter::default();
        assert!(m.cost(Duration::from_secs(1)).is_none());
        for ms in 1..=100 {
            m.add_open(Duration::from_millis(ms));
        }
        m.add_cpu(50_000_000);
        let c = m.cost(Duration::from_millis(1500)).unwrap();
        assert_eq!(c.connections, 100);
        assert_eq!((c.p50_ms, c.p99_ms, c.max_ms), (51.0, 99.0, 100.0));
        assert_eq!(c.client_cpu_us_per_connection, 500.0);
        assert_eq!(c.seconds, 1.5);
    }

    #[test]
    fn a_busy_thread_reads_its_cpu_going_up() {
        let before = ConnectMeter::thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(ConnectMeter::thread_cpu_ns() > before);
    }
}
