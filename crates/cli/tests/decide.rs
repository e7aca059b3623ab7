//! Answers that decide, on real servers: a study of two identical variants and one that
//! differs (the redo log flushed at every commit, against not: a difference no machine's
//! noise hides, where one CPU against two drowned in this 2-CPU machine's), run in blocks
//! with the A/A check and auto repetitions (a pilot of 5 blocks, Stein's design), asserting
//! only what cannot flake: the identical pair is not told apart (its paired 99.9% interval,
//! from the blocks' figures, contains 1) and the different one is different; the study stops
//! where its pilot says and says so; suspect runs can be left out.

mod common;

use std::path::PathBuf;

use common::{bakeoff, text};

fn scratch(name: &str) -> PathBuf {
    let dir = bakeoff_testkit::scratch::dir(&format!("decide-{name}"));
    dir
}

/// The tests here measure, one at a time: the study's difference is the redo log's fsync at
/// every commit, and another test's load beside it (the suite runs two at once) made fsync's
/// cost, and so the ratio, swing from block to block (once [0.19, 188.7] around 5.97, and
/// `undecided`).
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

const AAB: &str = r#"
name = "aab"
duration = 2
warmup = 1
repetitions = "auto"
precision = 0.5
max_repetitions = 5
equivalence = 0.03
threads = [8]
[dataset]
tables = 1
table_size = 2000
policy = "copy"
[[workload]]
name = "oltp_update_non_index"
[[variant]]
name = "flushed"
settings = { innodb_flush_log_at_trx_commit = 1 }
[[variant]]
name = "flushed again"
settings = { innodb_flush_log_at_trx_commit = 1 }
[[variant]]
name = "unflushed"
settings = { innodb_flush_log_at_trx_commit = 0 }
"#;

/// The per-block log ratios of `variant` against its baseline at `threads`, from the model.
fn block_log_ratios(m: &serde_json::Value, variant: &str, base: &str) -> Vec<f64> {
    let curve = |name: &str| -> Vec<(u64, f64)> {
        let c = m["workloads"][0]["curves"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == name)
            .unwrap_or_else(|| panic!("no curve {name}"));
        let p = &c["points"][0];
        let reps = p["repetitions"].as_array().unwrap();
        let tps = p["tps"].as_array().unwrap();
        reps.iter()
            .zip(tps)
            .map(|(r, t)| (r.as_u64().unwrap(), t.as_f64().unwrap()))
            .collect()
    };
    let b = curve(base);
    curve(variant)
        .into_iter()
        .filter_map(|(r, t)| Some((t / b.iter().find(|(x, _)| *x == r)?.1).ln()))
        .collect()
}

#[test]
fn identical_variants_are_not_told_apart_and_a_different_one_is() {
    let _alone = alone();
    let dir = scratch("aab");
    let file = dir.join("aab.toml");
    std::fs::write(&file, AAB).unwrap();
    let f = file.to_str().unwrap();
    let o = bakeoff(&["study", "check", f], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("repetitions = \"auto\": a pilot of 5 blocks"),
        "{out}"
    );
    // 'flushed again' is 'flushed' in all but its name: the check reads its runs and
    // adds no third server of that set-up to every block.
    assert!(
        out.contains("A/A check: 'flushed again' is 'flushed' in all but its name"),
        "{out}"
    );

    let o = bakeoff(&["study", "run", f], None);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("the pilot's 5 blocks ask for"),
        "judged after the pilot: {err}"
    );
    let db = dir.join("aab.db");
    let o = bakeoff(&["compare", db.to_str().unwrap(), "--format", "json"], None);
    let (json, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let m: serde_json::Value = serde_json::from_str(&json).unwrap();
    let row = |variant: &str| {
        m["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"] == variant)
            .unwrap_or_else(|| panic!("no comparison for {variant}: {json}"))
            .clone()
    };
    let again = row("flushed again");
    let two = row("unflushed");
    assert_eq!(again["method"], "paired", "{again}");
    let blocks = again["blocks"].as_u64().unwrap();
    assert_eq!(blocks, 5, "{again}");
    // The identical pair: its blocks' log ratios, at 99.9% (t, df = n - 1), contain 0.
    let logs = block_log_ratios(&m, "flushed again", "flushed");
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let t999 = 8.61; // t(0.9995; 4)
    assert!(mean.abs() <= t999 * sd / n.sqrt(), "{logs:?}");
    // The different one: different, by more than the 3% margin; the pair a family of two.
    assert_eq!(two["verdict"], "different", "{two}");
    assert_eq!(two["family"], 2, "{two}");
    assert!(two["ratio"].as_f64().unwrap().ln().abs() > 0.1, "{two}");
    // The A/A check was made, from 'flushed again', and is in the model; 5 blocks of
    // three runs, none of them a hidden twin.
    assert_eq!(m["aa"][0]["threads"], 8, "{json}");
    assert_eq!(m["aa"][0]["blocks"], 5, "{json}");
    assert_eq!(m["aa"][0]["twin"], "flushed again", "{json}");
    let store = bakeoff_store::Store::open(&db).unwrap();
    let (study, _) = store.studies().unwrap()[0].clone();
    let names: Vec<String> = store
        .runs(Some(study))
        .unwrap()
        .iter()
        .map(|r| r["variant_name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 15, "5 blocks x 3 variants: {names:?}");
    assert!(!names.iter().any(|n| n.contains("(A/A)")), "{names:?}");
    drop(store);
    assert!(m["auto"]["blocks"].as_u64() == Some(blocks), "{json}");
    // The machine was timed before the pilot, once, on every CPU, and the model carries it.
    let steady: Vec<_> = m["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["probe"] == "steadiness")
        .collect();
    assert_eq!(steady.len(), 1, "{json}");
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(steady[0]["threads"].as_u64(), Some(cpus), "{json}");
    let spread = m["auto"]["steadiness"].as_f64().unwrap();
    assert!(
        (spread * 100.0 - steady[0]["figure"].as_f64().unwrap()).abs() < 1e-9 && spread >= 0.0,
        "{json}"
    );

    let o = bakeoff(&["compare", db.to_str().unwrap()], None);
    let (out, _) = text(&o);
    assert!(out.contains("paired within blocks"), "{out}");
    assert!(
        out.contains("The A/A runs ('flushed again', listed the same as the first variant, over all 5 blocks"),
        "{out}"
    );
    // The answer first: a line per workload with its verdicts before any table; the
    // sentences under the workload's name, said once.
    let head: Vec<&str> = out.lines().take_while(|l| !l.is_empty()).collect();
    assert!(
        head.iter()
            .any(|l| l.starts_with("oltp_update_non_index: ") && l.contains(" of 2 differ")),
        "the first lines decide: {out}"
    );
    assert!(
        out.contains(" of 2 comparison(s) differ (each of the study's 2 tested at 2.50%")
            && out.contains("At 8 threads, unflushed is"),
        "{out}"
    );
    assert!(!out.contains("in short:"), "no closing repeat: {out}");
    let o = bakeoff(
        &[
            "compare",
            db.to_str().unwrap(),
            "--exclude-suspect",
            "--format",
            "json",
        ],
        None,
    );
    let (json, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let m: serde_json::Value = serde_json::from_str(&json).unwrap();
    if let Some(s) = m["suspects"].as_array() {
        assert!(s.iter().all(|x| x["excluded"] == true), "{json}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Suspect-run flags read the measured ticks only: a run's warmup (--warmup-time) leaves no
/// tick behind, so a cold start it absorbed cannot read as drift.
#[test]
fn a_runs_warmup_leaves_no_ticks_for_the_drift_check() {
    let _alone = alone();
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--table-size=500",
            "--time=3",
            "--warmup-time=2",
            "--format=json",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ticks: Vec<f64> = j["result"]["ticks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["t"].as_f64().unwrap())
        .collect();
    assert_eq!(ticks.len(), 3, "{ticks:?}");
    assert!(
        ticks[0] < 1.5,
        "ticks count from the end of the warmup: {ticks:?}"
    );
}
