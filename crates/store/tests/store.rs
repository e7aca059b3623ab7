//! The results database: runs are kept once, interrupted ones are replaced, an edited study is
//! refused, and only one writer at a time.

use bakeoff_store::{RunKey, RunRecord, Store, StoreError, TickRecord};

fn db(name: &str) -> std::path::PathBuf {
    let p = bakeoff_testkit::scratch::path(&format!("store-{name}.db"));
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

/// A database holding study "platforms" as run on `platform`: two runs with a tick each and a
/// host probe.
fn machine(name: &str, platform: &str) -> std::path::PathBuf {
    let path = db(name);
    let mut s = Store::open(&path).unwrap();
    let spec = format!(r#"{{"platform": "{platform}"}}"#);
    let study = s.begin_study("platforms", "h", &spec, false).unwrap();
    for threads in [1, 8] {
        let mut r = run(threads, "ok");
        r.ticks[0].json = r#"{"telemetry": {"server": {"rss_bytes": 1048576}}}"#.into();
        s.record(study, &r).unwrap();
    }
    s.record_probe(
        study,
        &bakeoff_store::ProbeRecord {
            probe: "cpu".into(),
            threads: 1,
            figure: 900.0,
            unit: "events/s".into(),
            status: "ok".into(),
            summary_json: "{}".into(),
            ..Default::default()
        },
    )
    .unwrap();
    path
}

#[test]
fn merging_puts_machines_side_by_side_once() {
    let (x86, arm, all) = (machine("x86", "x86"), machine("arm", "arm"), db("merged"));
    let mut s = Store::open(&all).unwrap();
    let a = s.merge_from(&x86).unwrap();
    let b = s.merge_from(&arm).unwrap();
    assert_eq!(
        (a.studies.len(), a.runs, a.ticks, a.probes, a.skipped),
        (1, 2, 2, 1, 0)
    );
    assert_eq!((b.runs, b.ticks), (2, 2));
    let studies = s.studies().unwrap();
    assert_eq!(studies.len(), 2, "both machines' studies: {studies:?}");
    assert!(s.study_spec(studies[1].0).unwrap().contains("arm"));
    assert_eq!(s.runs(None).unwrap().len(), 4);
    assert_eq!(s.probe_rows(None).unwrap().len(), 2);
    let ticks = s.tick_rows(Some(studies[1].0)).unwrap();
    assert_eq!(ticks.len(), 2);
    assert_eq!(
        ticks[0]["server_rss_bytes"], 1048576,
        "tick telemetry travels"
    );

    let again = s.merge_from(&x86).unwrap();
    assert_eq!(
        (again.skipped, again.runs),
        (1, 0),
        "a study already merged is not copied twice"
    );
    assert_eq!(s.runs(None).unwrap().len(), 4);
    assert_eq!(s.integrity().unwrap(), "ok");

    let junk = db("junk");
    std::fs::write(&junk, "not a database at all, just text").unwrap();
    let e = s.merge_from(&junk).unwrap_err().to_string();
    assert!(e.contains(&junk.display().to_string()), "{e}");
    for p in [x86, arm, all, junk] {
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
        }
    }
}

/// A copy of a results database kept in tests/fixtures (the test must not change the original).
fn copy_of(fixture: &str, name: &str) -> std::path::PathBuf {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let to = db(name);
    std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    to
}

#[test]
fn a_database_written_before_layouts_were_versioned_opens_and_is_stamped() {
    let path = copy_of("written-by-846bfca.db", "old-layout");
    let store = Store::open(&path).expect("a database of an earlier bakeoff opens");
    assert_eq!(store.schema_version().unwrap(), 1);
    let studies = store.studies().unwrap();
    assert_eq!(studies.len(), 1);
    assert_eq!(studies[0].1, "two-axis");
    let runs = store.runs(Some(studies[0].0)).unwrap();
    assert_eq!(runs.len(), 8, "2 allocators x 2 CPU sets x 2 thread counts");
    assert!(runs.iter().all(|r| r["status"] == "ok"));
    drop(store);
    // Opening it again changes nothing more.
    assert_eq!(Store::open(&path).unwrap().schema_version().unwrap(), 1);
}

#[test]
fn a_database_of_a_newer_layout_is_refused_naming_both_versions() {
    let path = copy_of("written-by-846bfca.db", "newer-layout");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    match Store::open(&path) {
        Err(e @ StoreError::Newer { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("99") && msg.contains("up to 1") && msg.contains("newer-layout"),
                "{msg}"
            );
        }
        Err(e) => panic!("expected a newer-layout refusal, got {e}"),
        Ok(_) => panic!("a newer layout opened"),
    }
    let mut into = Store::open(&db("merge-into")).unwrap();
    assert!(matches!(
        into.merge_from(&path),
        Err(StoreError::Newer { .. })
    ));
}

#[test]
fn a_new_database_carries_the_layout_version() {
    let store = Store::open(&db("fresh-version")).unwrap();
    assert_eq!(store.schema_version().unwrap(), 1);
}
