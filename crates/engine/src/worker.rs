//! One client thread: a single-threaded runtime driving its share of the connections.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bakeoff_telemetry::Window;
use bakeoff_workload::{EventError, Events, Pace, Source, StmtCounts};
use tokio::sync::watch;

use crate::pacing::{Arrival, Queue};
use crate::shared::Shared;
use crate::terminals::Pacer;
use crate::{ClientWait, ConnTotals, EngineError, RunSpec};

/// What one client thread recorded since the coordinator last looked, and per-connection totals.
pub(crate) struct Recorder {
    pub window: Window,
    pub conns: Vec<ConnTotals>,
}

/// Generic over the workload's source, so each event is a direct call (no dispatch on the
/// hot path).
pub(crate) struct Worker<S: Source> {
    pub ctx: Arc<S>,
    pub spec: Arc<RunSpec>,
    pub shared: Arc<Shared>,
    pub rec: Arc<Mutex<Recorder>>,
    /// Where this thread's connections start in its recorder's `conns` (threads may share).
    pub conn_base: usize,
    pub tids: Vec<u32>,
    pub index: u32,
    /// Connects in flight from this thread, opens and reconnects alike (see `connect_slots`).
    pub gate: Arc<tokio::sync::Semaphore>,
}

/// Connects (with their handshake and statement preparation) one client thread keeps in
/// flight. Each one in flight holds at most one place in the server's listen queue, so the
/// threads together hold at most `CONNECTS_IN_FLIGHT`: under MySQL 5.5's default back_log of
/// 50, and a storm of a thousand connections never overflows the queue in the first place
/// (what overflows anyway is retried by the driver).
pub(crate) const CONNECTS_IN_FLIGHT: u32 = 32;

pub(crate) fn connect_slots(client_threads: u32) -> usize {
    (CONNECTS_IN_FLIGHT / client_threads.max(1)).max(1) as usize
}

impl<S: Source> Worker<S> {
    pub fn run(
        self,
        ready: mpsc::Sender<Result<(), EngineError>>,
        mut start: watch::Receiver<Option<Instant>>,
    ) {
        // Only threads that multiplex: a thread with one connection has no responses to batch,
        // and measured slower under SCHED_BATCH (92k vs 105k qps at 2 connections, 2 CPUs).
        if self.spec.batch_scheduling && !self.blocking_io() {
            // Best effort: a kernel that refuses leaves the default policy, which only costs speed.
            crate::sched::batch_this_thread();
        }
        let Some(rt) = thread_runtime(&ready) else {
            return;
        };
        tokio::task::LocalSet::new().block_on(&rt, async move {
            let sessions = match self.open_sessions().await {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            let _ = ready.send(Ok(()));
            let Ok(started) = start
                .wait_for(|s| s.is_some())
                .await
                .map(|s| s.unwrap_or_else(Instant::now))
            else {
                return; // coordinator gave up before the start
            };
            let pacer = match self.pacer() {
                Ok(p) => p.map(Rc::new),
                Err(e) => {
                    self.shared.fail(e);
                    None
                }
            };
            let this = Rc::new(self);
            let queue = Rc::new(Queue::default());
            if let Some(rate) = this.spec.rate {
                let (w, q) = (this.clone(), queue.clone());
                tokio::task::spawn_local(async move {
                    crate::pacing::generate(&w.spec, &w.shared, w.index, &q, rate, started).await
                });
            }
            if let Some(p) = &pacer {
                let (p, q, w) = (p.clone(), queue.clone(), this.clone());
                tokio::task::spawn_local(async move { p.run(&q, &w.shared, started).await });
            }
            let tasks: Vec<_> = sessions
                .into_iter()
                .enumerate()
                .map(|(i, s)| {
                    let (w, q, p) = (this.clone(), queue.clone(), pacer.clone());
                    tokio::task::spawn_local(connection(w, q, p, s, i))
                })
                .collect();
            let poll = this.spec.client_wait == ClientWait::Poll && !this.blocking_io();
            run_to_end(tasks, poll, this.shared.idle_poll_ns.clone()).await;
        });
    }

    /// Connect and prepare every session of this thread concurrently (sysbench's thread_init).
    /// A thread with one connection in closed loop has nothing to multiplex: blocking socket
    /// I/O saves the epoll round per statement.
    fn blocking_io(&self) -> bool {
        self.tids.len() == 1 && !self.open_loop()
    }

    /// Whether events wait in a queue for a connection (arrivals or terminals' orders),
    /// rather than each connection starting its next as its last ends.
    fn open_loop(&self) -> bool {
        self.spec.rate.is_some() || self.ctx.paced()
    }

    /// This thread's share of the paced terminals: those its connections serve (each
    /// connection its own slice of the run's), so a thread's terminals follow its
    /// connections, on one host as on several. Err when the workload has no terminals.
    fn pacer(&self) -> Result<Option<Pacer>, String> {
        if !self.ctx.paced() {
            return Ok(None);
        }
        let ids = self.tids.iter().flat_map(|&t| self.ctx.terminals(t, 1));
        let seed = |id: u32| {
            (self.spec.seed ^ 0x7e41_1a15)
                .wrapping_mul(0x9e37_79b9)
                .wrapping_add(u64::from(id))
        };
        Pacer::new(ids, |id| self.ctx.terminal(id, seed(id)))
            .map(Some)
            .ok_or_else(|| "FATAL: the workload made no paced terminals".to_string())
    }

    async fn open_sessions(&self) -> Result<Vec<S::Session>, EngineError> {
        let cpu_before = crate::connect::ConnectMeter::thread_cpu_ns();
        let opened = self.open_all().await;
        let cpu = crate::connect::ConnectMeter::thread_cpu_ns().saturating_sub(cpu_before);
        self.shared.connects.add_cpu(cpu);
        opened
    }

    async fn open_all(&self) -> Result<Vec<S::Session>, EngineError> {
        let blocking = self.blocking_io();
        let every = self.ctx.opens_every_connection();
        let side_by_side = self.ctx.opens_side_by_side();
        let opens: Vec<_> = self
            .tids
            .iter()
            .map(|&tid| {
                let ctx = self.ctx.clone();
                let gate = self.gate.clone();
                let shared = self.shared.clone();
                let seed = self
                    .spec
                    .seed
                    .wrapping_mul(0x9e37_79b9)
                    .wrapping_add(tid as u64);
                tokio::task::spawn_local(async move {
                    // A script's opens wait on no gate: its thread_init may wait for the
                    // others', which a gate of a few slots would never let start.
                    let _slot = match side_by_side {
                        true => None,
                        false => Some(gate.acquire().await),
                    };
                    if shared.stop.load(Ordering::Relaxed) && !every {
                        return (tid, None);
                    }
                    let began = Instant::now();
                    let s = ctx.open(tid, seed, blocking).await;
                    if s.is_ok() {
                        shared.connects.add_open(began.elapsed());
                        shared.connected.fetch_add(1, Ordering::Relaxed);
                    }
                    (tid, Some(s))
                })
            })
            .collect();
        let mut sessions = Vec::with_capacity(opens.len());
        let mut failed = None;
        let mut also = Vec::new();
        for o in opens {
            match o.await {
                Ok((_, Some(Ok(s)))) => sessions.push(s),
                Ok((_, None)) => {}
                Ok((tid, Some(Err(e)))) => {
                    // Stop the other threads' opens too: the run cannot start.
                    self.shared.stop.store(true, Ordering::SeqCst);
                    match failed {
                        None => failed = Some((tid, e.to_string(), crate::connect_hint(&e))),
                        Some(_) => also.push(e.to_string()),
                    }
                }
                Err(e) => return Err(EngineError::Thread(e.to_string())),
            }
        }
        if let Some((tid, reason, hint)) = failed {
            return Err(EngineError::Connect {
                tid,
                reason,
                opened: self.shared.connected.load(Ordering::Relaxed),
                wanted: self.spec.connections,
                hint,
                also,
            });
        }
        if self.shared.stop.load(Ordering::Relaxed) {
            return Err(EngineError::Stopped);
        }
        Ok(sessions)
    }
}

/// A client thread's runtime (one thread, its tasks local to it); None when it cannot be
/// built, which is said on `ready`.
pub(crate) fn thread_runtime(
    ready: &mpsc::Sender<Result<(), EngineError>>,
) -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            let _ = ready.send(Err(EngineError::Thread(e.to_string())));
            None
        }
    }
}

/// Wait for a thread's connection tasks to end, its sockets polled meanwhile when `poll`
/// (see `poll_while`), its idle polling counted into `idle_ns`.
pub(crate) async fn run_to_end(
    tasks: Vec<tokio::task::JoinHandle<()>>,
    poll: bool,
    idle_ns: Arc<AtomicU64>,
) {
    let polling = Rc::new(Cell::new(poll));
    if poll {
        tokio::task::spawn_local(poll_while(polling.clone(), idle_ns));
    }
    for t in tasks {
        let _ = t.await;
    }
    polling.set(false);
}

/// ClientWait::Poll: a task that only yields, so the runtime always has a task ready and
/// polls its sockets (epoll_wait with no timeout) instead of sleeping until a response
/// wakes it: the server's response then finds no sleeper to wake. Rounds in which no socket
/// returned anything are idle polling, added to `idle_poll_ns` (flushed every millisecond or
/// so, to keep the shared counter off the hot path).
async fn poll_while(polling: Rc<Cell<bool>>, idle_ns: Arc<AtomicU64>) {
    let mut reads = bakeoff_driver::reads_on_this_thread();
    let mut last = Instant::now();
    let mut idle = Duration::ZERO;
    while polling.get() {
        tokio::task::yield_now().await;
        let (now, r) = (Instant::now(), bakeoff_driver::reads_on_this_thread());
        if r == reads {
            idle += now - last;
        }
        (reads, last) = (r, now);
        if idle >= Duration::from_millis(1) {
            idle_ns.fetch_add(idle.as_nanos() as u64, Ordering::Relaxed);
            idle = Duration::ZERO;
        }
    }
    idle_ns.fetch_add(idle.as_nanos() as u64, Ordering::Relaxed);
}

/// The next event: intended now (closed loop), or the oldest arrival or order (open loop).
async fn next_start<S: Source>(w: &Worker<S>, queue: &Queue, open: bool) -> Option<Arrival> {
    if !open {
        let now = Instant::now();
        return (!w.shared.over(now)).then_some(Arrival {
            at: now,
            order: None,
        });
    }
    loop {
        let notified = queue.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(t) = queue.q.borrow_mut().pop_front() {
            w.shared.queued.fetch_sub(1, Ordering::Relaxed);
            return Some(t);
        }
        if w.shared.over(Instant::now()) {
            return None;
        }
        // Wake at least every 100 ms to notice the end of the run.
        let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
    }
}

/// One connection's loop. Latency runs from the intended start to the end of the event,
/// restarts after ignorable errors and reconnects included (sysbench keeps the timer running
/// across restarts too). A session with a loop of its own (a script's) runs it in closed loop,
/// with the same bookkeeping.
async fn connection<S: Source>(
    w: Rc<Worker<S>>,
    queue: Rc<Queue>,
    pacer: Option<Rc<Pacer>>,
    mut s: S::Session,
    i: usize,
) {
    w.shared.running.fetch_add(1, Ordering::Relaxed);
    let mut books = Books::new(&w, i);
    // In closed loop a session may run its events itself (a script's loop, compiled with
    // its event); the engine's loop below serves arrivals and terminals.
    let own_loop = match w.open_loop() {
        false => s.run_events(&mut books).await,
        true => None,
    };
    match own_loop {
        Some(Err(e)) => w.shared.fail(format!("FATAL: {e}")),
        Some(Ok(())) => {}
        None => {
            // A thread with connections but no terminals (fewer terminals than connections)
            // has nothing to run: its connections end now rather than wait for the run's.
            let idle = pacer.as_ref().is_some_and(|p| p.len() == 0);
            // Asked once: the event loop below does not ask the source again per event.
            let open = w.open_loop();
            while let Some(next) = match idle {
                true => None,
                false => next_start(&w, &queue, open).await,
            } {
                if !books.begin_at(next.at) {
                    // Its budget is spent (--events): a terminal's order goes back for
                    // another connection, so its terminal is not lost.
                    if next.order.is_some() {
                        queue.q.borrow_mut().push_front(next);
                        w.shared.queued.fetch_add(1, Ordering::Relaxed);
                        queue.notify.notify_one();
                    }
                    break;
                }
                s.intended_start(next.at);
                let terminal = next.order.map(|(t, order)| {
                    s.take_order(order);
                    t
                });
                let mut counts = StmtCounts::default();
                let ok = event_with_restarts(&w, &mut s, &mut counts).await;
                if !ok {
                    books.abandon(&counts);
                    break;
                }
                books.end(&counts);
                if let (Some(t), Some(p)) = (terminal, &pacer) {
                    p.done(t, counts.class, Instant::now());
                }
            }
        }
    }
    let mut c = StmtCounts::default();
    if let Err(e) = s.finish(&mut c).await {
        w.shared.fail(format!("FATAL: {e}"));
    }
    record_statements(&w, c);
    // A connection that ran to the end of --time still counts for the interval ending then
    // (sysbench's last line shows all its threads); one that stopped early does not.
    let time_up = matches!(w.shared.end.get(), Some(Some(end)) if Instant::now() >= *end);
    if !time_up {
        w.shared.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connection's bookkeeping around its events: the budgets (--events, events per
/// connection), the in-flight count, latency and the recorder.
struct Books<'a, S: Source> {
    w: &'a Worker<S>,
    /// The connection's place in this thread's share of the recorder.
    i: usize,
    done: u64,
    intended: Instant,
}

impl<'a, S: Source> Books<'a, S> {
    fn new(w: &'a Worker<S>, i: usize) -> Self {
        Books {
            w,
            i,
            done: 0,
            intended: Instant::now(),
        }
    }

    /// An event intended to start at `intended` begins, if the budgets allow it.
    fn begin_at(&mut self, intended: Instant) -> bool {
        let (w, spec) = (self.w, &self.w.spec);
        if spec.events_per_connection.is_some_and(|n| self.done >= n) {
            return false;
        }
        self.done += 1;
        if let Some(max) = spec.events {
            if w.shared.events_started.fetch_add(1, Ordering::Relaxed) >= max {
                return false;
            }
        }
        w.shared.in_flight.fetch_add(1, Ordering::Relaxed);
        self.intended = intended;
        true
    }
}

impl<S: Source> Pace for Books<'_, S> {
    /// Closed loop: the next event is intended now, unless the run is over.
    fn begin(&mut self) -> bool {
        let now = Instant::now();
        !self.w.shared.over(now) && self.begin_at(now)
    }

    fn end(&mut self, c: &StmtCounts) {
        let latency = self.intended.elapsed().as_nanos() as u64;
        let w = self.w;
        w.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        // One lock per event: the coordinator takes it once per tick, so it is uncontended.
        if let Ok(mut r) = w.rec.lock() {
            record_counts(&mut r.window, c);
            r.window.record_event(latency);
            record_class(&mut r.window, c, latency);
            let conn = &mut r.conns[w.conn_base + self.i];
            conn.events += 1;
            conn.latency_sum_ns += latency;
        }
    }

    fn abandon(&mut self, c: &StmtCounts) {
        self.w.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        record_statements(self.w, *c);
    }

    fn restart(&mut self) -> bool {
        !self.w.shared.stop.load(Ordering::Relaxed)
    }
}

/// Run one event to success. Ignorable server errors restart it with fresh values; a lost
/// connection is re-established (with backoff) and re-prepared, then the event restarts.
/// Returns false when the run must stop (fatal error, or the run ended while reconnecting).
async fn event_with_restarts<S: Source>(
    w: &Worker<S>,
    s: &mut S::Session,
    counts: &mut StmtCounts,
) -> bool {
    loop {
        let result = s.event(counts).await;
        let err = match result {
            Ok(()) => return true,
            Err(e) => e,
        };
        if err.is_connection_lost() {
            if let Ok(mut r) = w.rec.lock() {
                r.window.reconnects += 1;
            }
            if !reconnect(w, s).await {
                return false;
            }
            continue;
        }
        match &err {
            EventError::Ended => return false,
            EventError::Restart => {
                if w.shared.stop.load(Ordering::Relaxed) {
                    return false;
                }
            }
            EventError::Server { error, .. } if w.spec.ignore_errors.covers(error) => {
                if let Ok(mut r) = w.rec.lock() {
                    r.window.record_error(crate::error_key(error));
                }
                if w.shared.stop.load(Ordering::Relaxed) {
                    return false;
                }
            }
            _ => {
                w.shared.fail(format!("FATAL: {err}"));
                return false;
            }
        }
    }
}

async fn reconnect<S: Source>(w: &Worker<S>, s: &mut S::Session) -> bool {
    let mut backoff = Duration::from_millis(1);
    loop {
        if w.shared.over(Instant::now()) {
            return false;
        }
        let slot = w.gate.acquire().await;
        let result = s.reconnect().await;
        drop(slot);
        match result {
            Ok(()) => return true,
            Err(_) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

fn record_statements<S: Source>(w: &Worker<S>, c: StmtCounts) {
    if c != StmtCounts::default() {
        if let Ok(mut r) = w.rec.lock() {
            record_counts(&mut r.window, &c);
        }
    }
}

/// A done event's class, when it has one, with the latency its event was recorded with.
pub(crate) fn record_class(window: &mut bakeoff_telemetry::Window, c: &StmtCounts, latency: u64) {
    if c.class != 0 {
        window.record_class(usize::from(c.class - 1), latency, &c.tally);
    }
}

/// Statements, and the errors and reconnects a source counted itself.
pub(crate) fn record_counts(window: &mut bakeoff_telemetry::Window, c: &StmtCounts) {
    window.record_statements(c.reads, c.writes, c.others);
    if c.errors > 0 {
        window.record_errors(c.error_code, c.errors);
    }
    window.reconnects += c.reconnects;
}
