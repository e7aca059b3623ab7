//! A terminal's side of the connection: its prepared statements, the rows last read, and
//! what stops a transaction (a conflict to run again, or a failure for the engine).

use bakeoff_driver::{Connection, DriverError, Outcome, Param, RowBuf, ServerError};

use super::random::Constants;
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
    pub(super) rows: RowBuf,
}

impl<C: Connection> Db<C> {
    /// Prepare every statement, its tables named after `place` (see [`Connection::own_place`]).
    pub(super) async fn prepare(conn: &mut C, place: &str) -> Result<Vec<C::Stmt>, DriverError> {
        let mut stmts = Vec::with_capacity(sql::COUNT);
        for i in 0..sql::COUNT {
            let sample: Vec<Param<'static>> = sql::param_kinds(i)
                .bytes()
                .map(|k| match k {
                    b'm' => Param::Double(0.0),
                    b't' => Param::Str(b""),
                    _ => Param::Int(0),
                })
                .collect();
            stmts.push(conn.prepare_typed(&sql::text(i, place), &sample).await?);
        }
        Ok(stmts)
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
            Outcome::Err(e) if retryable(&e) => Err(Stop::Retry(e)),
            Outcome::Err(error) => Err(Stop::Fail(EventError::Server {
                error,
                sql: sql::text(s, ""),
            })),
        }
    }

    pub(super) fn int(&self, row: usize, col: usize, what: &str) -> Result<i64, Stop> {
        self.rows.int(row, col).ok_or_else(|| missing(what))
    }

    /// A money value in cents.
    pub(super) fn cents(&self, row: usize, col: usize, what: &str) -> Result<i64, Stop> {
        let v = self.rows.float(row, col).ok_or_else(|| missing(what))?;
        Ok((v * 100.0).round() as i64)
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
