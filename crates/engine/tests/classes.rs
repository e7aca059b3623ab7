//! Events that carry a class (a source with several kinds of event, as TPC-C's five
//! transactions) come out per class in the run's total, its ticks and each server's turns,
//! and a warmup's classes are dropped with the rest of the warmup. A fake source, since what
//! is shown is the engine's bookkeeping, and which class an event has is the source's choice.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bakeoff_driver::DriverError;
use bakeoff_engine::{run, run_turns, NoTurns, Quiet, RunSpec, RunStatus, TurnSpec};
use bakeoff_telemetry::WindowSummary;
use bakeoff_workload::{EventError, Events, Source, StmtCounts};

/// A connection's first `WARM` of events: class 3, tallies [0, 0, 0, 9]. After it, class 1
/// (1 ms, tallies [1, 0, 0, 0]) and class 2 (10 ms, tallies [0, 2, 0, 0]) in turn.
/// `classes` false: no event has a class, as a sysbench workload's.
struct Classy {
    classes: bool,
}

const WARM: Duration = Duration::from_millis(150);

struct Session {
    classes: bool,
    first: Option<Instant>,
    n: u64,
}

impl Source for Classy {
    type Session = Session;
    async fn open(
        self: Arc<Self>,
        _tid: u32,
        _seed: u64,
        _blocking: bool,
    ) -> Result<Session, EventError> {
        Ok(Session {
            classes: self.classes,
            first: None,
            n: 0,
        })
    }
}

impl Events for Session {
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let first = *self.first.get_or_insert_with(Instant::now);
        self.n += 1;
        let (class, tally, ms) = match (first.elapsed() < WARM, self.n % 2) {
            (true, _) => (3, [0, 0, 0, 9], 1),
            (false, 0) => (1, [1, 0, 0, 0], 1),
            (false, _) => (2, [0, 2, 0, 0], 10),
        };
        tokio::time::sleep(Duration::from_millis(ms)).await;
        c.reads += 1;
        if self.classes {
            c.class = class;
            c.tally = tally;
        }
        Ok(())
    }
    async fn reconnect(&mut self) -> Result<(), DriverError> {
        Ok(())
    }
    async fn finish(self, _c: &mut StmtCounts) -> Result<(), EventError> {
        Ok(())
    }
}

/// Every event of `w` in one of its classes, each class's tallies as its events carried them.
fn classes_add_up(w: &WindowSummary) {
    let c = &w.classes;
    assert_eq!(c.len(), 3, "{c:?}");
    assert_eq!(c[0].events + c[1].events, w.events, "{c:?}");
    assert_eq!(c[0].tally, [c[0].events, 0, 0, 0]);
    assert_eq!(c[1].tally, [0, 2 * c[1].events, 0, 0]);
}

fn classy_run(classes: bool, warmup: Duration) -> bakeoff_engine::RunResult {
    let spec = RunSpec {
        connections: 3,
        client_threads: 2,
        time: Some(Duration::from_millis(600)),
        warmup,
        tick: Duration::from_millis(200),
        ..RunSpec::default()
    };
    let r = run(
        Arc::new(Classy { classes }),
        &spec,
        &AtomicBool::new(false),
        &mut Quiet,
    )
    .expect("run");
    assert_eq!(r.status, RunStatus::Completed);
    r
}

#[test]
fn events_come_out_per_class_and_the_warmups_classes_are_dropped() {
    let r = classy_run(true, Duration::from_millis(300));
    let t = &r.total;
    assert!(t.events > 0);
    classes_add_up(t);
    // The warmup's class keeps its place, with nothing in it.
    assert_eq!((t.classes[2].events, t.classes[2].tally), (0, [0; 4]));
    let (fast, slow) = (&t.classes[0], &t.classes[1]);
    assert!(fast.events > 0 && slow.events > 0, "{:?}", t.classes);
    // Latency runs from the intended start, so a 10 ms event never reads less.
    assert!(slow.p50_ms >= 10.0 && slow.mean_ms >= 10.0, "{slow:?}");
    assert!(slow.p50_ms > fast.p50_ms, "{fast:?} vs {slow:?}");
    assert!(slow.max_ms >= slow.p99_ms && fast.p50_ms >= 1.0, "{fast:?}");
    assert!(!r.ticks.is_empty());
    for tick in &r.ticks {
        classes_add_up(&tick.window);
    }
}

#[test]
fn a_run_whose_events_have_no_class_summarises_none() {
    let r = classy_run(false, Duration::ZERO);
    assert!(r.total.events > 0);
    assert!(r.total.classes.is_empty());
    assert!(r.ticks.iter().all(|t| t.window.classes.is_empty()));
}

#[test]
fn each_servers_turns_come_out_per_class() {
    let sources = vec![
        Arc::new(Classy { classes: true }),
        Arc::new(Classy { classes: true }),
    ];
    let spec = TurnSpec {
        run: RunSpec {
            connections: 2,
            client_threads: 1,
            ..RunSpec::default()
        },
        slice: Duration::from_millis(50),
        settle: Duration::ZERO,
        // The warm class runs in the first WARM of each connection's events, unmeasured.
        warmup: Duration::from_millis(400),
        measured: Duration::from_millis(200),
    };
    let res = run_turns(
        &sources,
        &spec,
        &AtomicBool::new(false),
        &mut [None, None],
        &mut NoTurns,
    )
    .unwrap();
    assert_eq!(res.status, RunStatus::Completed);
    for s in &res.servers {
        assert!(s.total.events > 0);
        classes_add_up(&s.total);
        s.slices.iter().for_each(|sl| classes_add_up(&sl.window));
    }
}
