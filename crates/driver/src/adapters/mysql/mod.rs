//! MySQL and MariaDB: the client/server protocol over TCP or a unix socket, around the
//! sans-IO `bakeoff-proto`.

mod auth;
mod compress;
mod conn;
mod login;
mod reader;
mod retry;
mod rows;
mod values;

pub use conn::{Conn, Stmt};
pub use retry::somaxconn;
pub use rows::Answer;

use crate::{ConnectOptions, Connection, DriverError, Outcome, Param, RowBuf};

impl Connection for Conn {
    type Stmt = Stmt;

    async fn open(opts: &ConnectOptions, blocking: bool) -> Result<Conn, DriverError> {
        let mut conn = Conn::connect(opts).await?;
        // The timed run's statements: its clock and events bound them, not a read timeout;
        // a stalled server only where the user asked (`--stall-timeout`).
        conn.set_stall_limit(opts.limits.stall_timeout);
        if blocking {
            conn.into_blocking()
        } else {
            Ok(conn)
        }
    }

    async fn prepare(&mut self, sql: &str) -> Result<Stmt, DriverError> {
        Conn::prepare(self, sql).await
    }

    async fn execute(&mut self, stmt: &Stmt, params: &[Param<'_>]) -> Result<Outcome, DriverError> {
        Conn::execute(self, stmt, params).await
    }

    async fn execute_into(
        &mut self,
        stmt: &Stmt,
        params: &[Param<'_>],
        out: &mut RowBuf,
    ) -> Result<Outcome, DriverError> {
        Conn::execute_into(self, stmt, params, out).await
    }

    async fn execute_many(
        &mut self,
        batch: &[(&Stmt, &[Param<'_>])],
        outs: &mut [RowBuf],
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), DriverError> {
        Conn::execute_many(self, batch, outs, outcomes).await
    }

    async fn query(&mut self, sql: &str) -> Result<Outcome, DriverError> {
        Conn::query(self, sql).await
    }

    async fn query_with(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        Conn::query_with(self, sql, params).await
    }

    fn connection_id(&self) -> u32 {
        Conn::connection_id(self)
    }

    async fn quit(self) {
        Conn::quit(self).await
    }
}
