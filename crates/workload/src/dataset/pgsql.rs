//! The dataset on PostgreSQL: sysbench's pgsql tables (its CREATE TABLE as oltp_common.lua
//! sends it to the pgsql driver), loaded in parallel chunks by COPY (PostgreSQL's bulk load,
//! where MariaDB's is LOAD DATA LOCAL), the secondary indexes built after the load, then
//! VACUUM ANALYZE and a CHECKPOINT so that runs do not start inside the load's aftermath
//! (hint bits, the visibility map, statistics, dirty buffers).
//!
//! Ownership as on MySQL (`owned.rs`): a marker table row and a token on each table (its
//! COMMENT), written in the transaction that creates it. A drop is fenced by PostgreSQL's
//! transactional DDL: the table locked, its token checked, dropped, all in one transaction,
//! so the table checked is the table dropped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bakeoff_driver::{ConnectOptions, DriverError, Outcome, Param, PgConn};

use super::load::{chunks, on_loader_threads, rows, Chunk, Meter};
use super::owned::{workload_table, Token, MARKER_TABLE};
use super::progress::{join_all, DatasetError, Progress};
use super::tables::{initial_rows, Prepared};
use crate::{WorkloadKind, WorkloadSpec};

const MARKER_COMMENT: &str = "bakeoff marker";

/// sysbench's pgsql CREATE TABLE for each table the workload uses.
pub fn pg_tables(spec: &WorkloadSpec, threads: u32) -> Vec<(String, String)> {
    let o = &spec.options;
    if spec.kind == WorkloadKind::BulkInsert {
        return (1..=threads.max(1))
            .map(|i| {
                let sql = format!("CREATE TABLE sbtest{i} (\n  id INTEGER NOT NULL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  PRIMARY KEY (id))");
                (format!("sbtest{i}"), sql)
            })
            .collect();
    }
    (1..=o.tables)
        .map(|i| {
            let id = if o.auto_inc { "SERIAL" } else { "INTEGER NOT NULL" };
            let sql = format!(
                "CREATE TABLE sbtest{i}(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n)"
            );
            (format!("sbtest{i}"), sql)
        })
        .collect()
}

/// Create, load (COPY, `parallel` connections), index, vacuum and checkpoint.
pub async fn prepare(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    threads: u32,
    parallel: u32,
    seed: u64,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Prepared, DatasetError> {
    let started = Instant::now();
    let mut admin = PgConn::connect(opts).await?;
    let token = Token::new()?;
    let tables = pg_tables(spec, threads);
    for (name, _) in &tables {
        if exists(&mut admin, name).await? {
            return Err(DatasetError::Exists(name.clone()));
        }
    }
    ensure_marker(&mut admin).await?;
    admin.for_ddl();
    for (name, create) in &tables {
        progress(Progress::Creating(name.clone()));
        // One transaction: the table never exists without its row and its token.
        let sql = format!(
            "BEGIN; INSERT INTO {MARKER_TABLE} (table_name, workload, token) VALUES ('{name}', '{}', '{}') \
             ON CONFLICT (table_name) DO UPDATE SET token = EXCLUDED.token; {create}; \
             COMMENT ON TABLE {name} IS '{}'; COMMIT",
            spec.kind,
            token.as_str(),
            token.comment()
        );
        exec(&mut admin, &sql).await?;
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
    let meter = Meter {
        done: AtomicU64::new(0),
        total: u64::from(size) * tables.len() as u64,
        progress,
        interrupt,
    };
    let jobs = Mutex::new(chunks(tables.len() as u32, size));
    let (jobs, meter) = (&jobs, &meter);
    let loaded = on_loader_threads(parallel.max(1), || {
        copy_worker(opts, spec, jobs, seed, meter)
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
        let names: Mutex<VecDeque<u32>> = Mutex::new((1..=tables.len() as u32).collect());
        let workers = (0..parallel.max(1)).map(|_| index_worker(opts, &names, interrupt, progress));
        join_all(workers).await?;
    }
    let index = started.elapsed() - load_time;
    for (name, _) in &tables {
        if spec.options.auto_inc && size > 0 && spec.kind != WorkloadKind::BulkInsert {
            // COPY gave the ids; the SERIAL's sequence goes on after them, as after
            // sysbench's INSERTs that leave the id to it.
            let sql = format!("SELECT setval(pg_get_serial_sequence('{name}', 'id'), {size})");
            exec(&mut admin, &sql).await?;
        }
        exec(&mut admin, &format!("VACUUM ANALYZE {name}")).await?;
    }
    // pg_checkpoint (PostgreSQL 15) or a superuser; a role without it skips the checkpoint.
    match admin.query("CHECKPOINT").await? {
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

async fn copy_worker(
    opts: &ConnectOptions,
    spec: &WorkloadSpec,
    jobs: &Mutex<VecDeque<(u32, u32, u32)>>,
    seed: u64,
    meter: &Meter<'_>,
) -> Result<u64, DatasetError> {
    use std::io::Write;
    let mut conn = PgConn::connect(opts).await?;
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
        let sql = format!("COPY sbtest{table} (id, k, c, pad) FROM STDIN");
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

async fn index_worker(
    opts: &ConnectOptions,
    tables: &Mutex<VecDeque<u32>>,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    let mut conn = PgConn::connect(opts).await?;
    conn.for_ddl();
    while !interrupt.load(Ordering::Relaxed) {
        let next = tables.lock().map(|mut q| q.pop_front()).unwrap_or(None);
        let Some(t) = next else { break };
        progress(Progress::Indexing(format!("sbtest{t}")));
        exec(&mut conn, &format!("CREATE INDEX k_{t} ON sbtest{t}(k)")).await?;
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
    let tables = pg_tables(spec, threads);
    let mut conn = PgConn::connect(opts).await?;
    conn.for_ddl();
    exec(&mut conn, "SET enable_seqscan = off").await?;
    for (name, _) in &tables {
        progress(Progress::Prewarming(name.clone()));
        exec(
            &mut conn,
            &format!("SELECT avg(length(c)) FROM (SELECT c FROM {name} ORDER BY id) t"),
        )
        .await?;
        if spec.kind != WorkloadKind::BulkInsert {
            exec(
                &mut conn,
                &format!("SELECT avg(length(pad)) FROM (SELECT pad FROM {name} ORDER BY k) t"),
            )
            .await?;
        }
    }
    conn.quit().await;
    Ok(tables.len() as u32)
}

/// Drop the tables the marker table records whose token proves them bakeoff's, each in a
/// transaction that locks it before the check; then the marker table once empty.
pub async fn cleanup(
    opts: &ConnectOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let mut conn = PgConn::connect(opts).await?;
    let mut dropped = Vec::new();
    if exists(&mut conn, MARKER_TABLE).await? {
        let marked = conn
            .query_rows(&format!(
                "SELECT table_name, token FROM {MARKER_TABLE} ORDER BY created_at, table_name"
            ))
            .await?;
        for row in marked {
            let mut row = row.into_iter().map(Option::unwrap_or_default);
            let (name, token) = (
                row.next().unwrap_or_default(),
                row.next().unwrap_or_default(),
            );
            let proof = workload_table(&name).and(Token::parse(&token));
            match proof {
                None => progress(Progress::LeftAlone {
                    table: name.clone(),
                    why: "its marker row names no table bakeoff creates",
                }),
                Some(t) => match drop_fenced(&mut conn, &name, &t).await? {
                    Some(true) => {
                        progress(Progress::Dropping(name.clone()));
                        dropped.push(name.clone());
                    }
                    Some(false) => progress(Progress::LeftAlone {
                        table: name.clone(),
                        why: "it does not carry the token of bakeoff's marker row",
                    }),
                    None => {}
                },
            }
            // The row goes either way. Its values are any account's words: they travel as
            // parameters, never inside SQL text (with standard_conforming_strings off a
            // backslash would end a quoted literal).
            let sql = format!("DELETE FROM {MARKER_TABLE} WHERE table_name = ? AND token = ?");
            let stmt = conn.prepare(&sql).await?;
            let params = [Param::Str(name.as_bytes()), Param::Str(token.as_bytes())];
            let outcome = conn.execute(&stmt, &params).await;
            conn.close_stmt(&stmt).await?;
            if let Outcome::Err(e) = outcome? {
                return Err(DriverError::Server(e).into());
            }
        }
        drop_marker(&mut conn).await?;
    }
    for name in conn
        .query_rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'sbtest%' ORDER BY tablename")
        .await?
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
    {
        progress(Progress::LeftAlone {
            table: name,
            why: "bakeoff did not create it",
        });
    }
    conn.quit().await;
    Ok(dropped)
}

/// Some(true) dropped, Some(false) not ours, None missing. `name` is an `sbtestN`.
async fn drop_fenced(
    conn: &mut PgConn,
    name: &str,
    token: &Token,
) -> Result<Option<bool>, DatasetError> {
    if !exists(conn, name).await? {
        return Ok(None);
    }
    exec(
        conn,
        &format!("BEGIN; LOCK TABLE {name} IN ACCESS EXCLUSIVE MODE"),
    )
    .await?;
    let comment = conn
        .query_value(&format!(
            "SELECT obj_description('{name}'::regclass, 'pg_class')"
        ))
        .await;
    let ours = match comment {
        Ok(c) => c.as_deref() == Some(token.comment().as_str()),
        Err(e) => {
            let _ = conn.query("ROLLBACK").await;
            return Err(e.into());
        }
    };
    let end = match ours {
        true => format!("DROP TABLE {name}; COMMIT"),
        false => "ROLLBACK".to_string(),
    };
    exec(conn, &end).await?;
    Ok(Some(ours))
}

async fn ensure_marker(conn: &mut PgConn) -> Result<(), DatasetError> {
    if exists(conn, MARKER_TABLE).await? {
        return Ok(());
    }
    let sql = format!(
        "BEGIN; CREATE TABLE {MARKER_TABLE} (table_name VARCHAR(64) NOT NULL PRIMARY KEY, \
         workload VARCHAR(64) NOT NULL, token CHAR(16) NOT NULL, \
         created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP); \
         COMMENT ON TABLE {MARKER_TABLE} IS '{MARKER_COMMENT}'; COMMIT"
    );
    exec(conn, &sql).await
}

/// The marker table, once empty and bakeoff's (by its comment), in one locked transaction.
async fn drop_marker(conn: &mut PgConn) -> Result<(), DatasetError> {
    exec(
        conn,
        &format!("BEGIN; LOCK TABLE {MARKER_TABLE} IN ACCESS EXCLUSIVE MODE"),
    )
    .await?;
    let comment = conn
        .query_value(&format!(
            "SELECT obj_description('{MARKER_TABLE}'::regclass, 'pg_class')"
        ))
        .await?;
    let left = conn
        .query_value(&format!("SELECT count(*) FROM {MARKER_TABLE}"))
        .await?;
    let end = match comment.as_deref() == Some(MARKER_COMMENT) && left.as_deref() == Some("0") {
        true => format!("DROP TABLE {MARKER_TABLE}; COMMIT"),
        false => "ROLLBACK".into(),
    };
    exec(conn, &end).await
}

/// Whether a table of this name is visible on the search path.
async fn exists(conn: &mut PgConn, name: &str) -> Result<bool, DriverError> {
    let v = conn
        .query_value(&format!(
            "SELECT to_regclass({}) IS NOT NULL",
            literal(name)
        ))
        .await?;
    Ok(v.as_deref() == Some("t"))
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A statement that must succeed; a failed transaction is rolled back before the error
/// returns, so the connection stays usable.
pub(super) async fn exec(conn: &mut PgConn, sql: &str) -> Result<(), DatasetError> {
    match conn.query(sql).await? {
        Outcome::Err(e) => {
            conn.recover().await?;
            Err(DriverError::Server(e).into())
        }
        _ => Ok(()),
    }
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
        };
        let t = pg_tables(&spec, 1);
        assert_eq!(t.len(), 2);
        assert!(
            t[1].1.starts_with("CREATE TABLE sbtest2(\n  id SERIAL,"),
            "{}",
            t[1].1
        );
        assert!(!t[0].1.contains("ENGINE"));
    }
}
