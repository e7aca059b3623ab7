//! PostgreSQL: protocol 3.0 over TCP or a unix socket, TLS as libpq's sslmode, the logins
//! libpq does without Kerberos (trust, peer, cleartext, md5, SCRAM-SHA-256), named
//! statements by the extended protocol as sysbench's pgsql driver runs them.
//!
//! The message encoding is the module's own (`message.rs`): a handful of messages, each a few
//! lines, written into the connection's one reusable buffer, so a statement allocates nothing.

mod auth;
mod conn;
mod fields;
mod io;
mod message;
mod reply;
mod rows;
mod startup;
mod text;
mod values;

pub use conn::{interpolate, numbered_placeholders, PgConn, PgStmt};
pub use text::{
    libpq_error, Reply as PgReply, RowSet as PgRowSet, TextParams, Until as PgUntil, Via as PgVia,
};

/// The SQLSTATEs sysbench 1.0.20's pgsql driver treats as ignorable (drv_pgsql.c's
/// check_status, which also rolls the transaction back): deadlock_detected,
/// unique_violation, serialization_failure.
pub const PG_IGNORABLE: [&str; 3] = ["40P01", "23505", "40001"];
pub use startup::libpq_name;

use crate::{ConnectOptions, Connection, DriverError, Outcome, Param, RowBuf};

impl Connection for PgConn {
    async fn own_place(&mut self) -> Result<String, DriverError> {
        let schema = self
            .query_value("SELECT pg_catalog.current_schema()")
            .await?;
        self.pin_search_path().await?;
        match schema {
            Some(s) => Ok(format!("\"{}\".", s.replace('"', "\"\""))),
            // 3F000 invalid_schema_name: nowhere to find the tables.
            None => Err(DriverError::Server(crate::ServerError {
                code: 0,
                sql_state: "3F000".into(),
                message: "no schema on the connection's search path exists, so there are no tables to use: set your role's search_path to the one they are in (ALTER ROLE you SET search_path = ...)".into(),
                position: 0,
                pg: None,
            })),
        }
    }

    type Stmt = PgStmt;

    async fn open(opts: &ConnectOptions, blocking: bool) -> Result<PgConn, DriverError> {
        let mut conn = PgConn::connect(opts).await?;
        // The timed run's statements: its clock and events bound them, not a read timeout;
        // a stalled server only where the user asked (`--stall-timeout`).
        conn.set_stall_limit(opts.limits.stall_timeout);
        if blocking {
            conn.into_blocking()
        } else {
            Ok(conn)
        }
    }

    async fn prepare(&mut self, sql: &str) -> Result<PgStmt, DriverError> {
        PgConn::prepare(self, sql).await
    }

    async fn prepare_typed(
        &mut self,
        sql: &str,
        sample: &[Param<'_>],
    ) -> Result<PgStmt, DriverError> {
        PgConn::prepare_typed(self, sql, sample).await
    }

    async fn execute(
        &mut self,
        stmt: &PgStmt,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        PgConn::execute(self, stmt, params).await
    }

    async fn execute_into(
        &mut self,
        stmt: &PgStmt,
        params: &[Param<'_>],
        out: &mut RowBuf,
    ) -> Result<Outcome, DriverError> {
        PgConn::execute_into(self, stmt, params, out).await
    }

    async fn execute_many(
        &mut self,
        batch: &[(&PgStmt, &[Param<'_>])],
        outs: &mut [RowBuf],
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), DriverError> {
        PgConn::execute_many(self, batch, outs, outcomes).await
    }

    fn error_aborts_transaction(&self) -> bool {
        true
    }

    async fn query(&mut self, sql: &str) -> Result<Outcome, DriverError> {
        PgConn::query(self, sql).await
    }

    async fn query_with(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        PgConn::query_with(self, sql, params).await
    }

    async fn recover(&mut self) -> Result<(), DriverError> {
        PgConn::recover(self).await
    }

    fn connection_id(&self) -> u32 {
        PgConn::connection_id(self)
    }

    async fn quit(self) {
        PgConn::quit(self).await
    }
}
