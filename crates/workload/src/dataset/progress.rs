//! What dataset work reports while it runs and how it fails, and how its parts run side by side
//! on one task.

use bakeoff_driver::DriverError;

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("table '{0}' already exists; run `bakeoff cleanup` with the same options first, or use another --mysql-db")]
    Exists(String),
    /// A table in the way that bakeoff did not make: `bakeoff cleanup` leaves it alone, so
    /// saying to run it would be a dead end.
    #[error("table '{table}' already exists and bakeoff did not create it (sysbench's, or another tool's: no marker row of bakeoff's carries its token), so `bakeoff cleanup` leaves it alone: {fix}; or run on it as it is: `bakeoff run --existing-tables=use` (a study's [[variant]]: existing_tables = \"use\")")]
    ExistsNotOurs { table: String, fix: &'static str },
    #[error(transparent)]
    Driver(#[from] DriverError),
    #[error("{0}")]
    Thread(String),
    /// A user's workload could not make what it runs on (its script's words).
    #[error("{0}")]
    Script(String),
    #[error("table '{table}' in {place} {why}, so bakeoff will not write to it, read a token from it or drop it: {fix}")]
    NotOurs {
        table: String,
        place: String,
        why: String,
        fix: &'static str,
    },
    #[error("{place} {why}, so bakeoff will not make, write to or use tables there: {fix}")]
    NotOurPlace {
        place: String,
        why: String,
        fix: &'static str,
    },
    #[error("table '{0}' was not made by `bakeoff prepare` (no marker row in bakeoff_tables carries its token), so `bakeoff run` on this server will not write to it: run `bakeoff prepare` with the same options first, or run on tables of your own with `bakeoff run --existing-tables=use` (a study's [[variant]]: existing_tables = \"use\")")]
    NotPrepared(String),
    #[error("table '{0}' is not there: run `bakeoff prepare` with the same options first")]
    NotThere(String),
    #[error("table '{0}' is not there: existing_tables = \"use\" runs on tables the server already has; load them first (`bakeoff prepare`)")]
    Missing(String),
    #[error("bakeoff_tables was written by a bakeoff older than drop tokens: its tables carry no proof that bakeoff made them, so bakeoff drops none and adds none. Check the tables it lists (SELECT table_name FROM bakeoff_tables), drop those that are yours by hand, then DROP TABLE bakeoff_tables")]
    OldMarker,
    #[error("prepare was interrupted with {rows} of {total} rows loaded and the secondary indexes not all built; drop the partial tables with `bakeoff cleanup` before preparing again")]
    Interrupted { rows: u64, total: u64 },
}

/// Progress of prepare/cleanup, for the CLI to show (sysbench's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Creating(String),
    Inserting {
        table: String,
        rows: u64,
    },
    /// Rows loaded so far, after every chunk (from the loader threads).
    Rows {
        done: u64,
        total: u64,
    },
    Loaded {
        rows: u64,
    },
    Indexing(String),
    Prewarming(String),
    Dropping(String),
    /// A table cleanup did not drop, and why.
    LeftAlone {
        table: String,
        why: String,
    },
    /// The server refused LOAD DATA LOCAL (MySQL 8's default, `local_infile=OFF`): the rows
    /// go as multi-row INSERTs instead, slower for the server. Told once per prepare.
    LocalInfileRefused,
    /// The server refused TPC-C's routines (`tpcc::routines`: an account without CREATE
    /// ROUTINE, say): the client-side statements run, `--procedures` cannot. Its error.
    RoutinesRefused(String),
}

/// Await every future on this task, concurrently. All run to the end (a failed loader does
/// not cancel the others); the first error in worker order is returned.
pub(super) async fn join_all<T, F: std::future::Future<Output = Result<T, DatasetError>>>(
    futures: impl Iterator<Item = F>,
) -> Result<Vec<T>, DatasetError> {
    let set: Vec<_> = futures.map(Box::pin).collect();
    let mut results: Vec<Option<Result<T, DatasetError>>> = (0..set.len()).map(|_| None).collect();
    let mut set: Vec<_> = set.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, slot) in set.iter_mut().enumerate() {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(r) => {
                        results[i] = Some(r);
                        *slot = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    results
        .into_iter()
        .map(|r| r.expect("every future completed"))
        .collect()
}

/// A current-thread runtime for a prepare thread of its own.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, DatasetError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DatasetError::Thread(format!("starting a prepare thread: {e}")))
}
