//! What a workload with tables of its own (TPC-C's) takes from the dataset layer, whatever
//! the engine: its tables created and marked under the ownership rules, its indexes built
//! after its load, one statement of its own, and the statistics taken after. The load itself
//! is the workload's (the tpcc module's loader), over `load::on_loader_threads`.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Outcome, PgConn, Protocol};

use super::adapters::mysql::MyOwner;
use super::adapters::pgsql::{ident, PgOwner};
use super::mysql;
use super::owner::Owner;
use super::pgsql;
use super::progress::{DatasetError, Progress};

/// Create the tables `make` lists (given the prefix that qualifies a name: `"schema".` on
/// PostgreSQL, nothing on MySQL) as `workload`'s, each marked; refused, with nothing made,
/// when one is there already. Returns the prefix, for the workload's own statements.
pub(crate) async fn create_workload_tables(
    opts: &ConnectOptions,
    make: &(dyn Fn(&str) -> Vec<(String, String)> + Sync),
    workload: &str,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<String, DatasetError> {
    match opts.protocol {
        Protocol::MySql => {
            let mut admin = MyOwner::connect(opts).await?;
            mysql::create_tables(&mut admin, &make(""), workload, progress).await?;
            admin.quit().await;
            Ok(String::new())
        }
        Protocol::Postgres => {
            let mut admin = PgOwner::connect(opts).await?;
            let prefix = format!("{}.", ident(&admin.schema));
            pgsql::create_tables(&mut admin, &make(&prefix), workload, progress).await?;
            admin.quit().await;
            Ok(prefix)
        }
    }
}

/// Build `indexes` (table, CREATE INDEX) after the load over `parallel` connections.
pub(crate) async fn build_workload_indexes(
    opts: &ConnectOptions,
    indexes: VecDeque<(String, String)>,
    parallel: u32,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    match opts.protocol {
        Protocol::MySql => mysql::build_indexes(opts, indexes, parallel, interrupt, progress).await,
        Protocol::Postgres => {
            pgsql::build_indexes(opts, indexes, parallel, interrupt, progress).await
        }
    }
}

/// One statement on a connection of its own (PostgreSQL's with its search path pinned: the
/// statement names its tables with their schema).
pub(crate) async fn exec_once(opts: &ConnectOptions, sql: &str) -> Result<(), DatasetError> {
    let outcome = match opts.protocol {
        Protocol::MySql => {
            let mut c = Conn::connect(opts).await?;
            let o = c.query(sql).await?;
            c.quit().await;
            o
        }
        Protocol::Postgres => {
            let mut c = PgConn::connect_pinned(opts).await?;
            let o = c.query(sql).await?;
            c.quit().await;
            o
        }
    };
    match outcome {
        Outcome::Err(e) => Err(DriverError::Server(e).into()),
        _ => Ok(()),
    }
}

/// After a load: the tables' statistics taken (MySQL's ANALYZE TABLE; PostgreSQL's VACUUM
/// ANALYZE, then a CHECKPOINT where the role may), so that a run does not start inside the
/// load's aftermath. `tables` are unqualified names in the workload's place.
pub(crate) async fn settle(opts: &ConnectOptions, tables: &[String]) -> Result<(), DatasetError> {
    match opts.protocol {
        Protocol::MySql => {
            let mut c = Conn::connect(opts).await?;
            c.for_ddl();
            for t in tables {
                c.query_rows(&format!("ANALYZE TABLE `{t}`")).await?;
            }
            c.quit().await;
        }
        Protocol::Postgres => {
            let mut admin = PgOwner::connect(opts).await?;
            admin.conn.for_ddl();
            for t in tables {
                let sql = format!("VACUUM ANALYZE {}", admin.qualified(t));
                pgsql::exec(&mut admin.conn, &sql).await?;
            }
            // pg_checkpoint (PostgreSQL 15) or a superuser; a role without it skips it.
            match admin.conn.query("CHECKPOINT").await? {
                Outcome::Err(e) if e.sql_state == "42501" => {}
                Outcome::Err(e) => return Err(DriverError::Server(e).into()),
                _ => {}
            }
            admin.quit().await;
        }
    }
    Ok(())
}
