//! Live metrics for the dashboards users already have: an OpenMetrics endpoint
//! (`--metrics-addr`) that Prometheus scrapes during a run or a study. It serves the latest
//! tick (throughput, latency percentiles, errors, the server's CPU and memory) with what the
//! run is (labels), and counters since the run began.
//!
//! The endpoint is its own thread on its own socket: a scraper that connects and says
//! nothing is dropped after a short read timeout, one request is read at most 8 KiB, and
//! nothing it does reaches the run's threads, which only swap in the latest figures.

use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{Telemetry, WindowSummary};

/// What the endpoint serves: the run's labels, its latest tick, and counters since it began.
#[derive(Debug, Clone, Default)]
struct Figures {
    labels: Vec<(String, String)>,
    running: bool,
    tps: f64,
    qps: f64,
    /// (quantile, ms) of the latest tick.
    latency: Vec<(f64, f64)>,
    events: u64,
    errors: u64,
    reconnects: u64,
    server_cpu_seconds: Option<f64>,
    server_cpus_busy: Option<f64>,
    server_rss_bytes: Option<u64>,
}

/// The figures a run publishes as it goes; cheap to update from a tick.
#[derive(Debug, Clone, Default)]
pub struct Live {
    figures: Arc<Mutex<Figures>>,
}

impl Live {
    /// A run starts: its labels (study, variant, workload, threads...), counters from zero.
    pub fn begin_run(&self, labels: &[(&str, String)]) {
        let mut f = self.lock();
        *f = Figures {
            labels: labels
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            running: true,
            ..Figures::default()
        };
    }

    /// A tick closed: its rates and percentiles, added to the counters.
    pub fn tick(&self, w: &WindowSummary, telemetry: Option<&Telemetry>) {
        let mut f = self.lock();
        f.tps = w.tps;
        f.qps = w.qps;
        let l = &w.latency;
        f.latency = vec![
            (0.5, l.p50_ms),
            (0.9, l.p90_ms),
            (0.95, l.p95_ms),
            (0.99, l.p99_ms),
            (0.999, l.p999_ms),
        ];
        f.events += w.events;
        f.errors += w.errors;
        f.reconnects += w.reconnects;
        if let Some(s) = telemetry.and_then(|t| t.server.as_ref().map(|s| (t.seconds, s))) {
            let (seconds, server) = s;
            let cpu = server.cpu_user_seconds + server.cpu_sys_seconds;
            f.server_cpu_seconds = Some(f.server_cpu_seconds.unwrap_or(0.0) + cpu);
            f.server_cpus_busy = (seconds > 0.0).then(|| cpu / seconds);
            f.server_rss_bytes = Some(server.rss_bytes);
        }
    }

    /// The run ended: its last figures stay, marked as not running.
    pub fn end_run(&self) {
        self.lock().running = false;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Figures> {
        self.figures.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The exposition: OpenMetrics 1.0 text, or Prometheus' 0.0.4 text for a scraper that
    /// does not ask for OpenMetrics (they differ in counters' TYPE names and the `# EOF`).
    pub fn render(&self, openmetrics: bool) -> String {
        let f = self.lock().clone();
        let mut out = String::new();
        let labels = |extra: &[(&str, String)]| -> String {
            let all: Vec<String> = f
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .chain(extra.iter().map(|(k, v)| (*k, v.as_str())))
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            match all.is_empty() {
                true => String::new(),
                false => format!("{{{}}}", all.join(",")),
            }
        };
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
            // A counter's samples end in _total; OpenMetrics types the family without it,
            // Prometheus' text format with it.
            let sample = match kind {
                "counter" => format!("{name}_total"),
                _ => name.to_string(),
            };
            let typed = if openmetrics { name } else { sample.as_str() };
            let _ = writeln!(out, "# TYPE {typed} {kind}");
            let _ = writeln!(out, "# HELP {typed} {help}");
            for (l, v) in samples {
                let _ = writeln!(out, "{sample}{l} {v}");
            }
        };
        let none = labels(&[]);
        // One sample each, under the run's labels; the server's only where it was read.
        let scalars: [(&str, &str, &str, Option<f64>); 9] = [
            (
                "bakeoff_running",
                "gauge",
                "1 while a run is measuring, 0 after it ended.",
                Some(f64::from(u8::from(f.running))),
            ),
            (
                "bakeoff_events_per_second",
                "gauge",
                "Events (transactions) per second over the latest tick.",
                Some(f.tps),
            ),
            (
                "bakeoff_queries_per_second",
                "gauge",
                "Statements per second over the latest tick.",
                Some(f.qps),
            ),
            (
                "bakeoff_events",
                "counter",
                "Events since the run began.",
                Some(f.events as f64),
            ),
            (
                "bakeoff_errors",
                "counter",
                "Errors since the run began (ignored ones included).",
                Some(f.errors as f64),
            ),
            (
                "bakeoff_reconnects",
                "counter",
                "Reconnects since the run began.",
                Some(f.reconnects as f64),
            ),
            (
                "bakeoff_server_cpu_seconds",
                "counter",
                "The server's CPU seconds (user and system) since the run began.",
                f.server_cpu_seconds,
            ),
            (
                "bakeoff_server_cpus_busy",
                "gauge",
                "CPUs the server kept busy over the latest tick.",
                f.server_cpus_busy,
            ),
            (
                "bakeoff_server_resident_bytes",
                "gauge",
                "The server's resident memory at the latest tick.",
                f.server_rss_bytes.map(|b| b as f64),
            ),
        ];
        for (name, kind, help, value) in scalars {
            if let Some(v) = value {
                family(name, kind, help, &[(none.clone(), v)]);
            }
        }
        let latency: Vec<(String, f64)> = f
            .latency
            .iter()
            .map(|(q, ms)| (labels(&[("quantile", q.to_string())]), ms / 1000.0))
            .collect();
        family(
            "bakeoff_latency_seconds",
            "gauge",
            "Event latency percentiles over the latest tick, in seconds (label quantile).",
            &latency,
        );
        if openmetrics {
            out.push_str("# EOF\n");
        }
        out
    }
}

/// A label value as the exposition format quotes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The endpoint: serving until dropped.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How long a scraper may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a request read: a GET line and its headers.
const MAX_REQUEST: usize = 8 * 1024;

impl Endpoint {
    /// Serve `live` at `addr` (`PORT` alone is loopback's, `HOST:PORT` as given; port 0
    /// picks one). An error says why the address could not be had.
    pub fn serve(addr: &str, live: Live) -> Result<Endpoint, String> {
        let addr = match addr.parse::<u16>() {
            Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
            Err(_) => std::net::ToSocketAddrs::to_socket_addrs(addr)
                .ok()
                .and_then(|mut all| all.next())
                .ok_or_else(|| {
                    format!("'{addr}' is not PORT or HOST:PORT (e.g. 9464, or localhost:9464)")
                })?,
        };
        let listener =
            TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || accept_loop(&listener, &live, &stopping))
            .map_err(|e| e.to_string())?;
        Ok(Endpoint {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One connection at a time: a scrape is a few hundred bytes each second or more.
fn accept_loop(listener: &TcpListener, live: &Live, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => {
                let _ = answer(conn, live, stop);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// One request, answered; a client has `READ_TIMEOUT` in all to send it (not per read: one
/// byte a second would hold the only handler for hours), and the run's end cuts it short.
fn answer(mut conn: TcpStream, live: &Live, stop: &AtomicBool) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + READ_TIMEOUT;
    conn.set_nonblocking(false)?;
    conn.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MAX_REQUEST {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        // A short wait at a time, so that the run's end is seen within it.
        conn.set_read_timeout(Some(left.min(Duration::from_millis(200))))?;
        let n = match conn.read(&mut buf) {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            other => other?,
        };
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&request);
    let first = text.lines().next().unwrap_or("");
    let (status, kind, body) = match first.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["GET", path, ..] if path.split('?').next() == Some("/metrics") => {
            let om = text.lines().any(|l| {
                l.to_ascii_lowercase().starts_with("accept:")
                    && l.contains("application/openmetrics-text")
            });
            let kind = match om {
                true => "application/openmetrics-text; version=1.0.0; charset=utf-8",
                false => "text/plain; version=0.0.4; charset=utf-8",
            };
            ("200 OK", kind, live.render(om))
        }
        ["GET", ..] => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "bakeoff serves /metrics only\n".to_string(),
        ),
        _ => (
            "400 Bad Request",
            "text/plain; charset=utf-8",
            "a GET of /metrics\n".to_string(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn a_tick_is_served_in_either_format_and_a_silent_client_does_not_hold_it() {
        let live = Live::default();
        let e = Endpoint::serve("0", live.clone()).unwrap();
        assert!(e.addr().ip().is_loopback(), "a bare port is loopback's");
        live.begin_run(&[
            ("workload", "oltp_point_select".into()),
            ("variant", "a \"b\"".into()),
        ]);
        let mut w = WindowSummary {
            tps: 1234.5,
            qps: 2469.0,
            events: 1234,
            errors: 2,
            ..Default::default()
        };
        w.latency.p99_ms = 4.0;
        live.tick(&w, None);
        live.tick(&w, None);
        // Someone connects and says nothing, someone else a byte at a time: the next scrape
        // is answered all the same, within the one deadline each has.
        let _silent = TcpStream::connect(e.addr()).unwrap();
        let mut trickle = TcpStream::connect(e.addr()).unwrap();
        std::thread::spawn(move || {
            for _ in 0..100 {
                if trickle.write_all(b"G").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let asked = std::time::Instant::now();
        let om = get(
            e.addr(),
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
        );
        assert!(
            om.contains("application/openmetrics-text") && om.ends_with("# EOF\n"),
            "{om}"
        );
        assert!(
            asked.elapsed() < Duration::from_secs(6),
            "held {:?}",
            asked.elapsed()
        );
        assert!(om.contains("bakeoff_events_per_second{workload=\"oltp_point_select\",variant=\"a \\\"b\\\"\"} 1234.5"), "{om}");
        assert!(
            om.contains("# TYPE bakeoff_errors counter\n")
                && om.contains("bakeoff_errors_total{")
                && om.contains("} 4\n"),
            "{om}"
        );
        assert!(om.contains("quantile=\"0.99\"} 0.004"), "{om}");
        let text = get(e.addr(), "GET /metrics HTTP/1.0\r\n\r\n");
        assert!(
            text.contains("text/plain; version=0.0.4")
                && text.contains("# TYPE bakeoff_errors_total counter")
                && !text.contains("# EOF"),
            "{text}"
        );
        assert!(get(e.addr(), "GET / HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(Endpoint::serve("not an address", Live::default())
            .unwrap_err()
            .contains("PORT or HOST:PORT"));
    }
}
