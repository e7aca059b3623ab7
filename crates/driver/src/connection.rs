//! The driver family: what a workload needs of a connection, whatever the database.
//!
//! Workloads are generic over it, so a statement is a direct call into the family's own
//! connection type: the seam costs the hot path nothing.

use std::future::Future;

use crate::{ConnectOptions, DriverError, Outcome, Param, RowBuf};

/// The most statements one [`Connection::execute_many`] sends: their replies must fit the
/// sockets' buffers, since nothing is read until all are written.
pub const MAX_BATCH: usize = 64;

/// A batch `execute_many` takes: at most [`MAX_BATCH`] statements, a result buffer each.
pub(crate) fn batch_fits(len: usize, outs: usize) -> Result<(), DriverError> {
    match len <= MAX_BATCH && outs >= len {
        true => Ok(()),
        false => Err(DriverError::Batch {
            len,
            outs,
            max: MAX_BATCH,
        }),
    }
}

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

    /// Execute a batch of prepared statements in one round trip: every execution is sent in
    /// one write, then each reply read in order, `batch[k]`'s rows kept in `outs[k]` and its
    /// outcome pushed onto `outcomes` (both cleared first). For a workload whose next
    /// statements do not wait on the last one's values (TPC-C's): one round trip where
    /// `execute_into` makes one each.
    ///
    /// Every statement runs whatever the ones before it did; what a refused one leaves is the
    /// engine's (see [`error_aborts_transaction`](Self::error_aborts_transaction)). At most
    /// [`MAX_BATCH`](crate::MAX_BATCH) statements (`outs` at least as long), and replies that
    /// fit the sockets' buffers: the writes are not interleaved with reads. An error part way
    /// (the connection lost, a read timeout, a result past `--max-rows`, a protocol error)
    /// leaves the rest of the batch's replies unread and its later statements, a COMMIT
    /// among them, run by the server: give the connection up. This default runs them one at
    /// a time.
    fn execute_many(
        &mut self,
        batch: &[(&Self::Stmt, &[Param<'_>])],
        outs: &mut [RowBuf],
        outcomes: &mut Vec<Outcome>,
    ) -> impl Future<Output = Result<(), DriverError>> {
        async move {
            outcomes.clear();
            crate::batch_fits(batch.len(), outs.len())?;
            for ((stmt, params), out) in batch.iter().zip(outs.iter_mut()) {
                let outcome = self.execute_into(stmt, params, out).await?;
                outcomes.push(outcome);
            }
            Ok(())
        }
    }

    /// Whether a statement the server refuses inside a transaction fails the transaction, so
    /// that every later statement is refused and a COMMIT rolls it back (PostgreSQL). Where
    /// not (MySQL: a refused statement is undone alone, or a deadlock rolls the transaction
    /// back and the session goes on without one), a batch must not end in a COMMIT after
    /// statements that may be refused, and must run with autocommit off.
    fn error_aborts_transaction(&self) -> bool {
        false
    }

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
