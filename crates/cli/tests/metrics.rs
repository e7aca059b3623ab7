//! Live metrics, scraped by a real Prometheus (Debian's package, unpacked by
//! scripts/prometheus): a run with `--metrics-addr` is scraped every second, and Prometheus'
//! own query API answers with the run's throughput, latency percentiles and errors while it
//! goes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's Prometheus: $BAKEOFF_PROMETHEUS, else where scripts/prometheus unpacks it, else
/// on PATH.
fn prometheus() -> PathBuf {
    let unpacked = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/prometheus/usr/bin/prometheus");
    let found = std::env::var_os("BAKEOFF_PROMETHEUS")
        .map(PathBuf::from)
        .into_iter()
        .chain([unpacked, "/usr/bin/prometheus".into()])
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!("this test needs Debian's Prometheus: run scripts/prometheus (scripts/test does)")
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An HTTP GET's body (HTTP/1.0, so the server closes when done).
fn get(port: u16, path: &str) -> Option<String> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    c.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
}

/// Prometheus' answer to an instant query: each series' labels and value.
fn query(port: u16, q: &str) -> Vec<(serde_json::Value, f64)> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let Some(body) = get(port, &format!("/api/v1/query?query={enc}")) else {
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let value = r["value"][1].as_str()?.parse().ok()?;
            Some((r["metric"].clone(), value))
        })
        .collect()
}

/// A child ended with the test, whether it passes or panics.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_scrapes_a_run_and_answers_with_its_figures() {
    let mut run = Killed(
        Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args([
                "run",
                "oltp_point_select",
                "--threads=2",
                "--time=12",
                "--table-size=1000",
            ])
            .args(["--metrics-addr", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // The endpoint says where it listens (port 0: the system picked one).
    let mut err = BufReader::new(run.0.stderr.take().unwrap());
    let mut said = String::new();
    let port = loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "no metrics line: {said}"
        );
        said.push_str(&line);
        if let Some(rest) = line.strip_prefix("metrics: http://127.0.0.1:") {
            break rest.split('/').next().unwrap().parse::<u16>().unwrap();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let dir = bakeoff_testkit::scratch::dir("prometheus");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: bakeoff\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"),
    )
    .unwrap();
    let web = free_port();
    let _prom = Killed(
        Command::new(prometheus())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let tps = loop {
        let found = query(web, "bakeoff_events_per_second{job=\"bakeoff\"}");
        if let Some((labels, v)) = found.into_iter().find(|(_, v)| *v > 0.0) {
            break (labels, v);
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never had a throughput from bakeoff"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(tps.0["workload"], "oltp_point_select", "{:?}", tps.0);
    assert_eq!(tps.0["threads"], "2", "{:?}", tps.0);
    let p99 = query(web, "bakeoff_latency_seconds{quantile=\"0.99\"}");
    assert!(p99.iter().any(|(_, v)| *v > 0.0 && *v < 1.0), "{p99:?}");
    let events = query(web, "bakeoff_events_total");
    assert!(events.iter().any(|(_, v)| *v > 0.0), "{events:?}");
    assert_eq!(
        query(web, "bakeoff_errors_total").first().map(|x| x.1),
        Some(0.0)
    );
    assert!(
        !query(web, "bakeoff_server_cpu_seconds_total").is_empty(),
        "the server's CPU"
    );
    let status = run.0.wait().unwrap();
    assert!(status.success(), "the run itself: {status}");
    let _ = std::fs::remove_dir_all(&dir);
}
