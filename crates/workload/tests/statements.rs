//! Statements per event, read from the server's own counters, equal sysbench's (reference
//! section 1.4). One server for this binary; tests take a lock because Com_* are global.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use bakeoff_driver::Conn;
use bakeoff_testkit::{connect, global_status, rt, schema};
use bakeoff_workload::dataset::{self, Progress};
use bakeoff_workload::{
    Distribution, OltpOptions, RandType, Session, SessionContext, StmtCounts, Unique, WorkloadKind,
    WorkloadSpec,
};

static SERIAL: Mutex<()> = Mutex::new(());
const COUNTERS: [&str; 6] = [
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_begin",
    "Com_commit",
];
const EVENTS: u64 = 25;

fn spec(kind: WorkloadKind) -> WorkloadSpec {
    let one_table = matches!(
        kind,
        WorkloadKind::SelectRandomPoints | WorkloadKind::SelectRandomRanges
    );
    let options = OltpOptions {
        tables: if one_table { 1 } else { 2 },
        table_size: 2000,
        ..OltpOptions::default()
    };
    WorkloadSpec {
        kind,
        options,
        distribution: Distribution::new(RandType::Uniform),
        tpcc: Default::default(),
        script: None,
    }
}

async fn counters(c: &mut Conn) -> [u64; 6] {
    let mut out = [0; 6];
    for (i, name) in COUNTERS.iter().enumerate() {
        out[i] = global_status(c, name).await;
    }
    out
}

/// Runs EVENTS events and returns the per-event increase of each counter and the r/w/o counts.
fn per_event(kind: WorkloadKind, name: &str) -> ([f64; 6], StmtCounts) {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let opts = schema(name);
    let spec = spec(kind);
    rt().block_on(async {
        let job = dataset::Loading {
            spec: &spec,
            threads: 1,
            parallel: 2,
            seed: 1,
            interrupt: &AtomicBool::new(false),
            progress: &|_: Progress| {},
        };
        dataset::prepare(&opts, &job).await.expect("prepare");
        let ctx = Arc::new(SessionContext::new(
            vec![opts.clone()],
            spec.clone(),
            1,
            Unique::new(1),
            1,
        ));
        let mut session: Session = Session::open(ctx, 0, 42, false)
            .await
            .expect("open session");
        let mut admin = connect(&opts).await;
        let before = counters(&mut admin).await;
        let mut c = StmtCounts::default();
        for _ in 0..EVENTS {
            session.event(&mut c).await.expect("event");
        }
        session.finish(&mut c).await.expect("finish");
        let after = counters(&mut admin).await;
        let mut per = [0.0; 6];
        for i in 0..6 {
            per[i] = (after[i] - before[i]) as f64 / EVENTS as f64;
        }
        (per, c)
    })
}

fn check(kind: WorkloadKind, want: [f64; 6], rwo: (u64, u64, u64)) {
    let (got, c) = per_event(kind, kind.name());
    assert_eq!(got, want, "{kind}: per-event {COUNTERS:?}");
    let per = |n: u64| n / EVENTS;
    assert_eq!(
        (per(c.reads), per(c.writes), per(c.others)),
        rwo,
        "{kind}: reads/writes/others per event"
    );
}

#[test]
fn read_write_runs_sysbench_statement_mix() {
    // BEGIN; 10 point; 4 ranges; 2 updates; DELETE; INSERT; COMMIT
    check(
        WorkloadKind::OltpReadWrite,
        [14.0, 1.0, 2.0, 1.0, 1.0, 1.0],
        (14, 4, 2),
    );
}

#[test]
fn read_only_runs_sysbench_statement_mix() {
    check(
        WorkloadKind::OltpReadOnly,
        [14.0, 0.0, 0.0, 0.0, 1.0, 1.0],
        (14, 0, 2),
    );
}

#[test]
fn write_only_runs_sysbench_statement_mix() {
    check(
        WorkloadKind::OltpWriteOnly,
        [0.0, 1.0, 2.0, 1.0, 1.0, 1.0],
        (0, 4, 2),
    );
}

#[test]
fn point_select_is_one_select() {
    check(
        WorkloadKind::OltpPointSelect,
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        (1, 0, 0),
    );
}

#[test]
fn update_index_and_non_index_are_one_update() {
    check(
        WorkloadKind::OltpUpdateIndex,
        [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        (0, 1, 0),
    );
    check(
        WorkloadKind::OltpUpdateNonIndex,
        [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        (0, 1, 0),
    );
}

#[test]
fn insert_is_one_insert() {
    check(
        WorkloadKind::OltpInsert,
        [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        (0, 1, 0),
    );
}

#[test]
fn delete_is_one_delete() {
    let (got, c) = per_event(WorkloadKind::OltpDelete, "oltp_delete");
    assert_eq!(got, [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    // A DELETE of an id already gone counts as other, as in sysbench.
    assert_eq!(c.writes + c.others, EVENTS);
}

#[test]
fn select_random_points_and_ranges_are_one_select() {
    check(
        WorkloadKind::SelectRandomPoints,
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        (1, 0, 0),
    );
    check(
        WorkloadKind::SelectRandomRanges,
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        (1, 0, 0),
    );
}

#[test]
fn bulk_insert_sends_one_multi_row_insert_for_small_runs() {
    let (got, c) = per_event(WorkloadKind::BulkInsert, "bulk_insert");
    assert_eq!(
        got[1] * EVENTS as f64,
        1.0,
        "25 rows fit in one 512 KiB INSERT"
    );
    assert_eq!(c.writes, 1);
}
