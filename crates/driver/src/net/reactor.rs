//! A socket on its client thread's reactor: the variant a thread that multiplexes many
//! connections reads and writes through.
//!
//! It is registered for readability only. A socket registered for writability too (as tokio's
//! own streams are) gets an EPOLLOUT edge every time the server consumes a request, and that
//! edge wakes the client thread for nothing. Measured on 2 CPUs at 64 connections (unix
//! socket): with both interests, the server's `unix_write_space` waking the client took 4% of
//! all CPU and each client thread slept 0.77 times per query; with readability only that wakeup
//! is gone from the profile and the threads sleep 0.56 times per query. A write that would
//! block waits through a duplicate descriptor registered for writability for just that wait
//! (see `writable`).

use std::future::Future;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

pub struct Reactor<S: AsRawFd> {
    fd: AsyncFd<S>,
    /// The last thing done on this socket was a write: the next read lets the thread's
    /// other connections go first (`read`).
    sent: bool,
}

impl<S: AsRawFd + AsFd + Read + Write> Reactor<S> {
    pub fn new(s: S) -> io::Result<Reactor<S>> {
        Ok(Reactor {
            fd: register(s, Interest::READABLE)?,
            sent: false,
        })
    }

    pub fn into_inner(self) -> S {
        self.fd.into_inner()
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Read what is there, or wait for the reactor to say something is.
    ///
    /// The first read after a request first goes to the back of the thread's queue of ready
    /// connections. Otherwise a connection chases its own replies: its request wakes the
    /// server's thread, which on a machine with few CPUs takes this client's CPU at once,
    /// answers and sleeps, and the client, back, finds that very answer already in (the
    /// kept readiness below) and sends again, so one connection and its server thread
    /// ping-pong, every request costs the client a preemption, and the thread's other
    /// connections wait. Going round them instead, as pgbench's loop over its clients does,
    /// leaves several server threads woken at once, and a woken thread then queues behind
    /// the others rather than preempting the client. Measured (`bakeoff pgbench -S -j 2`,
    /// 2 CPUs, the lab PostgreSQL, perf stat, medians of 3-4 rounds, 2026-11-28): context
    /// switches per transaction at -c 64 prepared 0.46 to 0.20 (pgbench 0.35), -c 64 simple
    /// 0.21 to 0.13 (pgbench 0.15), -c 1024 simple 0.28 to 0.10 (pgbench 0.19); system calls
    /// 2.62 to 2.21, 2.87 to 2.31, 2.75 to 2.02, fewer reads finding nothing. The yield
    /// is a wake of this task by itself, which puts it at the back of the local queue
    /// without asking the reactor (tokio's `yield_now` defers to the reactor's next look:
    /// see below for what waiting on the reactor costs).
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.sent) {
            BackOfTheQueue(false).await;
        }
        loop {
            let mut ready = self.fd.readable_mut().await?;
            match ready.try_io(|s| s.get_mut().read(buf)) {
                Ok(r) => {
                    READS.with(|n| n.set(n.get() + 1));
                    // The readiness is kept after a short read, though the socket is then
                    // empty and the next read will say so (as tokio's own streams would not).
                    // The next read comes after the next statement is sent and the thread's
                    // other connections have had their turn, and by then the reply is often
                    // there: the kept readiness reads it without waiting for the reactor,
                    // which the runtime polls only when it runs out of tasks or every few
                    // dozen of them. Clearing it here (bakeoff pgbench -S -M prepared -c 1024
                    // -j 2, 10 pairs against this build, 2026-11-27) took system calls per
                    // transaction from 2.52 to 2.23 and tps to 0.577x (0.559-0.596): each
                    // reply then waits for the reactor. So did tokio's `yield_now` before a
                    // response's first read, which lets the reactor look first (2.48 to 2.20,
                    // tps 0.596x, 0.587-0.606). Left kept.
                    return r;
                }
                Err(_would_block) => continue,
            }
        }
    }

    pub async fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        let s = self.fd.get_mut();
        while !buf.is_empty() {
            match s.write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    buf = &buf[n..];
                    self.sent = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => writable(s.as_fd()).await?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Pending once, having woken its own task: a current-thread runtime then puts the task at the
/// back of its queue of ready tasks and runs those first, without polling the reactor.
struct BackOfTheQueue(bool);

impl Future for BackOfTheQueue {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
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

/// Wait until the socket takes more bytes. Rare (a statement is far smaller than the socket
/// buffer; LOAD DATA's chunks can fill it), so a duplicate descriptor is registered for
/// writability for this one wait and deregistered before it is closed. Registering reports
/// the current state, so space freed before the registration is not missed.
async fn writable(fd: BorrowedFd<'_>) -> io::Result<()> {
    let dup = register(fd.try_clone_to_owned()?, Interest::WRITABLE)?;
    drop(dup.writable().await?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    /// Poll `fut` once with this task's waker: Some(output) when it was ready.
    async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Option<F::Output> {
        std::future::poll_fn(|cx| match Pin::new(&mut *fut).poll(cx) {
            Poll::Ready(v) => Poll::Ready(Some(v)),
            Poll::Pending => Poll::Ready(None),
        })
        .await
    }

    /// A connection whose first reply has been read (so its readiness is kept) and whose
    /// second reply is already in the socket.
    async fn with_reply_waiting() -> (Reactor<UnixStream>, UnixStream) {
        let (ours, mut server) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let mut r = Reactor::new(ours).unwrap();
        server.write_all(b"one").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(r.read(&mut buf).await.unwrap(), 3);
        server.write_all(b"two").unwrap();
        (r, server)
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap()
    }

    #[test]
    fn a_read_after_a_write_lets_the_others_go_first_even_with_its_reply_in() {
        current_thread().block_on(async {
            let (mut r, mut server) = with_reply_waiting().await;
            r.write_all(b"q").await.unwrap();
            let mut buf = [0u8; 8];
            let mut read = Box::pin(r.read(&mut buf));
            assert!(poll_once(&mut read).await.is_none(), "went first");
            assert_eq!(poll_once(&mut read).await.unwrap().unwrap(), 3);
            drop(read);
            let mut q = [0u8; 1];
            std::io::Read::read_exact(&mut server, &mut q).unwrap();
            assert_eq!(&q, b"q");
        });
    }

    #[test]
    fn a_read_with_no_write_before_it_takes_its_reply_at_once() {
        current_thread().block_on(async {
            let (mut r, _server) = with_reply_waiting().await;
            let mut buf = [0u8; 8];
            let mut read = Box::pin(r.read(&mut buf));
            assert_eq!(poll_once(&mut read).await.unwrap().unwrap(), 3);
        });
    }

    #[test]
    fn the_task_that_stepped_back_runs_after_the_one_already_ready() {
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let local = tokio::task::LocalSet::new();
        let (a, b) = (order.clone(), order.clone());
        local.spawn_local(async move {
            let (mut r, _server) = with_reply_waiting().await;
            r.write_all(b"q").await.unwrap();
            a.borrow_mut().push("write");
            tokio::task::spawn_local(async move { b.borrow_mut().push("other") });
            let mut buf = [0u8; 8];
            r.read(&mut buf).await.unwrap();
            a.borrow_mut().push("read");
        });
        current_thread().block_on(local);
        assert_eq!(*order.borrow(), ["write", "other", "read"]);
    }
}
