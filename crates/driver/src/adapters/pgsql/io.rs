//! Reading backend messages off a connection within the bounds a server cannot push it past:
//! a message's length against what its type may carry (libpq's limits: an authentication
//! request at most 2,000 bytes, a short type 30,000, a row, error, notice or COPY data up to
//! `--max-packet`), refused before any of it is read; the read buffer grown by what arrives,
//! never by what a length field announces; and outside the timed run each read against the
//! read timeout.

use std::io;
use std::time::Duration;

use super::conn::PgConn;
use crate::DriverError;

/// Type byte and length.
const HEADER: usize = 5;
/// libpq's cap on a message of a type that is never long (pqParseInput3's 30000).
const SHORT: usize = 30_000;
/// libpq's cap on an authentication request during the login (2000).
const AUTH_REQUEST: usize = 2_000;

/// The longest a message of `kind` may be: libpq's rule, `--max-packet` for the types that
/// carry data (RowDescription, DataRow, CopyData, FunctionCallResponse, ErrorResponse,
/// NoticeResponse, NotificationResponse); during the login an error at most 30,000 bytes.
fn longest(kind: u8, login: bool, max_packet: usize) -> usize {
    match (kind, login) {
        (b'R', true) => AUTH_REQUEST,
        (b'E' | b'N', true) => SHORT,
        (b'T' | b'D' | b'd' | b'V' | b'E' | b'N' | b'A', false) => max_packet,
        _ => SHORT.min(max_packet),
    }
}

/// One backend message: its type and where its body lies in the read buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Msg {
    pub kind: u8,
    pub start: usize,
    pub end: usize,
}

impl PgConn {
    pub(super) fn body(&self, m: Msg) -> &[u8] {
        &self.rbuf[m.start..m.end]
    }

    /// The next message when the buffer holds it whole and its length is one its type may
    /// have (else `read_msg` says why); the previous one is consumed.
    pub(super) fn buffered(&mut self) -> Option<Msg> {
        self.start = self.next;
        let head = self.rbuf.get(self.start..self.start + HEADER)?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let most = longest(head[0], self.in_login, self.limits.max_packet);
        if len < 4 || len > most || self.end - self.start < 1 + len {
            return None;
        }
        let m = Msg {
            kind: head[0],
            start: self.start + HEADER,
            end: self.start + 1 + len,
        };
        if m.end > self.end {
            return None;
        }
        self.next = m.end;
        Some(m)
    }

    /// Read the next message; the previous one is consumed.
    pub(super) async fn read_msg(&mut self, op: &'static str) -> Result<Msg, DriverError> {
        loop {
            if let Some(m) = self.buffered() {
                return Ok(m);
            }
            let have = self.end - self.start;
            if have < HEADER {
                self.fill(HEADER, op).await?;
                continue;
            }
            let h = &self.rbuf[self.start..];
            let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
            if len < 4 {
                return Err(self.io(
                    op,
                    invalid(format!(
                        "a message of type {:?} with length {len}",
                        h[0] as char
                    )),
                ));
            }
            let most = longest(h[0], self.in_login, self.limits.max_packet);
            if len > most {
                let why = match most == self.limits.max_packet {
                    true => format!("over the {most}-byte cap (--max-packet sets it)"),
                    false => format!(
                        "over the {most} bytes a message of its type may have{}",
                        if self.in_login {
                            " during the login"
                        } else {
                            ""
                        }
                    ),
                };
                return Err(self.io(
                    op,
                    invalid(format!(
                        "the server sent a message of type {:?} of {len} bytes, {why}",
                        crate::printable(&(h[0] as char).to_string())
                    )),
                ));
            }
            self.fill(1 + len, op).await?;
        }
    }

    /// Make `rbuf[start..]` hold at least `want` bytes, reading from the socket.
    async fn fill(&mut self, want: usize, op: &'static str) -> Result<(), DriverError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start + want > self.rbuf.len() || self.end == self.rbuf.len() {
            self.rbuf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        self.next = self.start;
        // Grown only when full, to twice what it holds: what a server announces costs
        // nothing until its bytes arrive.
        if want > self.rbuf.len() && self.end == self.rbuf.len() {
            let grown = (self.rbuf.len() * 2).min(want.max(self.rbuf.len() + 1));
            self.rbuf.resize(grown, 0);
        }
        let blocking = self.stream.is_blocking();
        // A blocking connection's reads are bounded only by a stall limit (its deadline on
        // this thread); outside the run, blocking ones are a script's, which have none.
        let limit = self.read_timeout.filter(|_| self.stall || !blocking);
        let into = &mut self.rbuf[self.end..];
        // As the MySQL reader: no timer in the timed run, and a boxed one outside it, so the
        // read's future stays small.
        let n = match limit {
            None => self.stream.read(into).await,
            Some(d) if blocking => {
                let _bound = crate::net::stream::deadline_on_this_thread(d);
                match self.stream.read(into).await {
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                        return Err(self.timed_out(op, d))
                    }
                    r => r,
                }
            }
            Some(d) => match Box::pin(tokio::time::timeout(d, self.stream.read(into))).await {
                Ok(r) => r,
                Err(_) => return Err(self.timed_out(op, d)),
            },
        }
        .map_err(|e| self.io(op, e))?;
        if n == 0 {
            return Err(self.io(
                op,
                io::Error::new(io::ErrorKind::UnexpectedEof, "server closed the connection"),
            ));
        }
        self.end += n;
        Ok(())
    }

    fn timed_out(&self, op: &'static str, after: Duration) -> DriverError {
        let (endpoint, secs) = (self.endpoint.clone(), after.as_secs_f64());
        match self.stall {
            true => DriverError::Stalled { endpoint, secs },
            false => DriverError::ReadTimeout { endpoint, op, secs },
        }
    }

    /// The read timeout from now on (None in the timed run).
    pub fn set_read_timeout(&mut self, limit: Option<Duration>) {
        self.read_timeout = limit;
        self.stall = false;
    }

    /// The run's bound on a stalled server (`--stall-timeout`): every read of this
    /// connection, blocking or not, ends the call after `limit`; None: no bound (the default:
    /// long statements are legitimate).
    pub fn set_stall_limit(&mut self, limit: Option<Duration>) {
        self.read_timeout = limit;
        self.stall = limit.is_some();
    }

    /// The options' timeout for DDL and loads, from now on.
    pub fn for_ddl(&mut self) {
        self.read_timeout = self.limits.ddl_timeout;
    }

    /// The options' timeout for ordinary statements, from now on.
    pub fn for_statements(&mut self) {
        self.read_timeout = self.limits.read_timeout;
    }

    pub(super) fn io(&self, op: &'static str, source: io::Error) -> DriverError {
        DriverError::Io {
            endpoint: self.endpoint.clone(),
            op,
            source,
        }
    }
}

pub(super) fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}
