//! Loading the rows: every table cut into chunks of ids, a pool of connections on one OS
//! thread per CPU taking chunks from one queue, each chunk sent as LOAD DATA LOCAL or, where
//! the server refuses that, as sysbench's multi-row INSERTs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Outcome};

use super::progress::{join_all, DatasetError, Progress};
use crate::strings::{fill_c, fill_pad, C_LEN, PAD_LEN};
use crate::{Rng, WorkloadSpec};

const BATCH_BYTES: usize = 512 * 1024;
const CHUNK_ROWS: u32 = 25_000;
/// "Local infile is not allowed": MariaDB 10.5+'s ER_LOAD_INFILE_CAPABILITY_DISABLED (4166,
/// seen from 10.11 with local-infile=0), the older ER_NOT_ALLOWED_COMMAND (1148), MySQL 8's
/// ER_CLIENT_LOCAL_FILES_DISABLED (3948).
pub(crate) const LOCAL_INFILE_REFUSED: [u16; 3] = [4166, 1148, 3948];

/// Every table's rows cut into chunks, queued table after table in turn (t1 c1, t2 c1, ...,
/// t1 c2, ...): concurrent loaders then fill different tables, as sysbench's one thread per
/// table does, instead of all splitting pages of one table's primary key while the other
/// tables wait. The queue used to hold table 1's chunks first, so 32 loaders of 16 x 1M rows
/// worked on one table at a time, and one table loads at one server CPU's pace however many
/// connections share it: the likely cause of the 253k rows/s a 16-CPU server loaded at.
pub(super) fn chunks(tables: u32, size: u32) -> VecDeque<(u32, u32, u32)> {
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
/// loader is done. Returns the rows loaded, and whether every chunk went as LOAD DATA LOCAL
/// (false: the server refused it, and INSERTs carried the rows).
pub(super) fn load_on_threads(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    jobs: VecDeque<(u32, u32, u32)>,
    seed: u64,
    parallel: u32,
    meter: &Meter,
) -> Result<(u64, bool), DatasetError> {
    let jobs = Mutex::new(jobs);
    let local = AtomicBool::new(true);
    let (jobs_ref, local_ref) = (&jobs, &local);
    let rows = on_loader_threads(parallel, || {
        load_worker(opts, spec, jobs_ref, seed, local_ref, meter)
    })?;
    Ok((rows, local.load(Ordering::Relaxed)))
}

/// sysbench's prepare threads: `workers` threads, worker w given the indexes w, w+workers,
/// ... of `count` tables, each on a thread of its own; the first error.
pub(super) fn in_sysbench_order<F>(count: usize, workers: u32, each: F) -> Result<(), DatasetError>
where
    F: Fn(Vec<usize>) -> Result<(), DatasetError> + Sync,
{
    let each = &each;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers as usize)
            .map(|w| {
                let mine = (w..count).step_by(workers.max(1) as usize).collect();
                scope.spawn(move || each(mine))
            })
            .collect();
        let joined: Vec<Result<(), DatasetError>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked("prepare"))))
            .collect();
        joined.into_iter().collect()
    })
}

fn panicked(what: &str) -> DatasetError {
    DatasetError::Thread(format!("a {what} thread panicked"))
}

/// Run `parallel` loaders, each the future `worker` makes, over one OS thread per CPU this
/// process may use (at most one per loader; loaders dealt round-robin, each thread with a
/// current-thread runtime of its own). Blocks until all are done; their rows summed, the
/// first error in loader order.
pub(crate) fn on_loader_threads<F, Fut>(parallel: u32, worker: F) -> Result<u64, DatasetError>
where
    F: Fn() -> Fut + Sync,
    Fut: std::future::Future<Output = Result<u64, DatasetError>>,
{
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let threads = cpus.min(parallel).max(1);
    let worker = &worker;
    let results: Vec<Result<u64, DatasetError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let mine = (i..parallel).step_by(threads as usize).count();
                scope.spawn(move || -> Result<u64, DatasetError> {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| {
                            DatasetError::Thread(format!("starting a loader thread: {e}"))
                        })?;
                    let workers = (0..mine).map(|_| worker());
                    Ok(rt.block_on(join_all(workers))?.into_iter().sum())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked("loader"))))
            .collect()
    });
    results.into_iter().sum()
}

/// Counts loaded rows across the loader threads and reports them; `interrupt` set stops
/// every loader before its next chunk.
pub(crate) struct Meter<'p> {
    pub(crate) done: AtomicU64,
    pub(crate) total: u64,
    pub(crate) progress: &'p (dyn Fn(Progress) + Sync),
    pub(crate) interrupt: &'p AtomicBool,
}

impl<'p> Meter<'p> {
    /// A meter for `total` rows; says 0 of them at once, so that whoever shows a rate counts
    /// from the load's start, not from its first chunk.
    pub(crate) fn new(
        total: u64,
        progress: &'p (dyn Fn(Progress) + Sync),
        interrupt: &'p AtomicBool,
    ) -> Meter<'p> {
        if total > 0 {
            progress(Progress::Rows { done: 0, total });
        }
        Meter {
            done: AtomicU64::new(0),
            total,
            progress,
            interrupt,
        }
    }

    pub(crate) fn add(&self, rows: u64) {
        let done = self.done.fetch_add(rows, Ordering::Relaxed) + rows;
        (self.progress)(Progress::Rows {
            done,
            total: self.total,
        });
    }
}

/// One chunk of one table: ids `start..=end` of `sbtest{table}`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunk {
    pub(super) table: u32,
    pub(super) start: u32,
    pub(super) end: u32,
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
    conn.for_ddl();
    let mut buf = Vec::with_capacity(BATCH_BYTES + 1024);
    let mut rows = 0u64;
    while !meter.interrupt.load(Ordering::Relaxed) {
        let job = jobs.lock().map(|mut j| j.pop_front()).unwrap_or(None);
        let Some((table, start, end)) = job else {
            break;
        };
        let chunk = Chunk { table, start, end };
        if !(local.load(Ordering::Relaxed)
            && load_local(&mut conn, spec, seed, chunk, &mut buf).await?)
        {
            if local.swap(false, Ordering::Relaxed) {
                (meter.progress)(Progress::LocalInfileRefused);
            }
            insert(&mut conn, spec, seed, chunk, &mut buf).await?;
        }
        rows += u64::from(end - start + 1);
        meter.add(u64::from(end - start + 1));
    }
    conn.quit().await;
    Ok(rows)
}

/// Every row of `chunk`, generated from the chunk's own seed.
pub(super) fn rows(
    spec: &WorkloadSpec,
    seed: u64,
    chunk: Chunk,
    mut f: impl FnMut(u32, u32, &[u8], &[u8]),
) {
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
