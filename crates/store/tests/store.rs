//! The results database: runs are kept once, interrupted ones are replaced, an edited study is
//! refused, and only one writer at a time.

use bakeoff_store::{RunKey, RunRecord, Store, StoreError, TickRecord};

fn db(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("bakeoff-store-{}-{name}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    p
}

fn run(threads: u32, status: &str) -> RunRecord {
    RunRecord {
        key: Some(RunKey {
            repetition: 1,
            variant: 0,
            workload: 0,
            threads,
        }),
        variant_name: "default".into(),
        workload_label: "oltp_point_select".into(),
        status: status.into(),
        tps: 1000.0,
        summary_json: "{}".into(),
        manifest_json: "{}".into(),
        ticks: vec![TickRecord {
            t: 1.0,
            tps: 1000.0,
            json: "{}".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn finished_runs_are_kept_once_and_interrupted_ones_replaced() {
    let path = db("resume");
    let mut s = Store::open(&path).unwrap();
    let study = s.begin_study("t", "h1", "{}", false).unwrap();
    s.record(study, &run(1, "ok")).unwrap();
    s.record(study, &run(8, "interrupted")).unwrap();
    let done = s.finished(study).unwrap();
    assert_eq!(done.len(), 1, "the interrupted run is to be redone");
    let redo = s.record(study, &run(8, "ok")).unwrap();
    assert_eq!(s.finished(study).unwrap().len(), 2);
    assert_eq!(
        s.runs(Some(study)).unwrap().len(),
        2,
        "the interrupted attempt was replaced"
    );
    assert_eq!(s.tick_count(redo).unwrap(), 1);
    assert!(
        s.record(study, &run(1, "ok")).is_err(),
        "a finished run is never stored twice"
    );
    assert_eq!(s.integrity().unwrap(), "ok");
    drop(s);
    // Reopened: the same study resumes, its runs still there.
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.begin_study("t", "h1", "{}", false).unwrap(), study);
    assert_eq!(s.finished(study).unwrap().len(), 2);
}

#[test]
fn an_edited_study_is_refused_unless_a_new_one_is_asked_for() {
    let path = db("edited");
    let mut s = Store::open(&path).unwrap();
    let first = s.begin_study("t", "h1", "{}", false).unwrap();
    match s.begin_study("t", "h2", "{}", false) {
        Err(StoreError::Edited { old, new, .. }) => {
            assert_eq!((old.as_str(), new.as_str()), ("h1", "h2"))
        }
        other => panic!("expected Edited, got {other:?}", other = other.map(|_| ())),
    }
    let second = s.begin_study("t", "h2", "{}", true).unwrap();
    assert_ne!(first, second);
}

#[test]
fn one_writer_at_a_time() {
    let path = db("lock");
    let _s = Store::open(&path).unwrap();
    assert!(matches!(Store::open(&path), Err(StoreError::Locked(_))));
}
