//! The server's own counters, read over a connection of their own with a short timeout: a hung
//! server must not stall the coordinator that ticks the run. MySQL's SHOW GLOBAL STATUS;
//! PostgreSQL's pg_stat_database (the load database's row) and pg_stat_bgwriter, and its
//! backends from pg_stat_activity.

use std::collections::BTreeMap;
use std::time::Duration;

use bakeoff_driver::{Conn, ConnectOptions, PgConn, Protocol};

/// Counter families kept (deltas); everything else in SHOW STATUS is noise for a run report.
const COUNTERS: [&str; 4] = [
    "Com_",
    "Innodb_rows_",
    "Handler_",
    "Innodb_buffer_pool_read",
];
/// Gauges kept as values, not deltas.
pub(crate) const GAUGES: [&str; 4] = [
    "Threads_running",
    "Threads_connected",
    "pg_backends_active",
    "pg_backends",
];

/// PostgreSQL's counters, one row: each column is named as it is kept.
const PG_STATUS: &str = "SELECT d.xact_commit, d.xact_rollback, d.blks_read, d.blks_hit, \
    d.tup_returned, d.tup_fetched, d.tup_inserted, d.tup_updated, d.tup_deleted, d.deadlocks, \
    d.temp_bytes, b.buffers_checkpoint, b.buffers_clean, b.buffers_backend, \
    b.checkpoints_timed, b.checkpoints_req, \
    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'active'), \
    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend') \
    FROM pg_stat_database d, pg_stat_bgwriter b WHERE d.datname = current_database()";
const PG_NAMES: [&str; 18] = [
    "pg_stat_database.xact_commit",
    "pg_stat_database.xact_rollback",
    "pg_stat_database.blks_read",
    "pg_stat_database.blks_hit",
    "pg_stat_database.tup_returned",
    "pg_stat_database.tup_fetched",
    "pg_stat_database.tup_inserted",
    "pg_stat_database.tup_updated",
    "pg_stat_database.tup_deleted",
    "pg_stat_database.deadlocks",
    "pg_stat_database.temp_bytes",
    "pg_stat_bgwriter.buffers_checkpoint",
    "pg_stat_bgwriter.buffers_clean",
    "pg_stat_bgwriter.buffers_backend",
    "pg_stat_bgwriter.checkpoints_timed",
    "pg_stat_bgwriter.checkpoints_req",
    "pg_backends_active",
    "pg_backends",
];

const TIMEOUT: Duration = Duration::from_millis(250);
/// A login may take longer than a query: SCRAM's key derivation over TCP, a TLS handshake.
/// The first reading waits for it (the run has not started); a connection that timed out
/// mid-statement is made again at the next reading.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

pub(crate) struct StatusReader {
    opts: ConnectOptions,
    rt: tokio::runtime::Runtime,
    conn: Option<Conn>,
    pg: Option<PgConn>,
}

impl StatusReader {
    pub fn new(opts: ConnectOptions) -> Option<StatusReader> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        Some(StatusReader {
            opts,
            rt,
            conn: None,
            pg: None,
        })
    }

    /// The kept counters and gauges, or None when the server did not answer in time.
    pub fn read(&mut self) -> Option<BTreeMap<String, i64>> {
        if self.opts.protocol == Protocol::Postgres {
            return self.read_pg();
        }
        let opts = &self.opts;
        let mut conn = self.conn.take();
        let result = self.rt.block_on(async {
            if conn.is_none() {
                conn = tokio::time::timeout(CONNECT_TIMEOUT, Conn::connect(opts))
                    .await
                    .ok()?
                    .ok();
            }
            tokio::time::timeout(TIMEOUT, conn.as_mut()?.query_rows("SHOW GLOBAL STATUS"))
                .await
                .ok()?
                .ok()
        });
        // A connection that timed out mid-statement is not reused.
        if result.is_some() {
            self.conn = conn;
        }
        let mut out = BTreeMap::new();
        for row in result? {
            let (Some(Some(name)), Some(Some(value))) = (row.first(), row.get(1)) else {
                continue;
            };
            let keep =
                COUNTERS.iter().any(|p| name.starts_with(p)) || GAUGES.contains(&name.as_str());
            if let (true, Ok(v)) = (keep, value.parse::<i64>()) {
                out.insert(name.clone(), v);
            }
        }
        Some(out)
    }

    /// PostgreSQL's counters (deltas are taken by the sampler, as for MySQL's) and gauges.
    fn read_pg(&mut self) -> Option<BTreeMap<String, i64>> {
        let opts = &self.opts;
        let mut conn = self.pg.take();
        let result = self.rt.block_on(async {
            if conn.is_none() {
                conn = tokio::time::timeout(CONNECT_TIMEOUT, PgConn::connect_pinned(opts))
                    .await
                    .ok()?
                    .ok();
            }
            tokio::time::timeout(TIMEOUT, conn.as_mut()?.query_rows(PG_STATUS))
                .await
                .ok()?
                .ok()
        });
        if result.is_some() {
            self.pg = conn;
        }
        let row = result?.into_iter().next()?;
        Some(
            PG_NAMES
                .iter()
                .zip(row)
                .filter_map(|(name, v)| Some((name.to_string(), v?.parse::<i64>().ok()?)))
                .collect(),
        )
    }
}
