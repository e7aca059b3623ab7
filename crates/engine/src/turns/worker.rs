//! One client thread of a turn-taking run: its share of every server's connections, each
//! waiting for its server's turn, then running events until the turn passes.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bakeoff_telemetry::Window;
use bakeoff_workload::{EventError, Events, Source, StmtCounts};

use super::shared::{InFlight, TurnShared, STOP};
use crate::{ClientWait, EngineError, RunSpec};

pub(crate) struct TurnWorker<S: Source> {
    pub sources: Vec<Arc<S>>,
    pub run: RunSpec,
    pub shared: Arc<TurnShared>,
    /// This thread's recorder for each server.
    pub windows: Vec<Arc<Mutex<Window>>>,
    /// The connection ids this thread runs on every server.
    pub tids: Vec<u32>,
    /// Connects this thread keeps in flight.
    pub slots: usize,
}

impl<S: Source> TurnWorker<S> {
    pub fn run(self, ready: mpsc::Sender<Result<(), EngineError>>) {
        if self.run.batch_scheduling && self.tids.len() > 1 {
            crate::sched::batch_this_thread();
        }
        let Some(rt) = crate::worker::thread_runtime(&ready) else {
            return;
        };
        tokio::task::LocalSet::new().block_on(&rt, async move {
            let sessions = match self.open_all().await {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            let _ = ready.send(Ok(()));
            let this = Rc::new(self);
            let tasks: Vec<_> = sessions
                .into_iter()
                .map(|(server, s)| tokio::task::spawn_local(connection(this.clone(), server, s)))
                .collect();
            // Polling (a client on CPUs of its own) keeps the sockets polled between turns
            // too: the first responses of a turn find no sleeper to wake either.
            let poll = this.run.client_wait == ClientWait::Poll && this.tids.len() > 1;
            crate::worker::run_to_end(tasks, poll, this.shared.idle_poll_ns.clone()).await;
        });
    }

    /// Every server's sessions for this thread's connection ids, opened concurrently (at
    /// most `slots` at once), each with the seed it would have in a run of its own. A server
    /// whose connection cannot be opened fails alone (it gets no turns, its runs say why);
    /// the run fails only when no server is left.
    async fn open_all(&self) -> Result<Vec<(usize, S::Session)>, EngineError> {
        let gate = Rc::new(tokio::sync::Semaphore::new(self.slots));
        let mut opens = Vec::new();
        for (server, source) in self.sources.iter().enumerate() {
            for &tid in &self.tids {
                let (source, gate) = (source.clone(), gate.clone());
                // A script's opens wait on no gate (see `Worker::open_all`).
                let side_by_side = source.opens_side_by_side();
                let seed = self
                    .run
                    .seed
                    .wrapping_mul(0x9e37_79b9)
                    .wrapping_add(u64::from(tid));
                opens.push(tokio::task::spawn_local(async move {
                    let _slot = match side_by_side {
                        true => None,
                        false => Some(gate.acquire().await),
                    };
                    (server, tid, source.open(tid, seed, false).await)
                }));
            }
        }
        let mut sessions = Vec::with_capacity(opens.len());
        let mut first_error = None;
        for o in opens {
            match o.await {
                Ok((server, _, Ok(s))) => sessions.push((server, s)),
                Ok((server, tid, Err(e))) => {
                    let hint = crate::connect_hint(&e);
                    self.shared.fail(
                        server,
                        format!("FATAL: connection {tid} could not be opened: {e}{hint}"),
                    );
                    first_error.get_or_insert(EngineError::Connect {
                        tid,
                        reason: format!("server {}: {e}", server + 1),
                        opened: sessions.len() as u32,
                        wanted: self.run.connections * self.sources.len() as u32,
                        hint,
                        also: Vec::new(),
                    });
                }
                Err(e) => return Err(EngineError::Thread(e.to_string())),
            }
        }
        match first_error {
            Some(e) if self.shared.stop.load(Ordering::SeqCst) => Err(e),
            _ => Ok(sessions
                .into_iter()
                .filter(|(server, _)| self.shared.failure(*server).is_none())
                .collect()),
        }
    }
}

/// One connection: wait for its server's turn, run events while it lasts, again until the
/// run stops; then end the session as a run's end would.
async fn connection<S: Source>(w: Rc<TurnWorker<S>>, server: usize, mut s: S::Session) {
    let shared = &w.shared;
    let mut turn = shared.turn.subscribe();
    loop {
        match turn.wait_for(|&who| who == server || who == STOP).await {
            Ok(who) if *who == STOP => break,
            Ok(_) => {}
            Err(_) => break,
        }
        // In flight is counted before the turn is looked at, so a coordinator that ends the
        // turn and then sees nothing in flight knows no event of this server can start.
        loop {
            let flight = InFlight::enter(shared, server);
            if shared.active.load(Ordering::SeqCst) != server {
                break;
            }
            let began = Instant::now();
            let mut counts = StmtCounts::default();
            let outcome = event(&w, server, &mut s, &mut counts).await;
            if let Ok(mut win) = w.windows[server].lock() {
                crate::worker::record_counts(&mut win, &counts);
                if outcome == Outcome::Done {
                    let latency = began.elapsed().as_nanos() as u64;
                    win.record_event(latency);
                    crate::worker::record_class(&mut win, &counts, latency);
                }
            }
            match outcome {
                Outcome::Done => drop(flight),
                Outcome::Ended => {
                    // The connection stops, as it does where one server runs at a time,
                    // its thread_done within its server's turn (still in flight).
                    let mut c = StmtCounts::default();
                    if let Err(e) = s.finish(&mut c).await {
                        shared.fail(server, format!("FATAL: {e}"));
                    }
                    drop(flight);
                    let gone = shared.ended[server].fetch_add(1, Ordering::SeqCst) + 1;
                    if gone >= u64::from(w.run.connections.max(1)) {
                        // Turns of nothing would read as a server that did no work.
                        shared.fail(server, "every connection's events ended (the script's event() returned a value): nothing was left to measure on this server".to_string());
                    }
                    return;
                }
                Outcome::Gone => return,
            }
        }
    }
    let mut c = StmtCounts::default();
    if let Err(e) = s.finish(&mut c).await {
        shared.fail(server, format!("FATAL: {e}"));
    }
}

/// How an event of a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Done,
    /// The source ended this connection's events (a script's event() returned a value).
    Ended,
    /// It could not be done: the run is failed, or stopping.
    Gone,
}

/// How long a lost connection is tried again before the run fails.
const RECONNECT_FOR: Duration = Duration::from_secs(3);

/// One event to success: ignorable errors restart it, a lost connection is opened again
/// (with backoff) while the run lasts.
async fn event<S: Source>(
    w: &TurnWorker<S>,
    server: usize,
    s: &mut S::Session,
    counts: &mut StmtCounts,
) -> Outcome {
    let mut backoff = Duration::from_millis(1);
    loop {
        let err = match s.event(counts).await {
            Ok(()) => return Outcome::Done,
            Err(EventError::Ended) => return Outcome::Ended,
            Err(e) => e,
        };
        if w.shared.stop.load(Ordering::Relaxed) || w.shared.failure(server).is_some() {
            return Outcome::Gone;
        }
        if err.is_connection_lost() {
            counts.reconnects += 1;
            // A server that stays away ends the run: its turns would only wait on it.
            let lost = Instant::now();
            while let Err(e) = s.reconnect().await {
                if w.shared.stop.load(Ordering::Relaxed) {
                    return Outcome::Gone;
                }
                if lost.elapsed() > RECONNECT_FOR {
                    let why = format!(
                        "FATAL: the connection was lost and not opened again within {} s: {e}",
                        RECONNECT_FOR.as_secs()
                    );
                    w.shared.fail(server, why);
                    return Outcome::Gone;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            continue;
        }
        match &err {
            EventError::Restart => {}
            EventError::Server { error, .. } if w.run.ignore_errors.covers(error) => {
                counts.errors += 1;
                counts.error_code = crate::error_key(error);
            }
            _ => {
                w.shared.fail(server, format!("FATAL: {err}"));
                return Outcome::Gone;
            }
        }
    }
}
