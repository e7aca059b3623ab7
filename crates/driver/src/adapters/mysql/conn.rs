use std::io;

use bakeoff_proto::command::{self, Param};
use bakeoff_proto::packet;
use bakeoff_proto::{
    column_type, ColumnType, Outcome, PrepareOk, PrepareReader, PrepareStep, ProtoError,
    ResponseReader, Step,
};

use super::compress::Compressed;
use super::retry::{self, Backoff};
use crate::net::transport::Stream;
use crate::{ConnectOptions, DriverError};

const INITIAL_READ_BUF: usize = 16 * 1024;

/// A server-side prepared statement on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stmt {
    pub id: u32,
    pub params: u16,
    pub columns: u16,
}

/// One open connection. Not shareable: one statement in flight at a time, as the protocol has.
pub struct Conn {
    /// Whether a drop says goodbye (see `Drop for Conn`).
    farewell: bool,
    pub(super) stream: Stream,
    pub(super) endpoint: String,
    /// Bytes read from the socket: `rbuf[start..end]` is not consumed yet; the packet handed
    /// out last ends at `next`.
    pub(super) rbuf: Vec<u8>,
    pub(super) start: usize,
    pub(super) next: usize,
    pub(super) end: usize,
    /// Reassembly buffer for payloads split over several frames (16 MiB+; rare).
    pub(super) big: Vec<u8>,
    pub(super) wbuf: Vec<u8>,
    pub(super) seq: u8,
    pub(super) server_version: String,
    pub(super) connection_id: u32,
    /// MARIADB_CLIENT_CACHE_METADATA is in effect (see `mariadb_caps`).
    pub(super) cache_metadata: bool,
    /// The parameter types the server holds for each statement (`param_types`, 0 for none),
    /// indexed by statement id: the next execution with the same types sends values only.
    /// Ids count up from 1 per connection; past TYPES_HELD_IDS the types are always sent.
    types_held: Vec<u64>,
    /// Where MARIADB_CLIENT_CACHE_METADATA is in effect: each statement's result column
    /// types, from its prepare, replaced by the definitions an execution sends (the server
    /// sends them again only when they changed), for `execute_into` (`values.rs`).
    pub(super) stmt_columns: std::collections::HashMap<u32, Vec<ColumnType>>,
    /// Elsewhere every execution sends its column definitions: read into this, reused.
    pub(super) result_columns: Vec<ColumnType>,
    /// The compressed protocol, once the handshake agreed on it (`compress.rs`).
    pub(super) zip: Option<Box<Compressed>>,
    /// What the server may make this connection hold or wait for (`reader.rs`).
    pub(super) limits: crate::Limits,
    /// How long a read may wait now: the options' read timeout, none in the timed run.
    /// `read_timeout` is the run's stall limit (`set_stall_limit`).
    pub(super) stall: bool,
    pub(super) read_timeout: Option<std::time::Duration>,
}

/// Statement ids whose parameter types a connection keeps track of (a few KiB at most).
const TYPES_HELD_IDS: usize = 1024;

impl Conn {
    /// Connect and authenticate, bounded by `opts.connect_timeout`. A full listen queue is
    /// waited out inside that bound, as a blocking connect would (see `retry.rs`); any other
    /// failure is returned at once.
    pub async fn connect(opts: &ConnectOptions) -> Result<Conn, DriverError> {
        let endpoint = opts.endpoint.to_string();
        let deadline = tokio::time::Instant::now() + opts.connect_timeout;
        let tcp = matches!(opts.endpoint, crate::Endpoint::Tcp { .. });
        let mut backoff = Backoff::new(jitter_seed(&endpoint));
        let mut attempts = 0u32;
        let mut last: Option<String> = None;
        loop {
            attempts += 1;
            let attempt = Self::connect_inner(opts, &endpoint);
            let err = match tokio::time::timeout_at(deadline, attempt).await {
                Ok(Ok(conn)) => {
                    retry::answered(&endpoint);
                    return Ok(conn);
                }
                Ok(Err(e)) if retry::is_queue_full(&e, tcp) => e,
                Ok(Err(e)) => return Err(e),
                Err(_) => break,
            };
            let wait = backoff.next_delay();
            last = Some(err.to_string());
            if tokio::time::Instant::now() + wait >= deadline {
                break;
            }
            tokio::time::sleep(wait).await;
        }
        Err(DriverError::ConnectTimeout {
            endpoint,
            secs: opts.connect_timeout.as_secs_f64(),
            attempts,
            last: last.unwrap_or_else(|| "no answer".into()),
        })
    }

    async fn connect_inner(opts: &ConnectOptions, endpoint: &str) -> Result<Conn, DriverError> {
        let stream =
            Stream::connect(&opts.endpoint)
                .await
                .map_err(|source| DriverError::Connect {
                    endpoint: endpoint.to_string(),
                    source,
                })?;
        Conn::greet(stream, opts, endpoint).await
    }

    /// Connect with blocking socket I/O and no runtime: for a thread that drives this one
    /// connection from code that cannot await (a Lua script's `connect()`). Its calls complete
    /// when first polled; drive them with [`complete`](crate::complete).
    pub fn connect_blocking(opts: &ConnectOptions) -> Result<Conn, DriverError> {
        let endpoint = opts.endpoint.to_string();
        let stream =
            Stream::connect_blocking(&opts.endpoint, opts.connect_timeout).map_err(|source| {
                DriverError::Connect {
                    endpoint: endpoint.clone(),
                    source,
                }
            })?;
        // The login within the connect timeout, as the runtime's connect has it.
        let bound = crate::net::stream::deadline_on_this_thread(opts.connect_timeout);
        let r = crate::complete(Conn::greet(stream, opts, &endpoint));
        drop(bound);
        r.map_err(|e| e.at_login(&endpoint, opts.connect_timeout))
    }

    /// The handshake on a connected stream.
    async fn greet(
        stream: Stream,
        opts: &ConnectOptions,
        endpoint: &str,
    ) -> Result<Conn, DriverError> {
        let mut conn = Conn {
            farewell: false,
            stream,
            endpoint: endpoint.to_string(),
            rbuf: vec![0; INITIAL_READ_BUF],
            start: 0,
            next: 0,
            end: 0,
            big: Vec::new(),
            wbuf: Vec::with_capacity(1024),
            seq: 0,
            server_version: String::new(),
            connection_id: 0,
            cache_metadata: false,
            types_held: Vec::new(),
            stmt_columns: Default::default(),
            result_columns: Vec::new(),
            zip: None,
            limits: opts.limits,
            read_timeout: opts.limits.read_timeout,
            stall: false,
        };
        conn.handshake(opts).await?;
        conn.farewell = true;
        Ok(conn)
    }

    /// Switch to blocking socket I/O, for a thread that drives this one connection and
    /// nothing else (see `stream.rs`).
    pub fn into_blocking(mut self) -> Result<Conn, DriverError> {
        let r = self.stream.make_blocking();
        r.map_err(|source| DriverError::Io {
            endpoint: self.endpoint.clone(),
            op: "switching to blocking I/O",
            source,
        })?;
        Ok(self)
    }

    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// Run a text statement; a server error is returned as [`Outcome::Err`].
    pub async fn query(&mut self, sql: &str) -> Result<Outcome, DriverError> {
        self.wbuf.clear();
        command::query(&mut self.wbuf, sql.as_bytes());
        self.send().await?;
        self.read_outcome().await
    }

    /// Run a statement with `?` placeholders as text, the values substituted client-side
    /// (`--db-ps-mode=disable`).
    pub async fn query_with(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        self.wbuf.clear();
        let at = packet::begin(&mut self.wbuf);
        self.wbuf.push(command::COM_QUERY);
        command::interpolate(&mut self.wbuf, sql.as_bytes(), params);
        packet::finish(&mut self.wbuf, at, 0);
        self.send().await?;
        self.read_outcome().await
    }

    /// Run an admin statement that must succeed; a server error becomes [`DriverError::Server`].
    pub async fn exec(&mut self, sql: &str) -> Result<bakeoff_proto::OkPacket, DriverError> {
        match self.query(sql).await? {
            Outcome::Ok(ok) => Ok(ok),
            Outcome::Rows(_) => Ok(Default::default()),
            Outcome::Err(e) => Err(DriverError::Server(e)),
        }
    }

    /// Prepare a server-side statement; a server error becomes [`DriverError::Server`].
    pub async fn prepare(&mut self, sql: &str) -> Result<Stmt, DriverError> {
        self.wbuf.clear();
        command::prepare(&mut self.wbuf, sql.as_bytes());
        self.send().await?;
        let mut reader = PrepareReader::new();
        // The result's column types, where executions may leave them out.
        let mut types = Vec::new();
        loop {
            let at = self.read_packet("prepare").await?;
            match reader
                .on_packet(self.packet(at))
                .map_err(|e| self.proto(e))?
            {
                PrepareStep::Column(_) if self.cache_metadata => {
                    types.push(column_type(self.packet(at)).map_err(|e| self.proto(e))?)
                }
                PrepareStep::More | PrepareStep::Column(_) => {}
                PrepareStep::Done(Ok(PrepareOk {
                    stmt_id,
                    columns,
                    params,
                })) => {
                    // A statement id can come back after a close: nothing is held for it.
                    self.forget_types(stmt_id);
                    if self.cache_metadata {
                        self.stmt_columns.insert(stmt_id, types);
                    }
                    return Ok(Stmt {
                        id: stmt_id,
                        params,
                        columns,
                    });
                }
                PrepareStep::Done(Err(e)) => return Err(DriverError::Server(e)),
            }
        }
    }

    /// Execute a prepared statement; a server error is returned as [`Outcome::Err`].
    pub async fn execute(
        &mut self,
        stmt: &Stmt,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        let (types, held) = self.queue_execute(stmt.id, params);
        self.send().await?;
        let reader = ResponseReader::with_cached_metadata(self.cache_metadata);
        let outcome = self.read_outcome_with(reader, Some(stmt.id)).await;
        self.settle_types(stmt.id, types, held, &outcome);
        outcome
    }

    /// COM_STMT_EXECUTE into the write buffer, with the parameters' types unless the server
    /// holds them for the statement: (the types, whether held).
    #[inline]
    pub(super) fn queue_execute(&mut self, id: u32, params: &[Param<'_>]) -> (u64, bool) {
        self.wbuf.clear();
        self.append_execute(id, params)
    }

    /// The same, after what the write buffer holds (a batch: `execute_many`).
    #[inline]
    pub(super) fn append_execute(&mut self, id: u32, params: &[Param<'_>]) -> (u64, bool) {
        let types = command::param_types(params);
        let held = types != 0 && self.types_held.get(id as usize) == Some(&types);
        command::execute(&mut self.wbuf, id, params, !held);
        (types, held)
    }

    /// Types the server took (it answered) are held; after a refusal, send them again.
    #[inline]
    pub(super) fn settle_types(
        &mut self,
        id: u32,
        types: u64,
        held: bool,
        outcome: &Result<Outcome, DriverError>,
    ) {
        let took = matches!(outcome, Ok(Outcome::Rows(_) | Outcome::Ok(_)));
        if held != took {
            let slot = id as usize;
            if slot < TYPES_HELD_IDS {
                if self.types_held.len() <= slot {
                    self.types_held.resize(slot + 1, 0);
                }
                self.types_held[slot] = if took { types } else { 0 };
            }
        }
    }

    pub(super) fn forget_types(&mut self, stmt_id: u32) {
        if let Some(t) = self.types_held.get_mut(stmt_id as usize) {
            *t = 0;
        }
    }

    /// Free a prepared statement (no response by protocol).
    pub async fn close_stmt(&mut self, stmt: &Stmt) -> Result<(), DriverError> {
        self.forget_types(stmt.id);
        self.stmt_columns.remove(&stmt.id);
        self.wbuf.clear();
        command::close(&mut self.wbuf, stmt.id);
        self.send().await
    }

    pub async fn ping(&mut self) -> Result<(), DriverError> {
        self.wbuf.clear();
        command::ping(&mut self.wbuf);
        self.send().await?;
        match self.read_outcome().await? {
            Outcome::Err(e) => Err(DriverError::Server(e)),
            _ => Ok(()),
        }
    }

    /// The server's process id when connected over its unix socket (None over TCP).
    pub fn peer_pid(&self) -> Option<u32> {
        self.stream.peer_pid()
    }

    /// Say goodbye politely; errors are irrelevant at this point.
    pub async fn quit(mut self) {
        self.wbuf.clear();
        command::quit(&mut self.wbuf);
        let _ = self.send().await;
        self.farewell = false;
    }

    /// `LOAD DATA LOCAL INFILE ...` with `data` as the file's contents, whatever name the
    /// server asks for: nothing is read from disk. A server that does not allow local infile
    /// answers with an error, returned as [`Outcome::Err`] (MariaDB 4166 or 1148, MySQL 3948).
    pub async fn load_local(&mut self, sql: &str, data: &[u8]) -> Result<Outcome, DriverError> {
        self.wbuf.clear();
        command::query(&mut self.wbuf, sql.as_bytes());
        self.send().await?;
        let mut reader = ResponseReader::with_cached_metadata(self.cache_metadata);
        let at = self.read_packet("LOAD DATA").await?;
        if self.packet(at).first() == Some(&0xfb) {
            self.send_file(data).await?;
            return self.read_outcome().await;
        }
        match reader
            .on_packet(self.packet(at))
            .map_err(|e| self.proto(e))?
        {
            Step::Done(o) => Ok(o),
            _ => self.read_outcome_with(reader, None).await,
        }
    }

    /// The file of a LOCAL INFILE request: packets of at most 1 MiB, then an empty one.
    async fn send_file(&mut self, data: &[u8]) -> Result<(), DriverError> {
        for chunk in data.chunks(1 << 20).chain(std::iter::once(&[][..])) {
            self.wbuf.clear();
            let at = packet::begin(&mut self.wbuf);
            self.wbuf.extend_from_slice(chunk);
            self.seq = packet::finish(&mut self.wbuf, at, self.seq);
            let r = self.write_wbuf().await;
            r.map_err(|e| self.io("LOAD DATA", e))?;
        }
        Ok(())
    }

    async fn read_outcome(&mut self) -> Result<Outcome, DriverError> {
        let reader = ResponseReader::with_cached_metadata(self.cache_metadata);
        self.read_outcome_with(reader, None).await
    }

    /// The outcome; rows are counted, never decoded. `stmt`: the prepared statement executed,
    /// whose column definitions are kept where the server sends them only when they changed.
    async fn read_outcome_with(
        &mut self,
        mut reader: ResponseReader,
        stmt: Option<u32>,
    ) -> Result<Outcome, DriverError> {
        loop {
            // Most of a result set's packets are in the buffer already: taking them without
            // the read's future saves building and dropping one per row (2.8k instructions
            // of a read_only event once the stream could be TLS).
            let at = match self.buffered_packet() {
                Some(at) => at,
                None => self.read_packet("statement").await?,
            };
            match reader
                .on_packet(self.packet(at))
                .map_err(|e| self.proto(e))?
            {
                Step::More | Step::Row => {}
                // A result set whose column definitions follow, and each of them: on a
                // MariaDB that caches them, only once they changed (the prepare sent them).
                Step::Columns => {
                    if let (true, Some(id)) = (self.cache_metadata, stmt) {
                        self.keep_definition(id, reader.fed(), at)?
                    }
                }
                Step::Done(o) => return Ok(o),
            }
        }
    }

    /// Write `wbuf` whole. A connection dropped halfway through (its future cancelled) must
    /// not say goodbye: the bytes would land inside the unfinished packet.
    async fn write_wbuf(&mut self) -> std::io::Result<()> {
        let armed = std::mem::replace(&mut self.farewell, false);
        let r = match &mut self.zip {
            None => self.stream.write_all(&self.wbuf).await,
            Some(z) => z.write_all(&mut self.stream, &self.wbuf).await,
        };
        self.farewell = armed && r.is_ok();
        r
    }

    pub(super) async fn send(&mut self) -> Result<(), DriverError> {
        self.seq = 1;
        if let Some(z) = &mut self.zip {
            z.new_command();
        }
        let r = self.write_wbuf().await;
        r.map_err(|e| self.io("write", e))
    }

    /// Send one payload within the current exchange (connection phase).
    pub(super) async fn send_payload(
        &mut self,
        payload: &[u8],
        op: &'static str,
    ) -> Result<(), DriverError> {
        self.wbuf.clear();
        let at = packet::begin(&mut self.wbuf);
        self.wbuf.extend_from_slice(payload);
        self.seq = packet::finish(&mut self.wbuf, at, self.seq);
        let r = self.write_wbuf().await;
        r.map_err(|e| self.io(op, e))
    }

    pub(super) async fn read_owned(&mut self, op: &'static str) -> Result<Vec<u8>, DriverError> {
        let at = self.read_packet(op).await?;
        Ok(self.packet(at).to_vec())
    }

    pub(super) fn io(&self, op: &'static str, source: io::Error) -> DriverError {
        DriverError::Io {
            endpoint: self.endpoint.clone(),
            op,
            source,
        }
    }

    pub(super) fn proto(&self, source: ProtoError) -> DriverError {
        DriverError::Proto {
            endpoint: self.endpoint.clone(),
            source,
        }
    }
}

/// Differs between connections opened at the same moment, so their retries spread out.
fn jitter_seed(endpoint: &str) -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 =
        std::sync::atomic::AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let n = NEXT.fetch_add(0x9e37_79b9_7f4a_7c15, std::sync::atomic::Ordering::Relaxed);
    n ^ endpoint.len() as u64
}

/// A connection dropped between statements without `quit` (a failed run, Ctrl-C, an error in
/// one of prepare's loaders) still sends COM_QUIT, so the server counts no aborted client and
/// logs no "Aborted connection" warning: counters and logs that DBAs watch. Best effort: one
/// non-blocking send of five bytes (a TLS record over TLS), only while the connection is
/// authenticated and no packet is half written.
impl Drop for Conn {
    fn drop(&mut self) {
        if self.farewell {
            let mut quit = Vec::with_capacity(5);
            command::quit(&mut quit);
            match &mut self.zip {
                None => self.stream.send_now(&quit),
                Some(z) => {
                    z.new_command();
                    match z.frame(&quit) {
                        Ok(framed) => self.stream.send_now(framed),
                        Err(_) => false,
                    }
                }
            };
        }
    }
}
