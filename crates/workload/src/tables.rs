//! A workload's tables, whichever workload: sysbench's made and loaded by the dataset layer,
//! TPC-C's by its own loader over that layer's adapters and ownership rules. Above both, so
//! that each depends only on what is below it.

use bakeoff_driver::ConnectOptions;

use crate::dataset::{self, DatasetError, Loading, Prepared};
use crate::WorkloadKind;

/// Create, load and index the job's tables (see [`dataset::prepare`] and
/// [`crate::tpcc::load::prepare`]).
pub async fn prepare_tables(
    opts: &ConnectOptions,
    job: &Loading<'_>,
) -> Result<Prepared, DatasetError> {
    match job.spec.kind {
        WorkloadKind::Tpcc => crate::tpcc::load::prepare(opts, job).await,
        _ => dataset::prepare(opts, job).await,
    }
}
