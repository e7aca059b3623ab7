//! One PostgreSQL connection: statements by the extended protocol (a named statement parsed
//! once, then Bind, Execute, Sync per execution, one write and one round trip each) or a
//! simple query. Results are counted, not kept, except by [`PgConn::query_rows`] and
//! [`PgConn::execute_into`] (`values.rs`).

use bakeoff_proto::command::Param;
use bakeoff_proto::{OkPacket, Outcome};

use super::fields::server_error;
use super::message as m;
use crate::net::transport::Stream;
use crate::{ConnectOptions, DriverError};

const INITIAL_READ_BUF: usize = 16 * 1024;

/// A named statement on one connection (its text is the connection's, see `Slot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgStmt {
    /// Its index on the connection: its name is `s<id>`.
    pub id: u32,
    pub params: u16,
}

/// What the connection keeps of each statement it named.
pub(super) struct Slot {
    /// `?` placeholders become `$1`, `$2`...: the text the server parses.
    pub(super) sql: Box<str>,
    /// Parsed on the server: sysbench's driver parses one with parameters at its first
    /// execution, when the values' types are known.
    pub(super) parsed: bool,
}

pub struct PgConn {
    pub(super) stream: Stream,
    pub(super) endpoint: String,
    /// Bytes read: `rbuf[start..end]` not consumed yet; the message handed out last ends at
    /// `next`.
    pub(super) rbuf: Vec<u8>,
    pub(super) start: usize,
    pub(super) next: usize,
    pub(super) end: usize,
    pub(super) wbuf: Vec<u8>,
    pub(super) limits: crate::Limits,
    pub(super) read_timeout: Option<std::time::Duration>,
    pub(super) server_version: String,
    pub(super) backend_pid: u32,
    /// The last ReadyForQuery's transaction status: `I` idle, `T` in a transaction, `E` in a
    /// failed one (every statement refused until ROLLBACK).
    pub(super) tx_status: u8,
    /// The last statement queued went by the extended protocol (a refused COPY FROM STDIN
    /// then needs a Sync of its own: the server ignored the one sent with it).
    pub(super) extended: bool,
    /// Each statement named on this connection, by id.
    pub(super) stmts: Vec<Slot>,
    /// Whether the exchange read last had a ParseComplete.
    pub(super) parse_took: bool,
    /// Whether a drop says goodbye (Terminate): only between statements.
    pub(super) farewell: bool,
    /// Reading the login's messages (shorter limits: `io.rs`).
    pub(super) in_login: bool,
    /// `read_timeout` is the run's stall limit (`set_stall_limit`).
    pub(super) stall: bool,
    /// The password exchange the login took, where it was cleartext or md5.
    pub(super) auth_method: Option<crate::AuthMethod>,
    /// The server's notices since the last [`PgConn::take_notices`], as libpq prints them
    /// (`NOTICE:  ...`); at most [`MAX_NOTICES`] kept.
    notices: Vec<String>,
}

/// Notices kept between takes: a server cannot grow the list without bound.
const MAX_NOTICES: usize = 100;

impl PgConn {
    pub(super) fn new(stream: Stream, opts: &ConnectOptions, endpoint: String) -> PgConn {
        PgConn {
            stream,
            endpoint,
            rbuf: vec![0; INITIAL_READ_BUF],
            start: 0,
            next: 0,
            end: 0,
            wbuf: Vec::with_capacity(1024),
            limits: opts.limits,
            read_timeout: opts.limits.read_timeout,
            server_version: String::new(),
            backend_pid: 0,
            tx_status: b'I',
            extended: false,
            stmts: Vec::new(),
            parse_took: false,
            farewell: false,
            in_login: true,
            stall: false,
            auth_method: None,
            notices: Vec::new(),
        }
    }

    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// The backend's process id (`pg_backend_pid()`).
    pub fn connection_id(&self) -> u32 {
        self.backend_pid
    }

    /// The process at the other end of a unix socket as the kernel has it: the one that
    /// listened, the postmaster (the backend was forked from it after the accept; ask
    /// `pg_backend_pid()` for that). None over TCP.
    pub fn peer_pid(&self) -> Option<u32> {
        self.stream.peer_pid()
    }

    /// Whether the connection is inside a transaction the server refused a statement of.
    pub fn in_failed_transaction(&self) -> bool {
        self.tx_status == b'E'
    }

    /// Switch to blocking socket I/O, for a thread that drives this one connection.
    pub fn into_blocking(mut self) -> Result<PgConn, DriverError> {
        let r = self.stream.make_blocking();
        r.map_err(|e| self.io("switching to blocking I/O", e))?;
        Ok(self)
    }

    pub(super) async fn send(&mut self, op: &'static str) -> Result<(), DriverError> {
        let armed = std::mem::replace(&mut self.farewell, false);
        let r = self.stream.write_all(&self.wbuf).await;
        self.farewell = armed && r.is_ok();
        r.map_err(|e| self.io(op, e))
    }

    /// A simple query; a server error is [`Outcome::Err`]. Several statements in `sql` give
    /// the first error, else the last statement's outcome.
    pub async fn query(&mut self, sql: &str) -> Result<Outcome, DriverError> {
        self.wbuf.clear();
        m::query(&mut self.wbuf, sql.as_bytes());
        self.send("query").await?;
        self.read_outcome("query", &mut ()).await
    }

    /// `?` placeholders replaced by the values as SQL literals, then a simple query
    /// (sysbench's `--db-ps-mode=disable`).
    pub async fn query_with(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        let text = interpolate(sql, params);
        self.query(&text).await
    }

    /// An admin statement that must succeed.
    pub async fn exec(&mut self, sql: &str) -> Result<OkPacket, DriverError> {
        match self.query(sql).await? {
            Outcome::Ok(ok) => Ok(ok),
            Outcome::Rows(_) => Ok(OkPacket::default()),
            Outcome::Err(e) => Err(DriverError::Server(e)),
        }
    }

    /// For bakeoff's own statements (not a workload's): functions, operators and types
    /// resolve in pg_catalog alone, and tables only when named with their schema. A search
    /// path that held a schema other roles can create in would let them plant a better
    /// matching function or operator there and have it run as this connection's role
    /// (CVE-2018-1058); putting pg_catalog first does not stop that. pg_temp named last:
    /// this session's own temporary tables never come before pg_catalog's.
    pub async fn pin_search_path(&mut self) -> Result<(), DriverError> {
        self.exec("SET search_path = pg_catalog, pg_temp")
            .await
            .map(drop)
    }

    /// Connect for bakeoff's own statements: [`PgConn::pin_search_path`] first.
    pub async fn connect_pinned(opts: &ConnectOptions) -> Result<PgConn, DriverError> {
        let mut c = PgConn::connect(opts).await?;
        c.pin_search_path().await?;
        Ok(c)
    }

    /// A named statement. One without parameters is parsed now (an error is the caller's);
    /// one with parameters at its first execution, typed as its values are (sysbench's
    /// pgsql driver's way: it knows the types only when they are bound).
    pub async fn prepare(&mut self, sql: &str) -> Result<PgStmt, DriverError> {
        self.prepare_typed(sql, &[]).await
    }

    /// A named statement whose values will be of `sample`'s kinds, parsed now with their
    /// types, as sysbench's driver parses once a script's thread_init has bound its values:
    /// the backend's parse (its catalog lookups) then happens while connecting, not in the
    /// run's first second. Measured at 1024 connections on 2 CPUs, parsing at the first
    /// execution made that second a third of the next ones (12k against 35k qps). A sample
    /// that does not fit the statement (empty, or another count) leaves the parse to the
    /// first execution.
    pub async fn prepare_typed(
        &mut self,
        sql: &str,
        sample: &[Param<'_>],
    ) -> Result<PgStmt, DriverError> {
        let (text, params) = numbered_placeholders(sql);
        let stmt = PgStmt {
            id: self.stmts.len() as u32,
            params,
        };
        self.stmts.push(Slot {
            sql: text.into(),
            parsed: false,
        });
        // A statement without parameters is parsed now whatever the sample.
        let sample = if params == 0 { &[][..] } else { sample };
        if sample.len() == usize::from(params) {
            if let Outcome::Err(e) = self.parse_now(stmt.id, sample).await? {
                return Err(DriverError::Server(e));
            }
        }
        Ok(stmt)
    }

    /// Parse now a statement `prepare` left for its first execution, typed as `sample`'s
    /// values (a script's bind_param, where sysbench's driver parses). A refusal leaves the
    /// parse to that execution, which reports it as it always has. Not inside a transaction:
    /// a refused parse there would fail it unseen, and the script's next statements would
    /// report that (25P02) instead of their own error.
    pub async fn declare(
        &mut self,
        stmt: &PgStmt,
        sample: &[Param<'_>],
    ) -> Result<(), DriverError> {
        let unparsed = self.stmts.get(stmt.id as usize).is_some_and(|s| !s.parsed);
        let idle = self.tx_status == b'I';
        if unparsed && idle && sample.len() == usize::from(stmt.params) {
            self.parse_now(stmt.id, sample).await?;
        }
        Ok(())
    }

    async fn parse_now(&mut self, id: u32, sample: &[Param<'_>]) -> Result<Outcome, DriverError> {
        let types: Vec<u32> = sample.iter().map(sysbench_type).collect();
        self.wbuf.clear();
        let (name, len) = stmt_name(id);
        let sql = &self.stmts[id as usize].sql;
        m::parse(&mut self.wbuf, &name[..len], sql.as_bytes(), &types);
        m::sync(&mut self.wbuf);
        self.send("prepare").await?;
        let outcome = self.read_outcome("prepare", &mut ()).await?;
        // A ParseComplete then an error still left the statement named on the server.
        self.stmts[id as usize].parsed = !matches!(outcome, Outcome::Err(_)) || self.parse_took;
        Ok(outcome)
    }

    /// Execute a named statement: Bind, Execute and Sync (after its Parse the first time),
    /// one write, results in binary as sysbench's driver asks for them.
    pub async fn execute(
        &mut self,
        stmt: &PgStmt,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        let first = self.queue_execute(stmt, params, false)?;
        self.send("execute").await?;
        let outcome = self.read_outcome("statement", &mut ()).await?;
        self.settle_parse(stmt, first, &outcome);
        Ok(outcome)
    }

    /// An execution into the write buffer: Parse the first time, Bind, Execute, Sync. Results
    /// in binary (`execute`, which reads none of them), or in text after a Describe of their
    /// columns (`keep`: `execute_into`). Whether it is the first (parsed with it).
    #[inline]
    pub(super) fn queue_execute(
        &mut self,
        stmt: &PgStmt,
        params: &[Param<'_>],
        keep: bool,
    ) -> Result<bool, DriverError> {
        self.wbuf.clear();
        self.append_execute(stmt, params, keep)
    }

    /// The same, after what the write buffer holds (a batch: `execute_many`).
    #[inline]
    pub(super) fn append_execute(
        &mut self,
        stmt: &PgStmt,
        params: &[Param<'_>],
        keep: bool,
    ) -> Result<bool, DriverError> {
        let (name, len) = stmt_name(stmt.id);
        let name = &name[..len];
        let Some(slot) = self.stmts.get(stmt.id as usize) else {
            return Err(self.io(
                "execute",
                std::io::Error::other("a statement prepared on another connection"),
            ));
        };
        let first = !slot.parsed;
        if first {
            let types: Vec<u32> = params.iter().map(sysbench_type).collect();
            m::parse(&mut self.wbuf, name, slot.sql.as_bytes(), &types);
        }
        if keep {
            m::bind(&mut self.wbuf, name, params, 0);
            m::describe_portal(&mut self.wbuf);
        } else {
            m::bind(&mut self.wbuf, name, params, 1);
        }
        m::execute(&mut self.wbuf);
        m::sync(&mut self.wbuf);
        Ok(first)
    }

    /// After a first execution: a refused Parse leaves nothing named on the server, so the
    /// next one parses again.
    #[inline]
    pub(super) fn settle_parse(&mut self, stmt: &PgStmt, first: bool, outcome: &Outcome) {
        if first {
            let took = !matches!(outcome, Outcome::Err(_)) || self.parse_took;
            self.stmts[stmt.id as usize].parsed = took;
        }
    }

    /// A COPY OUT nobody asked for: the connection is given up (see `DriverError::CopyOut`).
    pub(super) fn copy_out(&mut self) -> DriverError {
        self.farewell = false;
        DriverError::CopyOut {
            endpoint: self.endpoint.clone(),
        }
    }

    /// Free a named statement.
    pub async fn close_stmt(&mut self, stmt: &PgStmt) -> Result<(), DriverError> {
        if !self.stmts.get(stmt.id as usize).is_some_and(|s| s.parsed) {
            return Ok(());
        }
        self.wbuf.clear();
        let (name, len) = stmt_name(stmt.id);
        m::close_statement(&mut self.wbuf, &name[..len]);
        m::sync(&mut self.wbuf);
        self.send("close").await?;
        self.read_outcome("close", &mut ()).await?;
        self.stmts[stmt.id as usize].parsed = false;
        Ok(())
    }

    /// Out of a failed transaction, as sysbench's pgsql driver does after an ignorable error
    /// (its ROLLBACK is not counted as a statement), or out of one a caller gives up without
    /// a server error (a check of what it read failed): the next BEGIN would otherwise only
    /// warn, and its COMMIT commit both. Nothing to do outside a transaction.
    pub async fn recover(&mut self) -> Result<(), DriverError> {
        if self.tx_status != b'I' && self.tx_status != 0 {
            self.exec("ROLLBACK").await?;
        }
        Ok(())
    }

    /// The notices the server sent since the last take, oldest first.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    pub(super) fn note(&mut self, body: &[u8]) {
        if self.notices.len() >= MAX_NOTICES {
            return;
        }
        self.notices.push(super::fields::notice(body));
    }

    /// Leave politely.
    pub async fn quit(mut self) {
        self.wbuf.clear();
        m::terminate(&mut self.wbuf);
        let _ = self.send("quit").await;
        self.farewell = false;
    }

    /// `COPY ... FROM STDIN` with `data` as its input (text format: tab-separated columns, a
    /// row a line): PostgreSQL's bulk load, as LOAD DATA LOCAL is MariaDB's. A server error
    /// is [`Outcome::Err`]; the rows copied are the outcome's affected rows.
    pub async fn copy_in(&mut self, sql: &str, data: &[u8]) -> Result<Outcome, DriverError> {
        self.wbuf.clear();
        m::query(&mut self.wbuf, sql.as_bytes());
        self.send("COPY").await?;
        loop {
            let msg = self.read_msg("COPY").await?;
            match msg.kind {
                b'G' => break,
                // Refused before any data (no such table, not a COPY FROM STDIN): the
                // outcome follows up to ReadyForQuery.
                b'E' => {
                    let e = server_error(self.body(msg));
                    self.read_outcome("COPY", &mut ()).await?;
                    return Ok(Outcome::Err(e));
                }
                b'H' | b'W' => return Err(self.copy_out()),
                // What comes before the answer: notices, parameter changes.
                b'N' | b'S' | b'A' => {}
                // Rows, a command's end, ReadyForQuery: not the COPY IN asked for.
                _ => {
                    return Err(DriverError::NotCopyIn {
                        endpoint: self.endpoint.clone(),
                    })
                }
            }
        }
        for chunk in data.chunks(256 * 1024) {
            self.wbuf.clear();
            let at = m::begin(&mut self.wbuf, b'd');
            self.wbuf.extend_from_slice(chunk);
            m::finish(&mut self.wbuf, at);
            self.send("COPY").await?;
        }
        self.wbuf.clear();
        self.wbuf.extend_from_slice(&[b'c', 0, 0, 0, 4]);
        self.send("COPY").await?;
        self.read_outcome("COPY", &mut ()).await
    }
}

/// A statement's name, `s<id>`, on the stack: an execute allocates nothing.
pub(super) fn stmt_name(id: u32) -> ([u8; 11], usize) {
    let mut out = [0u8; 11];
    out[0] = b's';
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (id, 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[1 + i] = digits[len - 1 - i];
    }
    (out, 1 + len)
}

/// The type oid sysbench declares for a bound value (see `message.rs`); NULL's is left to
/// the server.
fn sysbench_type(p: &Param<'_>) -> u32 {
    match p {
        Param::Int(_) => m::OID_INT8,
        Param::Double(_) => m::OID_FLOAT8,
        Param::Str(_) => m::OID_VARCHAR,
        Param::Null => m::OID_UNSPECIFIED,
    }
}

/// `?` to `$1`, `$2`...: every `?`, as sysbench's driver converts them (it does not look
/// inside quotes either).
pub fn numbered_placeholders(sql: &str) -> (String, u16) {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0u16;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    (out, n)
}

/// Values as SQL literals in place of each `?`: numbers as they print, strings quoted with
/// `'` doubled (standard_conforming_strings, on since PostgreSQL 9.1), NULL.
pub fn interpolate(sql: &str, params: &[Param<'_>]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let mut values = params.iter();
    for c in sql.chars() {
        if c != '?' {
            out.push(c);
            continue;
        }
        match values.next() {
            Some(Param::Int(v)) => {
                let _ = write!(out, "{v}");
            }
            Some(Param::Double(v)) => {
                let _ = write!(out, "{v}");
            }
            Some(Param::Str(s)) => {
                out.push('\'');
                out.push_str(&String::from_utf8_lossy(s).replace('\'', "''"));
                out.push('\'');
            }
            Some(Param::Null) | None => out.push_str("NULL"),
        }
    }
    out
}

/// A connection dropped between statements says goodbye (Terminate), so the server logs no
/// unexpected EOF: best effort, one non-blocking send.
impl Drop for PgConn {
    fn drop(&mut self) {
        if self.farewell {
            let mut bye = Vec::with_capacity(5);
            m::terminate(&mut bye);
            self.stream.send_now(&bye);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_names_are_s_and_the_id() {
        for id in [0, 7, 42, 4_294_967_295] {
            let (n, len) = stmt_name(id);
            assert_eq!(std::str::from_utf8(&n[..len]).unwrap(), format!("s{id}"));
        }
    }

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered_placeholders("UPDATE t SET c=? WHERE id=?"),
            ("UPDATE t SET c=$1 WHERE id=$2".to_string(), 2)
        );
        assert_eq!(numbered_placeholders("BEGIN"), ("BEGIN".to_string(), 0));
    }

    #[test]
    fn literals_double_quotes_and_say_null() {
        let s = interpolate(
            "SELECT ?, ?, ?",
            &[Param::Int(7), Param::Str(b"it's"), Param::Null],
        );
        assert_eq!(s, "SELECT 7, 'it''s', NULL");
    }

    #[test]
    fn a_servers_escape_sequences_do_not_reach_the_terminal() {
        let e = server_error(b"C42000\0Mbad \x1b[2Jthing\0\0");
        assert!(!e.message.contains('\x1b'), "{:?}", e.message);
    }

    #[test]
    fn errors_carry_sqlstate_and_detail() {
        let e = server_error(b"SERROR\0C23505\0Mduplicate key\0DKey (id)=(1) exists.\0\0");
        assert_eq!((e.code, e.sql_state.as_str()), (0, "23505"));
        assert_eq!(e.message, "duplicate key (Key (id)=(1) exists.)");
    }
}
