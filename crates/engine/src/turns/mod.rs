//! Taking turns: several servers measured against each other inside one span of time.
//!
//! On a shared cloud machine the CPUs change speed by up to 2x in spells of a few seconds, so
//! two runs a few seconds apart differ by 15-40% and a ratio of such runs carries all of it.
//! Here every server's connections are opened up front, and the load drives one server's set
//! at a time in short slices (a few tenths of a second), the servers' order shuffled every
//! other round and reversed in the round after (each slice records its place and the server
//! before it): each server sees the machine's slow and fast spells alike, and the ratio of two
//! servers' throughput in one round carries only what changed within a slice.
//!
//! A switch costs no connect: the coordinator stops new events on the server whose slice
//! ends, waits until none is in flight (so the next server's slice is not shared with the
//! last one's tail), tells the observer (which may freeze the idle servers), lets the next
//! one run for `settle` unmeasured (its connections wake, its caches refill), then measures
//! its slice. Each slice is recorded apart, per server, with the server sampled over exactly
//! that slice.
//!
//! What it must not do: print or exit (the observer is told of every switch and slice).

mod shared;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bakeoff_telemetry::{Sampler, Telemetry, Window, WindowSummary};
use bakeoff_workload::{Rng, Source};
use serde::Serialize;
use tokio::sync::watch;

use crate::{EngineError, RunSpec, RunStatus};
use shared::{TurnShared, NOBODY, STOP};
use worker::TurnWorker;

/// How servers take turns.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    /// Per server: `connections` (sysbench's --threads) on each, `client_threads` OS threads
    /// driving all of them; the seed, percentile, ignored errors and scheduling as in a run.
    /// Its `time`, `warmup`, `rate` and event limits do not apply.
    pub run: RunSpec,
    /// One server's measured turn.
    pub slice: Duration,
    /// Unmeasured time after each switch, before the slice is measured.
    pub settle: Duration,
    /// Unmeasured turns before the first measured round, per server (warms caches).
    pub warmup: Duration,
    /// Measured time per server: rounds of one slice each.
    pub measured: Duration,
}

impl TurnSpec {
    /// Measured rounds: every server one slice per round.
    pub fn rounds(&self) -> u32 {
        rounds_in(self.measured, self.slice)
    }
}

fn rounds_in(time: Duration, slice: Duration) -> u32 {
    let slice = slice.as_secs_f64().max(1e-3);
    (time.as_secs_f64() / slice).ceil() as u32
}

/// Told of each switch and each measured slice.
pub trait TurnObserver {
    /// Server `to` takes the load next; nothing is in flight on any server now.
    fn on_switch(&mut self, _to: usize) {}
    /// A measured slice of server `server` closed.
    fn on_slice(&mut self, _server: usize, _slice: &Slice) {}
    /// The turns are over (or never began): nothing is in flight that can still end, and the
    /// connections are about to close, which needs every server running.
    fn on_end(&mut self) {}
}

/// Nothing to tell.
pub struct NoTurns;
impl TurnObserver for NoTurns {}

/// One server's measured slice.
#[derive(Debug, Clone, Serialize)]
pub struct Slice {
    /// The round (from 0) and the slice's end, in seconds since the first measured round began.
    pub round: u32,
    pub t: f64,
    /// Its place in its round (from 0), and the server whose turn came just before it (itself
    /// where a round's order reversed the last one's and it ended that one): what the slice
    /// may carry over from, for the report to weigh.
    pub position: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<usize>,
    pub seconds: f64,
    #[serde(flatten)]
    pub window: WindowSummary,
    /// The server, host and client over this slice, when the server was sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// Nonempty buckets of the slice's latency histogram (ms, events).
    pub histogram: Vec<(f64, u64)>,
}

/// What one server did over all its measured slices.
#[derive(Debug, Clone, Serialize)]
pub struct ServerTurns {
    pub slices: Vec<Slice>,
    /// Every measured slice merged: the events over the slices' summed seconds.
    pub total: WindowSummary,
    pub seconds: f64,
    /// The server over its slices together (None where it was not sampled).
    pub telemetry: Option<Telemetry>,
    /// The settle its turns ended with (the spec's, or longer for slow events).
    pub settle_ms: f64,
    /// Why its load failed, if it did (its slices stop there; the other servers went on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    #[serde(skip)]
    pub window: Window,
}

impl ServerTurns {
    /// No slice yet.
    fn empty(percentile: f64) -> ServerTurns {
        ServerTurns {
            slices: Vec::new(),
            total: Window::default().summary(0.0, percentile),
            seconds: 0.0,
            telemetry: None,
            settle_ms: 0.0,
            failure: None,
            window: Window::default(),
        }
    }

    /// The geometric mean of the slices' events per second (a slice with no event counts as
    /// half an event): kept beside the pooled figure (`total.tps`), which the study stores. A
    /// spell that slows a round scales every server's slice in it alike and cancels in the
    /// ratio of pooled figures as in the mean of log ratios; the pooled one is not pulled down
    /// by a single stalled slice.
    pub fn round_tps(&self) -> f64 {
        geometric(
            self.slices
                .iter()
                .map(|s| (s.window.events as f64, s.seconds)),
        )
    }

    /// Statements per second, the same way.
    pub fn round_qps(&self) -> f64 {
        geometric(
            self.slices
                .iter()
                .map(|s| (s.window.queries as f64, s.seconds)),
        )
    }
}

fn geometric(per: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut sum, mut n) = (0.0, 0u32);
    for (count, secs) in per {
        sum += (count.max(0.5) / secs.max(1e-9)).ln();
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    (sum / f64::from(n)).exp()
}

/// How a turn-taking run ended, and each server's slices.
#[derive(Debug, Clone, Serialize)]
pub struct TurnsResult {
    pub status: RunStatus,
    /// Connecting every server's connections, before the first turn.
    pub setup_seconds: f64,
    /// From the first turn (warmup included) to the end.
    pub elapsed_seconds: f64,
    pub rounds: u32,
    /// Mean time a switch waited for the last server's events in flight, in milliseconds.
    pub drain_ms: f64,
    pub servers: Vec<ServerTurns>,
}

/// Every thread's recorder for one server's events.
type Recorders = Vec<Arc<Mutex<Window>>>;

/// Run `sources` (one per server) in turns as `spec` says, each server sampled by its
/// `samplers` entry over each of its slices. `interrupt` (Ctrl-C) ends the run at the next
/// switch, its status `Interrupted`, with the slices measured so far.
pub fn run_turns<S: Source>(
    sources: &[Arc<S>],
    spec: &TurnSpec,
    interrupt: &AtomicBool,
    samplers: &mut [Option<Sampler>],
    obs: &mut dyn TurnObserver,
) -> Result<TurnsResult, EngineError> {
    let spec = &TurnSpec {
        run: match sources.first() {
            Some(s) => crate::as_source_runs(&**s, &spec.run),
            None => spec.run.clone(),
        },
        ..spec.clone()
    };
    crate::files::room_for_clients(&spec.run, sources.len())?;
    let entered = Instant::now();
    let servers = sources.len();
    let idle_poll_ns: Arc<AtomicU64> = Arc::default();
    for s in samplers.iter_mut().flatten() {
        s.discount_client(idle_poll_ns.clone());
    }
    let (turn, _) = watch::channel(NOBODY);
    let shared = Arc::new(TurnShared {
        active: AtomicUsize::new(NOBODY),
        turn,
        in_flight: (0..servers).map(|_| AtomicU64::new(0)).collect(),
        idle_poll_ns,
        stop: AtomicBool::new(false),
        failures: (0..servers).map(|_| Mutex::new(None)).collect(),
        ended: (0..servers).map(|_| AtomicU64::new(0)).collect(),
    });
    let connections = spec.run.connections.max(1);
    let threads = spec.run.client_threads.clamp(1, connections);
    // recorders[server][thread]
    let recorders: Vec<Recorders> = (0..servers)
        .map(|_| (0..threads).map(|_| Arc::default()).collect())
        .collect();
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    for index in 0..threads {
        let w = TurnWorker {
            sources: sources.to_vec(),
            run: spec.run.clone(),
            shared: shared.clone(),
            windows: recorders
                .iter()
                .map(|r| r[index as usize].clone())
                .collect(),
            tids: (index..connections).step_by(threads as usize).collect(),
            slots: crate::worker::connect_slots(threads),
        };
        let ready = ready_tx.clone();
        let h = std::thread::Builder::new()
            .name(format!("bakeoff-turns-{index}"))
            .spawn(move || w.run(ready))
            .map_err(|e| EngineError::Thread(e.to_string()))?;
        handles.push(h);
    }
    drop(ready_tx);
    let mut failure = None;
    for _ in 0..threads {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                shared.stop.store(true, Ordering::SeqCst);
                failure.get_or_insert(e);
            }
            Err(_) => {
                failure.get_or_insert(EngineError::Thread(
                    "a client thread exited while connecting".into(),
                ));
            }
        }
    }
    if let Some(e) = failure {
        obs.on_end();
        shared.set_turn(STOP);
        // Every server failed on its own (its connections refused): each says its reason.
        let each: Option<Vec<String>> = (0..servers).map(|i| shared.failure(i)).collect();
        return match each {
            Some(reasons) => Ok(TurnsResult {
                status: RunStatus::Failed(reasons.join("\n")),
                setup_seconds: entered.elapsed().as_secs_f64(),
                elapsed_seconds: 0.0,
                rounds: 0,
                drain_ms: 0.0,
                servers: reasons
                    .into_iter()
                    .map(|r| ServerTurns {
                        failure: Some(r),
                        ..ServerTurns::empty(spec.run.percentile)
                    })
                    .collect(),
            }),
            None => Err(e),
        };
    }
    let setup_seconds = entered.elapsed().as_secs_f64();
    let mut c = Coordinator {
        spec,
        shared: &shared,
        recorders: &recorders,
        interrupt,
        rng: Rng::seeded(spec.run.seed ^ 0x74_7572_6e73),
        drains: (Duration::ZERO, 0),
        current: None,
        previous: None,
        settle: vec![spec.settle; servers],
    };
    let began = Instant::now();
    let result = c.rounds(samplers, obs);
    obs.on_end();
    shared.set_turn(STOP);
    join_within(handles, spec.run.grace);
    let (mut servers_out, interrupted) = result;
    for (i, s) in servers_out.iter_mut().enumerate() {
        s.failure = shared.failure(i);
    }
    let status = match (servers_out.iter().all(|s| s.failure.is_some()), interrupted) {
        (true, _) => RunStatus::Failed(
            servers_out
                .iter()
                .filter_map(|s| s.failure.clone())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        (false, true) => RunStatus::Interrupted,
        (false, false) => RunStatus::Completed,
    };
    let (drained, switches) = c.drains;
    Ok(TurnsResult {
        status,
        setup_seconds,
        elapsed_seconds: began.elapsed().as_secs_f64(),
        rounds: servers_out
            .iter()
            .map(|s| s.slices.len() as u32)
            .max()
            .unwrap_or(0),
        drain_ms: drained.as_secs_f64() * 1e3 / f64::from(switches.max(1)),
        servers: servers_out,
    })
}

/// Wait for the client threads to end, at most `grace` (a thread stuck on a server that
/// stopped answering is abandoned; it holds only sockets and ends with the process).
fn join_within(handles: Vec<JoinHandle<()>>, grace: Duration) {
    let until = Instant::now() + grace;
    for h in handles {
        while !h.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        if h.is_finished() {
            let _ = h.join();
        }
    }
}

struct Coordinator<'a> {
    spec: &'a TurnSpec,
    shared: &'a TurnShared,
    recorders: &'a [Recorders],
    interrupt: &'a AtomicBool,
    rng: Rng,
    /// Time spent waiting for in-flight events at switches, and how many switches.
    drains: (Duration, u32),
    /// The server whose turn it is.
    current: Option<usize>,
    /// The server whose turn came last (kept through a quiesce).
    previous: Option<usize>,
    /// Each server's settle: the spec's, or three of its mean event times when longer (see
    /// `settle_after`).
    settle: Vec<Duration>,
}

impl Coordinator<'_> {
    /// The warmup's rounds, then the measured ones; each server's slices, and whether Ctrl-C
    /// ended it.
    fn rounds(
        &mut self,
        samplers: &mut [Option<Sampler>],
        obs: &mut dyn TurnObserver,
    ) -> (Vec<ServerTurns>, bool) {
        let n = self.recorders.len();
        let mut out: Vec<ServerTurns> = (0..n)
            .map(|_| ServerTurns::empty(self.spec.run.percentile))
            .collect();
        let warm_rounds = match self.spec.warmup.is_zero() {
            true => 0,
            false => rounds_in(self.spec.warmup, self.spec.slice),
        };
        let mut measuring_since: Option<Instant> = None;
        let mut order: Vec<usize> = Vec::new();
        for round in 0..warm_rounds + self.spec.rounds() {
            let measured = round >= warm_rounds;
            let since = *measuring_since.get_or_insert_with(Instant::now);
            // Pairs of rounds counted from the first measured one.
            let pair_at = if measured { round - warm_rounds } else { round };
            order = round_order(&mut self.rng, n, pair_at, order);
            for (position, &server) in order.iter().enumerate() {
                if self.over() {
                    return (self.finish(out), self.interrupt.load(Ordering::Relaxed));
                }
                if self.shared.failure(server).is_some() {
                    continue;
                }
                let after = self.previous;
                self.switch_to(server, obs);
                if !measured {
                    self.warm(server);
                    continue;
                }
                let (mut slice, window) = self.slice(server, samplers[server].as_mut());
                slice.round = round - warm_rounds;
                slice.t = since.elapsed().as_secs_f64();
                (slice.position, slice.after) = (position as u32, after);
                obs.on_slice(server, &slice);
                out[server].window.add(&window);
                out[server].slices.push(slice);
            }
            if !measured {
                measuring_since = None;
            }
        }
        self.quiesce();
        (self.finish(out), false)
    }

    fn over(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed) || self.shared.stop.load(Ordering::Relaxed)
    }

    /// End the current turn (nothing left in flight), then give the load to `server`.
    fn switch_to(&mut self, server: usize, obs: &mut dyn TurnObserver) {
        self.quiesce();
        obs.on_switch(server);
        self.current = Some(server);
        self.previous = Some(server);
        self.shared.set_turn(server);
    }

    /// No server's turn; wait for the events in flight to end. A server whose events do not
    /// end within the run's grace has stopped answering: it fails, and gets no more turns.
    fn quiesce(&mut self) {
        let began = Instant::now();
        self.shared.set_turn(NOBODY);
        let Some(last) = self.current.take() else {
            return;
        };
        let in_flight = &self.shared.in_flight[last];
        while in_flight.load(Ordering::SeqCst) > 0 && !self.shared.stop.load(Ordering::Relaxed) {
            if began.elapsed() >= self.spec.run.grace {
                let why = format!(
                    "FATAL: {} event(s) still unanswered {} s after its turn ended",
                    in_flight.load(Ordering::SeqCst),
                    self.spec.run.grace.as_secs()
                );
                self.shared.fail(last, why);
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        self.drains.0 += began.elapsed();
        self.drains.1 += 1;
    }

    /// An unmeasured turn of `server` (warming it), which also learns its settle.
    fn warm(&mut self, server: usize) {
        std::thread::sleep(self.settle[server] + self.spec.slice);
        let mut w = Window::default();
        drain(&self.recorders[server], &mut w);
        self.settle_after(server, &w);
    }

    /// After a turn of `server` recorded `w`: its settle is the spec's, or three of its mean
    /// event times when longer (at most a slice). Every connection starts its first event at
    /// the switch, together; counting from before they drift apart would count a slow
    /// server's first, synchronised events short, and a fast one's not.
    fn settle_after(&mut self, server: usize, w: &Window) {
        if w.events == 0 {
            // Not one event ended in a whole turn: they are slower than a slice.
            self.settle[server] = self.spec.slice;
            return;
        }
        let mean = w.summary(1.0, self.spec.run.percentile).latency.avg_ms / 1e3;
        let three = Duration::from_secs_f64((3.0 * mean).clamp(0.0, self.spec.slice.as_secs_f64()));
        self.settle[server] = self.spec.settle.max(three);
    }

    /// Settle unmeasured, then measure one slice of `server` (its turn has begun).
    fn slice(&mut self, server: usize, sampler: Option<&mut Sampler>) -> (Slice, Window) {
        std::thread::sleep(self.settle[server]);
        let recorders = &self.recorders[server];
        drain(recorders, &mut Window::default());
        let mut sampler = sampler;
        if let Some(s) = sampler.as_deref_mut() {
            s.begin();
        }
        drain(recorders, &mut Window::default());
        let start = Instant::now();
        std::thread::sleep(self.spec.slice);
        let mut w = Window::default();
        drain(recorders, &mut w);
        let seconds = start.elapsed().as_secs_f64();
        let window = w.summary(seconds, self.spec.run.percentile);
        let slice = Slice {
            round: 0,
            t: 0.0,
            position: 0,
            after: None,
            seconds,
            telemetry: sampler.and_then(|s| s.tick(seconds, window.events)),
            histogram: w.sb_histogram().buckets().collect(),
            window,
        };
        self.settle_after(server, &w);
        (slice, w)
    }

    /// Each server's totals from its slices.
    fn finish(&self, mut out: Vec<ServerTurns>) -> Vec<ServerTurns> {
        for (server, turns) in out.iter_mut().enumerate() {
            drain(&self.recorders[server], &mut Window::default());
            turns.settle_ms = self.settle[server].as_secs_f64() * 1e3;
            turns.seconds = turns.slices.iter().map(|s| s.seconds).sum();
            turns.total = turns
                .window
                .summary(turns.seconds, self.spec.run.percentile);
            let parts: Option<Vec<Telemetry>> =
                turns.slices.iter().map(|s| s.telemetry.clone()).collect();
            turns.telemetry = parts.and_then(|p| Telemetry::merged(&p, turns.total.events));
        }
        out
    }
}

/// The servers' order for round `round`: shuffled (seeded) in even rounds, the last
/// round's reversed in odd ones, so that over each pair every server is as often early
/// as late in a round and follows each other server as often as it precedes it (a
/// carry-over from the last turn then weighs on every server alike, as far as it is the
/// same for all).
fn round_order(rng: &mut Rng, n: usize, round: u32, last: Vec<usize>) -> Vec<usize> {
    if round % 2 == 1 && last.len() == n {
        let mut order = last;
        order.reverse();
        return order;
    }
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

fn drain(recorders: &Recorders, into: &mut Window) {
    for r in recorders {
        if let Ok(mut r) = r.lock() {
            into.add(&r);
            r.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each pair of rounds: a shuffle, then that order reversed; over many pairs each server
    /// follows each other one as often as the other way round.
    #[test]
    fn rounds_go_in_pairs_an_order_then_its_reverse() {
        let mut rng = Rng::seeded(7);
        let (n, mut last) = (3, Vec::new());
        let mut follows = [[0u32; 3]; 3];
        let mut prev: Option<usize> = None;
        for round in 0..2000 {
            let order = round_order(&mut rng, n, round, last.clone());
            if round % 2 == 1 {
                assert_eq!(order, last.iter().rev().copied().collect::<Vec<_>>());
            }
            for &s in &order {
                if let Some(p) = prev {
                    follows[s][p] += 1;
                }
                prev = Some(s);
            }
            last = order;
        }
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    let (x, y) = (f64::from(follows[a][b]), f64::from(follows[b][a]));
                    assert!(
                        (x - y).abs() / (x + y) < 0.1,
                        "{a} after {b} {x}, the other way {y}"
                    );
                }
            }
        }
    }
}
