//! A terminal's side of the connection: its prepared statements, the rows last read, and
//! what stops a transaction (a conflict to run again, or a failure for the engine).

use bakeoff_driver::{Connection, DriverError, Outcome, Param, Protocol, RowBuf, ServerError};

use super::random::Constants;
use super::routines;
use super::sql;
use crate::scripting::{EventError, StmtCounts};

/// Why a transaction stopped: a conflict to run again, or a failure for the engine.
pub(super) enum Stop {
    Retry(ServerError),
    Fail(EventError),
}

impl From<DriverError> for Stop {
    fn from(e: DriverError) -> Stop {
        Stop::Fail(EventError::Driver(e))
    }
}

/// The connection side: the connection, its prepared statements and the rows last read.
pub(super) struct Db<C: Connection> {
    pub(super) conn: C,
    pub(super) stmts: Vec<C::Stmt>,
    /// The routines' calls, one per transaction type (`routines::Call`); empty where the
    /// terminal sends client-side statements.
    pub(super) calls: Vec<C::Stmt>,
    /// The rows of the statement `ex` or `call` ran last.
    pub(super) rows: RowBuf,
    /// The rows of each statement of the batch `many` ran last, and their outcomes.
    pub(super) outs: Vec<RowBuf>,
    outcomes: Vec<Outcome>,
    /// Whether a COMMIT may end a batch of writes (see `Connection::error_aborts_transaction`).
    pub(super) commit_in_batch: bool,
}

/// A statement of a batch: its place in the prepared list and its values.
pub(super) type Step<'a, 'p> = (usize, &'a [Param<'p>]);

impl<C: Connection> Db<C> {
    pub(super) fn new(conn: C, (stmts, calls): (Vec<C::Stmt>, Vec<C::Stmt>)) -> Db<C> {
        Db {
            commit_in_batch: conn.error_aborts_transaction(),
            conn,
            stmts,
            calls,
            rows: RowBuf::new(),
            outs: vec![RowBuf::new(); bakeoff_driver::MAX_BATCH],
            outcomes: Vec::with_capacity(bakeoff_driver::MAX_BATCH),
        }
    }

    /// Where a refused statement does not fail the transaction (MySQL), autocommit off: a
    /// deadlock rolls the transaction back and the batch's later statements then open
    /// another, which the terminal rolls back, instead of each committing alone.
    pub(super) async fn hold_transactions(conn: &mut C) -> Result<(), DriverError> {
        if conn.error_aborts_transaction() {
            return Ok(());
        }
        match conn.query("SET autocommit = 0").await? {
            Outcome::Err(e) => Err(DriverError::Server(e)),
            _ => Ok(()),
        }
    }

    /// Run `batch` in one round trip, each statement's rows kept in `self.outs`; the first
    /// statement refused stops the transaction (the ones after it ran, or were refused).
    pub(super) async fn many(
        &mut self,
        batch: &[Step<'_, '_>],
        c: &mut StmtCounts,
    ) -> Result<(), Stop> {
        let stmts = &self.stmts;
        let sent: Vec<(&C::Stmt, &[Param<'_>])> =
            batch.iter().map(|(s, p)| (&stmts[*s], *p)).collect();
        self.conn
            .execute_many(&sent, &mut self.outs, &mut self.outcomes)
            .await?;
        for (outcome, (s, _)) in self.outcomes.iter().zip(batch) {
            tally(outcome, *s, c)?;
        }
        Ok(())
    }

    /// Send `batch` and then COMMIT: in the same round trip where a refused statement fails
    /// the transaction (a COMMIT after it rolls back), else once every statement of the
    /// batch was answered (a COMMIT after a MySQL deadlock would commit the statements the
    /// batch ran after it). `check` reads the batch's rows for what TPC-C's population
    /// guarantees: before the COMMIT where it goes apart; on PostgreSQL after it, so that a
    /// transaction on tables that are not TPC-C's commits once before the run stops.
    pub(super) async fn commit_after(
        &mut self,
        mut batch: Vec<Step<'_, '_>>,
        c: &mut StmtCounts,
        check: impl FnOnce(&Db<C>) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let apart = !self.commit_in_batch;
        if !apart {
            batch.push((sql::S::Commit as usize, &[]));
        }
        self.many(&batch, c).await?;
        check(self)?;
        if apart {
            self.ex(sql::S::Commit as usize, &[], c).await?;
        }
        Ok(())
    }

    /// Rows changed by statement `k` of the last batch.
    pub(super) fn changed(&self, k: usize) -> u64 {
        match self.outcomes.get(k) {
            Some(Outcome::Ok(ok)) => ok.affected_rows,
            _ => 0,
        }
    }

    /// Prepare the statements a terminal sends, its tables named after `place` (see
    /// [`Connection::own_place`]): every client-side statement, or with `routines` (the
    /// engine whose routines it calls) BEGIN, COMMIT and ROLLBACK and the five calls.
    pub(super) async fn prepare(
        conn: &mut C,
        place: &str,
        routines: Option<Protocol>,
    ) -> Result<(Vec<C::Stmt>, Vec<C::Stmt>), DriverError> {
        let count = match routines {
            None => sql::COUNT,
            Some(_) => sql::S::Rollback as usize + 1,
        };
        let mut stmts = Vec::with_capacity(count);
        for i in 0..count {
            let sample = routines::samples(&sql::param_kinds(i));
            stmts.push(conn.prepare_typed(&sql::text(i, place), &sample).await?);
        }
        let mut calls = Vec::new();
        if let Some(protocol) = routines {
            for k in routines::ALL {
                let (text, kinds) = routines::call(protocol, place, k);
                calls.push(conn.prepare_typed(&text, &routines::samples(kinds)).await?);
            }
        }
        Ok((stmts, calls))
    }

    /// Call routine `k`, its rows kept in `self.rows`: the rows changed, or the server's
    /// refusal for the caller to read (a conflict to run again stops the transaction).
    pub(super) async fn call(
        &mut self,
        k: routines::Call,
        params: &[Param<'_>],
        c: &mut StmtCounts,
    ) -> Result<Result<u64, ServerError>, Stop> {
        let outcome = self
            .conn
            .execute_into(&self.calls[k as usize], params, &mut self.rows)
            .await?;
        match outcome {
            Outcome::Err(e) if !retryable(&e) => Ok(Err(e)),
            outcome => tally(&outcome, 0, c).map(Ok),
        }
    }

    /// Run statement `s`, its rows kept in `self.rows`; returns the rows changed.
    pub(super) async fn ex(
        &mut self,
        s: usize,
        params: &[Param<'_>],
        c: &mut StmtCounts,
    ) -> Result<u64, Stop> {
        let outcome = self
            .conn
            .execute_into(&self.stmts[s], params, &mut self.rows)
            .await?;
        tally(&outcome, s, c)
    }
}

/// Statement `s`'s outcome counted: the rows it changed, or why the transaction stops.
fn tally(outcome: &Outcome, s: usize, c: &mut StmtCounts) -> Result<u64, Stop> {
    match outcome {
        Outcome::Rows(_) => {
            c.reads += 1;
            Ok(0)
        }
        Outcome::Ok(ok) => {
            match ok.affected_rows > 0 {
                true => c.writes += 1,
                false => c.others += 1,
            }
            Ok(ok.affected_rows)
        }
        Outcome::Err(e) if retryable(e) => Err(Stop::Retry(e.clone())),
        Outcome::Err(error) => Err(Stop::Fail(EventError::Server {
            error: error.clone(),
            sql: sql::text(s, ""),
        })),
    }
}

/// A row TPC-C's population guarantees is not there: the tables are not TPC-C's (or were
/// changed under the run); the run stops saying so.
pub(super) fn missing(what: &str) -> Stop {
    Stop::Fail(EventError::Script(format!(
        "TPC-C: {what} is missing: the tables do not hold a TPC-C population (run `bakeoff tpcc check`)"
    )))
}

/// MySQL's deadlock and lock wait timeout, PostgreSQL's serialization failure and deadlock.
pub fn retryable(e: &ServerError) -> bool {
    matches!(e.code, 1213 | 1205) || matches!(e.sql_state.as_str(), "40001" | "40P01")
}

/// The load's record (`bakeoff_tpcc`), read once per run: its constants and warehouses,
/// or why the record is not one a load of bakeoff's wrote (any account that may write the
/// table may have: exactly one row, every value in its range).
pub(super) async fn read_load<C: Connection>(
    conn: &mut C,
    place: &str,
) -> Result<Result<(Constants, u32), String>, DriverError> {
    let sql =
        format!("SELECT c_last_load, c_id_load, ol_i_id_load, warehouses FROM {place}bakeoff_tpcc");
    let stmt = conn.prepare(&sql).await?;
    let mut rows = RowBuf::new();
    let outcome = conn.execute_into(&stmt, &[], &mut rows).await?;
    if let Outcome::Err(e) = outcome {
        return Err(DriverError::Server(e));
    }
    if rows.rows() != 1 {
        return Ok(Err(format!("it holds {} rows, not one", rows.rows())));
    }
    let value = |col: usize, max: i64| rows.int(0, col).filter(|v| (0..=max).contains(v));
    Ok(
        match (
            value(0, 255),
            value(1, 1023),
            value(2, 8191),
            value(3, 100_000),
        ) {
            (Some(a), Some(b), Some(c), Some(w)) if w >= 1 => Ok((
                Constants {
                    c_last: a as u32,
                    c_id: b as u32,
                    ol_i_id: c as u32,
                },
                w as u32,
            )),
            _ => Err("a value is out of its range".into()),
        },
    )
}
