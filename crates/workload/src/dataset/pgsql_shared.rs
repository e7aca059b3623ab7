//! Tables shared with sysbench on PostgreSQL, for a line in sysbench's grammar: no marker
//! table and no token, so sysbench's cleanup and bakeoff's drop the same `sbtest1..N`.
//! Prepared in sysbench's order (worker w takes tables w+1, w+1+threads, ...; each table
//! created, loaded, indexed in turn), the rows by COPY on the worker's own connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bakeoff_driver::{ConnectOptions, DriverError, Outcome, PgConn};

use super::load::{chunks, in_sysbench_order, rows, Chunk, Meter};
use super::pgsql::{exec, pg_tables};
use super::progress::{runtime, DatasetError, Progress};
use super::tables::{initial_rows, Prepared};
use crate::{WorkloadKind, WorkloadSpec};

/// Create, load and index the tables as sysbench's pgsql prepare does. A table already there
/// fails the prepare before anything is created.
pub fn prepare_shared(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    seed: u64,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Prepared, DatasetError> {
    let started = Instant::now();
    let mut all = pg_tables(spec, threads, "");
    if spec.kind == WorkloadKind::BulkInsert {
        // bulk_insert.lua creates its tables IF NOT EXISTS.
        for (_, create) in &mut all {
            *create = create.replacen("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1);
        }
    } else {
        runtime()?.block_on(refuse_existing(opts, &all))?;
    }
    let size = initial_rows(spec);
    let meter = Meter::new(u64::from(size) * all.len() as u64, progress, interrupt);
    let workers = match size {
        0 => 1,
        _ => threads.clamp(1, all.len().max(1) as u32),
    };
    let (all, meter) = (&all, &meter);
    in_sysbench_order(all.len(), workers, |mine| {
        runtime()?.block_on(worker(opts, spec, all, &mine, seed, meter))
    })?;
    let rows = meter.done.load(Ordering::Relaxed);
    if interrupt.load(Ordering::Relaxed) {
        return Err(DatasetError::Interrupted {
            rows,
            total: meter.total,
        });
    }
    progress(Progress::Loaded { rows });
    Ok(Prepared {
        tables: all.len() as u32,
        rows,
        load: started.elapsed(),
        index: Default::default(),
        redo_bytes: None,
        local_infile: false,
    })
}

/// One sysbench prepare thread: its tables in turn on one connection.
async fn worker(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    all: &[(String, String)],
    mine: &[usize],
    seed: u64,
    meter: &Meter<'_>,
) -> Result<(), DatasetError> {
    use std::io::Write;
    let size = initial_rows(spec);
    let mut conn = PgConn::connect(opts).await?;
    conn.for_ddl();
    let mut buf = Vec::with_capacity(1 << 20);
    for &i in mine {
        if meter.interrupt.load(Ordering::Relaxed) {
            break;
        }
        let (name, create) = &all[i];
        let t = i as u32 + 1;
        (meter.progress)(Progress::Creating(name.clone()));
        exec(&mut conn, create).await?;
        if size > 0 {
            (meter.progress)(Progress::Inserting {
                table: name.clone(),
                rows: u64::from(size),
            });
            for (_, start, end) in chunks(1, size) {
                buf.clear();
                rows(
                    spec,
                    seed,
                    Chunk {
                        table: t,
                        start,
                        end,
                    },
                    |id, k, c, pad| {
                        let _ = write!(buf, "{id}\t{k}\t");
                        buf.extend_from_slice(c);
                        buf.push(b'\t');
                        buf.extend_from_slice(pad);
                        buf.push(b'\n');
                    },
                );
                let copy = format!("COPY {name} (id, k, c, pad) FROM STDIN");
                if let Outcome::Err(e) = conn.copy_in(&copy, &buf).await? {
                    return Err(DriverError::Server(e).into());
                }
                meter.add(u64::from(end - start + 1));
            }
            if spec.options.auto_inc {
                // As after sysbench's INSERTs that leave the id to the SERIAL. bakeoff's own
                // statement (sysbench sends none), on the user's search path: every name in
                // it pg_catalog's, every argument its exact type, so no function another role
                // planted on the path matches better.
                let sql = format!(
                    "SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence('{name}', 'id')::pg_catalog.regclass, {size}::pg_catalog.int8)"
                );
                exec(&mut conn, &sql).await?;
            }
        }
        if spec.options.create_secondary && spec.kind != WorkloadKind::BulkInsert {
            (meter.progress)(Progress::Indexing(name.clone()));
            exec(&mut conn, &format!("CREATE INDEX k_{t} ON {name}(k)")).await?;
        }
    }
    conn.quit().await;
    Ok(())
}

/// sysbench's pgsql cleanup: `DROP TABLE IF EXISTS` for each of the workload's tables,
/// whoever made them. Returns the tables named.
pub async fn cleanup_shared(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let mut conn = PgConn::connect(opts).await?;
    let mut dropped = Vec::new();
    for (name, _) in pg_tables(spec, threads, "") {
        progress(Progress::Dropping(name.clone()));
        exec(&mut conn, &format!("DROP TABLE IF EXISTS {name}")).await?;
        dropped.push(name);
    }
    conn.quit().await;
    Ok(dropped)
}

async fn refuse_existing(
    opts: &ConnectOptions,
    all: &[(String, String)],
) -> Result<(), DatasetError> {
    let mut conn = PgConn::connect(opts).await?;
    for (name, _) in all {
        let found = conn
            .query_value(&format!(
                "SELECT pg_catalog.to_regclass('{name}'::pg_catalog.text) IS NOT NULL"
            ))
            .await?;
        if found.as_deref() == Some("t") {
            conn.quit().await;
            return Err(DatasetError::Thread(format!(
                "Table '{name}' already exists: run cleanup first, or prepare another --pgsql-db"
            )));
        }
    }
    conn.quit().await;
    Ok(())
}
