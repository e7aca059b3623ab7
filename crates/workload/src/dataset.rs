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
//! Safety: every table bakeoff creates is first recorded in the marker table
//! `bakeoff_tables`; `cleanup` drops only recorded tables, never anything else.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Outcome};

use crate::strings::{fill_c, fill_pad, C_LEN, PAD_LEN};
use crate::{Rng, WorkloadKind, WorkloadSpec};

pub const MARKER_TABLE: &str = "bakeoff_tables";
const BATCH_BYTES: usize = 512 * 1024;
const CHUNK_ROWS: u32 = 25_000;
/// "Local infile is not allowed": MariaDB 10.5+'s ER_LOAD_INFILE_CAPABILITY_DISABLED (4166,
/// seen from 10.11 with local-infile=0), the older ER_NOT_ALLOWED_COMMAND (1148), MySQL 8's
/// ER_CLIENT_LOCAL_FILES_DISABLED (3948).
const LOCAL_INFILE_REFUSED: [u16; 3] = [4166, 1148, 3948];

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("table '{0}' already exists; run `bakeoff cleanup` with the same options first, or use another --mysql-db")]
    Exists(String),
    #[error("{0}")]
    Driver(#[from] DriverError),
    #[error("{0}")]
    Thread(String),
}

/// Progress of prepare/cleanup, for the CLI to show (sysbench's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Creating(String),
    Inserting {
        table: String,
        rows: u32,
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
    LeftAlone(String),
}

/// The tables a workload uses and their CREATE TABLE text.
pub fn tables(spec: &WorkloadSpec, threads: u32) -> Vec<(String, String)> {
    let o = &spec.options;
    if spec.kind == WorkloadKind::BulkInsert {
        return (1..=threads.max(1))
            .map(|i| {
                let sql = format!(
                    "CREATE TABLE IF NOT EXISTS sbtest{i} (\n  id INTEGER NOT NULL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  PRIMARY KEY (id))"
                );
                (format!("sbtest{i}"), sql)
            })
            .collect();
    }
    (1..=o.tables)
        .map(|i| {
            let id = if o.auto_inc { "INTEGER NOT NULL AUTO_INCREMENT" } else { "INTEGER NOT NULL" };
            let key = if o.secondary { "KEY xid (id)" } else { "PRIMARY KEY (id)" };
            let sql = format!(
                "CREATE TABLE sbtest{i}(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {key}\n) /*! ENGINE = {} */ {}",
                o.storage_engine, o.table_options
            );
            (format!("sbtest{i}"), sql)
        })
        .collect()
}

/// Rows each table starts with: oltp_insert with --auto-inc=off starts empty (sysbench forces
/// table_size=0 there), bulk_insert always does.
fn initial_rows(spec: &WorkloadSpec) -> u32 {
    match spec.kind {
        WorkloadKind::BulkInsert => 0,
        WorkloadKind::OltpInsert if !spec.options.auto_inc => 0,
        _ => spec.options.table_size,
    }
}

/// How many connections `prepare` should use here: loading waits on the server's log writes as
/// well as its CPUs, so two per CPU, at least 4 (4x100k rows on 2 CPUs: 1.0-1.1 s against
/// 1.2-1.5 s with one per CPU).
pub fn default_connections() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    (2 * cpus).max(4)
}

/// Create, load and index the tables with `parallel` connections.
pub async fn prepare(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    parallel: u32,
    seed: u64,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<u64, DatasetError> {
    let mut admin = Conn::connect(opts).await?;
    admin
        .exec(&format!(
            "CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (table_name VARCHAR(64) NOT NULL PRIMARY KEY, \
             workload VARCHAR(64) NOT NULL, created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)"
        ))
        .await?;
    let tables = tables(spec, threads);
    let bulk = spec.kind == WorkloadKind::BulkInsert;
    for (name, create) in &tables {
        if !bulk && table_exists(&mut admin, name).await? {
            return Err(DatasetError::Exists(name.clone()));
        }
        progress(Progress::Creating(name.clone()));
        // Recorded before it exists: a crash in between leaves a marker for a table that may
        // be missing (harmless: cleanup uses IF EXISTS), never a table cleanup would not know.
        admin
            .exec(&format!(
                "REPLACE INTO {MARKER_TABLE} (table_name, workload) VALUES ('{name}', '{}')",
                spec.kind
            ))
            .await?;
        admin.exec(create).await?;
    }
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
    let meter = Meter {
        done: AtomicU64::new(0),
        total,
        progress,
    };
    let loaded = load_on_threads(opts, spec, jobs, seed, parallel.max(1), &meter)?;
    progress(Progress::Loaded { rows: loaded });
    if spec.options.create_secondary && !bulk {
        let names: Mutex<VecDeque<u32>> = Mutex::new((1..=tables.len() as u32).collect());
        let workers = (0..parallel.max(1)).map(|_| index_worker(opts, &names, progress));
        join_all(workers).await?;
    }
    admin.quit().await;
    Ok(loaded)
}

/// Every table's rows cut into chunks, queued table after table in turn (t1 c1, t2 c1, ...,
/// t1 c2, ...): concurrent loaders then fill different tables, as sysbench's one thread per
/// table does, instead of all splitting pages of one table's primary key while the other
/// tables wait (the queue used to hold table 1's chunks first, so 32 loaders of 16 x 1M rows
/// started on one table).
fn chunks(tables: u32, size: u32) -> VecDeque<(u32, u32, u32)> {
    let mut jobs = VecDeque::new();
    let mut start = 1;
    while start <= size {
        let end = (start + CHUNK_ROWS - 1).min(size);
        jobs.extend((1..=tables).map(|t| (t, start, end)));
        start = end + 1;
    }
    jobs
}

/// Load every chunk of `jobs` with `parallel` connections spread over one OS thread per CPU
/// this process may use (at most one per connection). Making the rows (random digits for c
/// and pad) costs the client 0.42 us a row (sysbench: 1.08), measured here on 8 x 200k rows:
/// one thread would generate ~2.4M rows/s, so this is headroom for servers that load faster
/// than that, not what limits a 16-CPU load today. Blocks the calling thread until every
/// loader is done.
fn load_on_threads(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    jobs: VecDeque<(u32, u32, u32)>,
    seed: u64,
    parallel: u32,
    meter: &Meter,
) -> Result<u64, DatasetError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let threads = cpus.min(parallel).max(1);
    let jobs = Mutex::new(jobs);
    let local = AtomicBool::new(true);
    let results: Vec<Result<u64, DatasetError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                // Connections dealt round-robin: thread i drives every threads-th one.
                let mine = (i..parallel).step_by(threads as usize).count();
                let (jobs, local) = (&jobs, &local);
                scope.spawn(move || -> Result<u64, DatasetError> {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| {
                            DatasetError::Thread(format!("starting a loader thread: {e}"))
                        })?;
                    let workers =
                        (0..mine).map(|_| load_worker(opts, spec, jobs, seed, local, meter));
                    Ok(rt.block_on(join_all(workers))?.into_iter().sum())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(DatasetError::Thread("a loader thread panicked".into()))
                })
            })
            .collect()
    });
    results.into_iter().sum()
}

/// Counts loaded rows across the loader threads and reports them.
struct Meter<'p> {
    done: AtomicU64,
    total: u64,
    progress: &'p (dyn Fn(Progress) + Sync),
}

impl Meter<'_> {
    fn add(&self, rows: u64) {
        let done = self.done.fetch_add(rows, Ordering::Relaxed) + rows;
        (self.progress)(Progress::Rows {
            done,
            total: self.total,
        });
    }
}

/// One chunk of one table: ids `start..=end` of `sbtest{table}`.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    table: u32,
    start: u32,
    end: u32,
}

async fn load_worker(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    jobs: &Mutex<VecDeque<(u32, u32, u32)>>,
    seed: u64,
    local: &AtomicBool,
    meter: &Meter<'_>,
) -> Result<u64, DatasetError> {
    let mut conn = Conn::connect(opts).await?;
    let mut buf = Vec::with_capacity(BATCH_BYTES + 1024);
    let mut rows = 0u64;
    loop {
        let job = jobs.lock().map(|mut j| j.pop_front()).unwrap_or(None);
        let Some((table, start, end)) = job else {
            break;
        };
        let chunk = Chunk { table, start, end };
        if !(local.load(Ordering::Relaxed)
            && load_local(&mut conn, spec, seed, chunk, &mut buf).await?)
        {
            local.store(false, Ordering::Relaxed);
            insert(&mut conn, spec, seed, chunk, &mut buf).await?;
        }
        rows += u64::from(end - start + 1);
        meter.add(u64::from(end - start + 1));
    }
    conn.quit().await;
    Ok(rows)
}

/// Every row of `chunk`, generated from the chunk's own seed.
fn rows(spec: &WorkloadSpec, seed: u64, chunk: Chunk, mut f: impl FnMut(u32, u32, &[u8], &[u8])) {
    let mut rng = Rng::seeded(seed ^ (u64::from(chunk.table) << 32 | u64::from(chunk.start)));
    let (mut c, mut pad) = ([0u8; C_LEN], [0u8; PAD_LEN]);
    for id in chunk.start..=chunk.end {
        let k = spec
            .distribution
            .sample(&mut rng, 1, spec.options.table_size);
        fill_c(&mut rng, &mut c);
        fill_pad(&mut rng, &mut pad);
        f(id, k, &c, &pad);
    }
}

/// Load `chunk` as tab-separated rows; false when the server does not allow local infile.
async fn load_local(
    conn: &mut Conn,
    spec: &WorkloadSpec,
    seed: u64,
    chunk: Chunk,
    buf: &mut Vec<u8>,
) -> Result<bool, DatasetError> {
    use std::io::Write;
    buf.clear();
    rows(spec, seed, chunk, |id, k, c, pad| {
        let _ = write!(buf, "{id}\t{k}\t");
        buf.extend_from_slice(c);
        buf.push(b'\t');
        buf.extend_from_slice(pad);
        buf.push(b'\n');
    });
    let t = chunk.table;
    let sql =
        format!("LOAD DATA LOCAL INFILE 'bakeoff-sbtest{t}' INTO TABLE sbtest{t} (id, k, c, pad)");
    match conn.load_local(&sql, buf).await? {
        Outcome::Err(e) if LOCAL_INFILE_REFUSED.contains(&e.code) => Ok(false),
        Outcome::Err(e) => Err(DriverError::Server(e).into()),
        _ => Ok(true),
    }
}

/// Load `chunk` as sysbench does: multi-row INSERTs of about 512 KiB.
async fn insert(
    conn: &mut Conn,
    spec: &WorkloadSpec,
    seed: u64,
    chunk: Chunk,
    buf: &mut Vec<u8>,
) -> Result<(), DatasetError> {
    let prefix = format!("INSERT INTO sbtest{}(id, k, c, pad) VALUES", chunk.table);
    let mut batches = Vec::new();
    buf.clear();
    rows(spec, seed, chunk, |id, k, c, pad| {
        if buf.is_empty() {
            buf.extend_from_slice(prefix.as_bytes());
        } else {
            buf.push(b',');
        }
        push_row(buf, id, k, c, pad);
        if buf.len() >= BATCH_BYTES - 256 {
            batches.push(std::mem::take(buf));
        }
    });
    if !buf.is_empty() {
        batches.push(std::mem::take(buf));
    }
    for sql in batches {
        conn.exec(std::str::from_utf8(&sql).unwrap_or_default())
            .await?;
    }
    Ok(())
}

fn push_row(out: &mut Vec<u8>, id: u32, k: u32, c: &[u8], pad: &[u8]) {
    use std::io::Write;
    let _ = write!(out, "({id}, {k}, '");
    out.extend_from_slice(c);
    out.extend_from_slice(b"', '");
    out.extend_from_slice(pad);
    out.extend_from_slice(b"')");
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
    let count = tables(spec, threads).len() as u32;
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
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let mut conn = Conn::connect(opts).await?;
    loop {
        let next = tables.lock().map(|mut q| q.pop_front()).unwrap_or(None);
        let Some(t) = next else { break };
        progress(Progress::Indexing(format!("sbtest{t}")));
        conn.exec(&format!("CREATE INDEX k_{t} ON sbtest{t}(k)"))
            .await?;
    }
    conn.quit().await;
    Ok(())
}

/// Drop the tables recorded in the marker table, then the marker table itself. Tables bakeoff
/// did not create are reported and left alone. Returns the dropped names.
pub async fn cleanup(
    opts: &ConnectOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let mut conn = Conn::connect(opts).await?;
    let mut dropped = Vec::new();
    if table_exists(&mut conn, MARKER_TABLE).await? {
        let rows = conn
            .query_rows(&format!(
                "SELECT table_name FROM {MARKER_TABLE} ORDER BY created_at, table_name"
            ))
            .await?;
        for name in rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
        {
            progress(Progress::Dropping(name.clone()));
            conn.exec(&format!(
                "DROP TABLE IF EXISTS `{}`",
                name.replace('`', "``")
            ))
            .await?;
            conn.exec(&format!(
                "DELETE FROM {MARKER_TABLE} WHERE table_name = '{}'",
                name.replace('\'', "''")
            ))
            .await?;
            dropped.push(name);
        }
        conn.exec(&format!("DROP TABLE {MARKER_TABLE}")).await?;
    }
    let rest = conn
        .query_rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'sbtest%' ORDER BY table_name")
        .await?;
    for name in rest
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
    {
        progress(Progress::LeftAlone(name));
    }
    conn.quit().await;
    Ok(dropped)
}

async fn table_exists(conn: &mut Conn, name: &str) -> Result<bool, DriverError> {
    let rows = conn
        .query_rows(&format!(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '{name}'"
        ))
        .await?;
    Ok(!rows.is_empty())
}

/// Await every future on this task, concurrently. All run to the end (a failed loader does
/// not cancel the others); the first error in worker order is returned.
async fn join_all<T, F: std::future::Future<Output = Result<T, DatasetError>>>(
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

#[cfg(test)]
mod chunk_tests {
    use super::*;

    #[test]
    fn chunks_take_the_tables_in_turn_and_cover_every_row_once() {
        let jobs: Vec<_> = chunks(3, 2 * CHUNK_ROWS + 5).into_iter().collect();
        assert_eq!(
            jobs.iter().take(4).map(|j| j.0).collect::<Vec<_>>(),
            [1, 2, 3, 1],
            "the first chunks go to different tables"
        );
        for t in 1..=3 {
            let rows: u32 = jobs
                .iter()
                .filter(|j| j.0 == t)
                .map(|j| j.2 - j.1 + 1)
                .sum();
            assert_eq!(rows, 2 * CHUNK_ROWS + 5);
        }
        assert!(chunks(4, 0).is_empty());
    }
}
