//! Where a run's time starts, shown with connections that take a known time to open (a slow
//! login, which a real server does not do on cue): sysbench's --time starts once the load
//! does, pgbench's -T as its threads do, before they connect.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_driver::DriverError;
use bakeoff_engine::{run, Quiet, RunSpec, RunStatus};
use bakeoff_workload::{EventError, Events, Source, StmtCounts};

const LOGIN: Duration = Duration::from_millis(400);
const TIME: Duration = Duration::from_millis(1000);

/// Connections that open after `LOGIN`; events of a millisecond.
struct SlowLogin;

struct Session;

impl Source for SlowLogin {
    type Session = Session;
    async fn open(
        self: Arc<Self>,
        _tid: u32,
        _seed: u64,
        _blocking: bool,
    ) -> Result<Session, EventError> {
        tokio::time::sleep(LOGIN).await;
        Ok(Session)
    }
}

impl Events for Session {
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        c.reads += 1;
        Ok(())
    }
    async fn reconnect(&mut self) -> Result<(), DriverError> {
        Ok(())
    }
    async fn finish(self, _c: &mut StmtCounts) -> Result<(), EventError> {
        Ok(())
    }
}

fn timed(includes_connecting: bool, time: Duration) -> bakeoff_engine::RunResult {
    let spec = RunSpec {
        connections: 2,
        client_threads: 1,
        time: Some(time),
        time_includes_connecting: includes_connecting,
        ..RunSpec::default()
    };
    let r = run(
        Arc::new(SlowLogin),
        &spec,
        &AtomicBool::new(false),
        &mut Quiet,
    )
    .expect("run");
    assert_eq!(r.status, RunStatus::Completed);
    assert!(
        r.setup_seconds >= LOGIN.as_secs_f64(),
        "connecting took {} s",
        r.setup_seconds
    );
    r
}

#[test]
fn sysbench_time_starts_when_the_load_does() {
    let r = timed(false, TIME);
    assert!(
        r.elapsed_seconds >= TIME.as_secs_f64(),
        "measured {} s",
        r.elapsed_seconds
    );
}

#[test]
fn pgbench_time_counts_the_connecting_too() {
    let r = timed(true, TIME);
    // The load gets what connecting left of the time: 0.6 s here, less if connecting was slow
    // (the old rule gave it all of the time).
    let left = TIME.as_secs_f64() - r.setup_seconds;
    assert!(
        r.elapsed_seconds < TIME.as_secs_f64(),
        "measured {} s",
        r.elapsed_seconds
    );
    assert!(
        r.elapsed_seconds >= left - 0.01,
        "measured {} s of {left} s left",
        r.elapsed_seconds
    );
    assert!(r.total.events > 0);
}

#[test]
fn a_pgbench_time_that_connecting_used_up_runs_no_load() {
    let r = timed(true, Duration::from_millis(200));
    assert_eq!(r.total.events, 0, "events after the time was up");
}
