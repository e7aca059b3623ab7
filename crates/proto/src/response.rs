//! Responses: OK, ERR, EOF, result sets (text and binary rows alike) and COM_STMT_PREPARE_OK.
//!
//! Both readers are fed one complete packet payload at a time and never look at row values:
//! a row is counted and skipped. That is all sysbench's accounting needs (a statement that
//! returned a result set is a read), and it keeps the hot path free of decoding work. A
//! caller that decodes values (`execute_into`, `binary.rs`) is told which packets were column
//! definitions ([`Step::Columns`], [`PrepareStep::Column`]).

use crate::codec::Reader;
use crate::{ProtoError, ServerError, SERVER_MORE_RESULTS_EXISTS};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OkPacket {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
}

/// How one statement ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No result set: BEGIN, COMMIT, DML, DDL.
    Ok(OkPacket),
    /// A result set with this many rows.
    Rows(u64),
    Err(ServerError),
}

#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Feed the next packet.
    More,
    /// The packet just fed was a row (the caller may decode it, see [`text_row`]).
    Row,
    /// The packet just fed began a result set whose column definitions follow, or was one
    /// of them; to a reader [`keeping_values`](ResponseReader::keeping_values), also one
    /// whose definitions were left out. [`ResponseReader::fed`] says which. Feed the next
    /// packet. Declared after `More` and `Row` and with no fields, so that a loop that only
    /// counts rows still tells those two from the rest in one comparison (a match that tells
    /// them apart, or variants with fields, cost 2 instructions a packet more under
    /// callgrind).
    Columns,
    Done(Outcome),
}

/// What the packet fed last was where its step was [`Step::Columns`]
/// ([`ResponseReader::fed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// Nothing yet.
    Other,
    /// The start of a result set of `columns` columns; `defs`: their definitions follow
    /// (false only where MARIADB_CLIENT_CACHE_METADATA let the server leave them out, as it
    /// sent them before, and only to a reader keeping values).
    ResultSet { columns: u64, defs: bool },
    /// The definition of the result set's column `index` (see
    /// [`column_type`](crate::column_type)).
    Column(u64),
}

#[derive(Debug, Clone, Copy)]
enum State {
    First,
    Columns(u64),
    ColumnsEof,
    Rows,
}

/// Reads the response to COM_QUERY or COM_STMT_EXECUTE.
#[derive(Debug)]
pub struct ResponseReader {
    state: State,
    /// MARIADB_CLIENT_CACHE_METADATA was negotiated: a column count is followed by a byte
    /// saying whether the column definitions follow.
    cache_metadata: bool,
    rows: u64,
    /// Columns of the last result set seen.
    columns: u64,
    /// A result set seen before a final OK (multi-results): the statement still "read".
    saw_rows: bool,
    /// What the last packet answered with `Step::Columns` was.
    fed: Fed,
    /// See `keeping_values`.
    keeps: bool,
}

impl Default for ResponseReader {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseReader {
    pub fn new() -> Self {
        Self::with_cached_metadata(false)
    }

    /// A reader for a connection that negotiated MARIADB_CLIENT_CACHE_METADATA (or not).
    pub fn with_cached_metadata(cache_metadata: bool) -> Self {
        ResponseReader {
            cache_metadata,
            state: State::First,
            rows: 0,
            columns: 0,
            saw_rows: false,
            fed: Fed::Other,
            keeps: false,
        }
    }

    /// For a caller that decodes rows with the column definitions it keeps: a result set
    /// whose definitions the server left out is a [`Step::Columns`] too. To one that only
    /// counts rows it is [`Step::More`]: on a MariaDB that caches metadata, every
    /// execution's, and nothing to look at.
    pub fn keeping_values(mut self) -> Self {
        self.keeps = true;
        self
    }

    /// Columns of the last result set read (0 when there was none).
    pub fn columns(&self) -> u64 {
        self.columns
    }

    /// What the packet just fed was, when its step was [`Step::Columns`] (else meaningless).
    #[inline]
    pub fn fed(&self) -> Fed {
        self.fed
    }

    pub fn on_packet(&mut self, p: &[u8]) -> Result<Step, ProtoError> {
        let first = *p
            .first()
            .ok_or_else(|| ProtoError::malformed("response", "empty packet"))?;
        match self.state {
            State::First => match first {
                0x00 => {
                    let ok = parse_ok(p)?;
                    if ok.status & SERVER_MORE_RESULTS_EXISTS != 0 {
                        return Ok(Step::More);
                    }
                    Ok(Step::Done(if self.saw_rows {
                        Outcome::Rows(self.rows)
                    } else {
                        Outcome::Ok(ok)
                    }))
                }
                0xff => Ok(Step::Done(Outcome::Err(parse_err(p)?))),
                0xfb => Err(ProtoError::Unsupported(
                    "LOAD DATA LOCAL INFILE request".into(),
                )),
                _ => {
                    let mut r = Reader::new(p, "column count");
                    let n = r.lenenc_int()?;
                    self.columns = n;
                    // Skipped definitions: the EOF that ends them still comes (no
                    // DEPRECATE_EOF), so only the definitions are left out.
                    let follows = !self.cache_metadata || r.u8()? != 0;
                    self.state = if follows {
                        State::Columns(n)
                    } else {
                        State::ColumnsEof
                    };
                    self.saw_rows = true;
                    if !follows && !self.keeps {
                        return Ok(Step::More);
                    }
                    self.fed = Fed::ResultSet {
                        columns: n,
                        defs: follows,
                    };
                    Ok(Step::Columns)
                }
            },
            State::Columns(n) => {
                self.state = if n > 1 {
                    State::Columns(n - 1)
                } else {
                    State::ColumnsEof
                };
                self.fed = Fed::Column(self.columns - n);
                Ok(Step::Columns)
            }
            State::ColumnsEof => {
                if !is_eof(p) {
                    return Err(ProtoError::Unexpected {
                        first,
                        state: "expecting EOF after column definitions",
                    });
                }
                self.state = State::Rows;
                Ok(Step::More)
            }
            State::Rows => {
                if is_eof(p) {
                    let status = parse_eof_status(p)?;
                    if status & SERVER_MORE_RESULTS_EXISTS != 0 {
                        self.state = State::First;
                        return Ok(Step::More);
                    }
                    return Ok(Step::Done(Outcome::Rows(self.rows)));
                }
                if first == 0xff {
                    return Ok(Step::Done(Outcome::Err(parse_err(p)?)));
                }
                self.rows += 1;
                Ok(Step::Row)
            }
        }
    }
}

/// A classic EOF packet: 0xfe and shorter than 9 bytes (a text row can start with 0xfe only
/// when it carries a value of 16 MiB or more).
fn is_eof(p: &[u8]) -> bool {
    p[0] == 0xfe && p.len() < 9
}

fn parse_eof_status(p: &[u8]) -> Result<u16, ProtoError> {
    let mut r = Reader::new(p, "EOF");
    r.u8()?;
    if r.is_empty() {
        return Ok(0); // pre-4.1 EOF
    }
    r.u16()?; // warnings
    r.u16()
}

pub fn parse_ok(p: &[u8]) -> Result<OkPacket, ProtoError> {
    let mut r = Reader::new(p, "OK");
    r.u8()?;
    let affected_rows = r.lenenc_int()?;
    let last_insert_id = r.lenenc_int()?;
    let status = if r.remaining().len() >= 2 {
        r.u16()?
    } else {
        0
    };
    let warnings = if r.remaining().len() >= 2 {
        r.u16()?
    } else {
        0
    };
    Ok(OkPacket {
        affected_rows,
        last_insert_id,
        status,
        warnings,
    })
}

pub fn parse_err(p: &[u8]) -> Result<ServerError, ProtoError> {
    let mut r = Reader::new(p, "ERR");
    r.u8()?;
    let code = r.u16()?;
    let mut sql_state = String::from("HY000");
    if r.remaining().first() == Some(&b'#') {
        r.u8()?;
        sql_state = String::from_utf8_lossy(r.bytes(5)?).into_owned();
    }
    let message = crate::printable(&String::from_utf8_lossy(r.rest()));
    Ok(ServerError {
        code,
        sql_state,
        message,
        position: 0,
        pg: None,
    })
}

/// Decode a text-protocol row into strings (admin queries only: SHOW STATUS, versions).
pub fn text_row(p: &[u8]) -> Result<Vec<Option<String>>, ProtoError> {
    let mut r = Reader::new(p, "text row");
    let mut out = Vec::new();
    while !r.is_empty() {
        out.push(
            r.lenenc_bytes()?
                .map(|b| String::from_utf8_lossy(b).into_owned()),
        );
    }
    Ok(out)
}

/// COM_STMT_PREPARE_OK's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareOk {
    pub stmt_id: u32,
    pub columns: u16,
    pub params: u16,
}

#[derive(Debug, Clone, Copy)]
enum PState {
    Header,
    Defs { left: u32, eofs: u8 },
}

/// Reads the response to COM_STMT_PREPARE: header, parameter definitions (+EOF), column
/// definitions (+EOF).
#[derive(Debug)]
pub struct PrepareReader {
    state: PState,
    ok: Option<PrepareOk>,
}

pub enum PrepareStep {
    More,
    /// The packet just fed was the definition of result column `index` (the caller may
    /// decode it, see [`column_type`](crate::column_type)): what a MariaDB that caches
    /// metadata leaves out of the executions that follow.
    Column(u16),
    Done(Result<PrepareOk, ServerError>),
}

impl Default for PrepareReader {
    fn default() -> Self {
        Self::new()
    }
}

impl PrepareReader {
    pub fn new() -> Self {
        PrepareReader {
            state: PState::Header,
            ok: None,
        }
    }

    pub fn on_packet(&mut self, p: &[u8]) -> Result<PrepareStep, ProtoError> {
        match self.state {
            PState::Header => {
                let first = *p
                    .first()
                    .ok_or_else(|| ProtoError::malformed("prepare", "empty packet"))?;
                if first == 0xff {
                    return Ok(PrepareStep::Done(Err(parse_err(p)?)));
                }
                if first != 0x00 {
                    return Err(ProtoError::Unexpected {
                        first,
                        state: "reading COM_STMT_PREPARE_OK",
                    });
                }
                let mut r = Reader::new(p, "COM_STMT_PREPARE_OK");
                r.u8()?;
                let stmt_id = r.u32()?;
                let columns = r.u16()?;
                let params = r.u16()?;
                let ok = PrepareOk {
                    stmt_id,
                    columns,
                    params,
                };
                self.ok = Some(ok);
                // Each non-empty definition block is followed by one EOF packet.
                let eofs = (columns > 0) as u8 + (params > 0) as u8;
                let left = columns as u32 + params as u32 + eofs as u32;
                self.state = PState::Defs { left, eofs };
                Ok(if left == 0 {
                    PrepareStep::Done(Ok(ok))
                } else {
                    PrepareStep::More
                })
            }
            PState::Defs { left, eofs } => {
                let Some(ok) = self.ok else {
                    return Err(ProtoError::malformed(
                        "prepare",
                        "definitions before the header",
                    ));
                };
                // Which packet this is: the parameters' definitions and their EOF come first.
                let total = ok.params as u32 + ok.columns as u32 + eofs as u32;
                let at = total - left;
                let left = left.saturating_sub(1);
                self.state = PState::Defs { left, eofs };
                let first_column = ok.params as u32 + (ok.params > 0) as u32;
                Ok(match at.checked_sub(first_column) {
                    _ if left == 0 => PrepareStep::Done(Ok(ok)),
                    Some(i) if i < ok.columns as u32 => PrepareStep::Column(i as u16),
                    _ => PrepareStep::More,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(r: &mut ResponseReader, packets: &[&[u8]]) -> Vec<Step> {
        packets.iter().map(|p| r.on_packet(p).unwrap()).collect()
    }

    const EOF: &[u8] = &[0xfe, 0, 0, 2, 0];

    #[test]
    fn result_set_counts_rows_and_ends_at_eof() {
        let mut r = ResponseReader::new();
        let packets: [&[u8]; 7] = [&[2], b"c0", b"c1", EOF, &[0, 0, 1], &[0, 0, 2], EOF];
        let (mut steps, mut fed) = (Vec::new(), Vec::new());
        for p in packets {
            steps.push(r.on_packet(p).unwrap());
            fed.push(r.fed());
        }
        let begins = Fed::ResultSet {
            columns: 2,
            defs: true,
        };
        assert_eq!(fed[..3], [begins, Fed::Column(0), Fed::Column(1)]);
        assert!(steps[..3].iter().all(|s| *s == Step::Columns));
        assert_eq!(steps[3..5], [Step::More, Step::Row]);
        assert_eq!(steps.last().unwrap(), &Step::Done(Outcome::Rows(2)));
    }

    #[test]
    fn ok_reports_affected_rows() {
        let mut r = ResponseReader::new();
        let s = r.on_packet(&[0, 1, 0, 2, 0, 0, 0]).unwrap();
        assert_eq!(
            s,
            Step::Done(Outcome::Ok(OkPacket {
                affected_rows: 1,
                last_insert_id: 0,
                status: 2,
                warnings: 0
            }))
        );
    }

    #[test]
    fn err_carries_code_state_and_message() {
        let mut r = ResponseReader::new();
        let mut p = vec![0xff];
        p.extend_from_slice(&1213u16.to_le_bytes());
        p.extend_from_slice(b"#40001Deadlock found");
        match r.on_packet(&p).unwrap() {
            Step::Done(Outcome::Err(e)) => {
                assert_eq!(
                    (e.code, e.sql_state.as_str(), e.message.as_str()),
                    (1213, "40001", "Deadlock found")
                )
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn multi_results_continue_until_the_last() {
        let mut r = ResponseReader::new();
        let more = [0xfe, 0, 0, SERVER_MORE_RESULTS_EXISTS as u8, 0];
        let steps = feed(
            &mut r,
            &[&[1], b"c", EOF, &[0, 1], &more, &[0, 0, 0, 2, 0, 0, 0]],
        );
        assert_eq!(steps.last().unwrap(), &Step::Done(Outcome::Rows(1)));
    }

    #[test]
    fn prepare_skips_param_and_column_definitions() {
        let mut r = PrepareReader::new();
        let mut h = vec![0];
        h.extend_from_slice(&9u32.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes()); // 1 column
        h.extend_from_slice(&2u16.to_le_bytes()); // 2 params
        h.extend_from_slice(&[0, 0, 0]);
        assert!(matches!(r.on_packet(&h).unwrap(), PrepareStep::More));
        // Two parameters and their EOF, then the column.
        for _ in 0..3 {
            assert!(matches!(r.on_packet(b"def").unwrap(), PrepareStep::More));
        }
        assert!(matches!(
            r.on_packet(b"def").unwrap(),
            PrepareStep::Column(0)
        ));
        match r.on_packet(EOF).unwrap() {
            PrepareStep::Done(Ok(ok)) => assert_eq!(
                ok,
                PrepareOk {
                    stmt_id: 9,
                    columns: 1,
                    params: 2
                }
            ),
            _ => panic!("prepare did not finish"),
        }
    }

    #[test]
    fn text_row_decodes_nulls() {
        assert_eq!(
            text_row(&[2, b'h', b'i', 0xfb]).unwrap(),
            vec![Some("hi".into()), None]
        );
    }

    #[test]
    fn cached_metadata_skips_the_column_definitions_but_not_their_eof() {
        let eof = [0xfe, 0, 0, 2, 0];
        // Column count 1, then "metadata follows" = 0: straight to the EOF, a row, the EOF.
        // Only a reader keeping values is told where the definitions were left out.
        let mut counts = ResponseReader::with_cached_metadata(true);
        assert!(matches!(counts.on_packet(&[1, 0]).unwrap(), Step::More));
        assert_eq!(counts.columns(), 1);
        let mut r = ResponseReader::with_cached_metadata(true).keeping_values();
        assert!(matches!(r.on_packet(&[1, 0]).unwrap(), Step::Columns));
        let skipped = Fed::ResultSet {
            columns: 1,
            defs: false,
        };
        assert_eq!(r.fed(), skipped);
        assert!(matches!(r.on_packet(&eof).unwrap(), Step::More));
        assert!(matches!(r.on_packet(&[0, 0, 1, b'x']).unwrap(), Step::Row));
        assert!(matches!(
            r.on_packet(&eof).unwrap(),
            Step::Done(Outcome::Rows(1))
        ));
        // "Metadata follows" = 1: the definition comes as usual.
        let mut r = ResponseReader::with_cached_metadata(true);
        assert!(matches!(r.on_packet(&[1, 1]).unwrap(), Step::Columns));
        let follows = Fed::ResultSet {
            columns: 1,
            defs: true,
        };
        assert_eq!(r.fed(), follows);
        assert!(matches!(r.on_packet(b"\x03def").unwrap(), Step::Columns));
        assert_eq!(r.fed(), Fed::Column(0));
        assert!(matches!(r.on_packet(&eof).unwrap(), Step::More));
        assert!(matches!(
            r.on_packet(&eof).unwrap(),
            Step::Done(Outcome::Rows(0))
        ));
    }
}
