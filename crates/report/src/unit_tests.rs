//! The throughput unit through every view, over hand-built runs: a TPC-C workload reads in
//! NOPM (60 x the stored New-Orders per second) with CPU per New-Order and its transactions'
//! table; a sysbench workload reads as it always has.

use bakeoff_store::{RunKey, RunRecord};
use serde_json::json;

use crate::source::{Source, StudySource};
use crate::unit::Unit;
use crate::{build, charts, compare_table, html, Model, Options};

/// Two allocators at 2 threads, two blocks; jemalloc 10% faster, 5% less CPU per event.
fn runs() -> Vec<bakeoff_store::Row> {
    let mut out = Vec::new();
    for (variant, name, tps, cpu) in [
        (0, "allocator=glibc", [80.0, 84.0], 400.0),
        (1, "allocator=jemalloc", [88.0, 92.4], 380.0),
    ] {
        for (rep, tps) in tps.into_iter().enumerate() {
            let r = RunRecord {
                key: Some(RunKey {
                    repetition: rep as u32 + 1,
                    variant,
                    workload: 0,
                    threads: 2,
                }),
                variant_name: name.into(),
                workload_label: "w".into(),
                status: "ok".into(),
                tps,
                p99_ms: 40.0,
                server_cpu_us_per_event: Some(cpu + rep as f64),
                ..RunRecord::default()
            };
            let mut row = r.row();
            row.insert("id".into(), json!(out.len() + 1));
            out.push(row);
        }
    }
    out
}

/// TPC-C's five classes as a run's summary holds them: 45% New-Order.
fn classes() -> Vec<serde_json::Value> {
    [(45, 20.0), (43, 10.0), (4, 2.5), (4, 35.0), (4, 3.0)]
        .into_iter()
        .map(|(events, p90)| json!({"events": events, "p90_ms": p90, "p99_ms": 2.0 * p90}))
        .collect()
}

/// The model of `runs` under a study whose one workload is `workload` (its spec entry),
/// priced at 0.72 an hour; `classes`: whether its runs carry TPC-C's classes.
fn model(workload: serde_json::Value, with_classes: bool) -> Model {
    let spec = json!({
        "paired": true,
        "workloads": [workload],
        "platform": "x86",
        "prices": [{"platform": "x86", "on_demand_per_hour": 0.72}],
    });
    let runs = runs();
    let classes = match with_classes {
        true => (1..=runs.len() as i64).map(|id| (id, classes())).collect(),
        false => Default::default(),
    };
    let src = Source {
        name: "s".into(),
        set_aside: Vec::new(),
        studies: vec![StudySource {
            spec_json: spec.to_string(),
            runs,
            classes,
            ..StudySource::default()
        }],
    };
    build(&src, &Options::default()).unwrap()
}

#[test]
fn a_tpcc_workload_reads_in_nopm_sixty_times_its_stored_figure_and_cpu_per_new_order() {
    let m = model(json!({"label": "w", "kind": "tpcc"}), true);
    let w = &m.workloads[0];
    assert_eq!(w.unit, Unit::Nopm);
    let text = compare_table(&m);
    assert!(text.contains("NOPM") && text.contains("cpu/NO"), "{text}");
    assert!(!text.contains(" tps") && !text.contains("cpu/tx"), "{text}");
    // glibc's mean is 82 New-Orders a second: 4920 a minute; jemalloc's 5412.0 its peak.
    assert!(text.contains("4920.0"), "{text}");
    assert!(text.contains("peak 5412.0 NOPM at 2 threads"), "{text}");
    assert!(text.contains("CPU per New-Order"), "{text}");
    assert!(text.contains("cost per million New-Orders"), "{text}");
    assert!(text.contains("(5412.0 NOPM at 2 threads)"), "{text}");
    // The ratio is the stored figures' (a ratio of NOPM is the same ratio).
    assert!(text.contains("1.10x"), "{text}");
    let c = &m.comparisons[0];
    assert!((c.ratio.unwrap() - 90.2 / 82.0).abs() < 1e-12);
    // JSON: the stored figures as they are, the unit, and NOPM beside them.
    let json = serde_json::to_value(&m).unwrap();
    let p = &json["workloads"][0]["curves"][0]["points"][0];
    assert_eq!(json["workloads"][0]["unit"], "nopm");
    assert_eq!(
        (p["mean_tps"].as_f64(), p["mean_nopm"].as_f64()),
        (Some(82.0), Some(4920.0))
    );
    let a = &json["workloads"][0]["curves"][1]["analysis"];
    assert_eq!(
        a["peak_nopm"].as_f64().unwrap(),
        a["peak_tps"].as_f64().unwrap() * 60.0
    );
    assert_eq!(json["costs"][0]["peak_nopm"].as_f64(), Some(4920.0));
    // The page and the charts.
    let page = html(&m);
    for said in [
        "NOPM (mean)",
        "server CPU us/NO",
        "CPU/NO ratio",
        "peak NOPM",
        "Cost per million New-Orders",
    ] {
        assert!(page.contains(said), "{said}");
    }
    let all = charts(&m);
    let throughput = all.iter().find(|c| c.name == "w-throughput").unwrap();
    assert!(throughput
        .svg
        .contains("throughput (New-Orders per minute, NOPM)"));
    assert!(throughput.svg.contains("4920.0 NOPM"));
    let cpu = all.iter().find(|c| c.name == "w-server-cpu").unwrap();
    assert!(cpu.svg.contains("us per New-Order"));
}

#[test]
fn a_tpcc_workload_shows_each_transactions_share_and_latency() {
    let m = model(json!({"label": "w", "kind": "tpcc"}), true);
    let p = &m.workloads[0].curves[0].points[0];
    assert_eq!(p.transactions.len(), 5);
    assert_eq!(p.transactions[1].name, "payment");
    assert!((p.transactions[1].share - 0.43).abs() < 1e-12);
    let page = html(&m);
    let at = page
        .find("<h3>Transactions</h3>")
        .expect("the transactions' table");
    let table = &page[at..];
    assert!(table.contains("<th>New-Order</th>") && table.contains("<th>Stock-Level</th>"));
    assert!(
        table.contains("45.0%<br><small>p90 20.0 · p99 40.0</small>"),
        "{table}"
    );
}

#[test]
fn a_sysbench_workload_reads_as_before() {
    let m = model(json!({"label": "w", "kind": "oltp_read_write"}), false);
    assert_eq!(m.workloads[0].unit, Unit::Tps);
    let text = compare_table(&m);
    assert!(
        !text.contains("NOPM") && !text.contains("New-Order"),
        "{text}"
    );
    assert!(text.contains(" tps ") && text.contains("cpu/tx"), "{text}");
    assert!(text.contains("peak 90.2 tps at 2 threads"), "{text}");
    assert!(text.contains("cost per million transactions"), "{text}");
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["workloads"][0]["unit"], "tps");
    assert!(json["workloads"][0]["curves"][0]["points"][0]
        .get("mean_nopm")
        .is_none());
    let page = html(&m);
    assert!(page.contains("tps (mean)") && page.contains("server CPU us/txn"));
    assert!(!page.contains("NOPM") && !page.contains("<h3>Transactions"));
    let throughput = charts(&m)
        .into_iter()
        .find(|c| c.name == "w-throughput")
        .unwrap();
    assert!(throughput.svg.contains("throughput (transactions/s)"));
}

#[test]
fn a_database_that_kept_no_kinds_knows_tpcc_by_its_runs_classes() {
    let m = model(json!({"label": "w"}), true);
    assert_eq!(m.workloads[0].unit, Unit::Nopm);
    let m = model(json!({"label": "w"}), false);
    assert_eq!(m.workloads[0].unit, Unit::Tps);
    // A kind the spec keeps decides, classes or not.
    let m = model(
        json!({"label": "w", "spec": {"kind": "oltp_point_select"}}),
        true,
    );
    assert_eq!(m.workloads[0].unit, Unit::Tps);
}
