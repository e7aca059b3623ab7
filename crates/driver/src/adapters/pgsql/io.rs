//! Reading backend messages off a connection within the bounds a server cannot push it past:
//! a message's length against `--max-packet` (refused before any of it is read), and outside
//! the timed run each read against the read timeout.

use std::io;
use std::time::Duration;

use super::conn::PgConn;
use crate::DriverError;

/// Type byte and length.
const HEADER: usize = 5;

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

    /// The next message when the buffer holds it whole; the previous one is consumed.
    pub(super) fn buffered(&mut self) -> Option<Msg> {
        self.start = self.next;
        let head = self.rbuf.get(self.start..self.start + HEADER)?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if len < 4 || self.end - self.start < 1 + len {
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
            if len > self.limits.max_packet {
                return Err(self.io(
                    op,
                    invalid(format!(
                        "the server sent a message of {len} bytes, over the {}-byte cap (--max-packet sets it)",
                        self.limits.max_packet
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
        if want > self.rbuf.len() {
            self.rbuf.resize(want.next_power_of_two(), 0);
        }
        let limit = self.read_timeout.filter(|_| !self.stream.is_blocking());
        let into = &mut self.rbuf[self.end..];
        // As the MySQL reader: no timer in the timed run, and a boxed one outside it, so the
        // read's future stays small.
        let n = match limit {
            None => self.stream.read(into).await,
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
        DriverError::ReadTimeout {
            endpoint: self.endpoint.clone(),
            op,
            secs: after.as_secs_f64(),
        }
    }

    /// The read timeout from now on (None in the timed run).
    pub fn set_read_timeout(&mut self, limit: Option<Duration>) {
        self.read_timeout = limit;
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
