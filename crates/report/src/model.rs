//! The report's data: the stored runs of a study arranged as curves (throughput against
//! threads, one per variant, per workload), compared against a baseline variant, analysed,
//! priced, with the series over time and the environment they ran in. Plain data, serialised
//! as is by `bakeoff compare --format json` and snapshot-tested.

use serde::Serialize;

pub use crate::verdicts::{
    AaCheck, Asked, AutoStatus, CarryOver, Comparison, CostVerdict, TurnsCheck, Verdict,
};

/// Latency percentiles of one cell: for each, the median over its repetitions.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Latency {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// None where the runs' summaries hold no p99.9 (stores from before it was kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p999_ms: Option<f64>,
    pub max_ms: f64,
}

/// One thread count of one variant's curve: every repetition's throughput, and the medians of
/// the rest.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Point {
    pub threads: u32,
    pub tps: Vec<f64>,
    /// The block (repetition) of each of `tps`, for pairing with the baseline's.
    pub repetitions: Vec<u32>,
    pub mean_tps: f64,
    /// `mean_tps` in NOPM, where the workload's unit is (see `unit.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_nopm: Option<f64>,
    /// Run-to-run variation: standard deviation over mean (0 with one repetition).
    pub cv: f64,
    pub latency: Latency,
    /// Server CPU (user + sys) per transaction, median over repetitions; None without
    /// telemetry (a server bakeoff did not start).
    pub server_cpu_us_per_event: Option<f64>,
    /// Each repetition's server CPU per transaction (beside `tps`), for pairing cost.
    #[serde(skip)]
    pub cpu_per_event: Vec<Option<f64>>,
    /// Each repetition's p99 in ms (beside `tps`), for pairing latency.
    #[serde(skip)]
    pub p99_per_rep: Vec<Option<f64>>,
    /// Each repetition's p95 in ms, the same way.
    #[serde(skip)]
    pub p95_per_rep: Vec<Option<f64>>,
    /// Server RSS growth over the run, median, in MiB.
    pub rss_growth_mib: Option<f64>,
    /// Repetitions whose client used 90% or more of its CPUs: the figure may be the client's.
    pub client_bound_runs: u32,
    /// TPC-C's five transactions, each averaged over the repetitions; empty for workloads
    /// without transaction classes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transactions: Vec<Transaction>,
}

/// One of TPC-C's transactions in a cell: its share of the transactions done and its
/// latency, each the mean over the cell's repetitions.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Transaction {
    /// "new_order", "payment", "order_status", "delivery", "stock_level".
    pub name: String,
    /// Its events over all five's, a fraction.
    pub share: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// The highest mean throughput among thread counts whose p99 stays within a limit.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Best {
    pub tps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nopm: Option<f64>,
    pub threads: u32,
}

/// What a performance engineer reads off a throughput curve.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Analysis {
    pub peak_tps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_nopm: Option<f64>,
    pub peak_threads: u32,
    /// The fewest threads reaching 95% of the peak: past it, more clients buy little.
    pub saturation_threads: u32,
    /// How far the highest thread count falls below the peak, in percent.
    pub drop_at_max_pct: f64,
    /// The best throughput with p99 within the model's `p99_limit_ms`; None if no thread count
    /// meets it.
    pub best_within_p99: Option<Best>,
}

/// One tick (report interval) of a run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Tick {
    pub t: f64,
    pub tps: f64,
    pub p99_ms: f64,
}

/// A cell's run over time: the repetition with the median throughput, so a stall or a warmup
/// seen here is typical of the cell, not its outlier.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TickSeries {
    pub threads: u32,
    pub repetition: u32,
    pub ticks: Vec<Tick>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Curve {
    pub variant: String,
    /// Which of the source's studies it comes from (comparisons pair within one study).
    #[serde(skip)]
    pub study: usize,
    /// CPUs the variant's servers may use (all instances together), where the study set them.
    pub cpus: Option<u32>,
    pub points: Vec<Point>,
    pub analysis: Analysis,
    pub series: Vec<TickSeries>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkloadModel {
    pub label: String,
    /// What its throughput is counted in (`unit.rs`): "tps", or "nopm" for TPC-C, whose
    /// `*_tps` figures are New-Orders per second and whose `*_nopm` are them x60.
    pub unit: crate::unit::Unit,
    pub curves: Vec<Curve>,
    /// The answer in a few sentences, made from the comparisons and curves (`summary.rs`).
    pub summary: Vec<String>,
    /// The part of it that decides: significant differences with their intervals, or the
    /// bound on any difference.
    pub answer: Vec<String>,
}

impl WorkloadModel {
    /// Every thread count any variant ran, ascending.
    pub fn threads(&self) -> Vec<u32> {
        let mut t: Vec<u32> = self
            .curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.threads))
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// The CPU counts of its curves when they differ (CPUs are an axis of the study), else
    /// empty.
    pub fn cpu_counts(&self) -> Vec<u32> {
        let mut c: Vec<u32> = self.curves.iter().filter_map(|c| c.cpus).collect();
        c.sort_unstable();
        c.dedup();
        if c.len() > 1 {
            c
        } else {
            Vec::new()
        }
    }

    /// The same workload with only the curves of `cpus` CPUs.
    pub fn with_cpus(&self, cpus: u32) -> WorkloadModel {
        WorkloadModel {
            label: format!(
                "{} on {cpus} CPU{}",
                self.label,
                if cpus == 1 { "" } else { "s" }
            ),
            curves: self
                .curves
                .iter()
                .filter(|c| c.cpus == Some(cpus))
                .cloned()
                .collect(),
            summary: Vec::new(),
            answer: Vec::new(),
            unit: self.unit,
        }
    }

    /// Its figures in its own unit too, where that is not the stored one (see `unit.rs`).
    pub(crate) fn counted_in(&mut self, unit: crate::unit::Unit) {
        self.unit = unit;
        for c in &mut self.curves {
            for p in &mut c.points {
                p.mean_nopm = unit.converted(p.mean_tps);
            }
            let a = &mut c.analysis;
            a.peak_nopm = unit.converted(a.peak_tps);
            if let Some(b) = &mut a.best_within_p99 {
                b.nopm = unit.converted(b.tps);
            }
        }
    }
}

/// A run that did not give a figure, with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    pub variant: String,
    pub workload: String,
    pub threads: u32,
    pub repetition: u32,
    pub status: String,
    pub reason: String,
}

/// A run that gave a figure to read with care.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Warning {
    pub variant: String,
    pub workload: String,
    pub threads: u32,
    pub repetition: u32,
    pub text: String,
}

/// What a million transactions cost at a curve's peak, on the platform it ran on.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cost {
    pub workload: String,
    pub variant: String,
    /// What the price is of: the platform it ran on, or the variant's own price_per_hour.
    pub platform: String,
    pub peak_tps: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_nopm: Option<f64>,
    /// Its workload's: what a million of is priced.
    #[serde(skip)]
    pub unit: crate::unit::Unit,
    pub peak_threads: u32,
    pub on_demand_per_million: f64,
    pub reserved_per_million: Option<f64>,
}

/// One point of a variant's server memory over the study.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemoryPoint {
    /// Seconds since the variant's first stored run began.
    pub t: f64,
    pub rss_mib: f64,
    pub vsz_mib: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemorySeries {
    pub variant: String,
    pub points: Vec<MemoryPoint>,
}

/// Where a variant ran, from its first run's manifest.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Environment {
    pub variant: String,
    /// "MariaDB", "MySQL" or "PostgreSQL".
    pub engine: String,
    pub host: serde_json::Value,
    pub server_binary: String,
    pub server_version: String,
    pub bakeoff_version: String,
    /// What the server lab verified on the running process: allocator, CPUs, NUMA, settings.
    pub checks: Vec<serde_json::Value>,
    /// What the server lab set on the servers it started, before the variant's own
    /// settings; empty for servers the user runs and for studies stored before it was kept.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lab_defaults: Vec<String>,
    /// Where the load ran (cpus, how they were chosen, CPUs shared with the server); null for
    /// studies run before bakeoff placed its client.
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub client: serde_json::Value,
    /// A server the user runs (a variant's `server` URL): its URL, version, hostname, TLS,
    /// that its CPU is unknown, and how its tables were had; null for servers bakeoff started.
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub given: serde_json::Value,
}

impl Environment {
    /// The server as a reader names it: "PostgreSQL 15.4 (Debian ...)", "10.11.6-MariaDB".
    pub fn server(&self) -> String {
        if self.server_version.contains(&self.engine) || self.server_version.is_empty() {
            self.server_version.clone()
        } else {
            format!("{} {}", self.engine, self.server_version)
        }
    }
}

/// A server variable whose value differs between variants: usually the point of the study,
/// sometimes the reason a comparison is unfair.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct VariableDiff {
    pub name: String,
    /// (variant, value) for every variant; "-" where the server had no such variable.
    pub values: Vec<(String, String)>,
}

/// A host probe's figure, measured with the study.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProbeFigure {
    pub origin: String,
    pub probe: String,
    pub threads: u32,
    pub figure: f64,
    pub unit: String,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Model {
    /// The answer first: the study, whether it is whole, its verdicts, the machine's banner.
    pub opening: Opening,
    pub study: String,
    /// How each variant's baseline is chosen, in words ("every variant against
    /// allocator=glibc at the same cpus").
    pub baseline: String,
    pub baseline_rule: crate::baseline::Rule,
    /// The study's axes (what differs between its variants), first axis first.
    pub axes: Vec<String>,
    /// Each variant's value on every axis (for sentences and slices; not serialised).
    #[serde(skip)]
    pub coordinates: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    /// Every variant, in the study's order (several machines': one after the other). A
    /// variant keeps its colour in every chart by its place here.
    pub variants: Vec<String>,
    /// The latency limit `Analysis::best_within_p99` holds to.
    pub p99_limit_ms: f64,
    pub workloads: Vec<WorkloadModel>,
    pub comparisons: Vec<Comparison>,
    /// The A/A checks per workload and thread count (studies with noise_check).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aa: Vec<AaCheck>,
    /// An auto study's precision and where it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoStatus>,
    /// Runs whose figures are suspect, with why (kept unless --exclude-suspect).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suspects: Vec<Suspect>,
    /// The steal of a study's median run, where it reaches `suspect::STEAL` (the largest of
    /// the studies'): the machine's own, which every variant shares; runs are judged against it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usual_steal: Option<f64>,
    pub problems: Vec<Problem>,
    pub warnings: Vec<Warning>,
    /// Empty unless a study has a price table and says which platform it ran on.
    pub costs: Vec<Cost>,
    pub memory: Vec<MemorySeries>,
    pub environments: Vec<Environment>,
    pub variable_diffs: Vec<VariableDiff>,
    /// The variants ran on more than one engine: what that can mean, and the settings that
    /// decide it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_engine: Option<crate::engines::CrossEngine>,
    pub probes: Vec<ProbeFigure>,
}

/// One line of a comparison table: a variant at a thread count, and how it compares with the
/// baseline (None for the baseline itself).
pub struct TableRow<'m> {
    pub threads: u32,
    pub variant: &'m str,
    pub point: &'m Point,
    pub comparison: Option<&'m Comparison>,
}

impl Model {
    /// The comparison table of workload `w`, by thread count then variant.
    pub fn table<'m>(&'m self, w: &'m WorkloadModel) -> Vec<TableRow<'m>> {
        let mut rows = Vec::new();
        for t in w.threads() {
            for c in &w.curves {
                let Some(point) = c.points.iter().find(|p| p.threads == t) else {
                    continue;
                };
                let comparison = self
                    .comparisons
                    .iter()
                    .find(|x| x.workload == w.label && x.variant == c.variant && x.threads == t);
                rows.push(TableRow {
                    threads: t,
                    variant: &c.variant,
                    point,
                    comparison,
                });
            }
        }
        rows
    }
}

/// A run whose figure may not measure what it claims, with why (see `suspect.rs`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Suspect {
    /// The run's id in its database (what `export` flags).
    #[serde(skip)]
    pub run: i64,
    pub variant: String,
    pub workload: String,
    pub threads: u32,
    pub repetition: u32,
    pub reasons: Vec<String>,
    /// Left out of the comparisons (`--exclude-suspect`).
    pub excluded: bool,
}

/// The study before its details.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Opening {
    pub study: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When its first run began (UTC, `2026-11-27 12:01 UTC`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub began: Option<String>,
    /// Where it ran: each machine's name and CPUs.
    pub hosts: Vec<String>,
    /// From the first run's start to the last run's end, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_s: Option<f64>,
    pub completeness: Completeness,
    /// One line per workload: its verdicts and how sure (throughput; cost where judged).
    pub verdicts: Vec<String>,
    /// The machine disturbed the runs: how much, and what would resolve it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<Disturbance>,
}

/// Whether every run the study asks for is stored.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Completeness {
    /// Runs stored with a figure or a reason (ok, failed, invalid): an interrupted run is not.
    pub runs: usize,
    /// Runs the study asks for; None for an auto study, which stops when it is sure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<usize>,
    pub complete: bool,
}

/// How the machine disturbed the runs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Disturbance {
    /// Runs flagged suspect, of the runs with a figure.
    pub suspect: usize,
    pub of: usize,
    /// The steal of the study's usual run, where it reaches the suspect threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usual_steal: Option<f64>,
    /// The median share of the machine's CPU other processes took in its runs, where that
    /// is what disturbed them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub others: Option<f64>,
    /// The smallest difference the study detects as run (80% power at its family's level;
    /// the largest over its comparisons, a fraction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detects: Option<f64>,
    /// The banner, in words.
    pub said: String,
}
