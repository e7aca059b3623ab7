//! Which connect failures are a full listen queue, and how long to wait before trying again.
//!
//! A server accepts connections from a listen queue of `back_log` entries (capped by the
//! kernel's net.core.somaxconn). When a thousand clients connect at once the queue overflows:
//! a non-blocking connect on a unix socket then fails with EAGAIN, and a TCP connect is refused
//! (tcp_abort_on_overflow=1) or reset during the handshake. libmysqlclient's blocking connect
//! simply waits for room, which is why sysbench gets through. bakeoff waits the same way: it
//! tries again, with capped and jittered backoff, until the connect timeout runs out.

use std::io;
use std::time::Duration;

use crate::DriverError;

/// The first wait; it doubles up to [`MAX_DELAY`].
const FIRST_DELAY: Duration = Duration::from_millis(1);
/// Long enough not to hammer a server that is accepting slowly, short enough that a freed
/// queue slot is taken soon.
const MAX_DELAY: Duration = Duration::from_millis(100);

/// The kernel's cap on every listen queue on this host (net.core.somaxconn), when readable:
/// a server's back_log above it is cut down to it.
pub fn somaxconn() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// True when `e` means "the server's listen queue is full right now", not "nothing listens"
/// or "the server said no". `tcp` is whether the endpoint is TCP: on a unix socket a refusal
/// means there is no listener, so it is final there.
///
/// A TCP refusal is a full queue only where this endpoint has accepted a connection of this
/// process before (a kernel set to reset on overflow, `tcp_abort_on_overflow`): refused from
/// the first, nothing listens there, and waiting out the connect timeout helps nobody.
pub(crate) fn is_queue_full(e: &DriverError, tcp: bool) -> bool {
    match e {
        DriverError::Connect { source, endpoint } => match source.kind() {
            io::ErrorKind::WouldBlock => true,
            io::ErrorKind::ConnectionRefused => tcp && answered_before(endpoint),
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => tcp,
            _ => false,
        },
        // Accepted by the kernel, then dropped before the server's greeting: an overflowing
        // TCP accept queue resets connections it could not keep.
        DriverError::Io { op, source, .. } if *op == "handshake" => {
            tcp && matches!(
                source.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::BrokenPipe
            )
        }
        _ => false,
    }
}

/// Endpoints that accepted a connection of this process (a handful: one per server given).
static ANSWERED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Note that `endpoint` accepted a connection.
pub(crate) fn answered(endpoint: &str) {
    let mut a = ANSWERED.lock().unwrap_or_else(|p| p.into_inner());
    if !a.iter().any(|e| e == endpoint) {
        a.push(endpoint.to_string());
    }
}

fn answered_before(endpoint: &str) -> bool {
    let a = ANSWERED.lock().unwrap_or_else(|p| p.into_inner());
    a.iter().any(|e| e == endpoint)
}

/// Capped exponential backoff with jitter, so clients that failed together do not all come
/// back together.
pub(crate) struct Backoff {
    next: Duration,
    rng: u64,
}

impl Backoff {
    pub(crate) fn new(seed: u64) -> Backoff {
        Backoff {
            next: FIRST_DELAY,
            rng: seed | 1,
        }
    }

    /// The next wait: between half and all of the current step, which then doubles.
    pub(crate) fn next_delay(&mut self) -> Duration {
        // xorshift64: jitter needs no quality, only spread.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let step = self.next;
        self.next = (self.next * 2).min(MAX_DELAY);
        let frac = 0.5 + (self.rng % 1024) as f64 / 2048.0;
        step.mul_f64(frac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connect_err(kind: io::ErrorKind) -> DriverError {
        DriverError::Connect {
            endpoint: "x".into(),
            source: kind.into(),
        }
    }

    #[test]
    fn a_full_queue_is_retried_and_a_missing_listener_is_not() {
        assert!(is_queue_full(
            &connect_err(io::ErrorKind::WouldBlock),
            false
        ));
        assert!(is_queue_full(&connect_err(io::ErrorKind::WouldBlock), true));
        // Refused over TCP: a full queue only once the endpoint has answered before.
        assert!(!is_queue_full(
            &connect_err(io::ErrorKind::ConnectionRefused),
            true
        ));
        answered("x");
        assert!(is_queue_full(
            &connect_err(io::ErrorKind::ConnectionRefused),
            true
        ));
        // A unix socket that refuses has no listener behind it.
        assert!(!is_queue_full(
            &connect_err(io::ErrorKind::ConnectionRefused),
            false
        ));
        assert!(!is_queue_full(&connect_err(io::ErrorKind::NotFound), false));
        let reset = DriverError::Io {
            endpoint: "x".into(),
            op: "handshake",
            source: io::ErrorKind::ConnectionReset.into(),
        };
        assert!(is_queue_full(&reset, true));
        let later = DriverError::Io {
            endpoint: "x".into(),
            op: "query",
            source: io::ErrorKind::ConnectionReset.into(),
        };
        assert!(!is_queue_full(&later, true));
    }

    #[test]
    fn backoff_grows_to_its_cap_and_stays_jittered() {
        let mut b = Backoff::new(42);
        let waits: Vec<Duration> = (0..20).map(|_| b.next_delay()).collect();
        assert!(waits[0] <= FIRST_DELAY && waits[0] >= FIRST_DELAY / 2);
        assert!(waits.iter().all(|w| *w <= MAX_DELAY));
        assert!(waits[19] >= MAX_DELAY / 2, "{waits:?}");
        let distinct: std::collections::BTreeSet<_> = waits[10..].iter().collect();
        assert!(distinct.len() > 1, "jitter: {waits:?}");
    }
}
