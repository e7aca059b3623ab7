//! Taking turns, shown where a real server cannot show it: a fake source whose events take a
//! known time and log when they ran, so the test sees every event's span. (Real servers taking
//! turns are run by the study tests, tests/alternation.rs in the study crate.)

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bakeoff_driver::DriverError;
use bakeoff_engine::{run_turns, RunSpec, RunStatus, Slice, TurnObserver, TurnSpec, TurnsResult};
use bakeoff_workload::{EventError, Events, Source, StmtCounts};

/// Every event as (server, start, end).
type Log = Arc<Mutex<Vec<(usize, Instant, Instant)>>>;

/// Events of `latency` each, logged as (server, start, end). `refuse`: its connections
/// cannot be opened; `stall_after`: its events stop answering after that many (a server that
/// hangs, which a real one does not do on cue).
struct Fake {
    server: usize,
    latency: Duration,
    log: Log,
    refuse: bool,
    stall_after: Option<usize>,
    /// Events after which each connection's events end (a script's event() returning).
    end_after: Option<usize>,
}

struct FakeSession {
    server: usize,
    latency: Duration,
    log: Log,
    stall_after: Option<usize>,
    end_after: Option<usize>,
    done: usize,
}

fn fakes(n: usize, latency_ms: u64, log: &Log) -> Vec<Fake> {
    (0..n)
        .map(|server| Fake {
            server,
            latency: Duration::from_millis(latency_ms),
            log: log.clone(),
            refuse: false,
            stall_after: None,
            end_after: None,
        })
        .collect()
}

impl Source for Fake {
    type Session = FakeSession;
    async fn open(
        self: Arc<Self>,
        _tid: u32,
        _seed: u64,
        _blocking: bool,
    ) -> Result<FakeSession, EventError> {
        if self.refuse {
            return Err(EventError::Ended);
        }
        Ok(FakeSession {
            server: self.server,
            latency: self.latency,
            log: self.log.clone(),
            stall_after: self.stall_after,
            end_after: self.end_after,
            done: 0,
        })
    }
}

impl Events for FakeSession {
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let start = Instant::now();
        if self.stall_after.is_some_and(|n| self.done >= n) {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        if self.end_after.is_some_and(|n| self.done >= n) {
            return Err(EventError::Ended);
        }
        self.done += 1;
        tokio::time::sleep(self.latency).await;
        c.reads += 1;
        self.log
            .lock()
            .unwrap()
            .push((self.server, start, Instant::now()));
        Ok(())
    }
    async fn reconnect(&mut self) -> Result<(), DriverError> {
        Ok(())
    }
    async fn finish(self, _c: &mut StmtCounts) -> Result<(), EventError> {
        Ok(())
    }
}

/// Each switch's target, and each slice's server, in order.
#[derive(Default)]
struct Seen {
    switches: Vec<usize>,
    slices: Vec<(usize, u32)>,
}

impl TurnObserver for Seen {
    fn on_switch(&mut self, to: usize) {
        self.switches.push(to);
    }
    fn on_slice(&mut self, server: usize, s: &Slice) {
        self.slices.push((server, s.round));
    }
}

#[test]
fn servers_take_turns_one_at_a_time_in_shuffled_rounds_and_no_event_crosses_a_switch() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sources: Vec<Arc<Fake>> = fakes(3, 2, &log).into_iter().map(Arc::new).collect();
    let spec = TurnSpec {
        run: RunSpec {
            connections: 4,
            client_threads: 2,
            seed: 7,
            ..RunSpec::default()
        },
        slice: Duration::from_millis(40),
        settle: Duration::from_millis(5),
        warmup: Duration::from_millis(40),
        measured: Duration::from_millis(400),
    };
    let mut seen = Seen::default();
    let mut samplers = vec![None, None, None];
    let res = run_turns(
        &sources,
        &spec,
        &AtomicBool::new(false),
        &mut samplers,
        &mut seen,
    )
    .unwrap();
    assert_eq!(res.status, RunStatus::Completed);
    assert_eq!(res.rounds, 10);
    // One warm round, then ten measured: every server once per round, in orders that vary.
    assert_eq!(seen.switches.len(), 3 * 11);
    let orders: std::collections::BTreeSet<Vec<usize>> = seen
        .slices
        .chunks(3)
        .map(|round| round.iter().map(|s| s.0).collect())
        .collect();
    assert!(orders.len() > 1, "the order is shuffled per round");
    for (i, round) in seen.slices.chunks(3).enumerate() {
        let mut servers: Vec<usize> = round.iter().map(|s| s.0).collect();
        servers.sort();
        assert_eq!(servers, [0, 1, 2]);
        assert!(round.iter().all(|s| s.1 == i as u32));
    }
    // No two servers' events overlap: a switch waits for the last server's events in flight.
    let mut events = log.lock().unwrap().clone();
    events.sort_by_key(|e| e.1);
    for pair in events.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.0 != b.0 {
            assert!(
                b.1 >= a.2,
                "server {} started before server {}'s event ended",
                b.0,
                a.0
            );
        }
    }
    // Each slice counts its own server's events: 4 connections of 2 ms events for ~40 ms.
    for s in &res.servers {
        assert_eq!(s.slices.len(), 10);
        let per_slice = s.total.events as f64 / 10.0;
        assert!(
            (40.0..=90.0).contains(&per_slice),
            "{per_slice} events a slice"
        );
        let tps = s.round_tps();
        assert!(
            tps > 0.0 && (tps / s.total.tps - 1.0).abs() < 0.5,
            "{tps} vs {}",
            s.total.tps
        );
    }
}

#[test]
fn ctrl_c_ends_the_turns_at_the_next_switch_with_what_was_measured() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sources: Vec<Arc<Fake>> = fakes(2, 1, &log).into_iter().map(Arc::new).collect();
    let spec = TurnSpec {
        run: RunSpec {
            connections: 2,
            client_threads: 1,
            ..RunSpec::default()
        },
        slice: Duration::from_millis(30),
        settle: Duration::ZERO,
        warmup: Duration::ZERO,
        measured: Duration::from_secs(60),
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    let flag = interrupt.clone();
    let ctrl_c = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let began = Instant::now();
    let res = run_turns(
        &sources,
        &spec,
        &interrupt,
        &mut [None, None],
        &mut Seen::default(),
    )
    .unwrap();
    ctrl_c.join().unwrap();
    assert_eq!(res.status, RunStatus::Interrupted);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "not the 2 minutes asked"
    );
    assert!(res.servers.iter().all(|s| !s.slices.is_empty()));
}

fn short(connections: u32) -> TurnSpec {
    TurnSpec {
        run: RunSpec {
            connections,
            client_threads: 1,
            grace: Duration::from_millis(300),
            ..RunSpec::default()
        },
        slice: Duration::from_millis(20),
        settle: Duration::ZERO,
        warmup: Duration::ZERO,
        measured: Duration::from_millis(200),
    }
}

/// Two fake servers taking short turns, nothing frozen, nothing interrupted.
fn two_short(f: Vec<Fake>) -> TurnsResult {
    let sources: Vec<Arc<Fake>> = f.into_iter().map(Arc::new).collect();
    run_turns(
        &sources,
        &short(2),
        &AtomicBool::new(false),
        &mut [None, None],
        &mut Seen::default(),
    )
    .unwrap()
}

#[test]
fn a_server_that_refuses_connections_fails_alone_and_the_others_take_their_turns() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut f = fakes(2, 1, &log);
    f[1].refuse = true;
    let res = two_short(f);
    assert_eq!(res.status, RunStatus::Completed);
    assert!(
        res.servers[1]
            .failure
            .as_deref()
            .unwrap()
            .contains("could not be opened"),
        "{:?}",
        res.servers[1].failure
    );
    assert!(res.servers[1].slices.is_empty());
    assert_eq!(res.servers[0].failure, None);
    assert_eq!(res.servers[0].slices.len(), 10);
    // Every server refusing: the run cannot start, and says why.
    let mut f = fakes(2, 1, &log);
    f.iter_mut().for_each(|f| f.refuse = true);
    let res = two_short(f);
    assert!(matches!(res.status, RunStatus::Failed(_)));
    assert!(res.servers.iter().all(|s| s
        .failure
        .as_deref()
        .unwrap()
        .contains("could not be opened")));
}

/// A connection whose source ends its events (a script's event() returning a value) stops,
/// as it does where one server runs at a time, and what it did counts; when every connection
/// of a server has ended, that server has nothing left to measure and is failed, saying so
/// (turns of nothing would read as a server that did no work).
#[test]
fn connections_whose_events_end_stop_and_a_server_with_none_left_is_failed() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut f = fakes(2, 1, &log);
    f[1].end_after = Some(3);
    let res = two_short(f);
    assert_eq!(res.status, RunStatus::Completed);
    let why = res.servers[1].failure.as_deref().unwrap_or_default();
    assert!(why.contains("every connection's events ended"), "{why}");
    assert_eq!(res.servers[0].failure, None);
    // Each of its connections ran its three events, and no more.
    let connections = u64::from(short(2).run.connections);
    assert_eq!(res.servers[1].total.events, 3 * connections);
    assert!(res.servers[0].total.events > 3 * connections);
}

/// Told when the turns end, to check that it comes before the connections close.
#[derive(Default)]
struct Ends(u32);
impl TurnObserver for Ends {
    fn on_end(&mut self) {
        self.0 += 1;
    }
}

#[test]
fn a_server_that_stops_answering_fails_after_the_grace_and_costs_the_others_one_wait() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut f = fakes(2, 1, &log);
    f[0].stall_after = Some(5);
    let sources: Vec<Arc<Fake>> = f.into_iter().map(Arc::new).collect();
    let began = Instant::now();
    let mut ends = Ends::default();
    let res = run_turns(
        &sources,
        &short(2),
        &AtomicBool::new(false),
        &mut [None, None],
        &mut ends,
    )
    .unwrap();
    // One grace (300 ms) for the stalled server's switch, not one per switch.
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    assert!(
        res.servers[0]
            .failure
            .as_deref()
            .unwrap()
            .contains("unanswered"),
        "{:?}",
        res.servers[0].failure
    );
    assert_eq!(res.servers[1].failure, None);
    assert_eq!(
        res.servers[1].slices.len(),
        10,
        "the other server's rounds all ran"
    );
    assert_eq!(ends.0, 1);
}
