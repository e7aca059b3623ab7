//! Reading a reply up to ReadyForQuery: its outcome, and where a caller keeps them
//! (`execute_into`, `values.rs`), its rows' values.

use bakeoff_proto::{OkPacket, Outcome, ServerError};

use super::conn::PgConn;
use super::fields::server_error;
use super::io::invalid;
use super::message::{self as m, command_tag, Fields};
use crate::DriverError;

/// Where a reply's rows go. `()` keeps nothing: a statement that only counts its rows
/// (`execute`) reads them with no more work than before there was anything to keep.
pub(super) trait Keep {
    /// Whether rows are kept at all (false: every call below is compiled away).
    const KEEPS: bool;
    /// A RowDescription: a result set of `columns` columns begins.
    fn begin(&mut self, columns: usize);
    /// One DataRow's body; a malformed one is an error that says why.
    fn row(&mut self, body: &[u8]) -> Result<(), String>;
    /// Rows kept so far.
    fn rows(&self) -> usize;
}

impl Keep for () {
    const KEEPS: bool = false;
    fn begin(&mut self, _: usize) {}
    fn row(&mut self, _: &[u8]) -> Result<(), String> {
        Ok(())
    }
    fn rows(&self) -> usize {
        0
    }
}

impl PgConn {
    /// Messages up to ReadyForQuery: the outcome of what was sent, the rows' values into
    /// `keep` (`&mut ()` where they are only counted). Past `--max-rows` kept rows the call
    /// ends in an error, once the reply is read (the connection stays in step).
    pub(super) async fn read_outcome<K: Keep>(
        &mut self,
        op: &'static str,
        keep: &mut K,
    ) -> Result<Outcome, DriverError> {
        let mut too_many = false;
        let mut rows = 0u64;
        let mut returned_rows = false;
        let mut outcome: Option<Outcome> = None;
        let mut error: Option<ServerError> = None;
        self.parse_took = false;
        loop {
            // Most messages are in the buffer already: no read future for them.
            let msg = match self.buffered() {
                Some(msg) => msg,
                None => self.read_msg(op).await?,
            };
            match msg.kind {
                b'D' => {
                    rows += 1;
                    returned_rows = true;
                    if K::KEEPS && !too_many {
                        too_many = keep.rows() >= self.limits.max_rows;
                        if !too_many {
                            let kept = keep.row(self.body(msg));
                            kept.map_err(|e| self.io(op, invalid(e)))?;
                        }
                    }
                }
                b'T' => {
                    returned_rows = true;
                    if K::KEEPS {
                        keep.begin(Fields(self.body(msg)).i16().unwrap_or(0).max(0) as usize);
                    }
                }
                b'C' => {
                    let body = self.body(msg);
                    let tag = body.strip_suffix(&[0]).unwrap_or(body);
                    let (rowset, n) = command_tag(tag);
                    outcome = Some(if rowset || returned_rows {
                        Outcome::Rows(if rowset { n } else { rows })
                    } else {
                        Outcome::Ok(OkPacket {
                            affected_rows: n,
                            ..OkPacket::default()
                        })
                    });
                    rows = 0;
                    returned_rows = false;
                }
                b'1' => self.parse_took = true,
                b'I' => outcome = Some(Outcome::Ok(OkPacket::default())),
                b'E' if error.is_none() => error = Some(server_error(self.body(msg))),
                b'Z' => {
                    self.tx_status = self.body(msg).first().copied().unwrap_or(b'I');
                    if K::KEEPS && too_many {
                        return Err(self.too_many_rows());
                    }
                    return Ok(match error {
                        Some(e) => Outcome::Err(e),
                        None => outcome.unwrap_or(Outcome::Ok(OkPacket::default())),
                    });
                }
                b'H' | b'W' => return Err(self.copy_out()),
                b'G' => {
                    // COPY IN: bakeoff sends no data; refuse it and let the server end it.
                    self.wbuf.clear();
                    let at = m::begin(&mut self.wbuf, b'f');
                    self.wbuf.extend_from_slice(b"bakeoff does not COPY\0");
                    m::finish(&mut self.wbuf, at);
                    self.send(op).await?;
                }
                b'N' => {
                    let body = self.body(msg).to_vec();
                    self.note(&body);
                }
                // BindComplete, NoData, parameter changes, notifications, a
                // portal suspended, ParameterDescription, errors after the first: nothing
                // to count.
                _ => {}
            }
        }
    }
}
