//! Tables shared with sysbench, for a line in sysbench's grammar: no marker table, so
//! sysbench's cleanup and bakeoff's drop the same `sbtest1..N` and either's prepare follows the
//! other's cleanup. Prepared in sysbench's order: `threads` workers, worker w taking tables
//! w+1, w+1+threads, ... and each table in turn created, loaded and indexed, so with one
//! thread the messages come as sysbench prints them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bakeoff_driver::{Conn, ConnectOptions};

use super::adapters::mysql::MyOwner;
use super::load::{chunks, in_sysbench_order, load_on_threads, Meter};
use super::owner::Owner;
use super::progress::{runtime, DatasetError, Progress};
use super::tables::{initial_rows, tables, Prepared};
use crate::{WorkloadKind, WorkloadSpec};

/// Create, load and index the tables as sysbench's prepare does. A table already there fails
/// the prepare before anything is created, with sysbench's words for it.
pub fn prepare_shared(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    seed: u64,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Prepared, DatasetError> {
    if opts.protocol == bakeoff_driver::Protocol::Postgres {
        return super::pgsql_shared::prepare_shared(opts, spec, threads, seed, interrupt, progress);
    }
    let started = Instant::now();
    let all = tables(spec, threads, false);
    let rt = runtime()?;
    rt.block_on(refuse_existing(opts, spec, &all))?;
    let size = initial_rows(spec);
    let total = u64::from(size) * all.len() as u64;
    let meter = Meter::new(total, progress, interrupt);
    // Nothing to load (bulk_insert, an empty oltp_insert): creating is quick, one worker
    // creates them all in order.
    let workers = match size {
        0 => 1,
        _ => threads.clamp(1, all.len().max(1) as u32),
    };
    let (all, meter) = (&all, &meter);
    in_sysbench_order(all.len(), workers, |mine| {
        let rt = runtime()?;
        // One connection per worker for its DDL, as each sysbench thread has one.
        let mut conn = rt.block_on(Conn::connect(opts))?;
        conn.for_ddl();
        for i in mine {
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
            let (name, create) = &all[i];
            progress(Progress::Creating(name.clone()));
            rt.block_on(conn.exec(create))?;
            let t = i as u32 + 1;
            if size > 0 {
                progress(Progress::Inserting {
                    table: name.clone(),
                    rows: u64::from(size),
                });
                let jobs = chunks(1, size).into_iter().map(|(_, a, b)| (t, a, b));
                load_on_threads(opts, spec, jobs.collect(), seed, 1, meter)?;
            }
            let index = spec.options.create_secondary && spec.kind != WorkloadKind::BulkInsert;
            if index && !interrupt.load(Ordering::Relaxed) {
                progress(Progress::Indexing(name.clone()));
                let index = format!("CREATE INDEX k_{t} ON {name}(k)");
                rt.block_on(conn.exec(&index))?;
            }
        }
        rt.block_on(conn.quit());
        Ok(())
    })?;
    let rows = meter.done.load(Ordering::Relaxed);
    if interrupt.load(Ordering::Relaxed) {
        return Err(DatasetError::Interrupted { rows, total });
    }
    progress(Progress::Loaded { rows });
    Ok(Prepared {
        tables: all.len() as u32,
        rows,
        load: started.elapsed(),
        index: Default::default(),
        redo_bytes: None,
        // sysbench's way: INSERTs, always.
        local_infile: false,
    })
}

/// sysbench's cleanup: `DROP TABLE IF EXISTS` for each of the workload's tables, whoever made
/// them. Returns the tables named.
pub async fn cleanup_shared(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    if opts.protocol == bakeoff_driver::Protocol::Postgres {
        return super::pgsql_shared::cleanup_shared(opts, spec, threads, progress).await;
    }
    let mut conn = Conn::connect(opts).await?;
    let mut dropped = Vec::new();
    for (name, _) in tables(spec, threads, false) {
        progress(Progress::Dropping(name.clone()));
        conn.exec(&format!("DROP TABLE IF EXISTS {name}")).await?;
        dropped.push(name);
    }
    conn.quit().await;
    Ok(dropped)
}

/// sysbench's prepare fails on the first table that exists; this one fails before creating
/// any, so a refused prepare leaves nothing behind.
async fn refuse_existing(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    all: &[(String, String)],
) -> Result<(), DatasetError> {
    if spec.kind == WorkloadKind::BulkInsert {
        return Ok(()); // bulk_insert creates its tables IF NOT EXISTS, as sysbench's does
    }
    let mut o = MyOwner::connect(opts).await?;
    for (name, _) in all {
        if o.facts(name).await?.is_some() {
            o.quit().await;
            return Err(DatasetError::Thread(format!(
                "Table '{name}' already exists: run cleanup first, or prepare another --mysql-db"
            )));
        }
    }
    o.quit().await;
    Ok(())
}
