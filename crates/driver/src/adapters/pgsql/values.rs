//! Named statements whose rows' values the caller keeps ([`PgConn::execute_into`]), for a
//! workload that reads what it selects: results asked for in text, as libpq's
//! PQexecPrepared gets them, after a Describe of the portal so that an empty result still
//! says its columns.

use bakeoff_proto::command::Param;
use bakeoff_proto::{Outcome, RowBuf};

use super::conn::{PgConn, PgStmt};
use super::message::Fields;
use super::reply::Keep;
use crate::DriverError;

impl PgConn {
    /// Execute a named statement and keep its rows' values in `out` (cleared first), as
    /// text; a server error is [`Outcome::Err`], as [`execute`](Self::execute) returns it,
    /// with `out` empty (inside a transaction, [`recover`](Self::recover) then rolls it
    /// back). More than `--max-rows` rows end the call in an error.
    pub async fn execute_into(
        &mut self,
        stmt: &PgStmt,
        params: &[Param<'_>],
        out: &mut RowBuf,
    ) -> Result<Outcome, DriverError> {
        let first = self.queue_execute(stmt, params, true)?;
        self.send("execute").await?;
        self.read_kept(stmt, first, out).await
    }

    /// Execute a batch in one round trip (see `Connection::execute_many`): each execution's
    /// messages and its own Sync, all in one write, then each reply up to its
    /// ReadyForQuery. Inside a transaction a refused statement fails it: every later one is
    /// refused (25P02) and a COMMIT among them rolls back.
    pub async fn execute_many(
        &mut self,
        batch: &[(&PgStmt, &[Param<'_>])],
        outs: &mut [RowBuf],
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), DriverError> {
        outcomes.clear();
        crate::batch_fits(batch.len(), outs.len())?;
        let mut first = [false; crate::MAX_BATCH];
        self.wbuf.clear();
        for ((stmt, params), first) in batch.iter().zip(first.iter_mut()) {
            *first = self.append_execute(stmt, params, true)?;
            // A statement twice in one batch is parsed once (its Parse is queued: the next
            // copy binds it); a refused parse is settled when its reply is read.
            if *first {
                self.stmts[stmt.id as usize].parsed = true;
            }
        }
        self.send("execute").await?;
        for (((stmt, _), out), first) in batch.iter().zip(outs.iter_mut()).zip(first) {
            outcomes.push(self.read_kept(stmt, first, out).await?);
        }
        Ok(())
    }

    /// One execution's reply, its rows into `out` (cleared first; empty unless rows came).
    async fn read_kept(
        &mut self,
        stmt: &PgStmt,
        first: bool,
        out: &mut RowBuf,
    ) -> Result<Outcome, DriverError> {
        out.clear();
        let outcome = self.read_outcome("statement", out).await;
        if !matches!(outcome, Ok(Outcome::Rows(_))) {
            out.clear();
        }
        let outcome = outcome?;
        self.settle_parse(stmt, first, &outcome);
        Ok(outcome)
    }
}

impl Keep for RowBuf {
    const KEEPS: bool = true;

    fn begin(&mut self, columns: usize) {
        RowBuf::begin(self, columns)
    }

    fn row(&mut self, body: &[u8]) -> Result<(), String> {
        let mark = self.values();
        let r = data_row(body, self);
        if r.is_err() {
            self.truncate(mark);
        }
        r
    }

    fn rows(&self) -> usize {
        RowBuf::rows(self)
    }
}

/// A DataRow's values onto `out`: as many as the RowDescription said, each a length (-1:
/// NULL) and that many bytes, all within the body.
fn data_row(body: &[u8], out: &mut RowBuf) -> Result<(), String> {
    let mut f = Fields(body);
    let n = f.i16().unwrap_or(0).max(0) as usize;
    if n != out.columns() {
        return Err(format!(
            "a DataRow of {n} columns in a result described with {}",
            out.columns()
        ));
    }
    let cut = || format!("a DataRow of {} bytes ends inside its values", body.len());
    for _ in 0..n {
        let len = f.i32().ok_or_else(cut)?;
        match usize::try_from(len) {
            Ok(len) => out.push(Some(f.bytes(len).ok_or_else(cut)?)),
            Err(_) => out.push(None),
        }
    }
    if !f.rest().is_empty() {
        return Err(format!(
            "a DataRow of {n} columns has bytes after its values"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(columns: usize) -> RowBuf {
        let mut out = RowBuf::new();
        out.begin(columns);
        out
    }

    #[test]
    fn a_data_row_keeps_text_and_nulls() {
        let mut out = described(3);
        let body = b"\x00\x03\x00\x00\x00\x0512.50\xff\xff\xff\xff\x00\x00\x00\x00";
        Keep::row(&mut out, body).unwrap();
        assert_eq!(out.bytes(0, 0), Some(&b"12.50"[..]));
        assert!(out.is_null(0, 1));
        assert_eq!(out.bytes(0, 2), Some(&b""[..]));
    }

    #[test]
    fn malformed_data_rows_are_errors_and_keep_nothing() {
        let bad: [&[u8]; 6] = [
            b"",
            b"\x00\x02\x00\x00\x00\x01a",
            b"\x00\x01\x00\x00\x00\x01a",
            b"\x00\x02\x00\x00\x00\x05ab\xff\xff\xff\xff",
            b"\x00\x02\x7f\xff\xff\xff\x00",
            b"\x00\x02\xff\xff\xff\xff\xff\xff\xff\xffextra",
        ];
        for body in bad {
            let mut out = described(2);
            assert!(Keep::row(&mut out, body).is_err(), "{body:?}");
            assert_eq!(out.values(), 0, "{body:?}");
        }
    }
}
