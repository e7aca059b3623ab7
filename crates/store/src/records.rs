//! What goes into the store and comes out of it: plain data, no SQL.

/// What identifies a run within a study: resuming skips the keys already finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RunKey {
    pub repetition: u32,
    pub variant: u32,
    pub workload: u32,
    pub threads: u32,
}

/// The blocks a study runs one server at a time to check its blocks by turns against
/// (`[alternation] validate_every`) are numbered above this: apart from the study's own blocks
/// (at most 100), so its pilot, sizing and verdicts never count them, and a resume finds them.
pub const CHECK_BLOCKS_FROM: u32 = 1000;

/// The repetition number of check block `j` (from 1).
pub fn check_block(j: u32) -> u32 {
    CHECK_BLOCKS_FROM + j
}

/// Whether a run's repetition is a check block's (run one server at a time beside turns).
pub fn is_check_block(repetition: u32) -> bool {
    repetition > CHECK_BLOCKS_FROM
}

/// One point of a run's per-tick series.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TickRecord {
    pub t: f64,
    pub tps: f64,
    pub qps: f64,
    pub p99_ms: f64,
    pub errors: u64,
    /// Everything else of the tick (errors per code, percentiles, telemetry), as JSON.
    pub json: String,
}

/// A finished (or failed, invalid, interrupted) run, as stored.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub key: Option<RunKey>,
    pub variant_name: String,
    pub workload_label: String,
    /// ok, failed, invalid or interrupted.
    pub status: String,
    pub reason: Option<String>,
    pub seconds: f64,
    pub events: u64,
    pub tps: f64,
    pub qps: f64,
    pub errors: u64,
    pub reconnects: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub server_cpu_us_per_event: Option<f64>,
    pub rss_growth_bytes: Option<i64>,
    pub client_bound: bool,
    /// The run's totals and telemetry, and the environment it ran in, as JSON.
    pub summary_json: String,
    pub manifest_json: String,
    pub ticks: Vec<TickRecord>,
}

impl RunRecord {
    /// The record as `Store::runs` gives it back (the columns a comparison reads), for code
    /// that judges runs before, or without, a database (an agent's study).
    pub fn row(&self) -> Row {
        let key = self.key.unwrap_or(RunKey {
            repetition: 0,
            variant: 0,
            workload: 0,
            threads: 0,
        });
        let mut r = Row::new();
        let mut put = |k: &str, v: serde_json::Value| {
            r.insert(k.to_string(), v);
        };
        put("repetition", key.repetition.into());
        put("variant", key.variant.into());
        put("workload", key.workload.into());
        put("threads", key.threads.into());
        put("variant_name", self.variant_name.clone().into());
        put("workload_label", self.workload_label.clone().into());
        put("status", self.status.clone().into());
        put("reason", self.reason.clone().into());
        put("tps", self.tps.into());
        put("qps", self.qps.into());
        put("p50_ms", self.p50_ms.into());
        put("p95_ms", self.p95_ms.into());
        put("p99_ms", self.p99_ms.into());
        put("max_ms", self.max_ms.into());
        put("client_bound", i64::from(self.client_bound).into());
        put(
            "server_cpu_us_per_event",
            self.server_cpu_us_per_event.into(),
        );
        r
    }
}

/// One exported row: column name -> value.
pub type Row = serde_json::Map<String, serde_json::Value>;

/// A host probe's result: its headline figure (events/s, MiB/s, I/O operations/s).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ProbeRecord {
    pub probe: String,
    pub threads: u32,
    pub figure: f64,
    pub unit: String,
    pub status: String,
    pub reason: Option<String>,
    pub summary_json: String,
}
