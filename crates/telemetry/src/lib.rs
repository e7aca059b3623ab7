//! What a run measures, recorded cheaply and summarised once.
//!
//! - [`SbHistogram`]: sysbench's own 1024-bucket log histogram (1 us - 100 s), so the
//!   `--percentile` figure in the text report is computed exactly as sysbench computes it.
//! - [`Window`]: everything recorded over one interval (a Tick, or the whole run): event and
//!   statement counts, errors per server code, reconnects, exact latency sum/min/max and an HDR
//!   histogram (3 significant digits, 1 ns - 1 h) for p50...p99.9; and, only when events
//!   carry a class (a source with several kinds of event, TPC-C's transactions), the same per
//!   class with summed tallies ([`ClassSummary`]).
//! - [`LatencySummary`] / [`WindowSummary`]: plain data for reports and JSON.
//!
//! - [`Sampler`] / [`Telemetry`]: the server process (CPU, memory, threads, context
//!   switches), the host's CPU and the client's own CPU over an interval, from /proc, plus
//!   SHOW GLOBAL STATUS deltas; derived server CPU per event and the client-bound flag.
//!
//! A worker thread owns its windows; the engine merges them once per tick. Nothing in the
//! recording path locks, allocates per event, prints or knows about connections; only the
//! sampler reads /proc and opens one connection of its own, once per tick.

mod checkpoint;
mod classes;
pub mod live;
mod sampler;
mod sbhist;
mod window;

pub use checkpoint::{Checkpoint, Checkpoints, Totals};
pub use classes::{ClassSummary, TALLIES};
pub use sampler::{
    listening_process, own_cpu_seconds, read_process, several_nodes, CpuReader, HostSample,
    ProcReading, RemoteProcess, SampleTarget, Sampler, ServerSample, Telemetry,
};
pub use sbhist::SbHistogram;
pub use window::{LatencySummary, Window, WindowSummary};
