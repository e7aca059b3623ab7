//! TCP or unix socket, behind one small enum (no dynamic dispatch on the hot path).
//!
//! The blocking variants serve a client thread that owns a single connection: read, and when
//! nothing is there yet sleep in poll(2), as the C client library does (or sleep first, where
//! the connection's reads keep finding nothing: `habit.rs`). That replaces the
//! reactor's `epoll_wait` round and measured one sleep per statement where a plain blocking
//! `recv` took two (2 CPUs, 2 connections: 105k qps at 6.2 us client CPU per query, vs 100k at
//! 7.4). Their futures never return Pending, which is harmless only because nothing else runs
//! on that thread.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

use super::habit::ReadHabit;
use crate::Endpoint;

/// The reactor variants are registered for readability only. A socket registered for
/// writability too (as tokio's own streams are) gets an EPOLLOUT edge every time the server
/// consumes a request, and that edge wakes the client thread for nothing. Measured on 2 CPUs at
/// 64 connections (unix socket): with both interests, the server's `unix_write_space` waking
/// the client took 4% of all CPU and each client thread slept 0.77 times per query; with
/// readability only that wakeup is gone from the profile and the threads sleep 0.56 times per
/// query. A write that would block waits through a duplicate descriptor registered for
/// writability for just that wait (see `writable`).
pub enum Plain {
    Tcp(AsyncFd<std::net::TcpStream>),
    Unix(AsyncFd<std::os::unix::net::UnixStream>),
    BlockingTcp(std::net::TcpStream, ReadHabit),
    BlockingUnix(std::os::unix::net::UnixStream, ReadHabit),
    /// Only while a TLS stream's socket changes kind (transport.rs): never read or written.
    Detached,
}

fn detached() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the connection was closed")
}

impl Plain {
    pub async fn connect(endpoint: &Endpoint) -> io::Result<Plain> {
        match endpoint {
            Endpoint::Tcp { host, port } => {
                let s = TcpStream::connect((host.as_str(), *port)).await?;
                // One statement per round trip: Nagle would add up to 40 ms per statement.
                s.set_nodelay(true)?;
                Ok(Plain::Tcp(readable_only(s.into_std()?)?))
            }
            Endpoint::Unix(path) => {
                let s = UnixStream::connect(path).await?;
                Ok(Plain::Unix(readable_only(s.into_std()?)?))
            }
        }
    }

    /// Connect with blocking I/O, outside any runtime, within `timeout`. The socket itself is
    /// left non-blocking: reads sleep in poll(2), never in a blocking `recv`, whose wait is
    /// woken each time the server consumes a request (the doc above; measured for scripts'
    /// connections: 2.3 sleeps per query with a blocking socket, where sysbench has 1).
    pub fn connect_blocking(
        endpoint: &Endpoint,
        timeout: std::time::Duration,
    ) -> io::Result<Plain> {
        match endpoint {
            Endpoint::Tcp { host, port } => {
                use std::net::ToSocketAddrs;
                let mut last = io::Error::other(format!("{host}:{port} resolves to no address"));
                for addr in (host.as_str(), *port).to_socket_addrs()? {
                    match std::net::TcpStream::connect_timeout(&addr, timeout) {
                        Ok(s) => {
                            s.set_nodelay(true)?;
                            s.set_nonblocking(true)?;
                            return Ok(Plain::BlockingTcp(s, ReadHabit::default()));
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
            Endpoint::Unix(path) => {
                let s = std::os::unix::net::UnixStream::connect(path)?;
                s.set_nonblocking(true)?;
                Ok(Plain::BlockingUnix(s, ReadHabit::default()))
            }
        }
    }

    /// The same socket, taken off the reactor and used with blocking waits.
    pub fn into_blocking(self) -> io::Result<Plain> {
        Ok(match self {
            Plain::Tcp(s) => Plain::BlockingTcp(s.into_inner(), ReadHabit::default()),
            Plain::Unix(s) => Plain::BlockingUnix(s.into_inner(), ReadHabit::default()),
            blocking => blocking,
        })
    }

    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Plain::Tcp(s) => read_async(s, buf).await,
            Plain::Unix(s) => read_async(s, buf).await,
            Plain::BlockingTcp(s, h) => read_or_poll(s, h, buf),
            Plain::BlockingUnix(s, h) => read_or_poll(s, h, buf),
            Plain::Detached => Err(detached()),
        }
    }

    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Plain::Tcp(s) => write_async(s.get_mut(), buf).await,
            Plain::Unix(s) => write_async(s.get_mut(), buf).await,
            Plain::BlockingTcp(s, _) => write_or_poll(s, buf),
            Plain::BlockingUnix(s, _) => write_or_poll(s, buf),
            Plain::Detached => Err(detached()),
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        match self {
            Plain::Tcp(s) => s.as_raw_fd(),
            Plain::Unix(s) => s.as_raw_fd(),
            Plain::BlockingTcp(s, _) => s.as_raw_fd(),
            Plain::BlockingUnix(s, _) => s.as_raw_fd(),
            Plain::Detached => -1,
        }
    }

    pub fn is_unix(&self) -> bool {
        matches!(self, Plain::Unix(_) | Plain::BlockingUnix(..))
    }

    pub fn is_blocking(&self) -> bool {
        matches!(self, Plain::BlockingTcp(..) | Plain::BlockingUnix(..))
    }

    /// The server's process id, on a unix socket (SO_PEERCRED); None over TCP.
    pub fn peer_pid(&self) -> Option<u32> {
        if !self.is_unix() {
            return None;
        }
        let fd = self.raw_fd();
        // SAFETY: ucred is plain data; getsockopt writes at most `len` bytes into it.
        let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: a valid socket we own, a pointer to a ucred and its size.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut cred as *mut libc::ucred).cast(),
                &mut len,
            )
        };
        (r == 0 && cred.pid > 0).then_some(cred.pid as u32)
    }
}

/// Send `buf` on `fd` if the socket takes it at once; never waits, never raises SIGPIPE.
/// Returns whether all of it went.
pub(crate) fn send_now(fd: RawFd, buf: &[u8]) -> bool {
    // SAFETY: `buf` is valid for its length; a closed or bad descriptor only yields an error.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(n) == Ok(buf.len())
}

fn readable_only<S: AsRawFd>(s: S) -> io::Result<AsyncFd<S>> {
    register(s, Interest::READABLE)
}

fn register<S: AsRawFd>(s: S, interest: Interest) -> io::Result<AsyncFd<S>> {
    // SAFETY: `s` owns its descriptor and moves into the AsyncFd, which keeps it open and
    // unchanged until it is dropped or `into_inner` hands it back; nothing here replaces it.
    Ok(unsafe { AsyncFd::register_with_interest(s, interest) }?)
}

thread_local! {
    static READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Reads through the reactor that returned something, on this thread so far: a client
/// thread that polls instead of sleeping tells a useful round from an idle one by it.
pub fn reads_on_this_thread() -> u64 {
    READS.with(std::cell::Cell::get)
}

async fn read_async<S: AsRawFd + Read>(s: &mut AsyncFd<S>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        let mut ready = s.readable_mut().await?;
        match ready.try_io(|s| s.get_mut().read(buf)) {
            Ok(r) => {
                READS.with(|n| n.set(n.get() + 1));
                // The readiness is kept after a short read, though the socket is then empty
                // and the next read will say so (as tokio's own streams would not). The
                // next read comes after the next statement is sent, often once the thread
                // has served its other connections, and by then the reply is often there:
                // the kept readiness reads it without waiting for the reactor, which the
                // runtime polls only when it runs out of tasks or every few dozen of them.
                // Clearing it here (bakeoff pgbench -S -M prepared -c 1024 -j 2, 10 pairs
                // against this build, 2026-11-27) took system calls per transaction from
                // 2.52 to 2.23 and tps to 0.577x (0.559-0.596): each reply then waits for
                // the reactor. So did a yield before a response's first read, which lets the
                // reactor look first (2.48 to 2.20, tps 0.596x, 0.587-0.606). Left kept.
                // Reading it at once does make a connection ping-pong with its server thread
                // on CPUs they share (the send wakes the backend, which preempts the client,
                // answers, and the client reads that answer and sends again), where pgbench
                // goes on to its next client. Going round instead (the first read after a
                // write re-queued its task by waking itself, behind the thread's other ready
                // tasks, without a reactor look) took bakeoff pgbench -S -j 2 -c 64 -M prepared
                // from 0.46 to 0.23 switches and 2.62 to 2.19 system calls a transaction
                // (pgbench 0.35, 2.71), but tps to 0.920x (0.871-0.972, 40 pairs of 3 s runs)
                // and 0.905x (0.863-0.949, 60 of 1 s) of this build's (2026-11-28). Left out.
                return r;
            }
            Err(_would_block) => continue,
        }
    }
}

async fn write_async<S: AsFd + Write>(s: &mut S, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match s.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => writable(s.as_fd()).await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Wait until the socket takes more bytes. Rare (a statement is far smaller than the socket
/// buffer; LOAD DATA's chunks can fill it), so a duplicate descriptor is registered for
/// writability for this one wait and deregistered before it is closed. Registering reports
/// the current state, so space freed before the registration is not missed.
async fn writable(fd: BorrowedFd<'_>) -> io::Result<()> {
    let dup = register(fd.try_clone_to_owned()?, Interest::WRITABLE)?;
    drop(dup.writable().await?);
    Ok(())
}

/// Read; when nothing is there yet, sleep in poll(2) until something is (the pattern of the
/// C client library), or sleep first where this connection's first reads keep finding
/// nothing ([`ReadHabit`]). The socket stays non-blocking.
fn read_or_poll<S: Read + AsRawFd>(
    s: &mut S,
    habit: &mut ReadHabit,
    buf: &mut [u8],
) -> io::Result<usize> {
    past_deadline()?;
    let mut looking = !habit.sleep_first();
    if !looking {
        wait(s.as_raw_fd(), libc::POLLIN)?;
    }
    loop {
        match s.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if std::mem::take(&mut looking) {
                    habit.looked(false);
                }
                wait(s.as_raw_fd(), libc::POLLIN)?
            }
            other => {
                if looking {
                    habit.looked(true);
                }
                return other;
            }
        }
    }
}

fn write_or_poll<S: Write + AsRawFd>(s: &mut S, mut buf: &[u8]) -> io::Result<()> {
    past_deadline()?;
    while !buf.is_empty() {
        match s.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait(s.as_raw_fd(), libc::POLLOUT)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

thread_local! {
    /// When a blocking connection's waits on this thread give up: set for a login (a
    /// script's `connect()` has no runtime timer around it), None otherwise.
    static DEADLINE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Bound every blocking read and write on this thread by `limit` from now, until the guard
/// drops (which puts back the deadline there was before).
pub fn deadline_on_this_thread(limit: std::time::Duration) -> impl Drop {
    struct Restore(Option<std::time::Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.0));
        }
    }
    let at = std::time::Instant::now() + limit;
    let before = DEADLINE.with(|d| d.replace(Some(before_or(d.get(), at))));
    Restore(before)
}

/// The earlier of an outer deadline and a new one.
fn before_or(outer: Option<std::time::Instant>, at: std::time::Instant) -> std::time::Instant {
    outer.map_or(at, |o| o.min(at))
}

/// Past this thread's deadline: a server that never lets a read block (a stream of
/// messages the login skips) is stopped too, not only one that goes quiet.
fn past_deadline() -> io::Result<()> {
    match DEADLINE.with(|d| d.get()) {
        Some(at) if std::time::Instant::now() >= at => Err(io::ErrorKind::TimedOut.into()),
        _ => Ok(()),
    }
}

fn wait(fd: RawFd, events: libc::c_short) -> io::Result<()> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let timeout = match DEADLINE.with(|d| d.get()) {
        None => -1,
        Some(at) => {
            let left = at.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            left.as_millis().clamp(1, i32::MAX as u128) as i32
        }
    };
    // SAFETY: one valid pollfd, count 1; fd is owned by the stream we borrow.
    let r = unsafe { libc::poll(&mut p, 1, timeout) };
    if r == 0 {
        return Err(io::ErrorKind::TimedOut.into());
    }
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}
