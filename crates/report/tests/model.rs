//! The report model from a results database written the way the study runner writes it.

use bakeoff_report::{build, compare_table};
use bakeoff_store::{RunKey, RunRecord, Store};

fn db() -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("bakeoff-report-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    p
}

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
        p99_ms: 1.0 + f64::from(threads) / 100.0,
        summary_json: "{}".into(),
        manifest_json: "{}".into(),
        ..Default::default()
    }
}

#[test]
fn curves_comparisons_and_problems_from_a_stored_study() {
    let mut s = Store::open(&db()).unwrap();
    let study = s.begin_study("alloc", "h", "{}", false).unwrap();
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
    for (t, tps) in glibc {
        for (rep, x) in tps.iter().enumerate() {
            s.record(
                study,
                &run(0, "allocator=glibc", t, rep as u32 + 1, *x, "ok"),
            )
            .unwrap();
        }
    }
    for (t, tps) in jemalloc {
        for (rep, x) in tps.iter().enumerate() {
            s.record(
                study,
                &run(1, "allocator=jemalloc", t, rep as u32 + 1, *x, "ok"),
            )
            .unwrap();
        }
    }
    s.record(study, &run(1, "allocator=jemalloc", 64, 1, 0.0, "failed"))
        .unwrap();
    let m = build("alloc", &s.runs(Some(study)).unwrap(), None).unwrap();

    assert_eq!(
        m.baseline, "allocator=glibc",
        "the first variant by default"
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
    let at = |t: u32| m.comparisons.iter().find(|c| c.threads == t).unwrap();
    assert!(!at(1).significant, "{:?}", at(1));
    assert!(
        at(16).significant && (at(16).ratio - 2.0).abs() < 0.05,
        "{:?}",
        at(16)
    );
    let (lo, hi) = at(16).ci.unwrap();
    assert!(lo > 1.8 && hi < 2.2);
    assert_eq!(m.problems.len(), 1);
    assert!(m.problems[0].reason.contains("exited"));

    let table = compare_table(&m);
    assert!(
        table.contains("1.97x") && table.contains("significant"),
        "{table}"
    );
    assert!(table.contains("runs without a figure"), "{table}");

    // Priced: 0.72/hour at the 6000 tps peak = 0.72 / (6000 * 3600) * 1e6 per million.
    let priced = m.clone().with_costs(r#"{"platform": "x86", "prices": [{"platform": "x86", "on_demand_per_hour": 0.72, "reserved_per_hour": null}]}"#);
    let je = priced
        .costs
        .iter()
        .find(|c| c.variant == "allocator=jemalloc")
        .unwrap();
    assert!(
        (je.on_demand_per_million - 0.72 / (6000.0 * 3600.0) * 1e6).abs() < 1e-9,
        "{je:?}"
    );
    assert!(compare_table(&priced).contains("cost per million transactions"));
    assert!(
        m.clone().with_costs("{}").costs.is_empty(),
        "no price table, no costs"
    );
    assert!(build("alloc", &s.runs(Some(study)).unwrap(), Some("hoard"))
        .unwrap_err()
        .contains("allocator=glibc"));
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(
        json["workloads"][0]["curves"][1]["analysis"]["peak_threads"],
        16
    );
}

/// Tags open and close in order (a small well-formedness check for the SVG we write).
fn balanced(xml: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find('<') {
        let end = rest[i..].find('>').ok_or("unclosed <")? + i;
        let tag = &rest[i + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.starts_with('?') || tag.ends_with('/') {
            continue;
        }
        let name = tag.split_whitespace().next().unwrap_or("");
        if let Some(closing) = name.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == closing => {}
                other => return Err(format!("</{closing}> closes {other:?}")),
            }
        } else {
            stack.push(name.to_string());
        }
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed {stack:?}"))
    }
}

#[test]
fn the_html_and_its_charts_are_self_contained_and_well_formed() {
    let rows: Vec<bakeoff_store::Row> = [
        (0, "a<b", 1, 100.0),
        (0, "a<b", 4, 300.0),
        (1, "c", 1, 120.0),
        (1, "c", 4, 390.0),
    ]
    .iter()
    .map(|(v, name, t, tps)| {
        serde_json::from_value(serde_json::json!({
            "variant": v, "variant_name": name, "workload": 0, "workload_label": "oltp_read_only",
            "threads": t, "status": "ok", "tps": tps, "p99_ms": 2.0, "reason": null
        }))
        .unwrap()
    })
    .collect();
    let m = build("s", &rows, None).unwrap();
    let svg = bakeoff_report::throughput_chart(&m.workloads[0]);
    balanced(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    assert!(
        svg.contains("a&lt;b")
            && svg.contains("client threads (log2 scale)")
            && svg.contains("<title>"),
        "{svg}"
    );
    let page = bakeoff_report::html(&m);
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
    for external in ["<script", "http://", "https://", "@import", "url("] {
        let without_ns = page.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !without_ns.contains(external),
            "the page must work offline: found {external}"
        );
    }
    balanced(
        &page
            .replace("<!DOCTYPE html>", "")
            .replace("<meta charset=\"utf-8\">", ""),
    )
    .unwrap();
}
