//! sysbench's text formats (shared/reference/sysbench-behaviour.md sections 3.3-3.5), so
//! scripts that parse sysbench output parse bakeoff's, plus a clearly separate block of
//! HDR percentiles that sysbench does not have.

use std::fmt::Write;

use bakeoff_engine::{Checkpoint, RunResult, Tick};
use bakeoff_telemetry::SbHistogram;

/// `[ 10s ] thds: 8 tps: 512.30 qps: 10246.00 (r/w/o: ...) lat (ms,95%): 21.89 err/s: 0.00 reconn/s: 0.00`
pub fn interval_line(t: &Tick, percentile: f64, open_loop: bool) -> String {
    let w = &t.window;
    let mut s = format!(
        "[ {:.0}s ] thds: {} tps: {:4.2} qps: {:4.2} (r/w/o: {:4.2}/{:4.2}/{:4.2}) lat (ms,{}%): {:4.2} err/s: {:4.2} reconn/s: {:4.2}",
        t.t,
        t.threads,
        w.tps,
        w.qps,
        w.reads_per_sec,
        w.writes_per_sec,
        w.others_per_sec,
        percentile as u32,
        w.latency.sysbench_percentile_ms,
        w.errors_per_sec,
        w.reconnects_per_sec
    );
    if open_loop {
        let _ = write!(
            s,
            "\n[ {:.0}s ] queue length: {}, concurrency: {}",
            t.t, t.queue_length, t.concurrency
        );
    }
    s
}

/// What sysbench's run header says of a run.
#[derive(Default)]
pub struct RunHeader {
    pub threads: u32,
    pub rate: Option<f64>,
    pub warmup: std::time::Duration,
    pub interval: Option<std::time::Duration>,
    /// --report-checkpoints, in seconds.
    pub checkpoints: Vec<u64>,
    /// --validate.
    pub validate: bool,
    /// None: seeded from the clock, as sysbench says when --rand-seed is not given.
    pub seed: Option<u64>,
}

impl RunHeader {
    /// The header of an engine run: its options, and what the caller knows besides.
    pub fn of(
        r: &bakeoff_engine::RunSpec,
        interval: bool,
        validate: bool,
        seed: Option<u64>,
    ) -> Self {
        RunHeader {
            threads: r.connections,
            rate: r.rate,
            warmup: r.warmup,
            interval: interval.then_some(r.tick),
            checkpoints: r.checkpoints.iter().map(|d| d.as_secs()).collect(),
            validate,
            seed,
        }
    }
}

/// sysbench's run header: "Running the test with following options:" down to the seed line,
/// in sysbench's order (print_run_mode).
pub fn run_options(h: &RunHeader) -> String {
    let mut s = format!(
        "Running the test with following options:\nNumber of threads: {}",
        h.threads
    );
    if let Some(rate) = h.rate {
        let _ = write!(s, "\nTarget transaction rate: {rate}/sec");
    }
    if !h.warmup.is_zero() {
        let _ = write!(s, "\nWarmup time: {}s", h.warmup.as_secs());
    }
    if let Some(every) = h.interval {
        let _ = write!(
            s,
            "\nReport intermediate results every {} second(s)",
            every.as_secs()
        );
    }
    if !h.checkpoints.is_empty() {
        let list: Vec<String> = h.checkpoints.iter().map(u64::to_string).collect();
        let _ = write!(s, "\nReport checkpoint(s) at {} seconds", list.join(", "));
    }
    if h.validate {
        s.push_str("\nValidation checks: on.\n");
    }
    match h.seed {
        Some(seed) => write!(
            s,
            "\nInitializing random number generator from seed ({seed})."
        ),
        None => write!(
            s,
            "\nInitializing random number generator from current time"
        ),
    }
    .ok();
    s
}

/// What follows the run header and the test's mode lines, up to the threads' start.
pub const WORKERS_STARTING: &str = "\n\nInitializing worker threads...\n";

/// sysbench's report at the end of a run: the whole run, or after --report-checkpoints the
/// stretch since the last one (sysbench's counters start from zero at each).
pub fn final_report(r: &RunResult, percentile: f64) -> String {
    checkpoint_report(&r.last_stretch(), r.unfinished_events, percentile)
}

/// The report of a stretch between checkpoints: rates over the stretch, total time since the
/// start, as sysbench's.
pub fn checkpoint_report(c: &Checkpoint, unfinished: u64, percentile: f64) -> String {
    sql_report(
        &c.total,
        c.seconds,
        c.t,
        unfinished,
        percentile,
        c.connections.iter().map(|c| (c.events, c.latency_sum_ns)),
    )
}

/// sysbench's SQL statistics block, then the general ones. `secs`: what the rates are over;
/// `total_time`: seconds since the start.
fn sql_report(
    t: &bakeoff_telemetry::WindowSummary,
    secs: f64,
    total_time: f64,
    unfinished: u64,
    percentile: f64,
    threads: impl Iterator<Item = (u64, u64)> + Clone,
) -> String {
    let per = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let mut s = String::new();
    let _ = writeln!(s, "SQL statistics:");
    let _ = writeln!(s, "    queries performed:");
    let _ = writeln!(s, "        read:                            {}", t.reads);
    let _ = writeln!(s, "        write:                           {}", t.writes);
    let _ = writeln!(s, "        other:                           {}", t.others);
    let _ = writeln!(s, "        total:                           {}", t.queries);
    let _ = writeln!(
        s,
        "    transactions:                        {:<6} ({:.2} per sec.)",
        t.events,
        per(t.events)
    );
    let _ = writeln!(
        s,
        "    queries:                             {:<6} ({:.2} per sec.)",
        t.queries,
        per(t.queries)
    );
    let _ = writeln!(
        s,
        "    ignored errors:                      {:<6} ({:.2} per sec.)",
        t.errors,
        per(t.errors)
    );
    let _ = writeln!(
        s,
        "    reconnects:                          {:<6} ({:.2} per sec.)",
        t.reconnects,
        per(t.reconnects)
    );
    let _ = writeln!(s);
    s.push_str(&general_block(
        total_time, t, unfinished, percentile, threads,
    ));
    s
}

/// sysbench's General statistics, Latency and Threads fairness blocks, shared by every test.
pub fn general_block(
    secs: f64,
    t: &bakeoff_telemetry::WindowSummary,
    unfinished: u64,
    percentile: f64,
    threads: impl Iterator<Item = (u64, u64)> + Clone,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "General statistics:");
    let _ = writeln!(s, "    total time:                          {:.4}s", secs);
    let _ = writeln!(s, "    total number of events:              {}", t.events);
    if unfinished > 0 {
        let _ = writeln!(
            s,
            "    Number of unfinished transactions on forced shutdown: {}",
            unfinished
        );
    }
    let _ = writeln!(s);
    let l = &t.latency;
    let _ = writeln!(s, "Latency (ms):");
    let _ = writeln!(s, "         min: {:>39.2}", l.min_ms);
    let _ = writeln!(s, "         avg: {:>39.2}", l.avg_ms);
    let _ = writeln!(s, "         max: {:>39.2}", l.max_ms);
    if percentile > 0.0 {
        let _ = writeln!(
            s,
            "        {:>3}th percentile: {:>27.2}",
            percentile as u32, l.sysbench_percentile_ms
        );
    } else {
        let _ = writeln!(s, "         percentile stats:               disabled");
    }
    let _ = writeln!(s, "         sum: {:>39.2}", l.sum_ms);
    let _ = writeln!(s);
    let (ev_avg, ev_sd) = mean_sd(threads.clone().map(|(e, _)| e as f64));
    let (ex_avg, ex_sd) = mean_sd(threads.map(|(_, ns)| ns as f64 / 1e9));
    let _ = writeln!(s, "Threads fairness:");
    let _ = writeln!(
        s,
        "    events (avg/stddev):           {ev_avg:.4}/{ev_sd:3.2}"
    );
    let _ = writeln!(
        s,
        "    execution time (avg/stddev):   {ex_avg:.4}/{ex_sd:3.2}"
    );
    let _ = writeln!(s);
    s
}

/// bakeoff's extra block: exact percentiles and errors per code. Starts with a line no
/// sysbench parser matches.
pub fn extra_report(r: &RunResult) -> String {
    let l = &r.total.latency;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "bakeoff latency percentiles (ms, HDR histogram, 3 significant digits):"
    );
    let _ = writeln!(
        s,
        "    p50: {:.3}  p90: {:.3}  p95: {:.3}  p99: {:.3}  p99.9: {:.3}  max: {:.3}",
        l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.p999_ms, l.max_ms
    );
    if !r.total.errors_by_code.is_empty() {
        let list: Vec<String> = r
            .total
            .errors_by_code
            .iter()
            .map(|(c, n)| format!("{}: {n}", bakeoff_engine::error_label(*c)))
            .collect();
        let _ = writeln!(s, "    ignored errors by code: {}", list.join(", "));
    }
    if let Some(c) = &r.connect {
        let _ = writeln!(
            s,
            "bakeoff connecting: {} connection(s) in {:.3} s; each {:.2} ms (p50), {:.2} ms (p99), {:.2} ms (max); client CPU {:.0} us per connection (its handshake, TLS where used, auth, and its statements prepared)",
            c.connections, c.seconds, c.p50_ms, c.p99_ms, c.max_ms, c.client_cpu_us_per_connection
        );
    }
    s
}

/// sysbench's --histogram block.
pub fn histogram(h: &SbHistogram) -> String {
    let max = h.buckets().map(|(_, c)| c).max().unwrap_or(0).max(1);
    let mut s = String::from("Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n");
    for (v, c) in h.buckets() {
        let stars = ((40.0 * c as f64 / max as f64) + 0.5) as usize;
        let _ = writeln!(s, "{v:12.3} |{:<40} {c}", "*".repeat(stars));
    }
    s.push_str(" \n");
    s
}

/// Population mean and standard deviation, as sysbench's fairness block uses.
fn mean_sd(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = values.clone().count() as f64;
    if n == 0.0 {
        return (0.0, 0.0);
    }
    let mean = values.clone().sum::<f64>() / n;
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_uses_population_stddev() {
        let (m, sd) = mean_sd([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0].into_iter());
        assert_eq!((m, sd), (5.0, 2.0));
    }
}

/// One verified axis of the server variant, for stderr at start.
pub fn check_line(c: &bakeoff_server::Check) -> String {
    let mut s = format!(
        "    {:<9} {:<28} {} {}",
        c.axis,
        c.wanted,
        if c.ok { "ok:" } else { "NOT IN EFFECT:" },
        c.seen
    );
    if let Some(n) = &c.note {
        s.push_str(&format!(" ({n})"));
    }
    s
}

/// The server process, host and client over the whole run (bakeoff's addition to the report).
pub fn telemetry_report(t: &bakeoff_telemetry::Telemetry, client_threads: u32) -> String {
    let mut s = String::from("bakeoff telemetry (whole run):\n");
    if let Some(sv) = &t.server {
        let _ = writeln!(
            s,
            "    server CPU: {:.2} us/event (user {:.2} s, sys {:.2} s); context switches: {:.2}/event",
            t.server_cpu_us_per_event.unwrap_or(0.0),
            sv.cpu_user_seconds,
            sv.cpu_sys_seconds,
            t.context_switches_per_event.unwrap_or(0.0)
        );
        let _ = writeln!(
            s,
            "    server memory: RSS {} ({} during the run), VSZ {} ({}), {} threads",
            bytes(sv.rss_bytes as f64),
            signed_bytes(sv.rss_growth_bytes),
            bytes(sv.vsz_bytes as f64),
            signed_bytes(sv.vsz_growth_bytes),
            sv.threads
        );
    } else {
        // Never 0: a server over TCP that bakeoff did not start has no process here to read.
        s.push_str("    server CPU and memory: unknown (a server bakeoff did not start, reached over TCP: its process is not on this machine)\n");
    }
    let h = &t.host;
    let _ = writeln!(
        s,
        "    host CPU: user {:.0}%, sys {:.0}%, iowait {:.0}%, idle {:.0}%, steal {:.0}%",
        h.user * 100.0,
        h.sys * 100.0,
        h.iowait * 100.0,
        h.idle * 100.0,
        h.steal * 100.0
    );
    let _ = writeln!(
        s,
        "    client CPU: {:.2} s, {:.0}% of the CPU its {} thread(s) may use",
        t.client_cpu_seconds,
        t.client_cpu_share * 100.0,
        client_threads
    );
    if t.client_idle_poll_seconds > 0.0 {
        let _ = writeln!(
            s,
            "    client polling: {:.2} s more CPU spent polling for responses instead of sleeping (not counted above; the server never woke the client)",
            t.client_idle_poll_seconds
        );
    }
    if t.client_bound {
        let _ = writeln!(
            s,
            "    warning: the client was CPU-bound, so these figures may measure the client, not the server; give it more CPUs (--client-threads) or run it on another machine"
        );
    }
    s
}

/// 1536 -> "1.5 KiB"; binary units, as free(1) and top print memory.
fn bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b.abs();
    let mut u = 0;
    while v >= 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

fn signed_bytes(b: i64) -> String {
    format!("{}{}", if b < 0 { "-" } else { "+" }, bytes(b as f64))
}

/// Where the client ran, after the report: the CPUs when they were placed, and a warning when
/// it shared CPUs with the server.
pub fn placement_report(p: &bakeoff_server::placement::ClientPlacement) -> String {
    let mut s = String::new();
    if p.pins() {
        let _ = writeln!(s, "    client CPUs: {}", p.cpus);
    }
    if let Some(w) = p.warning() {
        let _ = writeln!(
            s,
            "    warning: {w}, so the figures measure both; {}",
            crate::client::advice(p)
        );
    }
    s
}
