//! Running studies against real MariaDB servers the runner starts: resume after an
//! interruption without duplicate runs, and failures recorded while the study goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bakeoff_store::{RunRecord, Store};
use bakeoff_study::{parse, run_study, text_sha256, StoredStudy, StudyObserver, StudySpec};

/// One test at a time: the crash test kills "the" server among this process's children.
static SERIAL: Mutex<()> = Mutex::new(());

fn db(name: &str) -> std::path::PathBuf {
    let p = bakeoff_testkit::scratch::path(&format!("runner-{name}.db"));
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    p
}

/// A parsed study, its hash, and a fresh store with the study begun in it.
fn begin(src: &str, db_name: &str) -> (StudySpec, String, Store, i64) {
    let spec = parse(src, "t").unwrap_or_else(|e| panic!("{e:#?}"));
    let hash = text_sha256(src);
    let mut store = Store::open(&db(db_name)).unwrap();
    let study = store.begin_study(&spec.name, &hash, "{}", false).unwrap();
    (spec, hash, store, study)
}

const STUDY: &str = r#"
name = "resume"
duration = 1
threads = [1, 2]
[dataset]
table_size = 500
[[workload]]
name = "oltp_point_select"
[axes]
allocator = ["glibc", "jemalloc"]
"#;

/// Sets the interrupt flag once `after` runs are done (as Ctrl-C would).
struct StopAfter<'a> {
    after: usize,
    seen: usize,
    flag: &'a AtomicBool,
}

impl StudyObserver for StopAfter<'_> {
    fn on_run_done(&mut self, _r: &RunRecord) {
        self.seen += 1;
        if self.seen == self.after {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

#[test]
fn an_interrupted_study_resumes_without_running_anything_twice() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // One server at a time, so a resume picks up between two runs of a series (a study whose
    // servers take turns resumes by blocks: tests/alternation.rs).
    let src = format!("{STUDY}[alternation]\nenabled = false\n");
    let spec = parse(&src, "t").unwrap();
    let hash = text_sha256(&src);
    let path = db("resume");
    let mut store = Store::open(&path).unwrap();
    let study = store.begin_study(&spec.name, &hash, "{}", false).unwrap();
    let flag = AtomicBool::new(false);
    let first = run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        &flag,
        &mut StopAfter {
            after: 1,
            seen: 0,
            flag: &flag,
        },
    )
    .unwrap();
    assert!(first.interrupted);
    assert_eq!(first.ok, 1, "{first:?}");
    drop(store);

    let mut store = Store::open(&path).unwrap();
    let study2 = store.begin_study(&spec.name, &hash, "{}", false).unwrap();
    assert_eq!(study, study2, "same file, same study");
    let flag = AtomicBool::new(false);
    let second = run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        &flag,
        &mut StopAfter {
            after: 0,
            seen: 0,
            flag: &flag,
        },
    )
    .unwrap();
    assert_eq!(
        (second.ok, second.resumed, second.interrupted),
        (3, 1, false),
        "{second:?}"
    );
    let runs = store.runs(Some(study)).unwrap();
    assert_eq!(runs.len(), 4, "2 variants x 2 thread counts, each once");
    let first = runs[0]["id"].as_i64().unwrap();
    let ticks = store.ticks(first).unwrap();
    assert!(!ticks.is_empty(), "the per-tick series is stored");
    let tick: serde_json::Value = serde_json::from_str(&ticks[0].2).unwrap();
    let events: u64 = tick["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(
        events,
        tick["events"].as_u64().unwrap(),
        "the tick's latency histogram holds its events"
    );
    assert!(
        tick["telemetry"]["server"]["cpu_user_seconds"].is_number(),
        "and its telemetry"
    );
    assert!(runs
        .iter()
        .all(|r| r["status"] == "ok" && r["tps"].as_f64().unwrap() > 0.0));
    assert_eq!(store.integrity().unwrap(), "ok");
}

/// Kills the first server it finds on the run's first tick.
struct KillOnce {
    killed: bool,
}

impl StudyObserver for KillOnce {
    fn on_tick(&mut self, _tps: f64) {
        if !self.killed {
            if let Some(pid) = bakeoff_testkit::mariadbd_children(std::process::id()).first() {
                // SAFETY: a server this test's runner started.
                unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
                self.killed = true;
            }
        }
    }
}

#[test]
fn a_crashed_server_and_a_variant_that_cannot_start_are_recorded_and_the_study_goes_on() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // 3 s runs: the first tick (1 s) comes while the run is still going. Sequential: the
    // variant that crashes is the first to run (blocks shuffle their order). The variant that
    // cannot start gives a setting the server knows a value it refuses (one it does not know
    // is refused by `study check`, before anything starts).
    let src = r#"
name = "faults"
order = "sequential"
duration = 3
threads = [1, 2]
[dataset]
table_size = 500
[[workload]]
name = "oltp_point_select"
[[variant]]
name = "crashes"
[[variant]]
name = "cannot start"
settings = { innodb_flush_method = "bogus" }
[[variant]]
name = "healthy"
"#;
    let (spec, hash, mut store, study) = begin(src, "faults");
    let flag = AtomicBool::new(false);
    let out = run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        &flag,
        &mut KillOnce { killed: false },
    )
    .unwrap();
    let runs = store.runs(Some(study)).unwrap();
    let status = |variant: &str, threads: i64| -> (String, String) {
        let r = runs
            .iter()
            .find(|r| r["variant_name"] == variant && r["threads"] == threads)
            .expect("stored");
        (
            r["status"].as_str().unwrap().to_string(),
            r["reason"].as_str().unwrap_or("").to_string(),
        )
    };
    let (s, why) = status("crashes", 1);
    assert_eq!(s, "failed");
    assert!(why.contains("exited during the run"), "{why}");
    let (s, why) = status("crashes", 2);
    assert_eq!(s, "failed");
    assert!(why.contains("exited earlier in this series"), "{why}");
    let (s, why) = status("cannot start", 1);
    assert_eq!(s, "failed");
    assert!(why.contains("did not start"), "{why}");
    assert_eq!(status("healthy", 1).0, "ok");
    assert_eq!(status("healthy", 2).0, "ok");
    assert_eq!((out.ok, out.failed), (2, 4), "{out:?}");
    assert_eq!(store.integrity().unwrap(), "ok");
    assert!(
        bakeoff_testkit::mariadbd_children(std::process::id()).is_empty(),
        "no server left"
    );
}

struct Notes(Vec<String>);

impl StudyObserver for Notes {
    fn on_note(&mut self, note: &str) {
        self.0.push(note.to_string());
    }
}

#[test]
fn with_the_copy_policy_the_tables_are_loaded_once_and_every_series_runs_on_a_copy() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let src = STUDY
        .replace("table_size = 500", "table_size = 500\npolicy = \"copy\"")
        .replace("resume", "copy");
    let (spec, hash, mut store, study) = begin(&src, "copy");
    let flag = AtomicBool::new(false);
    let mut notes = Notes(Vec::new());
    let out = run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        &flag,
        &mut notes,
    )
    .unwrap();
    assert_eq!((out.ok, out.failed), (4, 0), "{out:?} {:?}", notes.0);
    let loads = notes
        .0
        .iter()
        .filter(|n| n.contains("loading the tables once"))
        .count();
    assert_eq!(loads, 1, "{:?}", notes.0);
    let runs = store.runs(Some(study)).unwrap();
    assert!(
        runs.iter().all(|r| r["events"].as_i64().unwrap() > 0),
        "every copy has the tables"
    );
}

#[test]
fn a_fixed_work_workload_runs_each_connections_events_for_every_iteration() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let src = "threads = [5]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\nevents_per_connection = 4\niterations = 3\n";
    let (spec, hash, mut store, study) = begin(src, "slap");
    let flag = AtomicBool::new(false);
    let out = run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        &flag,
        &mut Notes(Vec::new()),
    )
    .unwrap();
    assert_eq!(out.ok, 1, "{out:?}");
    let runs = store.runs(Some(study)).unwrap();
    assert_eq!(
        runs[0]["events"],
        5 * 4 * 3,
        "5 connections x 4 events x 3 iterations"
    );
    assert!(runs[0]["seconds"].as_f64().unwrap() > 0.0);
}

#[test]
fn host_probes_run_once_per_study_before_the_series() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let src = "probes = [\"cpu\", \"memory\", \"fileio\"]\nprobe_seconds = 1\nduration = 1\nthreads = [1]\n[dataset]\ntable_size = 200\n[[workload]]\nname = \"oltp_point_select\"\n";
    let (spec, hash, mut store, study) = begin(src, "probes");
    let flag = AtomicBool::new(false);
    let mut notes = Notes(Vec::new());
    run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        &flag,
        &mut notes,
    )
    .unwrap();
    let probes = store.probe_rows(Some(study)).unwrap();
    assert_eq!(probes.len(), 3, "{probes:?}");
    for p in &probes {
        assert_eq!(p["status"], "ok", "{p:?}");
        assert!(p["figure"].as_f64().unwrap() > 0.0, "{p:?}");
    }
    let mut again = Notes(Vec::new());
    run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        &flag,
        &mut again,
    )
    .unwrap();
    assert!(
        !again.0.iter().any(|n| n.contains("host probe")),
        "kept on resume: {:?}",
        again.0
    );
}
