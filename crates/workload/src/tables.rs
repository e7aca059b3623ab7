//! A workload's tables, whichever workload: sysbench's made and loaded by the dataset layer,
//! TPC-C's by its own loader over that layer's adapters and ownership rules. Above both, so
//! that each depends only on what is below it.

use std::sync::atomic::AtomicBool;

use bakeoff_driver::ConnectOptions;

use crate::dataset::{self, DatasetError, Prepared, Progress};
use crate::{WorkloadKind, WorkloadSpec};

/// Create, load and index `spec`'s tables with `parallel` connections (see
/// [`dataset::prepare`] and [`crate::tpcc::load::prepare`]).
pub async fn prepare_tables(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    parallel: u32,
    seed: u64,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Prepared, DatasetError> {
    match spec.kind {
        WorkloadKind::Tpcc => {
            crate::tpcc::load::prepare(opts, &spec.tpcc, parallel, seed, interrupt, progress).await
        }
        _ => dataset::prepare(opts, spec, threads, parallel, seed, interrupt, progress).await,
    }
}
