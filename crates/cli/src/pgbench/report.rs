//! pgbench's output: progress lines (-P), the final report (with -r per-command latencies),
//! and the transaction and aggregate logs (-l, --aggregate-interval, --sampling-rate).

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bakeoff_engine::{Observer, RunResult, Tick};
use bakeoff_workload::pgbench::script::Script;
use bakeoff_workload::pgbench::stats::at;
use bakeoff_workload::pgbench::{Logged, PgbenchSource, QueryMode, ScriptStats};

use super::args::PgbenchArgs;

/// An OS error as C's strerror says it.
pub fn os_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(n) => s[..n].to_string(),
        None => s,
    }
}

/// The -P lines, on stderr as pgbench prints them: the tick's rate and latency from the
/// engine, failures, skips, retries and lag from the clients' live counters.
pub struct Progress {
    every: u32,
    timestamp: bool,
    rate: bool,
    limit: bool,
    retries: bool,
    source: Arc<PgbenchSource>,
    /// The live counters at the previous tick.
    last: [u64; 9],
}

impl Progress {
    pub fn new(a: &PgbenchArgs, source: Arc<PgbenchSource>) -> Progress {
        Progress {
            every: a.progress,
            timestamp: a.progress_timestamp,
            rate: a.rate.is_some(),
            limit: a.latency_limit.is_some(),
            retries: a.max_tries.unwrap_or(1) != 1,
            source,
            last: [0; 9],
        }
    }
}

impl Observer for Progress {
    fn on_tick(&mut self, t: &Tick) {
        let Some(live) = self.source.live.as_ref().filter(|_| self.every > 0) else {
            return;
        };
        let now = live.read();
        let d: Vec<u64> = now
            .iter()
            .zip(&self.last)
            .map(|(n, l)| n.wrapping_sub(*l))
            .collect();
        self.last = now;
        let w = &t.window;
        // pgbench's: the mean and the population stddev from the tick's sums, in ms.
        let n = d[at::DONE].max(1) as f64;
        let mean_us = d[at::LATENCY_US] as f64 / n;
        let var = d[at::LATENCY_US2] as f64 / n - mean_us * mean_us;
        let (latency, stddev) = (mean_us / 1000.0, var.max(0.0).sqrt() / 1000.0);
        let when = match self.timestamp {
            true => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                format!("{}.{:03} s", now.as_secs(), now.subsec_millis())
            }
            false => format!("{:.1} s", t.t),
        };
        let mut line = format!(
            "progress: {when}, {:.1} tps, lat {latency:.3} ms stddev {stddev:.3}, {} failed",
            w.tps,
            d[at::FAILED]
        );
        if self.rate {
            let lag_ms = d[at::LAG_US] as f64 / 1000.0 / d[at::LAGGED].max(1) as f64;
            line.push_str(&format!(", lag {lag_ms:.3} ms"));
            if self.limit {
                line.push_str(&format!(", {} skipped", d[at::SKIPPED]));
            }
        }
        if self.retries {
            let (retried, retries) = (d[at::RETRIED], d[at::RETRIES]);
            line.push_str(&format!(", {retried} retried, {retries} retries"));
        }
        eprintln!("{line}");
    }
}

/// The report pgbench prints when the run ends.
pub fn final_report(
    a: &PgbenchArgs,
    scripts: &[Script],
    stats: &[ScriptStats],
    r: &RunResult,
    (scale, partitions): (u32, Option<&(String, u64)>),
    mode: QueryMode,
    jobs: u32,
) -> String {
    let mut o = String::new();
    let total = ScriptStats::total(stats);
    let name = match scripts.len() {
        1 => scripts[0].name.clone(),
        _ => "multiple scripts".into(),
    };
    let _ = writeln!(o, "transaction type: {name}");
    let _ = writeln!(o, "scaling factor: {scale}");
    if let Some((method, n)) = partitions {
        let _ = writeln!(o, "partition method: {method}\npartitions: {n}");
    }
    let _ = writeln!(o, "query mode: {}", mode.name());
    let _ = writeln!(o, "number of clients: {}", a.clients);
    let _ = writeln!(o, "number of threads: {jobs}");
    let max_tries = a.max_tries.unwrap_or(1);
    if max_tries > 0 {
        let _ = writeln!(o, "maximum number of tries: {max_tries}");
    }
    match a.time {
        Some(t) => {
            let _ = writeln!(o, "duration: {t} s");
            let _ = writeln!(
                o,
                "number of transactions actually processed: {}",
                total.done
            );
        }
        None => {
            let per = a.transactions.unwrap_or(10);
            let _ = writeln!(o, "number of transactions per client: {per}");
            let _ = writeln!(
                o,
                "number of transactions actually processed: {}/{}",
                total.done,
                per * a.clients as u64
            );
        }
    }
    let secs = r.elapsed_seconds.max(1e-9);
    outcomes(&mut o, a, "", &total);
    if let Some(limit) = a.latency_limit {
        if a.rate.is_some() {
            let all = total.done + total.failed + total.skipped;
            let _ = writeln!(
                o,
                "number of transactions skipped: {} ({:.3}%)",
                total.skipped,
                100.0 * total.skipped as f64 / all as f64
            );
        }
        let _ = writeln!(
            o,
            "number of transactions above the {limit:.1} ms latency limit: {}/{} ({:.3}%)",
            total.late,
            total.done,
            100.0 * total.late as f64 / total.done as f64
        );
    }
    if total.done == 0 {
        // pgbench stops here when nothing was done (a run every client of which aborted).
        return o;
    }
    latencies(&mut o, a, "", &total);
    if a.rate.is_some() {
        let started = (total.done + total.failed).max(1);
        let _ = writeln!(
            o,
            "rate limit schedule lag: avg {:.3} (max {:.3}) ms",
            1000.0 * total.lag_sum / started as f64,
            1000.0 * total.lag_max
        );
    }
    let connect_ms = r.connect.as_ref().map_or(r.setup_seconds, |c| c.seconds) * 1000.0;
    let _ = writeln!(o, "initial connection time = {connect_ms:.3} ms");
    let _ = match a.connect {
        // -C: connecting is part of every transaction, so of the rate too.
        true => writeln!(
            o,
            "tps = {:.6} (including reconnection times)",
            total.done as f64 / secs
        ),
        false => writeln!(
            o,
            "tps = {:.6} (without initial connection time)",
            total.done as f64 / secs
        ),
    };
    if scripts.len() > 1 || a.report_per_command {
        per_script(&mut o, a, scripts, stats, &total, secs);
    }
    o
}

/// Failed, and with --failures-detailed and retries their lines; `lead` is " - " inside
/// a script's section.
fn outcomes(o: &mut String, a: &PgbenchArgs, lead: &str, st: &ScriptStats) {
    // pgbench divides by the transactions tried: 0 of 0 prints NaN, as it does.
    let pct = |n: u64| 100.0 * n as f64 / (st.done + st.failed) as f64;
    let _ = writeln!(
        o,
        "{lead}number of failed transactions: {} ({:.3}%)",
        st.failed,
        pct(st.failed)
    );
    if a.failures_detailed {
        let _ = writeln!(
            o,
            "{lead}number of serialization failures: {} ({:.3}%)",
            st.serialization_failures,
            pct(st.serialization_failures)
        );
        let _ = writeln!(
            o,
            "{lead}number of deadlock failures: {} ({:.3}%)",
            st.deadlock_failures,
            pct(st.deadlock_failures)
        );
    }
    if a.max_tries.unwrap_or(1) != 1 {
        let _ = writeln!(
            o,
            "{lead}number of transactions retried: {} ({:.3}%)",
            st.retried,
            pct(st.retried)
        );
        let _ = writeln!(o, "{lead}total number of retries: {}", st.retries);
    }
}

fn latencies(o: &mut String, a: &PgbenchArgs, lead: &str, st: &ScriptStats) {
    let _ = writeln!(o, "{lead}latency average = {:.3} ms", mean_ms(st));
    if a.rate.is_some() || a.progress > 0 || a.latency_limit.is_some() {
        let _ = writeln!(o, "{lead}latency stddev = {:.3} ms", stddev_of(st));
    }
}

fn per_script(
    o: &mut String,
    a: &PgbenchArgs,
    scripts: &[Script],
    stats: &[ScriptStats],
    total: &ScriptStats,
    secs: f64,
) {
    let weights: u64 = scripts.iter().map(|s| s.weight as u64).sum();
    let many = scripts.len() > 1;
    let retries = a.max_tries.unwrap_or(1) != 1;
    for (i, (s, st)) in scripts.iter().zip(stats).enumerate() {
        if many {
            let _ = writeln!(o, "SQL script {}: {}", i + 1, s.name);
            let _ = writeln!(
                o,
                " - weight: {} (targets {:.1}% of total)",
                s.weight,
                100.0 * s.weight as f64 / weights.max(1) as f64
            );
            let _ = writeln!(
                o,
                " - {} transactions ({:.1}% of total, tps = {:.6})",
                st.done,
                100.0 * st.done as f64 / total.done as f64,
                st.done as f64 / secs
            );
            outcomes(o, a, " - ", st);
            latencies(o, a, " - ", st);
        }
        if !a.report_per_command {
            continue;
        }
        let lead = if many { " - " } else { "" };
        let what = if retries {
            "failures and retries"
        } else {
            "and failures"
        };
        let sep = if retries { ", " } else { " " };
        let _ = writeln!(o, "{lead}statement latencies in milliseconds{sep}{what}:");
        for (c, cmd) in s.commands.iter().enumerate() {
            let cs = st.commands.get(c).copied().unwrap_or_default();
            let ms = if cs.count > 0 {
                1000.0 * cs.seconds / cs.count as f64
            } else {
                0.0
            };
            let _ = match retries {
                true => writeln!(
                    o,
                    "   {ms:>11.3}  {:>10}  {:>10}  {}",
                    cs.failures, cs.retries, cmd.first_line
                ),
                false => writeln!(o, "   {ms:>11.3}  {:>10}  {}", cs.failures, cmd.first_line),
            };
        }
    }
}

fn mean_ms(s: &ScriptStats) -> f64 {
    match s.done {
        0 => 0.0,
        n => 1000.0 * s.sum / n as f64,
    }
}

fn stddev_of(s: &ScriptStats) -> f64 {
    if s.done == 0 {
        return 0.0;
    }
    let n = s.done as f64;
    let mean = s.sum / n;
    let var = (s.sum2 / n - mean * mean).max(0.0);
    1000.0 * var.sqrt()
}

/// The -l files: one per thread (`PREFIX.PID`, then `.N` for thread N > 0), each line a
/// transaction, or with --aggregate-interval a line per interval.
pub struct TxLogs {
    files: Vec<Mutex<FileLog>>,
    sampling: Option<f64>,
    aggregate: Option<u64>,
    retries_column: bool,
}

struct FileLog {
    out: std::io::BufWriter<std::fs::File>,
    /// Aggregation: the interval's start (epoch seconds) and its figures.
    start: u64,
    agg: Agg,
    rng: bakeoff_workload::Rng,
}

#[derive(Default, Clone, Copy)]
struct Agg {
    /// Schedule lag (us): sum, sum of squares, min, max; and transactions skipped.
    lag: [f64; 4],
    skipped: u64,
    count: u64,
    sum: f64,
    sum2: f64,
    min: f64,
    max: f64,
    failures: u64,
    serialization: u64,
    deadlock: u64,
    retried: u64,
    retries: u64,
}

impl TxLogs {
    pub fn open(a: &PgbenchArgs) -> Result<Option<Arc<TxLogs>>, String> {
        if !a.log {
            return Ok(None);
        }
        let prefix = a.log_prefix.clone().unwrap_or_else(|| "pgbench_log".into());
        let pid = std::process::id();
        let mut files = Vec::new();
        for t in 0..a.jobs.min(a.clients) {
            let name = match t {
                0 => format!("{prefix}.{pid}"),
                t => format!("{prefix}.{pid}.{t}"),
            };
            let f = std::fs::File::create(&name)
                .map_err(|e| format!("could not open logfile \"{name}\": {}", os_error(&e)))?;
            files.push(Mutex::new(FileLog {
                out: std::io::BufWriter::new(f),
                start: 0,
                agg: Agg::default(),
                rng: bakeoff_workload::Rng::seeded(pid as u64 ^ t as u64),
            }));
        }
        Ok(Some(Arc::new(TxLogs {
            files,
            sampling: a.sampling_rate,
            aggregate: a.aggregate_interval.map(u64::from),
            retries_column: a.max_tries.unwrap_or(1) != 1,
        })))
    }

    pub fn write(&self, tid: u32, t: &Logged) {
        let Some(slot) = self.files.get(tid as usize % self.files.len().max(1)) else {
            return;
        };
        let mut f = slot.lock().unwrap_or_else(|p| p.into_inner());
        let end = t.end.duration_since(UNIX_EPOCH).unwrap_or_default();
        let us = t.latency.as_micros() as f64;
        if let Some(every) = self.aggregate {
            let now = end.as_secs();
            if f.start == 0 {
                f.start = now - now % every;
            }
            while now >= f.start + every {
                let line = agg_line(f.start, &f.agg, self.retries_column);
                let _ = writeln!(f.out, "{line}");
                f.start += every;
                f.agg = Agg::default();
            }
            let a = &mut f.agg;
            if let Some(lag) = t.lag {
                let l = lag.as_micros() as f64;
                let first = a.count + a.failures == 0;
                a.lag[0] += l;
                a.lag[1] += l * l;
                a.lag[2] = if first { l } else { a.lag[2].min(l) };
                a.lag[3] = a.lag[3].max(l);
            }
            match t.failed {
                Some("skipped") => a.skipped += 1,
                Some(kind) => {
                    a.failures += 1;
                    if kind == "serialization" {
                        a.serialization += 1;
                    } else {
                        a.deadlock += 1;
                    }
                }
                None => {
                    a.min = if a.count == 0 { us } else { a.min.min(us) };
                    a.max = a.max.max(us);
                    a.count += 1;
                    a.sum += us;
                    a.sum2 += us * us;
                }
            }
            if t.retries > 0 {
                a.retried += 1;
                a.retries += t.retries as u64;
            }
            return;
        }
        if let Some(rate) = self.sampling {
            if f.rng.unit() >= rate {
                return;
            }
        }
        let time = match t.failed {
            Some("skipped") => "skipped".to_string(),
            Some(_) => "failed".to_string(),
            None => format!("{us:.0}"),
        };
        let mut line = format!(
            "{} {} {time} {} {} {}",
            t.client,
            t.number,
            t.script,
            end.as_secs(),
            end.subsec_micros()
        );
        if let Some(lag) = t.lag {
            line.push_str(&format!(" {}", lag.as_micros()));
        }
        if self.retries_column {
            line.push_str(&format!(" {}", t.retries));
        }
        let _ = writeln!(f.out, "{line}");
    }

    /// The last interval's line, and everything flushed.
    pub fn finish(&self) {
        for slot in &self.files {
            let mut f = slot.lock().unwrap_or_else(|p| p.into_inner());
            if self.aggregate.is_some() && f.agg.count + f.agg.failures > 0 {
                let line = agg_line(f.start, &f.agg, self.retries_column);
                let _ = writeln!(f.out, "{line}");
            }
            let _ = f.out.flush();
        }
    }
}

/// An --aggregate-interval line in pgbench 15's fifteen fields: interval start, count,
/// latency sum, sum of squares, min and max (us); schedule lag sum, sum of squares, min and
/// max (us, 0 without --rate), skipped; retried, retries; serialization and deadlock
/// failures.
fn agg_line(start: u64, a: &Agg, _retries: bool) -> String {
    format!(
        "{start} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {} {} {} {} {}",
        a.count,
        a.sum,
        a.sum2,
        a.min,
        a.max,
        a.lag[0],
        a.lag[1],
        a.lag[2],
        a.lag[3],
        a.skipped,
        a.retried,
        a.retries,
        a.serialization,
        a.deadlock
    )
}
