//! Result sets kept as text, for what reads them (admin queries, a script's `con:query()`):
//! at most `--max-rows` rows, as the MySQL side keeps them.

use bakeoff_proto::{OkPacket, Outcome};

use super::conn::PgConn;
use super::fields::server_error;
use super::io::{invalid, Msg};
use super::message::{self as m, command_tag, Fields};
use crate::{Answer, DriverError};

impl PgConn {
    /// A simple query's rows as text (NULL as None), at most `--max-rows` of them: for
    /// admin queries (settings, versions, the tables bakeoff made).
    pub async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DriverError> {
        self.wbuf.clear();
        m::query(&mut self.wbuf, sql.as_bytes());
        self.send("query").await?;
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let msg = self.read_msg("query").await?;
            match msg.kind {
                b'D' if error.is_none() => {
                    if rows.len() >= self.limits.max_rows {
                        error = Some(self.too_many_rows());
                        continue;
                    }
                    rows.push(self.row(msg, "query")?);
                }
                b'E' if error.is_none() => {
                    error = Some(DriverError::Server(server_error(self.body(msg))))
                }
                b'Z' => {
                    self.tx_status = self.body(msg).first().copied().unwrap_or(b'I');
                    return match error {
                        Some(e) => Err(e),
                        None => Ok(rows),
                    };
                }
                _ => {}
            }
        }
    }

    /// The one value of a one-row, one-column query.
    pub async fn query_value(&mut self, sql: &str) -> Result<Option<String>, DriverError> {
        let rows = self.query_rows(sql).await?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .flatten())
    }

    /// A simple query's outcome with its (last) result set's rows as text: what a script's
    /// `con:query()` reads. A server error is the outcome, not an error of the call.
    pub async fn query_result(&mut self, sql: &str) -> Result<Answer, DriverError> {
        self.wbuf.clear();
        m::query(&mut self.wbuf, sql.as_bytes());
        self.send("query").await?;
        let (mut rows, mut columns, mut outcome, mut error) = (Vec::new(), 0u32, None, None);
        let mut too_many = false;
        loop {
            let msg = self.read_msg("query").await?;
            match msg.kind {
                b'T' => {
                    columns = Fields(self.body(msg)).i16().unwrap_or(0).max(0) as u32;
                    rows.clear();
                }
                b'D' if rows.len() >= self.limits.max_rows => too_many = true,
                b'D' => rows.push(self.row(msg, "query")?),
                b'C' => {
                    let body = self.body(msg);
                    let (set, n) = command_tag(body.strip_suffix(&[0]).unwrap_or(body));
                    outcome = Some(match set || columns > 0 {
                        true => Outcome::Rows(if set { n } else { rows.len() as u64 }),
                        false => Outcome::Ok(OkPacket {
                            affected_rows: n,
                            ..OkPacket::default()
                        }),
                    });
                }
                b'E' if error.is_none() => error = Some(server_error(self.body(msg))),
                b'Z' => {
                    self.tx_status = self.body(msg).first().copied().unwrap_or(b'I');
                    if too_many {
                        return Err(self.too_many_rows());
                    }
                    let outcome = match error {
                        Some(e) => Outcome::Err(e),
                        None => outcome.unwrap_or(Outcome::Ok(OkPacket::default())),
                    };
                    return Ok(Answer {
                        outcome,
                        columns,
                        rows,
                    });
                }
                _ => {}
            }
        }
    }
}

impl PgConn {
    /// More rows (or result sets) than `--max-rows` keeps.
    pub(super) fn too_many_rows(&self) -> DriverError {
        DriverError::TooManyRows {
            endpoint: self.endpoint.clone(),
            max: self.limits.max_rows,
        }
    }

    /// A DataRow's values as text; a row whose column count its bytes cannot hold (each
    /// column takes at least its 4-byte length) ends the call, before anything is allocated
    /// from the count.
    pub(super) fn row(
        &self,
        msg: Msg,
        op: &'static str,
    ) -> Result<Vec<Option<String>>, DriverError> {
        data_row(self.body(msg)).map_err(|e| self.io(op, invalid(e)))
    }
}

fn data_row(body: &[u8]) -> Result<Vec<Option<String>>, String> {
    let mut f = Fields(body);
    let n = f.i16().unwrap_or(0).max(0) as usize;
    if n > body.len().saturating_sub(2) / 4 {
        return Err(format!(
            "a DataRow says it has {n} columns in {} bytes, which cannot hold them",
            body.len()
        ));
    }
    let mut row = Vec::with_capacity(n);
    for _ in 0..n {
        let cut = || format!("a DataRow of {} bytes ends inside its values", body.len());
        let len = f.i32().ok_or_else(cut)?;
        if len < 0 {
            row.push(None);
            continue;
        }
        let v = f.bytes(len as usize).ok_or_else(cut)?;
        row.push(Some(String::from_utf8_lossy(v).into_owned()));
    }
    Ok(row)
}
