//! Reading packets off a connection, within the bounds a server cannot push it past: a
//! packet's length (reassembled across its continuation frames) against `--max-packet`, a
//! result set's rows against `--max-rows`, and outside the timed run, each read against the
//! read timeout. A hostile or broken server ends the call with an error that names the
//! bound, never holds memory or the caller without end.

use std::io;
use std::time::Duration;

use bakeoff_proto::packet::{self, HEADER, MAX_PAYLOAD};

use super::compress::Compressed;
use super::conn::Conn;
use crate::net::transport::Stream;
use crate::DriverError;

/// Where the packet handed out last lies: in the read buffer, or reassembled in `big`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PacketAt {
    Buf(usize, usize),
    Big,
}

impl Conn {
    pub(super) fn packet(&self, at: PacketAt) -> &[u8] {
        match at {
            PacketAt::Buf(s, e) => &self.rbuf[s..e],
            PacketAt::Big => &self.big,
        }
    }

    /// The next packet when the buffer holds it whole (the previous one consumed); None when
    /// it must be read (then nothing has changed but the previous packet's consumption).
    pub(super) fn buffered_packet(&mut self) -> Option<PacketAt> {
        self.start = self.next;
        let (len, seq) = packet::header(&self.rbuf[self.start..self.end])?;
        if len == MAX_PAYLOAD || self.end - self.start < HEADER + len {
            return None;
        }
        self.seq = seq.wrapping_add(1);
        let s = self.start + HEADER;
        self.next = s + len;
        Some(PacketAt::Buf(s, s + len))
    }

    /// Read the next packet; the previous one is consumed.
    pub(super) async fn read_packet(&mut self, op: &'static str) -> Result<PacketAt, DriverError> {
        loop {
            if let Some(at) = self.buffered_packet() {
                return Ok(at);
            }
            match packet::header(&self.rbuf[self.start..self.end]) {
                Some((MAX_PAYLOAD, _)) => return self.read_big(op).await,
                Some((len, _)) => {
                    self.within_cap(len, op)?;
                    self.fill(HEADER + len, op).await?
                }
                None => self.fill(HEADER, op).await?,
            }
        }
    }

    /// Reassemble a payload split over frames of MAX_PAYLOAD bytes, no larger than the cap.
    async fn read_big(&mut self, op: &'static str) -> Result<PacketAt, DriverError> {
        self.big.clear();
        loop {
            let (len, seq) = loop {
                match packet::header(&self.rbuf[self.start..self.end]) {
                    Some(h) => break h,
                    None => self.fill(HEADER, op).await?,
                }
            };
            self.within_cap(self.big.len() + len, op)?;
            while self.end - self.start < HEADER + len {
                self.fill(HEADER + len, op).await?;
            }
            let s = self.start + HEADER;
            self.big.extend_from_slice(&self.rbuf[s..s + len]);
            self.start = s + len;
            self.next = self.start;
            self.seq = seq.wrapping_add(1);
            if len < MAX_PAYLOAD {
                return Ok(PacketAt::Big);
            }
        }
    }

    /// Refused before any of it is read: the server's word for a length costs it nothing.
    fn within_cap(&self, len: usize, op: &'static str) -> Result<(), DriverError> {
        if len <= self.limits.max_packet {
            return Ok(());
        }
        Err(self.io(
            op,
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the server sent a packet of {} bytes or more, over the {}-byte cap (--max-packet sets it)",
                    len, self.limits.max_packet
                ),
            ),
        ))
    }

    /// A result set's rows kept so far against `--max-rows`.
    pub(super) fn rows_within_cap(&self, rows: usize) -> Result<(), DriverError> {
        if rows < self.limits.max_rows {
            return Ok(());
        }
        Err(DriverError::TooManyRows {
            endpoint: self.endpoint.clone(),
            max: self.limits.max_rows,
        })
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
        // Everything before `start` is consumed, so `next` (never past `start` here) follows it.
        self.next = self.start;
        if want > self.rbuf.len() {
            self.rbuf.resize(want.next_power_of_two(), 0);
        }
        let blocking = self.stream.is_blocking();
        // A blocking connection's reads are bounded only by a stall limit (its deadline on
        // this thread); outside the run, blocking ones are a script's, which have none.
        let limit = self.read_timeout.filter(|_| self.stall || !blocking);
        let into = &mut self.rbuf[self.end..];
        let cap = self.limits.max_packet;
        // The timed run reads with no timeout: no timer future around its reads. The timer's
        // future is boxed, so it does not make every read's future (moved whole each time a
        // statement's future is made) larger by a timer's size.
        let n = match limit {
            None => read_some(&mut self.stream, &mut self.zip, into, cap).await,
            Some(d) if blocking => {
                let _bound = crate::net::stream::deadline_on_this_thread(d);
                match read_some(&mut self.stream, &mut self.zip, into, cap).await {
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                        return Err(self.timed_out(op, d))
                    }
                    r => r,
                }
            }
            Some(d) => {
                let read = read_some(&mut self.stream, &mut self.zip, into, cap);
                match Box::pin(tokio::time::timeout(d, read)).await {
                    Ok(r) => r,
                    Err(_) => return Err(self.timed_out(op, d)),
                }
            }
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

    /// The read timeout from now on: DDL and loads take `ddl_timeout`, ordinary statements
    /// `read_timeout`, the timed run's none (`None` here).
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
}

/// One read from the stream, through the compressed protocol's frames when it is on.
async fn read_some(
    stream: &mut Stream,
    zip: &mut Option<Box<Compressed>>,
    into: &mut [u8],
    cap: usize,
) -> io::Result<usize> {
    match zip {
        None => stream.read(into).await,
        Some(z) => z.read(stream, into, cap).await,
    }
}
