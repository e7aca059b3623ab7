//! Studies whose servers take turns, against real MariaDB servers the runner starts: a block
//! is kept whole or not at all (Ctrl-C mid-block loses that block only, and a resume runs it
//! again, nothing twice), a server that dies mid-block fails its own runs while the others go
//! on, and frozen idle servers are let go whatever happens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bakeoff_store::{RunRecord, Store};
use bakeoff_study::{parse, run_study, text_sha256, StoredStudy, StudyObserver};

/// One test at a time: the crash test kills a server among this process's children.
static SERIAL: Mutex<()> = Mutex::new(());

fn db(name: &str) -> std::path::PathBuf {
    let p = bakeoff_testkit::scratch::path(&format!("alternation-{name}.db"));
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    p
}

const STUDY: &str = r#"
name = "turns"
duration = 1
repetitions = 2
threads = [1, 3]
[dataset]
table_size = 500
policy = "copy"
[[workload]]
name = "oltp_point_select"
[[variant]]
name = "a"
[[variant]]
name = "b"
settings = { innodb_adaptive_hash_index = "OFF" }
[alternation]
slice_ms = 100
"#;

/// Ctrl-C as the runner tells that block `block`'s first cell starts (the block's servers
/// are up then, and a run of the block may be under way).
struct StopAtBlock<'a> {
    block: u32,
    flag: &'a AtomicBool,
    done: Vec<RunRecord>,
}

impl StudyObserver for StopAtBlock<'_> {
    fn on_run_start(&mut self, _d: usize, _t: usize, what: &str, _l: std::time::Duration) {
        if what.starts_with(&format!("block {} ", self.block)) {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
    fn on_run_done(&mut self, r: &RunRecord) {
        self.done.push(r.clone());
    }
}

fn run(
    src: &str,
    path: &std::path::Path,
    obs: &mut dyn StudyObserver,
    flag: &AtomicBool,
) -> bakeoff_study::StudyOutcome {
    let spec = parse(src, "t").unwrap_or_else(|e| panic!("{e:#?}"));
    let hash = text_sha256(src);
    let mut store = Store::open(path).unwrap();
    let study = store.begin_study(&spec.name, &hash, "{}", false).unwrap();
    run_study(
        &spec,
        &hash,
        &mut StoredStudy {
            store: &mut store,
            study,
        },
        flag,
        obs,
    )
    .unwrap()
}

#[test]
fn a_block_interrupted_midway_is_lost_whole_and_resumed_exactly() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let path = db("resume");
    let flag = AtomicBool::new(false);
    let mut obs = StopAtBlock {
        block: 2,
        flag: &flag,
        done: Vec::new(),
    };
    let first = run(STUDY, &path, &mut obs, &flag);
    assert!(first.interrupted, "{first:?}");
    assert_eq!((first.ok, first.failed), (4, 0), "{first:?}");
    let store = Store::open(&path).unwrap();
    let runs = store.runs(None).unwrap();
    assert_eq!(
        runs.len(),
        4,
        "block 1 only: block 2 was cut and kept nothing"
    );
    assert!(runs
        .iter()
        .all(|r| r["repetition"] == 1 && r["status"] == "ok"));
    drop(store);
    assert!(
        bakeoff_testkit::mariadbd_children(std::process::id()).is_empty(),
        "the interrupted block's servers are gone"
    );

    let flag = AtomicBool::new(false);
    let mut obs = StopAtBlock {
        block: 0,
        flag: &flag,
        done: Vec::new(),
    };
    let second = run(STUDY, &path, &mut obs, &flag);
    assert_eq!(
        (second.ok, second.resumed, second.interrupted),
        (4, 4, false),
        "{second:?}"
    );
    assert!(obs.done.iter().all(|r| r.key.unwrap().repetition == 2));
    let store = Store::open(&path).unwrap();
    let runs = store.runs(None).unwrap();
    let mut keys: Vec<(i64, i64, i64)> = runs
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_i64().unwrap();
            (n("repetition"), n("variant"), n("threads"))
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(
        keys.len(),
        8,
        "2 blocks x 2 variants x 2 thread counts, each once"
    );
    // Each run is its server's slices: ten rounds of 100 ms, the first at round 0, each
    // sampled, and the run's throughput is their events over their seconds.
    let r = &runs[0];
    let summaries = store.summaries(r["study_id"].as_i64().unwrap()).unwrap();
    let row = summaries.iter().find(|s| s["id"] == r["id"]).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(row["summary_json"].as_str().unwrap()).unwrap();
    assert_eq!(summary["turns"]["servers"], 2);
    assert_eq!(summary["turns"]["rounds"], 10);
    let ticks = store.ticks(r["id"].as_i64().unwrap()).unwrap();
    assert_eq!(ticks.len(), 10, "one tick per slice");
    let slices: Vec<serde_json::Value> = ticks
        .iter()
        .map(|t| serde_json::from_str(&t.2).unwrap())
        .collect();
    assert_eq!(slices[0]["round"], 0);
    assert!(slices
        .iter()
        .all(|s| s["telemetry"]["server"]["cpu_user_seconds"].is_number()));
    let sum = |k: &str| slices.iter().map(|s| s[k].as_f64().unwrap()).sum::<f64>();
    let pooled = sum("events") / sum("seconds");
    let tps = r["tps"].as_f64().unwrap();
    assert!((tps / pooled - 1.0).abs() < 1e-9, "{tps} vs {pooled}");
    assert_eq!(store.integrity().unwrap(), "ok");
}

/// Kills the first server it finds once the first slice closes.
struct KillOnce {
    killed: Option<u32>,
}

impl StudyObserver for KillOnce {
    fn on_tick(&mut self, _tps: f64) {
        if self.killed.is_none() {
            if let Some(&pid) = bakeoff_testkit::mariadbd_children(std::process::id()).first() {
                // SAFETY: a server this test's runner started.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                self.killed = Some(pid);
            }
        }
    }
}

#[test]
fn a_server_that_dies_mid_block_fails_its_own_runs_and_the_others_go_on() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // Frozen idle servers: the dead one must not keep the others frozen, nor hang the end.
    let src = STUDY
        .replace("repetitions = 2", "repetitions = 1")
        .replace("slice_ms = 100", "slice_ms = 100\nidle = \"freeze\"");
    let path = db("dies");
    let flag = AtomicBool::new(false);
    let mut obs = KillOnce { killed: None };
    let out = run(&src, &path, &mut obs, &flag);
    assert!(obs.killed.is_some());
    let store = Store::open(&path).unwrap();
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    let failed: Vec<&bakeoff_store::Row> =
        runs.iter().filter(|r| r["status"] == "failed").collect();
    let ok: Vec<&bakeoff_store::Row> = runs.iter().filter(|r| r["status"] == "ok").collect();
    assert_eq!((failed.len(), ok.len()), (2, 2), "{runs:?}");
    assert_eq!((out.ok, out.failed), (2, 2), "{out:?}");
    let dead = &failed[0]["variant_name"];
    assert!(
        failed.iter().all(|r| &r["variant_name"] == dead),
        "one variant's runs fail"
    );
    assert!(
        ok.iter().all(|r| &r["variant_name"] != dead),
        "the other's hold"
    );
    let reasons: Vec<&str> = failed
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("exited during the run")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("exited earlier in this block")),
        "{reasons:?}"
    );
    assert!(ok.iter().all(|r| r["events"].as_i64().unwrap() > 0));
    assert!(
        bakeoff_testkit::mariadbd_children(std::process::id()).is_empty(),
        "no server left, none frozen"
    );
}

/// Ctrl-C as a run starts once `runs` runs are done.
struct StopAfterRuns<'a> {
    runs: usize,
    flag: &'a AtomicBool,
    done: usize,
}

impl StudyObserver for StopAfterRuns<'_> {
    fn on_run_start(&mut self, _d: usize, _t: usize, _what: &str, _l: std::time::Duration) {
        if self.done >= self.runs {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
    fn on_run_done(&mut self, _r: &RunRecord) {
        self.done += 1;
    }
}

/// `validate_every = 1`: after each block by turns, a check block of the same variants one
/// server at a time, numbered apart (1001, 1002), its runs measured without turns; a study
/// interrupted inside a check block finishes it on resume; the report sets each
/// comparison by turns beside the check blocks', and the blocks by turns alone make its verdict.
#[test]
fn check_blocks_run_one_server_at_a_time_between_blocks_by_turns() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let path = db("validate");
    let src = STUDY.replace("slice_ms = 100", "slice_ms = 100\nvalidate_every = 1");
    let flag = AtomicBool::new(false);
    // Ctrl-C inside check block 1001, one of its runs stored: the resume finishes it.
    let mut obs = StopAfterRuns {
        runs: 5,
        flag: &flag,
        done: 0,
    };
    let first = run(&src, &path, &mut obs, &flag);
    assert!(first.interrupted, "{first:?}");
    let stored = Store::open(&path).unwrap().runs(None).unwrap();
    let checks = stored.iter().filter(|r| r["repetition"] == 1001).count();
    assert!(
        (1..4).contains(&checks) && stored.len() == 4 + checks,
        "interrupted inside check block 1001: {checks} of its runs, {} in all",
        stored.len()
    );
    let flag = AtomicBool::new(false);
    let mut obs = StopAtBlock {
        block: 0,
        flag: &flag,
        done: Vec::new(),
    };
    let second = run(&src, &path, &mut obs, &flag);
    assert!(!second.interrupted && second.failed == 0, "{second:?}");
    let store = Store::open(&path).unwrap();
    let runs = store.runs(None).unwrap();
    let mut blocks: Vec<i64> = runs
        .iter()
        .map(|r| r["repetition"].as_i64().unwrap())
        .collect();
    blocks.sort();
    blocks.dedup();
    assert_eq!(
        blocks,
        vec![1, 2, 1001, 1002],
        "two blocks, two check blocks"
    );
    assert_eq!(
        runs.len(),
        16,
        "each block and check block: 2 variants x 2 thread counts, once"
    );
    let study = runs[0]["study_id"].as_i64().unwrap();
    let methods = store.run_methods(study).unwrap();
    for r in &runs {
        let m = methods.iter().find(|m| m["id"] == r["id"]).unwrap();
        let check = r["repetition"].as_i64().unwrap() > 1000;
        assert_eq!(
            m["turn_slice_ms"].is_null(),
            check,
            "check blocks one server at a time, blocks by turns: {m:?}"
        );
    }
    let source = bakeoff_report::Source::from_store(&store, None).unwrap();
    let model = bakeoff_report::build(&source, &bakeoff_report::Options::default()).unwrap();
    for c in model.comparisons.iter().filter(|c| c.variant == "b") {
        assert_eq!(c.blocks, 2, "the verdict is the blocks by turns': {c:?}");
        let k = c.checked.expect("set beside its check blocks");
        assert_eq!((k.blocks, k.turns_blocks), (2, 2), "{k:?}");
        let by_turns = c.ratio.unwrap();
        assert!(
            (k.ratio_of_ratios - by_turns / k.ratio).abs() < 1e-9 * by_turns,
            "the ratio of the two ratios: {k:?} {by_turns}"
        );
    }
    let said = model.workloads[0].summary.join(" ");
    assert!(said.contains("Checked one server at a time"), "{said}");
}
