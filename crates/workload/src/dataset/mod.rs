//! The dataset: `prepare` creates and loads the tables, `cleanup` drops them.
//!
//! Faster than sysbench's prepare by doing the same work in parallel: every table is cut into
//! chunks of ids that a pool of connections loads concurrently (sysbench gives each thread
//! whole tables), then the secondary indexes are built after the load, concurrently across
//! tables. Rows are sysbench's: ids 1..table_size, k from the key distribution, c and pad
//! digit strings. They travel as LOAD DATA LOCAL (no SQL for the server to parse per row:
//! 0.35-0.45 s per 100k-row table against 0.7-0.95 s as INSERTs, measured here with the
//! mariadb client), or, when the server does not allow local infile, as sysbench's ~512 KiB
//! multi-row INSERTs. Each chunk's rows come from its own seed, so the data does not depend on
//! which connection loaded it.
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
//! Safety: every table bakeoff creates is first recorded in the marker table
//! `bakeoff_tables` and carries its prepare's token; `cleanup` drops, and `run` on a given
//! server writes to, only recorded tables that prove it and carry no one else's code, by
//! the rules of `owned.rs`, once for every engine (each engine's statements are in
//! `adapters/`).

mod adapters;
mod load;
mod owned;
mod owner;
pub mod pgsql;
mod pgsql_shared;
mod progress;
mod shared;
mod tables;
mod token;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Protocol};

use crate::{WorkloadKind, WorkloadSpec};
use adapters::mysql::MyOwner;
use adapters::pgsql::PgOwner;
use load::{chunks, load_on_threads, Meter};
use owner::Owner;
use progress::join_all;
pub use progress::{DatasetError, Progress};
pub use shared::{cleanup_shared, prepare_shared};
use tables::initial_rows;
pub use tables::{tables, Prepared};
pub use token::{workload_table, Token, MARKER_TABLE};

/// How many connections `prepare` should use here: loading waits on the server's log writes as
/// well as its CPUs, so two per CPU, at least 4 (4x100k rows on 2 CPUs: 1.0-1.1 s against
/// 1.2-1.5 s with one per CPU).
pub fn default_connections() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    (2 * cpus).max(4)
}

/// Create, load and index the tables with `parallel` connections. `interrupt` set (Ctrl-C)
/// stops the load after the chunks in flight, and the index builds before the next table.
pub async fn prepare(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    parallel: u32,
    seed: u64,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Prepared, DatasetError> {
    if opts.protocol == Protocol::Postgres {
        return pgsql::prepare(opts, spec, threads, parallel, seed, interrupt, progress).await;
    }
    let started = Instant::now();
    let mut admin = MyOwner::connect(opts).await?;
    let redo_before = redo_written(&mut admin.conn).await?;
    let token = Token::new()?;
    let tables = tables(spec, threads, true);
    let bulk = spec.kind == WorkloadKind::BulkInsert;
    // Refused before anything is made: a prepare that finds a table leaves nothing behind,
    // not even the marker table. bulk_insert's too: a table it did not make is not adopted.
    owned::make_room(&mut admin, &names(&tables)).await?;
    admin.conn.for_ddl();
    for (name, create) in &tables {
        progress(Progress::Creating(name.clone()));
        let workload = spec.kind.to_string();
        admin.create_marked(name, create, &workload, &token).await?;
    }
    admin.conn.for_statements();
    let size = initial_rows(spec);
    for t in 1..=tables.len() as u32 {
        if size > 0 {
            progress(Progress::Inserting {
                table: format!("sbtest{t}"),
                rows: size,
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
        let names: Mutex<VecDeque<u32>> = Mutex::new((1..=tables.len() as u32).collect());
        let workers = (0..parallel.max(1)).map(|_| index_worker(opts, &names, interrupt, progress));
        join_all(workers).await?;
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
    if opts.protocol == Protocol::Postgres {
        return pgsql::prewarm(opts, spec, threads, progress).await;
    }
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

async fn index_worker(
    opts: &ConnectOptions,
    tables: &Mutex<VecDeque<u32>>,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let mut conn = Conn::connect(opts).await?;
    conn.for_ddl();
    while !interrupt.load(Ordering::Relaxed) {
        let next = tables.lock().map(|mut q| q.pop_front()).unwrap_or(None);
        let Some(t) = next else { break };
        progress(Progress::Indexing(format!("sbtest{t}")));
        conn.exec(&format!("CREATE INDEX k_{t} ON sbtest{t}(k)"))
            .await?;
    }
    conn.quit().await;
    Ok(())
}

/// Drop the tables recorded in the marker table that carry its token, then the marker table
/// itself; tables that do not prove bakeoff made them are said and left as they are. Returns
/// the dropped names.
pub async fn cleanup(
    opts: &ConnectOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    if opts.protocol == Protocol::Postgres {
        return pgsql::cleanup(opts, progress).await;
    }
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
    let names = names(&tables(spec, threads, true));
    if opts.protocol == Protocol::Postgres {
        let mut o = PgOwner::connect(opts).await?;
        let checked = check_with(&mut o, &names, adopt).await;
        o.quit().await;
        return checked;
    }
    let mut o = MyOwner::connect(opts).await?;
    let checked = check_with(&mut o, &names, adopt).await;
    o.quit().await;
    checked
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

fn names(tables: &[(String, String)]) -> Vec<String> {
    tables.iter().map(|(n, _)| n.clone()).collect()
}
