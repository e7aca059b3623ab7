//! The dataset on PostgreSQL: sysbench's pgsql tables (its CREATE TABLE as oltp_common.lua
//! sends it to the pgsql driver), loaded in parallel chunks by COPY (PostgreSQL's bulk load,
//! where MariaDB's is LOAD DATA LOCAL), the secondary indexes built after the load, then
//! VACUUM ANALYZE and a CHECKPOINT so that runs do not start inside the load's aftermath
//! (hint bits, the visibility map, statistics, dirty buffers).
//!
//! Ownership by the rules every engine shares (`owned.rs`), through PostgreSQL's statements
//! (`adapters/pgsql.rs`). Every statement here runs on a connection whose search path is
//! pinned to pg_catalog and names its tables with their schema: nothing another role plants
//! on the user's search path runs from them.

use super::tables::Loading;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bakeoff_driver::{ConnectOptions, DriverError, Outcome, PgConn};

use super::adapters::pgsql::{ident, lit, PgOwner};
use super::load::{chunks, on_loader_threads, rows, Chunk, Meter};
use super::owned;
use super::owned::create_marked;
use super::owner::Owner;
use super::progress::{join_all, DatasetError, Progress};
use super::tables::names;
use super::tables::{initial_rows, Prepared};
use super::token::Token;
use crate::{WorkloadKind, WorkloadSpec};

pub(super) use super::adapters::pgsql::exec;

/// sysbench's pgsql CREATE TABLE for each table the workload uses, each name after `schema`
/// (`"public".`, or nothing for sysbench's unqualified names).
pub fn pg_tables(spec: &WorkloadSpec, threads: u32, schema: &str) -> Vec<(String, String)> {
    let o = &spec.options;
    if spec.kind == WorkloadKind::BulkInsert {
        return (1..=threads.max(1))
            .map(|i| {
                let sql = format!("CREATE TABLE {schema}sbtest{i} (\n  id INTEGER NOT NULL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  PRIMARY KEY (id))");
                (format!("sbtest{i}"), sql)
            })
            .collect();
    }
    (1..=o.tables)
        .map(|i| {
            let id = if o.auto_inc { "SERIAL" } else { "INTEGER NOT NULL" };
            let sql = format!(
                "CREATE TABLE {schema}sbtest{i}(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n)"
            );
            (format!("sbtest{i}"), sql)
        })
        .collect()
}

/// Create, load (COPY, `parallel` connections), index, vacuum and checkpoint.
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
    let mut admin = PgOwner::connect(opts).await?;
    let schema = format!("{}.", ident(&admin.schema));
    let tables = pg_tables(spec, threads, &schema);
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
    let meter = Meter::new(u64::from(size) * tables.len() as u64, progress, interrupt);
    let jobs = Mutex::new(chunks(tables.len() as u32, size));
    let (jobs, meter) = (&jobs, &meter);
    let schema = schema.as_str();
    let loaded = on_loader_threads(parallel.max(1), || {
        copy_worker(opts, schema, spec, jobs, seed, meter)
    })?;
    if interrupt.load(Ordering::Relaxed) {
        return Err(DatasetError::Interrupted {
            rows: loaded,
            total: meter.total,
        });
    }
    progress(Progress::Loaded { rows: loaded });
    let load_time = started.elapsed();
    if spec.options.create_secondary && spec.kind != WorkloadKind::BulkInsert {
        let indexes = sbtest_indexes(tables.len() as u32, schema);
        build_indexes(opts, indexes, parallel, interrupt, progress).await?;
    }
    let index = started.elapsed() - load_time;
    for (name, _) in &tables {
        if spec.options.auto_inc && size > 0 && spec.kind != WorkloadKind::BulkInsert {
            // COPY gave the ids; the SERIAL's sequence goes on after them, as after
            // sysbench's INSERTs that leave the id to it.
            let sequence = lit(&admin.qualified(name));
            let sql = format!("SELECT setval(pg_get_serial_sequence({sequence}, 'id'), {size})");
            exec(&mut admin.conn, &sql).await?;
        }
        let vacuum = format!("VACUUM ANALYZE {}", admin.qualified(name));
        exec(&mut admin.conn, &vacuum).await?;
    }
    // pg_checkpoint (PostgreSQL 15) or a superuser; a role without it skips the checkpoint.
    match admin.conn.query("CHECKPOINT").await? {
        Outcome::Err(e) if e.sql_state == "42501" => {}
        Outcome::Err(e) => return Err(DriverError::Server(e).into()),
        _ => {}
    }
    admin.quit().await;
    Ok(Prepared {
        tables: tables.len() as u32,
        rows: loaded,
        load: load_time,
        index,
        redo_bytes: None,
        local_infile: false,
    })
}

/// Create `tables` (name, CREATE TABLE text naming its schema) as `workload`'s, each marked
/// with one new token, for any workload: refused before anything is made when one is there
/// already. The connection keeps its DDL timeout after (the vacuum and checkpoint follow).
pub(super) async fn create_tables(
    admin: &mut PgOwner,
    tables: &[(String, String)],
    workload: &str,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let token = Token::new()?;
    owned::make_room(admin, &names(tables)).await?;
    admin.conn.for_ddl();
    create_marked(admin, tables, workload, &token, progress).await
}

async fn copy_worker(
    opts: &ConnectOptions,
    schema: &str,
    spec: &WorkloadSpec,
    jobs: &Mutex<VecDeque<(u32, u32, u32)>>,
    seed: u64,
    meter: &Meter<'_>,
) -> Result<u64, DatasetError> {
    use std::io::Write;
    let mut conn = PgConn::connect_pinned(opts).await?;
    conn.for_ddl();
    let mut buf = Vec::with_capacity(1 << 20);
    let mut loaded = 0u64;
    while !meter.interrupt.load(Ordering::Relaxed) {
        let job = jobs.lock().map(|mut j| j.pop_front()).unwrap_or(None);
        let Some((table, start, end)) = job else {
            break;
        };
        buf.clear();
        rows(spec, seed, Chunk { table, start, end }, |id, k, c, pad| {
            let _ = write!(buf, "{id}\t{k}\t");
            buf.extend_from_slice(c);
            buf.push(b'\t');
            buf.extend_from_slice(pad);
            buf.push(b'\n');
        });
        let sql = format!("COPY {schema}sbtest{table} (id, k, c, pad) FROM STDIN");
        if let Outcome::Err(e) = conn.copy_in(&sql, &buf).await? {
            return Err(DriverError::Server(e).into());
        }
        let n = u64::from(end - start + 1);
        loaded += n;
        meter.add(n);
    }
    conn.quit().await;
    Ok(loaded)
}

/// sysbench's secondary index on each of `count` tables after `schema`, as (table, CREATE
/// INDEX).
fn sbtest_indexes(count: u32, schema: &str) -> VecDeque<(String, String)> {
    (1..=count)
        .map(|t| {
            let create = format!("CREATE INDEX k_{t} ON {schema}sbtest{t}(k)");
            (format!("sbtest{t}"), create)
        })
        .collect()
}

/// Build `indexes` (table, CREATE INDEX with the table's schema) after the load, over
/// `parallel` pinned connections each taking the next from one queue. `interrupt` set stops
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
    let mut conn = PgConn::connect_pinned(opts).await?;
    conn.for_ddl();
    while !interrupt.load(Ordering::Relaxed) {
        let next = indexes.lock().map(|mut q| q.pop_front()).unwrap_or(None);
        let Some((table, create)) = next else { break };
        progress(Progress::Indexing(table));
        exec(&mut conn, &create).await?;
    }
    conn.quit().await;
    Ok(())
}

/// sysbench's prewarm on PostgreSQL: each table read through its primary key and its k
/// index, the rows fetched (an index-only scan would leave the heap cold; a sequential scan
/// of a large table goes through a small ring of buffers and warms nothing).
pub async fn prewarm(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<u32, DatasetError> {
    let mut o = PgOwner::connect(opts).await?;
    let tables = pg_tables(spec, threads, "");
    o.conn.for_ddl();
    exec(&mut o.conn, "SET enable_seqscan = off").await?;
    for (name, _) in &tables {
        progress(Progress::Prewarming(name.clone()));
        let table = o.qualified(name);
        let sql = format!("SELECT avg(length(c)) FROM (SELECT c FROM {table} ORDER BY id) t");
        exec(&mut o.conn, &sql).await?;
        if spec.kind != WorkloadKind::BulkInsert {
            let sql =
                format!("SELECT avg(length(pad)) FROM (SELECT pad FROM {table} ORDER BY k) t");
            exec(&mut o.conn, &sql).await?;
        }
    }
    o.quit().await;
    Ok(tables.len() as u32)
}

/// Drop the tables the marker table records whose facts prove them bakeoff's, then the
/// marker table once empty (`owned::drop_marked`); name the `sbtest` tables left.
pub async fn cleanup(
    opts: &ConnectOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let mut o = PgOwner::connect(opts).await?;
    let dropped = owned::drop_marked(&mut o, progress).await?;
    let sql = format!(
        "SELECT tablename FROM pg_tables WHERE schemaname = {} AND tablename LIKE 'sbtest%' ORDER BY tablename",
        lit(&o.schema)
    );
    for name in o
        .conn
        .query_rows(&sql)
        .await?
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
    fn tables_are_sysbenchs_pgsql_ones() {
        let spec = WorkloadSpec {
            kind: WorkloadKind::OltpReadWrite,
            options: crate::OltpOptions {
                tables: 2,
                ..Default::default()
            },
            distribution: crate::Distribution::new(crate::RandType::Uniform),
            tpcc: Default::default(),
            script: None,
        };
        let t = pg_tables(&spec, 1, "");
        assert_eq!(t.len(), 2);
        assert!(
            t[1].1.starts_with("CREATE TABLE sbtest2(\n  id SERIAL,"),
            "{}",
            t[1].1
        );
        assert!(!t[0].1.contains("ENGINE"));
    }
}
