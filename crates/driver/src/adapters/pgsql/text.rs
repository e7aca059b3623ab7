//! Statements as pgbench sends them: parameters as text of no declared type (the server
//! infers them), results in text, by the simple protocol, the extended one with an unnamed
//! statement parsed each time, or a named statement parsed at its first execution; one at a
//! time (each with its Sync) or queued in a pipeline and synced once.

use bakeoff_proto::ServerError;

use super::conn::{stmt_name, PgConn, PgStmt, Slot};
use super::fields::server_error;
use super::message::{self as m, command_tag, Fields};
use crate::DriverError;

/// How a statement goes to the server.
#[derive(Debug, Clone, Copy)]
pub enum Via<'a> {
    /// A Query message: the text with its values in it.
    Simple(&'a str),
    /// Parse (unnamed), Bind, Describe, Execute: `$n` text, values bound.
    Unnamed(&'a str),
    /// A named statement from [`PgConn::name_untyped`]: Bind, Describe, Execute.
    Named(PgStmt),
}

/// A result set kept for `\gset` and `\aset`: its column names and rows as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowSet {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// What one statement (or one simple query's statements) answered.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub error: Option<ServerError>,
    /// Rows returned, kept or not.
    pub rows: u64,
    /// Rows changed by the last statement that changed any.
    pub affected: u64,
    /// Each result set, when asked to keep them.
    pub sets: Vec<RowSet>,
    /// The server parsed a statement sent with it (ParseComplete came): where it did not,
    /// the error is the Parse's.
    pub parsed: bool,
    /// The statement was a COPY FROM STDIN, which was refused (its error follows).
    pub copy_in: bool,
}

/// A statement's parameter values as text, written into one buffer the caller reuses: a
/// statement allocates nothing once it has run.
#[derive(Debug, Default)]
pub struct TextParams {
    buf: Vec<u8>,
    /// Each value's bytes in `buf`; None: NULL.
    spans: Vec<Option<(usize, usize)>>,
}

impl TextParams {
    pub const NONE: &'static TextParams = &TextParams {
        buf: Vec::new(),
        spans: Vec::new(),
    };

    pub fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
    }

    /// The next value: what `write` puts into the buffer, or NULL when it returns false.
    pub fn push(&mut self, write: impl FnOnce(&mut Vec<u8>) -> bool) {
        let start = self.buf.len();
        let span = match write(&mut self.buf) {
            true => Some((start, self.buf.len())),
            false => {
                self.buf.truncate(start);
                None
            }
        };
        self.spans.push(span);
    }
}

/// Where reading a reply stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// ReadyForQuery: the reply to a statement sent with its Sync, or a simple query.
    Ready,
    /// The statement's end (CommandComplete, an error, an empty query) inside a pipeline.
    Command,
}

impl PgConn {
    /// Name a statement whose parameters the server types: parsed at its first execution.
    pub fn name_untyped(&mut self, sql: &str, params: u16) -> PgStmt {
        let stmt = PgStmt {
            id: self.stmts.len() as u32,
            params,
        };
        self.stmts.push(Slot {
            sql: sql.into(),
            parsed: false,
        });
        stmt
    }

    /// Put a statement in the write buffer, without its Sync (see [`Self::queue_sync`]).
    /// A simple query is only ever queued alone. `describe`: ask for the columns' names
    /// (libpq always does; only `\gset` needs them, and without it the server does less).
    pub fn queue_text(&mut self, via: Via<'_>, params: &TextParams, describe: bool) {
        self.extended = !matches!(via, Via::Simple(_));
        let (name, len) = match via {
            Via::Simple(sql) => return m::query(&mut self.wbuf, sql.as_bytes()),
            Via::Unnamed(sql) => {
                m::parse(&mut self.wbuf, b"", sql.as_bytes(), &[]);
                ([0u8; 11], 0)
            }
            Via::Named(stmt) => {
                let (name, len) = stmt_name(stmt.id);
                if let Some(slot) = self.stmts.get_mut(stmt.id as usize) {
                    if !slot.parsed {
                        m::parse(&mut self.wbuf, &name[..len], slot.sql.as_bytes(), &[]);
                        // Taken for parsed once sent: a refused Parse fails the statement,
                        // and pgbench's client stops at a failed statement.
                        slot.parsed = true;
                    }
                }
                (name, len)
            }
        };
        m::bind_text(&mut self.wbuf, &name[..len], &params.buf, &params.spans);
        if describe {
            m::describe_portal(&mut self.wbuf);
        }
        m::execute(&mut self.wbuf);
    }

    /// End what is queued with a Sync: the server answers it with ReadyForQuery.
    pub fn queue_sync(&mut self) {
        m::sync(&mut self.wbuf);
    }

    /// Send what is queued.
    pub async fn flush(&mut self) -> Result<(), DriverError> {
        self.send("statement").await?;
        self.wbuf.clear();
        Ok(())
    }

    /// One statement sent and answered whole (its Sync added for the extended protocol).
    pub async fn run_text(
        &mut self,
        via: Via<'_>,
        params: &TextParams,
        keep: bool,
    ) -> Result<Reply, DriverError> {
        self.wbuf.clear();
        self.queue_text(via, params, keep);
        if !matches!(via, Via::Simple(_)) {
            self.queue_sync();
        }
        self.flush().await?;
        self.read_reply(keep, Until::Ready).await
    }

    /// Read a reply; result sets kept when `keep`: at most `--max-rows` rows in each, and as
    /// many sets (a server may send any number of either).
    pub async fn read_reply(&mut self, keep: bool, until: Until) -> Result<Reply, DriverError> {
        let mut reply = Reply::default();
        loop {
            let msg = match self.buffered() {
                Some(msg) => msg,
                None => self.read_msg("statement").await?,
            };
            match msg.kind {
                b'T' if keep => {
                    // As many result sets as rows in one: a server may send any number.
                    if reply.sets.len() >= self.limits.max_rows {
                        return Err(self.too_many_rows());
                    }
                    reply.sets.push(RowSet {
                        columns: column_names(self.body(msg)),
                        rows: Vec::new(),
                    })
                }
                b'D' => {
                    reply.rows += 1;
                    if keep {
                        let last = reply.sets.last();
                        if last.is_some_and(|s| s.rows.len() >= self.limits.max_rows) {
                            return Err(self.too_many_rows());
                        }
                        let row = self.row(msg, "query")?;
                        if let Some(set) = reply.sets.last_mut() {
                            set.rows.push(row);
                        }
                    }
                }
                b'C' => {
                    let body = self.body(msg);
                    let (set, n) = command_tag(body.strip_suffix(&[0]).unwrap_or(body));
                    if !set && n > 0 {
                        reply.affected = n;
                    }
                    if until == Until::Command {
                        return Ok(reply);
                    }
                }
                b'I' if until == Until::Command => return Ok(reply),
                b'1' => reply.parsed = true,
                b'N' => {
                    let body = self.body(msg).to_vec();
                    self.note(&body);
                }
                b'E' => {
                    if reply.error.is_none() {
                        reply.error = Some(server_error(self.body(msg)));
                    }
                    if until == Until::Command {
                        return Ok(reply);
                    }
                }
                b'Z' => {
                    self.tx_status = self.body(msg).first().copied().unwrap_or(b'I');
                    return Ok(reply);
                }
                b'H' | b'W' => return Err(self.copy_out()),
                b'G' => {
                    // COPY IN inside a script: pgbench cannot feed it either; end it.
                    reply.copy_in = true;
                    self.wbuf.clear();
                    let at = m::begin(&mut self.wbuf, b'f');
                    self.wbuf
                        .extend_from_slice(b"COPY is not supported in pgbench scripts\0");
                    m::finish(&mut self.wbuf, at);
                    // In copy-in mode the server ignored the Sync sent with the statement;
                    // after the CopyFail it waits for one.
                    if self.extended {
                        self.queue_sync();
                    }
                    self.flush().await?;
                }
                _ => {}
            }
        }
    }

    /// Read up to ReadyForQuery: the end of a pipeline whose statements were read.
    pub async fn read_ready(&mut self) -> Result<(), DriverError> {
        self.read_reply(false, Until::Ready).await.map(|_| ())
    }

    /// The transaction status of the last ReadyForQuery: `I` idle, `T` in a transaction,
    /// `E` failed.
    pub fn transaction_status(&self) -> u8 {
        self.tx_status
    }
}

fn column_names(body: &[u8]) -> Vec<String> {
    let mut f = Fields(body);
    let n = f.i16().unwrap_or(0).max(0) as usize;
    // Each column takes at least 19 bytes (an empty name and its 18 bytes of facts): room
    // for no more than the message holds, whatever its count says.
    let mut names = Vec::with_capacity(n.min(body.len() / 19));
    for _ in 0..n {
        let Some(name) = f.cstr() else { break };
        names.push(String::from_utf8_lossy(name).into_owned());
        // table oid, column number, type oid, size, modifier, format.
        let _ = f.bytes(4 + 2 + 4 + 2 + 4 + 2);
    }
    names
}

/// libpq's text for a server error on statement `sql`: `ERROR:  message`, then for an error
/// with a position the statement's line (`LINE n: ...`, cut to about 60 characters around the
/// spot, as libpq's reportErrorPosition cuts it) and a caret under the spot.
pub fn libpq_error(sql: &str, e: &bakeoff_proto::ServerError) -> String {
    let Some(pg) = e.pg.as_deref() else {
        let mut out = format!("ERROR:  {}", e.message);
        if let Some(lines) = error_position(sql, e.position) {
            out.push('\n');
            out.push_str(&lines);
        }
        return out;
    };
    let mut out = format!("{}:  {}", pg.severity, pg.primary);
    if let Some(lines) = error_position(sql, e.position) {
        out.push('\n');
        out.push_str(&lines);
    }
    out.push_str(&pg_tail(pg));
    out
}

/// What libpq prints after an error's first line at its default verbosity: DETAIL, HINT and
/// CONTEXT, each on a line of its own.
pub fn pg_tail(pg: &bakeoff_proto::PgFields) -> String {
    let mut out = String::new();
    for (label, text) in [
        ("DETAIL", &pg.detail),
        ("HINT", &pg.hint),
        ("CONTEXT", &pg.context),
    ] {
        if let Some(t) = text {
            out.push_str(&format!("\n{label}:  {t}"));
        }
    }
    out
}

const DISPLAY_SIZE: usize = 60;
const MIN_RIGHT_CUT: usize = 10;

fn error_position(sql: &str, position: u32) -> Option<String> {
    if position == 0 {
        return None;
    }
    let chars: Vec<char> = sql
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let loc = position as usize - 1;
    if loc > chars.len() {
        return None;
    }
    let (mut line, mut start) = (1, 0);
    for (i, c) in chars.iter().enumerate().take(loc) {
        if *c == '\n' {
            line += 1;
            start = i + 1;
        }
    }
    let end = chars[start..]
        .iter()
        .position(|c| *c == '\n' || *c == '\r')
        .map_or(chars.len(), |n| start + n);
    let (mut beg, mut fin) = (start, end);
    let (mut cut_left, mut cut_right) = (false, false);
    if fin - beg > DISPLAY_SIZE {
        if loc - beg + MIN_RIGHT_CUT < DISPLAY_SIZE {
            fin = beg + DISPLAY_SIZE;
            cut_right = true;
        } else {
            if loc + MIN_RIGHT_CUT < fin {
                fin = loc + MIN_RIGHT_CUT;
                cut_right = true;
            }
            while fin - beg > DISPLAY_SIZE {
                beg += 1;
                cut_left = true;
            }
        }
    }
    let prefix = format!("LINE {line}: ");
    let mut text = prefix.clone();
    if cut_left {
        text.push_str("...");
    }
    text.extend(&chars[beg..fin]);
    if cut_right {
        text.push_str("...");
    }
    let pad = prefix.len() + if cut_left { 3 } else { 0 } + (loc - beg);
    Some(format!("{text}\n{:pad$}^", ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(position: u32) -> bakeoff_proto::ServerError {
        bakeoff_proto::ServerError {
            code: 0,
            sql_state: "42P01".into(),
            message: "relation \"nonexist\" does not exist".into(),
            position,
            pg: None,
        }
    }

    #[test]
    fn errors_point_at_their_spot_as_libpq_does() {
        assert_eq!(
            libpq_error("SELECT * FROM nonexist;", &err(15)),
            "ERROR:  relation \"nonexist\" does not exist\nLINE 1: SELECT * FROM nonexist;\n                      ^"
        );
        assert_eq!(
            libpq_error("SELECT 1", &err(0)),
            "ERROR:  relation \"nonexist\" does not exist"
        );
        let long = format!("SELECT {} FROM nonexist", "x, ".repeat(40));
        let said = libpq_error(&long, &err(long.len() as u32 - 7));
        assert!(
            said.contains("LINE 1: ...") && said.ends_with('^'),
            "{said}"
        );
    }
}
