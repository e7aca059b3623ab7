//! What a run measures, recorded cheaply and summarised once.
//!
//! - [`SbHistogram`]: sysbench's own 1024-bucket log histogram (1 us - 100 s), so the
//!   `--percentile` figure in the text report is computed exactly as sysbench computes it.
//! - [`Window`]: everything recorded over one interval (a Tick, or the whole run): event and
//!   statement counts, errors per server code, reconnects, exact latency sum/min/max and an HDR
//!   histogram (3 significant digits, 1 ns - 1 h) for p50...p99.9.
//! - [`LatencySummary`] / [`WindowSummary`]: plain data for reports and JSON.
//!
//! A worker thread owns its windows; the engine merges them once per tick. Nothing here locks,
//! allocates per event, prints or knows about connections.

mod sbhist;
mod window;

pub use sbhist::SbHistogram;
pub use window::{LatencySummary, Window, WindowSummary};
