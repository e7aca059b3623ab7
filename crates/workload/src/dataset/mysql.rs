//! The dataset on MySQL and MariaDB: sysbench's tables (its CREATE TABLE with the storage
//! engine and table options), loaded in parallel chunks by LOAD DATA LOCAL (`load.rs`), the
//! secondary indexes built after the load, and the redo log's bytes said.
//!
//! Rows travel as LOAD DATA LOCAL (no SQL for the server to parse per row: 0.35-0.45 s per
//! 100k-row table against 0.7-0.95 s as INSERTs, measured here with the mariadb client), or,
//! when the server does not allow local infile, as sysbench's ~512 KiB multi-row INSERTs.
//!
//! Where the time goes (2 CPUs, MariaDB 10.11, 4 x 250k rows, measured with perf and the
//! server's /proc times): the server's CPUs are the limit (1.6-1.7 of 2 busy; the client
//! 0.3-0.4 us a row). Of the server's ~3.3 us a row, LOAD DATA's field reader (a byte at a
//! time) takes a quarter, InnoDB's row inserts two fifths, the secondary index build a fifth;
//! sysbench's INSERTs cost it 5.4 us a row, a third of it parsing. The redo log (264 bytes a
//! row) did not limit: a 1 GiB log, flush_log_at_trx_commit=2 and no doublewrite buffer each
//! moved nothing beyond noise. A prepared multi-row INSERT with binary parameters (no text to
//! parse) cost the server 5-17% more per row than LOAD DATA, so LOAD DATA stays. One table
//! loads at about one server CPU's pace whatever the number of connections on it (1, 2 or 4:
//! 0.9-1.0 CPUs busy, as a single LOAD DATA of the whole table); tables load side by side.
//! `Prepared` carries the phases so every prepare can say this about its own machine.
//!
//! Ownership by the rules every engine shares (`owned.rs`), through MySQL's statements
//! (`adapters/mysql.rs`).

use super::tables::Loading;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bakeoff_driver::{Conn, ConnectOptions, DriverError};

use super::adapters::mysql::MyOwner;
use super::load::{chunks, load_on_threads, Meter};
use super::owned;
use super::owned::create_marked;
use super::owner::Owner;
use super::progress::{join_all, DatasetError, Progress};
use super::tables::names;
use super::tables::{initial_rows, tables, Prepared};
use super::token::Token;
use crate::{WorkloadKind, WorkloadSpec};

/// Create, load (LOAD DATA LOCAL or INSERTs, `parallel` connections) and index the tables,
/// and say the redo log's bytes meanwhile.
pub async fn prepare(opts: &ConnectOptions, job: &Loading<'_>) -> Result<Prepared, DatasetError> {
    let Loading {
        spec,
        threads,
        parallel,
        seed,
        interrupt,
        progress,
    } = *job;
    let started = Instant::now();
    let mut admin = MyOwner::connect(opts).await?;
    let redo_before = redo_written(&mut admin.conn).await?;
    let tables = tables(spec, threads, true);
    let bulk = spec.kind == WorkloadKind::BulkInsert;
    create_tables(&mut admin, &tables, &spec.kind.to_string(), progress).await?;
    let size = initial_rows(spec);
    for t in 1..=tables.len() as u32 {
        if size > 0 {
            progress(Progress::Inserting {
                table: format!("sbtest{t}"),
                rows: u64::from(size),
            });
        }
    }
    let jobs = chunks(tables.len() as u32, size);
    let total = u64::from(size) * tables.len() as u64;
    let meter = Meter::new(total, progress, interrupt);
    let (rows, local_infile) = load_on_threads(opts, spec, jobs, seed, parallel.max(1), &meter)?;
    let interrupted = || interrupt.load(Ordering::Relaxed);
    if interrupted() {
        return Err(DatasetError::Interrupted { rows, total });
    }
    progress(Progress::Loaded { rows });
    let load = started.elapsed();
    if spec.options.create_secondary && !bulk {
        let indexes = sbtest_indexes(tables.len() as u32);
        build_indexes(opts, indexes, parallel, interrupt, progress).await?;
        if interrupted() {
            return Err(DatasetError::Interrupted { rows, total });
        }
    }
    let index = started.elapsed() - load;
    let redo_after = redo_written(&mut admin.conn).await?;
    admin.quit().await;
    Ok(Prepared {
        tables: tables.len() as u32,
        rows,
        load,
        index,
        redo_bytes: redo_after
            .zip(redo_before)
            .map(|(a, b)| a.saturating_sub(b)),
        local_infile,
    })
}

/// Create `tables` (name, CREATE TABLE text) as `workload`'s, each marked with one new
/// token, for any workload: refused before anything is made when one is there already (a
/// prepare that finds a table leaves nothing behind, not even the marker table; bulk_insert's
/// too: a table it did not make is not adopted). The connection is back on its ordinary
/// timeout after.
pub(super) async fn create_tables(
    admin: &mut MyOwner,
    tables: &[(String, String)],
    workload: &str,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let token = Token::new()?;
    owned::make_room(admin, &names(tables)).await?;
    admin.conn.for_ddl();
    create_marked(admin, tables, workload, &token, progress).await?;
    admin.conn.for_statements();
    Ok(())
}

/// Bytes the server has written to its redo log since it started (MariaDB and MySQL both
/// report `Innodb_os_log_written`); None when it does not say. A connection that failed is
/// an error: the statements after it would only fail less clearly.
async fn redo_written(conn: &mut Conn) -> Result<Option<u64>, DriverError> {
    let rows = match conn
        .query_rows("SHOW GLOBAL STATUS LIKE 'Innodb_os_log_written'")
        .await
    {
        Ok(rows) => rows,
        Err(DriverError::Server(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(rows
        .first()
        .and_then(|r| r.get(1)?.as_deref()?.parse().ok()))
}

/// sysbench's secondary index on each of `count` tables, as (table, CREATE INDEX).
fn sbtest_indexes(count: u32) -> VecDeque<(String, String)> {
    (1..=count)
        .map(|t| {
            (
                format!("sbtest{t}"),
                format!("CREATE INDEX k_{t} ON sbtest{t}(k)"),
            )
        })
        .collect()
}

/// Build `indexes` (table, CREATE INDEX) after the load, over `parallel` connections each
/// taking the next from one queue, so tables are indexed side by side. `interrupt` set stops
/// each connection before its next index. Any workload's tables: it names none itself.
pub(super) async fn build_indexes(
    opts: &ConnectOptions,
    indexes: VecDeque<(String, String)>,
    parallel: u32,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let queue = Mutex::new(indexes);
    let workers = (0..parallel.max(1)).map(|_| index_worker(opts, &queue, interrupt, progress));
    join_all(workers).await?;
    Ok(())
}

async fn index_worker(
    opts: &ConnectOptions,
    indexes: &Mutex<VecDeque<(String, String)>>,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let mut conn = Conn::connect(opts).await?;
    conn.for_ddl();
    while !interrupt.load(Ordering::Relaxed) {
        let next = indexes.lock().map(|mut q| q.pop_front()).unwrap_or(None);
        let Some((table, create)) = next else { break };
        progress(Progress::Indexing(table));
        conn.exec(&create).await?;
    }
    conn.quit().await;
    Ok(())
}

/// sysbench's `prewarm`: read every table through its primary key and its secondary index so
/// both are in the buffer pool before anything is measured (the preload published studies
/// run), over `parallel` connections. Returns the tables warmed.
pub async fn prewarm(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    parallel: u32,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<u32, DatasetError> {
    let count = tables(spec, threads, false).len() as u32;
    let names: Mutex<VecDeque<u32>> = Mutex::new((1..=count).collect());
    let size = spec.options.table_size;
    let workers =
        (0..parallel.clamp(1, count.max(1))).map(|_| prewarm_worker(opts, &names, size, progress));
    join_all(workers).await?;
    Ok(count)
}

async fn prewarm_worker(
    opts: &ConnectOptions,
    tables: &Mutex<VecDeque<u32>>,
    size: u32,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let mut conn = Conn::connect(opts).await?;
    // A table read whole takes as long as the table.
    conn.for_ddl();
    // As sysbench: room for the derived tables in memory.
    conn.exec("SET tmp_table_size=2*1024*1024*1024").await?;
    conn.exec("SET max_heap_table_size=2*1024*1024*1024")
        .await?;
    loop {
        let next = tables.lock().map(|mut q| q.pop_front()).unwrap_or(None);
        let Some(t) = next else { break };
        progress(Progress::Prewarming(format!("sbtest{t}")));
        conn.exec(&format!("ANALYZE TABLE sbtest{t}")).await?;
        conn.exec(&format!(
            "SELECT AVG(id) FROM (SELECT * FROM sbtest{t} FORCE KEY (PRIMARY) LIMIT {size}) t"
        ))
        .await?;
        conn.exec(&format!(
            "SELECT COUNT(*) FROM (SELECT * FROM sbtest{t} WHERE k LIKE '%0%' LIMIT {size}) t"
        ))
        .await?;
    }
    conn.quit().await;
    Ok(())
}

/// Drop the tables the marker table records whose facts prove them bakeoff's, then the
/// marker table once empty (`owned::drop_marked`); name the `sbtest` tables left.
pub async fn cleanup(
    opts: &ConnectOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let mut o = MyOwner::connect(opts).await?;
    let dropped = owned::drop_marked(&mut o, progress).await?;
    let rest = o
        .conn
        .query_rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'sbtest%' ORDER BY table_name")
        .await?;
    for name in rest
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
    {
        progress(Progress::LeftAlone {
            table: name,
            why: "bakeoff did not create it".into(),
        });
    }
    o.quit().await;
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_are_sysbenchs_k_index_one_a_table_in_order() {
        let i: Vec<_> = sbtest_indexes(2).into_iter().collect();
        assert_eq!(
            i,
            [
                ("sbtest1".into(), "CREATE INDEX k_1 ON sbtest1(k)".into()),
                ("sbtest2".into(), "CREATE INDEX k_2 ON sbtest2(k)".into()),
            ]
        );
    }
}
