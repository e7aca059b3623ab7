//! The dataset: `prepare` creates and loads the tables, `cleanup` drops them.
//!
//! Faster than sysbench's prepare by doing the same work in parallel: every table is cut into
//! chunks of ids that a pool of connections loads concurrently (sysbench gives each thread
//! whole tables), then the secondary indexes are built after the load, concurrently across
//! tables. Rows are sysbench's: ids 1..table_size, k from the key distribution, c and pad
//! digit strings. Each chunk's rows come from its own seed, so the data does not depend on
//! which connection loaded it.
//!
//! This file holds what every engine shares and picks the engine by the connection's
//! protocol; each engine's prepare, prewarm and cleanup are its own file: `mysql.rs` (MySQL
//! and MariaDB: LOAD DATA LOCAL, and where its time goes) and `pgsql.rs` (PostgreSQL: COPY).
//! `shared.rs` and `pgsql_shared.rs` prepare sysbench's own unmarked tables.
//!
//! Safety: every table bakeoff creates is first recorded in the marker table
//! `bakeoff_tables` and carries its prepare's token; `cleanup` drops, and `run` on a given
//! server writes to, only recorded tables that prove it and carry no one else's code, by
//! the rules of `owned.rs`, once for every engine (each engine's statements are in
//! `adapters/`). Each engine's prepare is three steps that take their tables as lists, so a
//! workload with tables of its own goes the same way under the same rules: `create_tables`
//! (make room, then `create_marked` here), its own load, then `build_indexes`.

mod adapters;
mod load;
pub mod mysql;
mod owned;
mod owner;
pub mod pgsql;
mod pgsql_shared;
mod progress;
mod shared;
mod tables;
mod token;
mod workload_tables;

use bakeoff_driver::{ConnectOptions, Protocol};

use crate::WorkloadSpec;
use adapters::mysql::MyOwner;
pub(crate) use adapters::pgsql::lit as pg_lit;
use adapters::pgsql::PgOwner;
pub(crate) use load::{on_loader_threads, Meter, LOCAL_INFILE_REFUSED};
use owner::Owner;
pub use progress::{DatasetError, Progress};
pub use shared::{cleanup_shared, prepare_shared};
use tables::names;
pub use tables::{tables, Loading, Prepared};
pub use token::{bakeoff_creates, workload_table, Token, MARKER_TABLE, TPCC_TABLES};
pub(crate) use workload_tables::{
    build_workload_indexes, create_workload_tables, exec_once, settle,
};

/// How many connections `prepare` should use here: loading waits on the server's log writes as
/// well as its CPUs, so two per CPU, at least 4 (4x100k rows on 2 CPUs: 1.0-1.1 s against
/// 1.2-1.5 s with one per CPU).
pub fn default_connections() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    (2 * cpus).max(4)
}

/// Create, load and index sysbench's tables (see [`Loading`]).
pub async fn prepare(opts: &ConnectOptions, job: &Loading<'_>) -> Result<Prepared, DatasetError> {
    match opts.protocol {
        Protocol::Postgres => pgsql::prepare(opts, job).await,
        Protocol::MySql => mysql::prepare(opts, job).await,
    }
}

/// sysbench's `prewarm`: read every table through its primary key and its secondary index so
/// both are in the buffer pool before anything is measured (the preload published studies
/// run), over `parallel` connections (MySQL's; PostgreSQL's reads on one). Returns the tables
/// warmed.
pub async fn prewarm(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    parallel: u32,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<u32, DatasetError> {
    if spec.kind == crate::WorkloadKind::Tpcc || spec.script.is_some() {
        // TPC-C's ramp-up warms its working set; sysbench's prewarm reads sbtest tables,
        // and a user's script's tables are its own.
        return Ok(0);
    }
    match opts.protocol {
        Protocol::Postgres => pgsql::prewarm(opts, spec, threads, progress).await,
        Protocol::MySql => mysql::prewarm(opts, spec, threads, parallel, progress).await,
    }
}

/// Drop the tables recorded in the marker table that carry its token, then the marker table
/// itself; tables that do not prove bakeoff made them are said and left as they are. Returns
/// the dropped names.
pub async fn cleanup(
    opts: &ConnectOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    match opts.protocol {
        Protocol::Postgres => pgsql::cleanup(opts, progress).await,
        Protocol::MySql => mysql::cleanup(opts, progress).await,
    }
}

/// Whose tables a run on a given server writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adopt {
    /// Tables `bakeoff prepare` made: each carries its marker row's token.
    Marked,
    /// The user's own (`existing_tables = "use"`): owned by the role, no one's code on them.
    Existing,
}

/// Before a run on a server bakeoff did not start: refuse (with what to do) unless every
/// table the workload uses passes the ownership rules for `adopt` (`owned.rs`).
pub async fn check_tables(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    adopt: Adopt,
) -> Result<(), DatasetError> {
    if spec.script.is_some() {
        // A user's script names its tables in its own code, out of bakeoff's sight: its
        // statements are the user's, run on their server as sysbench or pgbench would.
        return Ok(());
    }
    let names = names(&tables(spec, threads, true));
    match opts.protocol {
        Protocol::Postgres => {
            let mut o = PgOwner::connect(opts).await?;
            let checked = check_with(&mut o, &names, adopt).await;
            o.quit().await;
            checked
        }
        Protocol::MySql => {
            let mut o = MyOwner::connect(opts).await?;
            let checked = check_with(&mut o, &names, adopt).await;
            o.quit().await;
            checked
        }
    }
}

async fn check_with<O: Owner>(
    o: &mut O,
    names: &[String],
    adopt: Adopt,
) -> Result<(), DatasetError> {
    match adopt {
        Adopt::Marked => owned::check_marked(o, names).await,
        Adopt::Existing => owned::check_existing(o, names).await,
    }
}
