//! The driver family: what a workload needs of a connection, whatever the database.
//!
//! Workloads are generic over it, so a statement is a direct call into the family's own
//! connection type: the seam costs the hot path nothing.

use std::future::Future;

use crate::{ConnectOptions, DriverError, Outcome, Param, RowBuf};

pub trait Connection: Sized {
    /// A server-side prepared statement.
    type Stmt;

    /// Connect and authenticate. `blocking`: the caller's thread drives this connection and
    /// nothing else, so blocking socket I/O may replace the event loop's round per read.
    fn open(
        opts: &ConnectOptions,
        blocking: bool,
    ) -> impl Future<Output = Result<Self, DriverError>>;

    fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<Self::Stmt, DriverError>>;

    /// Prepare a statement that will run with values of `sample`'s kinds (the values
    /// themselves do not matter). PostgreSQL types a statement's parameters when it parses
    /// it, so knowing them lets it parse now rather than at the first execution; MySQL's
    /// servers need no types, and this is `prepare`.
    fn prepare_typed(
        &mut self,
        sql: &str,
        sample: &[Param<'_>],
    ) -> impl Future<Output = Result<Self::Stmt, DriverError>> {
        let _ = sample;
        self.prepare(sql)
    }

    /// Execute a prepared statement; a statement the server refuses is [`Outcome::Err`], data
    /// for the caller to count, not an error of the connection.
    fn execute(
        &mut self,
        stmt: &Self::Stmt,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Outcome, DriverError>>;

    /// Execute a prepared statement and keep its rows' values in `out` (cleared first): for
    /// a workload that reads what it selects. A server error is [`Outcome::Err`], as
    /// `execute` returns it. `execute` stays the way to run a statement whose values nobody
    /// reads: it decodes nothing.
    fn execute_into(
        &mut self,
        stmt: &Self::Stmt,
        params: &[Param<'_>],
        out: &mut RowBuf,
    ) -> impl Future<Output = Result<Outcome, DriverError>>;

    /// Run a text statement.
    fn query(&mut self, sql: &str) -> impl Future<Output = Result<Outcome, DriverError>>;

    /// Run a statement with `?` placeholders as text, the values substituted client-side
    /// (sysbench's `--db-ps-mode=disable`).
    fn query_with(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Outcome, DriverError>>;

    /// After a statement the server refused, make the connection usable for the next event:
    /// PostgreSQL rolls back a transaction the error left failed (every statement in it is
    /// refused until then), as sysbench's pgsql driver does. MySQL needs nothing.
    fn recover(&mut self) -> impl Future<Output = Result<(), DriverError>> {
        async { Ok(()) }
    }

    /// For a workload that names its own tables (TPC-C's): where they are, as the prefix that
    /// qualifies a table's name, with this session's functions and operators resolving in the
    /// server's own catalog alone from now on. PostgreSQL: the session's current schema,
    /// quoted, then the search path pinned to pg_catalog (a search path holding a schema
    /// other roles can create in would let them plant a better-matching function or
    /// operator, CVE-2018-1058, that runs as this role). MySQL: nothing (its tables are the
    /// connection's database's, and it has no search path).
    fn own_place(&mut self) -> impl Future<Output = Result<String, DriverError>> {
        async { Ok(String::new()) }
    }

    /// The server's id for this connection (its thread or backend).
    fn connection_id(&self) -> u32;

    /// Leave politely; errors no longer matter.
    fn quit(self) -> impl Future<Output = ()>;
}
