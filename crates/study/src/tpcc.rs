//! TPC-C in a study: its throughput is its committed New-Orders, as TPC-C measures it (tpmC
//! counts New-Orders), so a run's `tps` is New-Orders committed per second (NOPM / 60) and its
//! server CPU per event is per New-Order; a run whose audit (clause 9.2) fails did not do
//! TPC-C's work and is invalid; after each run the consistency conditions 1-4 are checked on
//! its servers, and a failure makes that run invalid (and every later run of its series on
//! the same tables, which fail it too).

use bakeoff_driver::ConnectOptions;
use bakeoff_store::{RunRecord, TickRecord};
use bakeoff_telemetry::WindowSummary;
use bakeoff_workload::tpcc::audit::{audit, passed, Realised, Verdict};
use bakeoff_workload::tpcc::check::check_at;
use bakeoff_workload::tpcc::{TpccOptions, T_ROLLBACK};

/// The committed New-Orders of a window: New-Order's events less its rollbacks.
fn committed(t: &WindowSummary) -> Option<u64> {
    let no = t.classes.first()?;
    Some(no.events.saturating_sub(no.tally[T_ROLLBACK]))
}

/// Turn a measured TPC-C run's figures into New-Orders (throughput, CPU per New-Order, each
/// tick's throughput), and judge its audit.
fn as_new_orders(r: &mut RunRecord, total: &WindowSummary, opts: &TpccOptions) {
    let Some(new_orders) = committed(total) else {
        return;
    };
    let events = total.events.max(1) as f64;
    r.tps = new_orders as f64 / r.seconds.max(1e-9);
    r.server_cpu_us_per_event = r
        .server_cpu_us_per_event
        .filter(|_| new_orders > 0)
        .map(|us| us * events / new_orders as f64);
    for t in &mut r.ticks {
        t.tps = tick_new_orders(t);
    }
    if r.status != "ok" {
        return;
    }
    let realised: [Realised; 5] = std::array::from_fn(|i| match total.classes.get(i) {
        Some(c) => Realised {
            events: c.events,
            tally: c.tally,
        },
        None => Realised::default(),
    });
    let lines = audit(&realised, opts.warehouses);
    if !passed(&lines) {
        let failed: Vec<String> = lines
            .iter()
            .filter(|l| l.verdict == Verdict::Fail)
            .map(|l| {
                format!(
                    "{} {:.2}% of {} (bounds {}-{}%)",
                    l.what, l.percent, l.of, l.low, l.high
                )
            })
            .collect();
        r.status = "invalid".into();
        r.reason = Some(format!(
            "the TPC-C audit (clause 9.2) failed: {}",
            failed.join("; ")
        ));
    }
}

/// A tick's committed New-Orders per second, from its stored window (a tick's or a turn's
/// slice's, flattened into its JSON).
fn tick_new_orders(t: &TickRecord) -> f64 {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&t.json) else {
        return t.tps;
    };
    let no = &v["classes"][0];
    match (
        no["events"].as_u64(),
        no["tally"][T_ROLLBACK].as_u64(),
        v["seconds"].as_f64(),
    ) {
        (Some(events), Some(rolled_back), Some(secs)) if secs > 0.0 => {
            events.saturating_sub(rolled_back) as f64 / secs
        }
        _ => t.tps,
    }
}

/// A measured run of `spec`'s workload, as a study keeps it: for TPC-C, its New-Orders and
/// its audit, then the consistency conditions on its servers (`endpoints`) after it. Nothing
/// for other workloads.
pub(crate) fn judge(
    r: &mut RunRecord,
    total: &WindowSummary,
    spec: &bakeoff_workload::WorkloadSpec,
    endpoints: &[ConnectOptions],
) {
    if spec.kind != bakeoff_workload::WorkloadKind::Tpcc {
        return;
    }
    as_new_orders(r, total, &spec.tpcc);
    if r.status == "ok" {
        if let Some(why) = check_series(endpoints) {
            r.status = "invalid".into();
            r.reason = Some(why);
        }
    }
}

/// The consistency conditions 1-4 on every server after a run: None when they hold, else why
/// not. Checked after each run, so the run after which they first fail, and every later run of
/// its series (on the same tables), are invalid.
fn check_series(endpoints: &[ConnectOptions]) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    for opts in endpoints {
        match rt.block_on(check_at(opts, false, &mut |_| {})) {
            Ok(found) => {
                let broken: Vec<String> = found
                    .iter()
                    .filter(|f| !f.holds())
                    .map(|f| {
                        format!(
                            "3.3.2.{} ({}): {} {}",
                            f.number, f.says, f.violations, f.counts
                        )
                    })
                    .collect();
                if !broken.is_empty() {
                    return Some(format!(
                        "the TPC-C consistency conditions failed after the series on {}: {}",
                        opts.endpoint,
                        broken.join("; ")
                    ));
                }
            }
            Err(e) => {
                return Some(format!(
                    "checking TPC-C's consistency on {} failed: {e}",
                    opts.endpoint
                ))
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_telemetry::ClassSummary;

    fn class(events: u64, tally: [u64; 4]) -> ClassSummary {
        ClassSummary {
            events,
            tally,
            ..ClassSummary::default()
        }
    }

    /// A 60 s run: 10,000 New-Orders of which `rolled_back`, and the rest of the mix; the
    /// server's CPU 2,000 us per event.
    fn run(rolled_back: u64, remote_payments: u64) -> (RunRecord, WindowSummary) {
        let t = WindowSummary {
            events: 23_000,
            classes: vec![
                class(10_000, [rolled_back, 100_000, 1_000, 0]),
                class(10_000, [remote_payments, 6_000, 0, 0]),
                class(1_000, [600, 0, 0, 0]),
                class(1_000, [0, 0, 0, 0]),
                class(1_000, [0, 0, 0, 0]),
            ],
            ..WindowSummary::default()
        };
        let r = RunRecord {
            status: "ok".into(),
            seconds: 60.0,
            tps: 23_000.0 / 60.0,
            server_cpu_us_per_event: Some(2_000.0),
            ..RunRecord::default()
        };
        (r, t)
    }

    #[test]
    fn a_tpcc_runs_throughput_and_cpu_are_per_committed_new_order() {
        let (mut r, t) = run(100, 1_500);
        as_new_orders(
            &mut r,
            &t,
            &TpccOptions {
                warehouses: 10,
                ..TpccOptions::default()
            },
        );
        assert_eq!(r.status, "ok", "{:?}", r.reason);
        assert!(
            (r.tps * 60.0 - 9_900.0).abs() < 1e-6,
            "NOPM {}",
            r.tps * 60.0
        );
        let cpu = r.server_cpu_us_per_event.unwrap();
        assert!((cpu - 2_000.0 * 23_000.0 / 9_900.0).abs() < 1e-6, "{cpu}");
    }

    #[test]
    fn a_run_that_did_not_do_tpccs_work_is_invalid_and_says_why() {
        let (mut r, t) = run(0, 1_500);
        as_new_orders(
            &mut r,
            &t,
            &TpccOptions {
                warehouses: 10,
                ..TpccOptions::default()
            },
        );
        assert_eq!(r.status, "invalid");
        let why = r.reason.unwrap();
        assert!(
            why.contains("New-Order rolled back") && why.contains("9.2"),
            "{why}"
        );
        let (mut r, t) = run(100, 0);
        as_new_orders(
            &mut r,
            &t,
            &TpccOptions {
                warehouses: 1,
                ..TpccOptions::default()
            },
        );
        assert_eq!(r.status, "ok", "one warehouse: nothing can be remote");
    }
}
