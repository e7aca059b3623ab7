//! The report model: from a results database written the way the study runner writes it, from
//! a real study's fixed database (snapshot), and from two machines merged.

mod common;

use bakeoff_report::{build, charts, compare_table, html, Options, Source};
use bakeoff_store::{RunKey, RunRecord, Store};
use common::{balanced, fixture, TempDb};

fn run(variant: u32, name: &str, threads: u32, rep: u32, tps: f64, status: &str) -> RunRecord {
    RunRecord {
        key: Some(RunKey {
            repetition: rep,
            variant,
            workload: 0,
            threads,
        }),
        variant_name: name.into(),
        workload_label: "oltp_point_select".into(),
        status: status.into(),
        reason: (status != "ok").then(|| "the server exited during the run".into()),
        tps,
        p99_ms: 1.0 + f64::from(threads),
        client_bound: threads == 16 && rep == 1,
        summary_json: "{}".into(),
        manifest_json: "{}".into(),
        ..Default::default()
    }
}

fn model(db: &std::path::Path, opts: &Options) -> bakeoff_report::Model {
    let store = Store::open(db).unwrap();
    build(&Source::from_store(&store, None).unwrap(), opts).unwrap()
}

#[test]
fn curves_comparisons_and_problems_from_a_stored_study() {
    let db = TempDb::new("synthetic");
    let mut s = Store::open(db.path()).unwrap();
    let spec = r#"{"platform": "x86", "prices": [{"platform": "x86", "on_demand_per_hour": 0.72, "reserved_per_hour": null}]}"#;
    let study = s.begin_study("alloc", "h", spec, false).unwrap();
    // glibc flattens out past 4 threads; jemalloc keeps 2x at 16, a clear difference; at 1
    // thread they are within noise.
    let glibc = [
        (1, [1000.0, 1100.0, 900.0]),
        (4, [3000.0, 3050.0, 2950.0]),
        (16, [3100.0, 3000.0, 3050.0]),
    ];
    let jemalloc = [
        (1, [1050.0, 950.0, 1150.0]),
        (4, [3900.0, 4000.0, 4100.0]),
        (16, [6000.0, 6100.0, 5900.0]),
    ];
    for (v, name, curve) in [
        (0, "allocator=glibc", glibc),
        (1, "allocator=jemalloc", jemalloc),
    ] {
        for (t, tps) in curve {
            for (rep, x) in tps.iter().enumerate() {
                s.record(study, &run(v, name, t, rep as u32 + 1, *x, "ok"))
                    .unwrap();
            }
        }
    }
    s.record(study, &run(1, "allocator=jemalloc", 64, 1, 0.0, "failed"))
        .unwrap();
    drop(s);
    let m = model(db.path(), &Options::default());

    assert_eq!(
        m.baseline, "every variant against allocator=glibc",
        "the first axis at its first value by default"
    );
    let w = &m.workloads[0];
    assert_eq!(w.curves.len(), 2);
    let g = &w.curves[0];
    assert_eq!(
        g.points.iter().map(|p| p.threads).collect::<Vec<_>>(),
        [1, 4, 16]
    );
    assert_eq!(
        (g.analysis.peak_threads, g.analysis.saturation_threads),
        (16, 4)
    );
    // p99 is 1 + threads ms here: within 10 ms up to 4 threads.
    assert_eq!(g.analysis.best_within_p99.as_ref().unwrap().threads, 4);
    let at = |t: u32| m.comparisons.iter().find(|c| c.threads == t).unwrap();
    assert!(!at(1).significant, "{:?}", at(1));
    assert!(
        at(16).significant && (at(16).ratio.unwrap() - 2.0).abs() < 0.05,
        "{:?}",
        at(16)
    );
    let (lo, hi) = at(16).ci.unwrap();
    assert!(lo > 1.8 && hi < 2.2);
    assert_eq!(m.problems.len(), 1);
    assert!(m.problems[0].reason.contains("exited"));
    assert_eq!(
        m.warnings.len(),
        2,
        "one client-bound run per variant at 16"
    );
    assert_eq!(g.points[2].client_bound_runs, 1);

    // Priced: 0.72/hour at the 6000 tps peak = 0.72 / (6000 * 3600) * 1e6 per million.
    let je = m
        .costs
        .iter()
        .find(|c| c.variant == "allocator=jemalloc")
        .unwrap();
    assert!(
        (je.on_demand_per_million - 0.72 / (6000.0 * 3600.0) * 1e6).abs() < 1e-9,
        "{je:?}"
    );
    assert_eq!(je.reserved_per_million, None);

    let table = compare_table(&m);
    for wanted in [
        "1.97x",
        "excludes 1",
        "allocator=glibc",
        "runs without a figure",
        "cost per million transactions",
        "client-bound",
        "best with p99 within 10 ms",
    ] {
        assert!(table.contains(wanted), "{wanted} in:\n{table}");
    }
    let store = Store::open(db.path()).unwrap();
    let src = Source::from_store(&store, None).unwrap();
    let e = build(
        &src,
        &Options {
            baseline: Some("hoard".into()),
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(e.contains("allocator=glibc"), "{e}");
    assert!(Source::from_store(&store, Some("nope"))
        .err()
        .unwrap()
        .contains("alloc"));
}

/// The fixture's baseline cell for jemalloc on 2 CPUs at 4 threads of read_write fails in
/// both repetitions: that row must say so instead of comparing with another CPU count.
const FAILED_BASELINE: &str = "UPDATE runs SET status = 'failed', reason = 'the server exited during the run (signal 9)'
    WHERE variant_name = 'allocator=glibc cpus=0-1' AND workload_label = 'oltp_read_write' AND threads = 4;";

/// The model of the fixed database, field by field, against tests/snapshots/fixture-model.json.
/// After a deliberate change to the model, write the new snapshot with
/// `UPDATE_SNAPSHOTS=1 cargo test -p bakeoff-report` and review its diff.
#[test]
fn the_model_of_a_real_study_matches_its_snapshot() {
    let db = fixture("snapshot", FAILED_BASELINE);
    let m = model(db.path(), &Options::default());
    let got = serde_json::to_string_pretty(&m).unwrap() + "\n";
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/fixture-model.json");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; write it with UPDATE_SNAPSHOTS=1", path.display()));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "the model differs from {} from line {}:\n got: {}\nwant: {}\n(if the change is meant, rerun with UPDATE_SNAPSHOTS=1 and review the diff)",
            path.display(),
            line + 1,
            got.lines().nth(line).unwrap_or("<end>"),
            want.lines().nth(line).unwrap_or("<end>")
        );
    }
    // What the snapshot holds, said in words: 2 workloads x 4 variants, CPUs as an axis,
    // every cell's series over time, memory per variant, verified variants.
    assert_eq!(m.workloads.len(), 2);
    assert_eq!(m.workloads[0].curves.len(), 4);
    assert_eq!(m.workloads[0].cpu_counts(), [1, 2]);
    assert!(m.workloads[0]
        .curves
        .iter()
        .all(|c| c.series.len() == 2 && c.series.iter().all(|s| s.ticks.len() >= 3)));
    assert_eq!(m.memory.len(), 4);
    assert!(m
        .memory
        .iter()
        .all(|s| s.points.iter().all(|p| p.rss_mib > 10.0)));
    assert_eq!(m.environments.len(), 4);
    assert!(m
        .environments
        .iter()
        .all(|e| e.checks.iter().all(|c| c["ok"] == true)));
    assert_eq!(m.costs.len(), 8, "every curve priced on x86");
    // Along the first axis, at the same CPUs; the failed baseline cell is named.
    assert_eq!(m.axes, ["allocator", "cpus"]);
    let row = |v: &str, w: &str, t: u32| {
        m.comparisons
            .iter()
            .find(|c| c.variant == v && c.workload == w && c.threads == t)
            .unwrap_or_else(|| panic!("no row {v} {w} {t}"))
    };
    let je2 = row("allocator=jemalloc cpus=0-1", "oltp_point_select", 4);
    assert_eq!(je2.against, "allocator=glibc cpus=0-1");
    assert!(je2.ratio.is_some());
    let failed = row("allocator=jemalloc cpus=0-1", "oltp_read_write", 4);
    assert_eq!(failed.ratio, None);
    assert_eq!(
        failed.note.as_deref(),
        Some("no baseline: allocator=glibc cpus=0-1 failed: the server exited during the run (signal 9)")
    );
    assert!(
        m.comparisons
            .iter()
            .all(|c| !c.variant.starts_with("allocator=glibc")),
        "glibc rows are the baselines"
    );
}

#[test]
fn merged_machines_are_variants_side_by_side_with_their_own_prices() {
    let x86 = fixture("x86", "");
    // The same study as run on an ARM machine, which costs less per hour.
    let arm = fixture(
        "arm",
        r#"UPDATE studies SET spec_json = json_set(spec_json, '$.platform', 'arm',
               '$.prices', json('[{"platform": "arm", "on_demand_per_hour": 0.34, "reserved_per_hour": 0.2}]'));
           UPDATE runs SET tps = tps * 0.8;"#,
    );
    let all = TempDb::new("all");
    let mut s = Store::open(all.path()).unwrap();
    s.merge_from(x86.path()).unwrap();
    s.merge_from(arm.path()).unwrap();
    drop(s);
    let m = model(all.path(), &Options::default());
    let names: Vec<&str> = m.workloads[0]
        .curves
        .iter()
        .map(|c| c.variant.as_str())
        .collect();
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(
        names[0].starts_with("x86 ") && names[4].starts_with("arm "),
        "{names:?}"
    );
    // By default each machine's variants are compared along the study's first axis, on that
    // machine: arm jemalloc against arm glibc at the same CPUs.
    let arm_je = m
        .comparisons
        .iter()
        .find(|c| c.variant == "arm allocator=jemalloc cpus=0")
        .unwrap();
    assert_eq!(arm_je.against, "arm allocator=glibc cpus=0");
    // Along the platform axis: each arm variant against the same variant on x86.
    let m = model(
        all.path(),
        &Options {
            baseline: Some("platform=x86".into()),
            ..Options::default()
        },
    );
    let arm_vs_x86 = m
        .comparisons
        .iter()
        .find(|c| c.variant == format!("arm {}", &names[0][4..]))
        .unwrap();
    assert_eq!(arm_vs_x86.against, names[0]);
    assert!(
        (arm_vs_x86.ratio.unwrap() - 0.8).abs() < 1e-9,
        "{arm_vs_x86:?}"
    );
    let cost = |platform: &str| {
        m.costs
            .iter()
            .find(|c| c.platform == platform && c.workload == "oltp_point_select")
            .unwrap()
            .on_demand_per_million
    };
    // Half the price for 0.8 of the throughput: 0.5 / 0.8 of the cost.
    assert!((cost("arm") / cost("x86") - 0.5 / 0.8).abs() < 1e-9);
}

#[test]
fn every_chart_is_well_formed_svg_and_the_page_is_self_contained() {
    let db = fixture("charts", "");
    let m = model(db.path(), &Options::default());
    let all = charts(&m);
    let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
    for wanted in [
        "oltp_point_select-throughput",
        "oltp_point_select-throughput-1cpus",
        "oltp_point_select-latency",
        "oltp_point_select-server-cpu",
        "oltp_read_write-4threads-p99-over-time",
        "server-rss",
        "server-vsz",
    ] {
        assert!(names.contains(&wanted), "{wanted} in {names:?}");
    }
    let strict = resvg::usvg::Options::default();
    for c in &all {
        balanced(&c.svg).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        // A strict XML and SVG parser (the one the PNG charts go through) takes every chart.
        resvg::usvg::Tree::from_str(&c.svg, &strict).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert!(c.svg.contains("<title>"), "{}: values on hover", c.name);
    }
    let page = html(&m);
    assert!(page.starts_with("<!DOCTYPE html>"));
    let without_ns = page.replace("http://www.w3.org/2000/svg", "");
    for external in ["<script", "http://", "https://", "@import", "url("] {
        assert!(
            !without_ns.contains(external),
            "the page must work offline: found {external}"
        );
    }
    balanced(&page.replace("<!DOCTYPE html>", "")).unwrap();
    for section in [
        "Cost per million transactions",
        "Environment",
        "Server memory",
        "best with p99",
        "Over time",
    ] {
        assert!(page.contains(section), "{section}");
    }
}

#[test]
fn baseline_forms_pick_an_axis_a_value_or_one_variant_and_a_bad_one_lists_what_exists() {
    let db = fixture("baselines", "");
    let with = |b: &str| {
        let store = Store::open(db.path()).unwrap();
        build(
            &Source::from_store(&store, None).unwrap(),
            &Options {
                baseline: Some(b.into()),
                ..Options::default()
            },
        )
    };
    let against = |m: &bakeoff_report::Model, v: &str| {
        m.comparisons
            .iter()
            .find(|c| c.variant == v)
            .map(|c| c.against.clone())
    };
    // Along the second axis: each allocator's 2-CPU run against its own 1-CPU run.
    let m = with("cpus=0").unwrap();
    assert_eq!(
        against(&m, "allocator=jemalloc cpus=0-1").as_deref(),
        Some("allocator=jemalloc cpus=0")
    );
    assert_eq!(
        m.baseline,
        "every variant against cpus=0 at the same allocator"
    );
    // A whole variant name: one baseline for all, as before.
    let m = with("allocator=glibc cpus=0").unwrap();
    assert_eq!(
        against(&m, "allocator=jemalloc cpus=0-1").as_deref(),
        Some("allocator=glibc cpus=0")
    );
    for bad in ["allocator=hoard", "threads=4", "glibc"] {
        let e = with(bad).unwrap_err();
        assert!(
            e.contains(bad)
                && e.contains("allocator (glibc, jemalloc)")
                && e.contains("cpus (0, 0-1)"),
            "{bad}: {e}"
        );
    }
    // The terminal table names what each row is compared with, and says where a single
    // repetition leaves no interval.
    let table = compare_table(&with("allocator=glibc").unwrap());
    assert!(table.contains("allocator=glibc cpus=0-1"), "{table}");
}

#[test]
fn one_repetition_says_so_in_the_sentences_and_shows_no_spread() {
    let db = fixture(
        "one-rep",
        "DELETE FROM ticks WHERE run_id IN (SELECT id FROM runs WHERE repetition = 2);
         DELETE FROM runs WHERE repetition = 2;",
    );
    let m = model(db.path(), &Options::default());
    let w = &m.workloads[0];
    let first = &w.summary[0];
    assert!(
        first.starts_with("At ")
            && first.contains(" with cpus=")
            && first.contains("allocator=jemalloc is ")
            && first.contains("x allocator=glibc (1 repetition, no interval)."),
        "{:#?}",
        w.summary
    );
    // The sentence's ratio is the table's.
    let c = m
        .comparisons
        .iter()
        .filter(|c| c.workload == w.label)
        .max_by(|a, b| {
            let size = |c: &&bakeoff_report::Comparison| c.ratio.unwrap().ln().abs();
            size(a).total_cmp(&size(b))
        })
        .unwrap();
    assert!(
        first.contains(&format!("{:.2}x", c.ratio.unwrap())),
        "{first} vs {c:?}"
    );
    let table = compare_table(&m);
    assert!(table.contains("-: one repetition"), "{table}");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| !r.contains('%')),
        "a single repetition has no spread to show:\n{table}"
    );
    // The ratio chart: one per CPU count (each slice has its own baseline), a line at 1.0.
    let ratio: Vec<_> = charts(&m)
        .into_iter()
        .filter(|c| c.name.starts_with("oltp_point_select-ratio"))
        .collect();
    assert_eq!(ratio.len(), 2, "one per CPU count");
    assert!(ratio[0]
        .title
        .contains("relative to allocator=glibc cpus=0"));
    assert!(
        ratio[0].svg.contains("stroke-dasharray=\"4 3\""),
        "the line at 1.0"
    );
}

/// A database written by bakeoff 846bfca (before layouts were versioned): a real two-axis
/// study (allocator x cpus), one repetition. Today's report compares along its axes.
#[test]
fn a_database_of_an_earlier_bakeoff_reports_along_its_axes() {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../store/tests/fixtures/written-by-846bfca.db");
    let db = TempDb::new("earlier");
    std::fs::copy(&from, db.path()).unwrap();
    let m = model(db.path(), &Options::default());
    assert_eq!(m.axes, ["allocator", "cpus"]);
    let row = m
        .comparisons
        .iter()
        .find(|c| c.variant == "allocator=jemalloc cpus=0-1" && c.threads == 4)
        .unwrap();
    assert_eq!(row.against, "allocator=glibc cpus=0-1");
    assert!(row.ratio.is_some() && row.ci.is_none(), "{row:?}");
    assert!(m.workloads[0].summary[0].contains("(1 repetition, no interval)"));
}

#[test]
fn a_client_that_shared_the_servers_cpus_is_a_warning_and_shows_in_the_environment() {
    let db = fixture(
        "shared",
        r#"UPDATE runs SET manifest_json = json_set(manifest_json, '$.client',
               json('{"cpus": "0-1", "chosen": "everywhere", "shared": "0-1"}'))
           WHERE variant_name = 'allocator=glibc cpus=0-1';"#,
    );
    let m = model(db.path(), &Options::default());
    let shared: Vec<_> = m
        .warnings
        .iter()
        .filter(|w| w.text.starts_with("client shares CPUs 0-1 with the server"))
        .collect();
    assert!(!shared.is_empty());
    assert!(shared
        .iter()
        .all(|w| w.variant == "allocator=glibc cpus=0-1"));
    let page = html(&m);
    assert!(page.contains("shares CPUs 0-1 with the server"));
}

#[test]
fn listed_variants_compare_with_the_first_listed_and_the_page_names_the_baseline() {
    let db = fixture(
        "listed",
        "UPDATE studies SET spec_json = json_set(spec_json, '$.listed', json('true'));",
    );
    let m = model(db.path(), &Options::default());
    assert_eq!(m.axes, ["variant"]);
    assert!(m
        .comparisons
        .iter()
        .all(|c| c.against == "allocator=glibc cpus=0"));
    assert_eq!(m.baseline, "every variant against 'allocator=glibc cpus=0'");
    let page = html(&m);
    assert!(
        page.contains("<th class=\"l\">against</th>"),
        "the against column"
    );
    assert!(page.contains("<td class=\"l\">allocator=glibc cpus=0</td>"));
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["comparisons"][0]["against"], "allocator=glibc cpus=0");
}

/// A workload whose runs wrote while their servers took turns says, beside its verdicts, what
/// bakeoff measured of turns on write workloads; one that took turns and only read, and one
/// that wrote one server at a time, do not. Read from what each run recorded.
#[test]
fn a_workload_that_wrote_in_turns_carries_the_caveat_beside_its_verdicts() {
    let db = TempDb::new("turns-caveat");
    let mut s = Store::open(db.path()).unwrap();
    let study = s.begin_study("turns", "h", "{}", false).unwrap();
    let summary = |turns: bool, writes: u32| match turns {
        true => format!(r#"{{"turns":{{"slice_ms":50}},"total":{{"writes":{writes}}}}}"#),
        false => format!(r#"{{"total":{{"writes":{writes}}}}}"#),
    };
    let shapes = [
        (0, "oltp_write_only", true, 4000),
        (1, "oltp_point_select", true, 0),
        (2, "oltp_update_index", false, 4000),
    ];
    for (workload, label, turns, writes) in shapes {
        for (variant, name) in [(0, "a"), (1, "b")] {
            for rep in 1..=3 {
                let r = RunRecord {
                    key: Some(RunKey {
                        repetition: rep,
                        variant,
                        workload,
                        threads: 4,
                    }),
                    variant_name: name.into(),
                    workload_label: label.into(),
                    status: "ok".into(),
                    tps: 1000.0 + f64::from(variant * 500 + rep),
                    summary_json: summary(turns, writes),
                    manifest_json: "{}".into(),
                    ..Default::default()
                };
                s.record(study, &r).unwrap();
            }
        }
    }
    drop(s);
    let m = model(db.path(), &Options::default());
    let said = |label: &str| {
        let w = m.workloads.iter().find(|w| w.label == label).unwrap();
        w.summary
            .iter()
            .any(|l| l.contains("wrote while their servers took turns"))
    };
    assert!(said("oltp_write_only"), "{:?}", m.workloads[0].summary);
    assert!(!said("oltp_point_select"), "read only");
    assert!(!said("oltp_update_index"), "one server at a time");
}

/// p99 decided per comparison, in a family of its own: b's p99 1.5x a's in every block is
/// different; where the servers took turns of 50 ms and a run's p99 reached 30 ms, no latency
/// verdict, and the table says why.
#[test]
fn p99_is_decided_in_its_own_family_unless_turns_cut_the_tail() {
    let db = TempDb::new("latency-verdict");
    let mut s = Store::open(db.path()).unwrap();
    let study = s
        .begin_study("latency", "h", r#"{"paired":true}"#, false)
        .unwrap();
    let shapes = [(0, "oltp_point_select", 2.0), (1, "oltp_write_only", 20.0)];
    for (workload, label, p99) in shapes {
        for (variant, name) in [(0u32, "a"), (1, "b")] {
            for rep in 1..=6 {
                let wobble = 1.0 + 0.01 * f64::from(rep % 3);
                let r = RunRecord {
                    key: Some(RunKey {
                        repetition: rep,
                        variant,
                        workload,
                        threads: 4,
                    }),
                    variant_name: name.into(),
                    workload_label: label.into(),
                    status: "ok".into(),
                    tps: 1000.0 * wobble,
                    p99_ms: p99 * wobble * if variant == 1 { 1.5 } else { 1.0 },
                    summary_json: format!(
                        r#"{{"turns":{{"slice_ms":50}},"total":{{"writes":0,"latency":{{"p999_ms":{}}}}}}}"#,
                        40.0 + f64::from(variant)
                    ),
                    manifest_json: "{}".into(),
                    ..Default::default()
                };
                s.record(study, &r).unwrap();
            }
        }
    }
    drop(s);
    let m = model(db.path(), &Options::default());
    let of = |label: &str| m.comparisons.iter().find(|c| c.workload == label).unwrap();
    let fast = of("oltp_point_select");
    let l = fast.latency.as_ref().expect("a latency verdict");
    assert_eq!(l.verdict, bakeoff_report::Verdict::Different, "{l:?}");
    assert!((l.ratio - 1.5).abs() < 1e-6 && l.family == 1, "{l:?}");
    let slow = of("oltp_write_only");
    assert!(slow.latency.is_none(), "{slow:?}");
    let note = slow.latency_note.as_deref().unwrap_or_default();
    assert!(
        note.contains("turns of 50 ms") && note.contains("30.6 ms"),
        "{note}"
    );
    let table = bakeoff_report::compare_table(&m);
    assert!(table.contains("p99: no latency verdict"), "{table}");
    assert!(table.contains("1.50x *"), "{table}");
    // p99.9 from the runs' summaries, beside p99 (the median over repetitions).
    assert!(table.contains("p99.9 ms"), "{table}");
    assert!(table.contains("41.00"), "{table}");
    let runs = Store::open(db.path()).unwrap().runs(None).unwrap();
    assert_eq!(runs[0]["p999_ms"], 40.0, "{:?}", runs[0]);
}

/// A study of a and b by turns, three blocks, each run's slices after its own turn at
/// `own_tps` (a's, b's) and after the other's at 100, four in sixteen after its own; b's runs
/// read `b_over_a` times a's.
fn penalty_study(name: &str, own_tps: [f64; 2], b_over_a: f64) -> bakeoff_report::Model {
    let db = TempDb::new(name);
    let mut s = Store::open(db.path()).unwrap();
    let study = s
        .begin_study("penalty", "h", r#"{"paired":true}"#, false)
        .unwrap();
    for (variant, name) in [(0u32, "a"), (1, "b")] {
        for rep in 1..=3 {
            let other = 1 - variant;
            let slice = |k: u32| {
                let after = if k % 4 == 0 { variant } else { other };
                let tps = match after == variant {
                    true => own_tps[variant as usize],
                    false => 100.0,
                };
                bakeoff_store::TickRecord {
                    t: f64::from(k) * 0.05,
                    tps,
                    json: format!(r#"{{"after":{after},"position":0}}"#),
                    ..Default::default()
                }
            };
            let wobble = if variant == 1 {
                b_over_a * (1.0 + 0.002 * f64::from(rep % 2))
            } else {
                1.0
            };
            let r = RunRecord {
                key: Some(RunKey {
                    repetition: rep,
                    variant,
                    workload: 0,
                    threads: 4,
                }),
                variant_name: name.into(),
                workload_label: "oltp_point_select".into(),
                status: "ok".into(),
                tps: 100.0 * wobble,
                summary_json: format!(
                    r#"{{"turns":{{"slice_ms":50,"server":{variant}}},"total":{{"writes":0}}}}"#
                ),
                manifest_json: "{}".into(),
                ticks: (1..=16).map(slice).collect(),
                ..Default::default()
            };
            s.record(study, &r).unwrap();
        }
    }
    drop(s);
    model(db.path(), &Options::default())
}

/// Runs that took turns record, per slice, the server before it: each variant's switch
/// penalty (its slices after its own turn against after another's) is said under the
/// workload, with the difference a ratio by turns carries.
#[test]
fn turns_say_each_variants_switch_penalty() {
    let m = penalty_study("switch-penalty", [105.0, 110.0], 1.0);
    let said = m.workloads[0].summary.join(" ");
    assert!(
        said.contains("a +5.0% +-0.0 (3 runs), b +10.0% +-0.0 (3 runs)"),
        "{said}"
    );
    assert!(said.contains("(5.0 points here)"), "{said}");
}

/// Where the variants' switch penalties differ by enough to move a verdict, the verdict says
/// so: b equals a by turns (equivalent), but b loses 10% after a's turns where a loses 5%
/// after b's, on three slices in four, so one server at a time would read b about 1.035x a,
/// a difference within the margin. Equal penalties move nothing. Every line says "by turns".
#[test]
fn a_verdict_that_switch_penalties_could_move_says_so() {
    let m = penalty_study("carry-over", [105.0, 110.0], 1.0);
    let c = &m.comparisons[0];
    assert_eq!(c.verdict, bakeoff_report::Verdict::Equivalent, "{c:?}");
    assert!(c.by_turns);
    let k = c.carry_over.expect("the penalties move it");
    assert_eq!(k.verdict, bakeoff_report::Verdict::DifferentWithin, "{k:?}");
    let expected = (0.75 * (1.1f64.ln() - 1.05f64.ln())).exp();
    assert!((k.shift - expected).abs() < 1e-9, "{k:?} {expected}");
    let opening = m.opening.verdicts.join(" ");
    assert!(
        opening.contains("taking turns may have moved 1 of them")
            && opening.contains("enabled = false"),
        "{opening}"
    );
    assert!(opening.contains("by turns"), "{opening}");
    let m = penalty_study("carry-over-equal", [110.0, 110.0], 1.0);
    assert!(
        m.comparisons[0].carry_over.is_none(),
        "{:?}",
        m.comparisons[0]
    );
    // A 5% difference by turns that the penalties would not undo stays as it is.
    let m = penalty_study("carry-over-decided", [105.0, 110.0], 1.3);
    let c = &m.comparisons[0];
    assert_eq!(c.verdict, bakeoff_report::Verdict::Different);
    assert!(c.carry_over.is_none(), "{c:?}");
}
