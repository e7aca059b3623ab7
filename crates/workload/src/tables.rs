//! A workload's tables, whichever workload: sysbench's made and loaded by the dataset layer,
//! TPC-C's by its own loader over that layer's adapters and ownership rules. Above both, so
//! that each depends only on what is below it.

use bakeoff_driver::ConnectOptions;

use crate::dataset::{self, DatasetError, Loading, Prepared, Progress};
use crate::WorkloadKind;

/// Drop the tables bakeoff made (see [`dataset::cleanup`]) and, where TPC-C's were among
/// them, its routines (`tpcc::routines`); where the server refuses those, the tables are gone
/// all the same, and that is said. Returns the dropped tables' names.
pub async fn cleanup_tables(
    opts: &ConnectOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let dropped = dataset::cleanup(opts, progress).await?;
    if dropped
        .iter()
        .any(|t| t.ends_with(crate::tpcc::schema::CONSTANTS_TABLE))
    {
        if let Err(e) = crate::tpcc::routines::drop_all(opts).await {
            progress(Progress::RoutinesRefused(format!(
                "cleanup could not drop them: {e}"
            )));
        }
    }
    Ok(dropped)
}

/// Create, load and index the job's tables (see [`dataset::prepare`] and
/// [`crate::tpcc::load::prepare`]); a user's script makes its own (its `prepare`).
pub async fn prepare_tables(
    opts: &ConnectOptions,
    job: &Loading<'_>,
) -> Result<Prepared, DatasetError> {
    if let Some(script) = &job.spec.script {
        return script.prepare(opts, job.threads, job.seed).await;
    }
    match job.spec.kind {
        WorkloadKind::Tpcc => crate::tpcc::load::prepare(opts, job).await,
        _ => dataset::prepare(opts, job).await,
    }
}
