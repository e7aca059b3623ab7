//! Loading TPC-C's tables at the server's pace: the nine tables (and the record of the
//! load's constants) created and marked through the dataset layer's engine adapters and
//! ownership rules, the population's independent jobs (`population.rs`) taken from one queue
//! by a pool of connections on one OS thread per CPU, each job's rows sent as the engine's
//! bulk load (LOAD DATA LOCAL on MariaDB and MySQL, or multi-row INSERTs where the server
//! refuses local infile; COPY on PostgreSQL), the secondary indexes built after the load,
//! then the statistics taken (and on PostgreSQL a VACUUM and a CHECKPOINT) so that a run does
//! not start inside the load's aftermath.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Outcome, PgConn, Protocol};

use super::population::{generate, jobs, now_text, Job};
use super::random::Constants;
use super::routines;
use super::schema::{columns, create_tables, indexes, CONSTANTS_TABLE, TABLES};
use crate::dataset::{self, DatasetError, Loading, Meter, Prepared, Progress};
use crate::Rng;

/// The workload's name in the marker table.
pub const WORKLOAD: &str = "tpcc";

/// Create, load and index the job's warehouses (`spec.tpcc`) with `parallel` connections.
/// `interrupt` set (Ctrl-C) stops every loader after the job in hand.
pub async fn prepare(opts: &ConnectOptions, job: &Loading<'_>) -> Result<Prepared, DatasetError> {
    let Loading {
        spec,
        parallel,
        seed,
        interrupt,
        progress,
        ..
    } = *job;
    let warehouses = spec.tpcc.warehouses.max(1);
    let started = Instant::now();
    let engine = "InnoDB";
    let schema = dataset::create_workload_tables(
        opts,
        &|schema| create_tables(opts.protocol, schema, engine),
        WORKLOAD,
        progress,
    )
    .await?;
    let constants = Constants::for_load(&mut Rng::seeded(seed));
    let record = format!(
        "INSERT INTO {schema}{CONSTANTS_TABLE} (c_last_load, c_id_load, ol_i_id_load, warehouses) VALUES ({}, {}, {}, {warehouses})",
        constants.c_last, constants.c_id, constants.ol_i_id
    );
    dataset::exec_once(opts, &record).await?;
    let jobs = jobs(warehouses);
    let total: u64 = jobs.iter().map(Job::rows).sum();
    for t in TABLES.iter().take(TABLES.len() - 1) {
        progress(Progress::Inserting {
            table: t.to_string(),
            rows: super::population::table_rows(t, warehouses),
        });
    }
    let meter = Meter::new(total, progress, interrupt);
    let queue = Mutex::new(VecDeque::from(jobs));
    let now = now_text();
    let local = AtomicBool::new(true);
    let (queue, meter, schema_ref, now, local_ref, constants) = (
        &queue,
        &meter,
        schema.as_str(),
        now.as_str(),
        &local,
        &constants,
    );
    let rows = dataset::on_loader_threads(parallel.max(1), || {
        load_worker(
            opts, schema_ref, queue, seed, constants, now, local_ref, meter,
        )
    })?;
    if interrupt.load(Ordering::Relaxed) {
        return Err(DatasetError::Interrupted { rows, total });
    }
    progress(Progress::Loaded { rows });
    let load = started.elapsed();
    let made = VecDeque::from(indexes(&schema));
    dataset::build_workload_indexes(opts, made, parallel, interrupt, progress).await?;
    if interrupt.load(Ordering::Relaxed) {
        return Err(DatasetError::Interrupted { rows, total });
    }
    let index = started.elapsed() - load;
    // The routines `--procedures` calls. A server that refuses them still runs the
    // client-side statements: said, not fatal.
    if let Err(e) = routines::create_all(opts, &schema).await {
        progress(Progress::RoutinesRefused(format!(
            "prepare could not create them: {e}; --procedures needs an account that may create routines (MySQL: CREATE ROUTINE)"
        )));
    }
    let names: Vec<String> = TABLES.iter().map(|t| t.to_string()).collect();
    dataset::settle(opts, &names).await?;
    Ok(Prepared {
        tables: TABLES.len() as u32,
        rows,
        load,
        index,
        redo_bytes: None,
        local_infile: opts.protocol == Protocol::MySql && local.load(Ordering::Relaxed),
    })
}

/// One connection's bulk loads.
enum Loader {
    MySql(Conn),
    Postgres(PgConn),
}

#[allow(clippy::too_many_arguments)]
async fn load_worker(
    opts: &ConnectOptions,
    schema: &str,
    queue: &Mutex<VecDeque<Job>>,
    seed: u64,
    constants: &Constants,
    now: &str,
    local: &AtomicBool,
    meter: &Meter<'_>,
) -> Result<u64, DatasetError> {
    let mut conn = match opts.protocol {
        Protocol::MySql => Loader::MySql(Conn::connect(opts).await?),
        Protocol::Postgres => Loader::Postgres(PgConn::connect_pinned(opts).await?),
    };
    match &mut conn {
        Loader::MySql(c) => c.for_ddl(),
        Loader::Postgres(c) => c.for_ddl(),
    }
    let mut loaded = 0;
    while !meter.interrupt.load(Ordering::Relaxed) {
        let job = queue.lock().map(|mut q| q.pop_front()).unwrap_or(None);
        let Some(job) = job else { break };
        for (table, rows) in generate(job, seed, constants, now) {
            send(&mut conn, schema, table, &rows, local, meter).await?;
        }
        loaded += job.rows();
        meter.add(job.rows());
    }
    match conn {
        Loader::MySql(c) => c.quit().await,
        Loader::Postgres(c) => c.quit().await,
    }
    Ok(loaded)
}

/// Send one table's rows (tab-separated text) as the engine's bulk load.
async fn send(
    conn: &mut Loader,
    schema: &str,
    table: &str,
    rows: &[u8],
    local: &AtomicBool,
    meter: &Meter<'_>,
) -> Result<(), DatasetError> {
    let cols = columns(table);
    match conn {
        Loader::Postgres(c) => {
            let sql = format!("COPY {schema}{table} ({cols}) FROM STDIN");
            if let Outcome::Err(e) = c.copy_in(&sql, rows).await? {
                return Err(DriverError::Server(e).into());
            }
        }
        Loader::MySql(c) => {
            if local.load(Ordering::Relaxed) {
                let sql =
                    format!("LOAD DATA LOCAL INFILE 'bakeoff-{table}' INTO TABLE {table} ({cols})");
                match c.load_local(&sql, rows).await? {
                    Outcome::Err(e) if dataset::LOCAL_INFILE_REFUSED.contains(&e.code) => {
                        if local.swap(false, Ordering::Relaxed) {
                            (meter.progress)(Progress::LocalInfileRefused);
                        }
                    }
                    Outcome::Err(e) => return Err(DriverError::Server(e).into()),
                    _ => return Ok(()),
                }
            }
            for sql in inserts(table, cols, rows) {
                c.exec(&sql).await?;
            }
        }
    }
    Ok(())
}

/// Tab-separated rows as multi-row INSERTs of about 512 KiB, every value a quoted string
/// (the server converts it to the column's type) and `\N` as NULL. The population's text
/// holds no quotes or backslashes.
fn inserts(table: &str, cols: &str, rows: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut sql = String::new();
    for row in rows.split(|b| *b == b'\n').filter(|r| !r.is_empty()) {
        if sql.is_empty() {
            sql = format!("INSERT INTO {table} ({cols}) VALUES ");
        } else {
            sql.push(',');
        }
        sql.push('(');
        for (i, field) in row.split(|b| *b == b'\t').enumerate() {
            if i > 0 {
                sql.push(',');
            }
            match field {
                b"\\N" => sql.push_str("NULL"),
                f => {
                    sql.push('\'');
                    sql.push_str(&String::from_utf8_lossy(f));
                    sql.push('\'');
                }
            }
        }
        sql.push(')');
        if sql.len() > 512 * 1024 {
            out.push(std::mem::take(&mut sql));
        }
    }
    if !sql.is_empty() {
        out.push(sql);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_counts_said_before_the_load_add_up_to_what_the_jobs_load() {
        for w in [1, 3, 100] {
            let said: u64 = TABLES[..TABLES.len() - 1]
                .iter()
                .map(|t| super::super::population::table_rows(t, w))
                .sum();
            assert_eq!(said, jobs(w).iter().map(Job::rows).sum::<u64>(), "{w}");
        }
        assert_eq!(
            super::super::population::table_rows("stock", 100),
            10_000_000
        );
    }

    #[test]
    fn rows_become_inserts_with_nulls() {
        let sql = inserts("new_order", "a, b", b"1\t\\N\n2\tx\n");
        assert_eq!(
            sql,
            ["INSERT INTO new_order (a, b) VALUES ('1',NULL),('2','x')"]
        );
    }
}
