//! The tables themselves: their names and CREATE TABLE text, the rows each starts with, and
//! what a prepare reports.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::progress::Progress;
use crate::{WorkloadKind, WorkloadSpec};

/// The tables a workload uses and their MySQL CREATE TABLE text: sysbench's, or when
/// `ours`, bakeoff's own (its adapter writes the token onto each; bulk_insert's is not IF NOT
/// EXISTS: a table already there is refused, never adopted).
pub fn tables(spec: &WorkloadSpec, threads: u32, ours: bool) -> Vec<(String, String)> {
    let o = &spec.options;
    if spec.kind == WorkloadKind::Tpcc {
        // TPC-C's tables by name: their CREATE text is the workload's own (the tpcc module's,
        // which depends on this layer, not the other way).
        return super::token::TPCC_TABLES
            .iter()
            .map(|t| (t.to_string(), String::new()))
            .collect();
    }
    if spec.kind == WorkloadKind::BulkInsert {
        let create = match ours {
            true => "CREATE TABLE",
            false => "CREATE TABLE IF NOT EXISTS",
        };
        return (1..=threads.max(1))
            .map(|i| {
                let sql = format!(
                    "{create} sbtest{i} (\n  id INTEGER NOT NULL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  PRIMARY KEY (id))"
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
pub(super) fn initial_rows(spec: &WorkloadSpec) -> u32 {
    match spec.kind {
        WorkloadKind::BulkInsert => 0,
        WorkloadKind::OltpInsert if !spec.options.auto_inc => 0,
        _ => spec.options.table_size,
    }
}

/// What a prepare loads, and how: one value for every engine's and workload's loader.
#[derive(Clone, Copy)]
pub struct Loading<'a> {
    pub spec: &'a WorkloadSpec,
    /// The run's threads (some workloads have a table per thread).
    pub threads: u32,
    /// Connections that load at once.
    pub parallel: u32,
    pub seed: u64,
    /// Set (Ctrl-C): the load stops after the chunks in flight, and the index builds before
    /// the next table.
    pub interrupt: &'a AtomicBool,
    pub progress: &'a (dyn Fn(Progress) + Sync),
}

/// What `prepare` did, phase by phase: where its time went, as far as the server says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prepared {
    pub tables: u32,
    pub rows: u64,
    /// Creating the tables and loading their rows.
    pub load: Duration,
    /// Building the secondary indexes after the load (zero when there are none).
    pub index: Duration,
    /// Bytes the server wrote to its redo log meanwhile (InnoDB's `Innodb_os_log_written`);
    /// None when the server does not report it.
    pub redo_bytes: Option<u64>,
    /// The rows went as LOAD DATA LOCAL; false: the server refused it and they went as
    /// multi-row INSERTs (as sysbench sends them).
    pub local_infile: bool,
}

/// The names of `tables` (name, CREATE TABLE text).
pub(super) fn names(tables: &[(String, String)]) -> Vec<String> {
    tables.iter().map(|(n, _)| n.clone()).collect()
}
