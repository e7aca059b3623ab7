//! TPC-C's five transactions in each cell: what share of the work each was and how long it
//! took, from each run's `total.classes` (one entry per transaction type, in TPC-C's order),
//! and the page's table of them. TPC-C's readers look at each transaction's latency, not only
//! the mix's: TPC-C judges response times per transaction type at the 90th percentile
//! (clause 5.2.5.4), and a mix that drifts (clause 5.2.3's minimum shares) changes what the
//! New-Order rate means.

use std::fmt::Write;

use crate::markup::table;
use crate::model::{Transaction, WorkloadModel};
use crate::plot::escape;
use crate::unit::TPCC_CLASSES;

/// TPC-C's transactions, in the order a run stores them (`bakeoff_workload::tpcc::CLASSES`),
/// with the names TPC-C's specification gives them.
const NAMES: [(&str, &str); TPCC_CLASSES] = [
    ("new_order", "New-Order"),
    ("payment", "Payment"),
    ("order_status", "Order-Status"),
    ("delivery", "Delivery"),
    ("stock_level", "Stock-Level"),
];

/// Each transaction's share of the events and its p90 and p99, each the mean over `runs`
/// (their `total.classes`); latency over the runs where it ran. Empty unless every run has
/// TPC-C's five classes.
pub(crate) fn mix<'a>(runs: impl Iterator<Item = &'a Vec<serde_json::Value>>) -> Vec<Transaction> {
    let runs: Vec<&Vec<serde_json::Value>> = runs.collect();
    if runs.is_empty() || runs.iter().any(|c| c.len() != TPCC_CLASSES) {
        return Vec::new();
    }
    let events = |c: &serde_json::Value| c["events"].as_f64().unwrap_or(0.0);
    let mean = |xs: Vec<f64>| match xs.len() {
        0 => 0.0,
        n => xs.iter().sum::<f64>() / n as f64,
    };
    NAMES
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let shares = runs.iter().map(|c| {
                let all: f64 = c.iter().map(events).sum();
                events(&c[i]) / all.max(1.0)
            });
            let ran: Vec<&serde_json::Value> = runs
                .iter()
                .map(|c| &c[i])
                .filter(|c| events(c) > 0.0)
                .collect();
            let ms = |k: &str| mean(ran.iter().filter_map(|c| c[k].as_f64()).collect());
            Transaction {
                name: name.to_string(),
                share: mean(shares.collect()),
                p90_ms: ms("p90_ms"),
                p99_ms: ms("p99_ms"),
            }
        })
        .collect()
}

/// The workload's transactions per thread count and variant, as a table; nothing for a
/// workload without them.
pub(crate) fn html(s: &mut String, w: &WorkloadModel) {
    let cells: Vec<(u32, &str, &[Transaction])> = w
        .threads()
        .into_iter()
        .flat_map(|t| {
            w.curves.iter().filter_map(move |c| {
                let p = c.points.iter().find(|p| p.threads == t)?;
                (!p.transactions.is_empty()).then_some((t, c.variant.as_str(), &p.transactions[..]))
            })
        })
        .collect();
    if cells.is_empty() {
        return;
    }
    s.push_str("<h3>Transactions</h3><p>TPC-C's five transactions at each thread count: each one's share of the transactions done, and its p90 and p99 latency in ms, each the mean over the cell's runs. TPC-C asks at least 43% Payment and 4% each of Order-Status, Delivery and Stock-Level (clause 5.2.3), and judges response times per transaction at the 90th percentile (clause 5.2.5.4).</p>");
    let head: Vec<&str> = ["threads", "<variant"]
        .into_iter()
        .chain(NAMES.iter().map(|(_, title)| *title))
        .collect();
    let rows = cells.iter().map(|(threads, variant, txs)| {
        let mut row = vec![threads.to_string(), escape(variant)];
        row.extend(txs.iter().map(|t| {
            let mut cell = format!("{:.1}%", t.share * 100.0);
            let _ = write!(
                cell,
                "<br><small>p90 {:.1} · p99 {:.1}</small>",
                t.p90_ms, t.p99_ms
            );
            cell
        }));
        row
    });
    table(s, &head, rows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(events: u64, p90: f64, p99: f64) -> serde_json::Value {
        json!({"events": events, "p90_ms": p90, "p99_ms": p99})
    }

    #[test]
    fn shares_and_percentiles_are_the_mean_over_runs() {
        let a = vec![
            class(45, 20.0, 40.0),
            class(43, 10.0, 30.0),
            class(4, 5.0, 8.0),
            class(4, 50.0, 90.0),
            class(4, 6.0, 9.0),
        ];
        let mut b = a.clone();
        b[0] = class(45, 30.0, 60.0);
        let m = mix([&a, &b].into_iter());
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].name, "new_order");
        assert!((m[0].share - 0.45).abs() < 1e-12);
        assert_eq!((m[0].p90_ms, m[0].p99_ms), (25.0, 50.0));
        assert_eq!((m[3].p90_ms, m[3].p99_ms), (50.0, 90.0));
        // A run without TPC-C's five classes is not TPC-C's: no table.
        assert!(mix([&a, &a[..3].to_vec()].into_iter()).is_empty());
    }
}
