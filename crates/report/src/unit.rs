//! What a workload's throughput is counted in, decided here once, and the words every view
//! says it with. The store keeps one figure per run, `tps`: transactions per second, or for
//! TPC-C committed New-Orders per second (`crates/study/src/tpcc.rs`). TPC-C's readers count
//! New-Orders per minute (NOPM, HammerDB's figure; TPC-C's tpmC counts the same New-Orders),
//! so a TPC-C workload is shown x60 in NOPM and its CPU per New-Order. Ratios, intervals and
//! verdicts do not change with the unit: a ratio of NOPM is the ratio of the stored figures.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::source::{num, Source};

/// A workload's throughput unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Transactions per second (sysbench's events, pgbench's transactions), as stored.
    #[default]
    Tps,
    /// TPC-C's committed New-Orders per minute: the stored New-Orders per second x 60.
    Nopm,
}

/// The workload kind whose throughput is New-Orders (`bakeoff_workload::WorkloadKind::Tpcc`).
const TPCC: &str = "tpcc";

/// TPC-C's five transaction classes, in the order a run's `total.classes` holds them
/// (`bakeoff_workload::tpcc::CLASSES`): the mark of a TPC-C run in a database whose study
/// spec does not keep its workloads' kinds.
pub(crate) const TPCC_CLASSES: usize = 5;

impl Unit {
    /// The unit of a workload kind, by its name in a study file (`[[workload]] name`).
    pub fn of_kind(kind: &str) -> Unit {
        match kind {
            TPCC => Unit::Nopm,
            _ => Unit::Tps,
        }
    }

    /// The unit of workload `index` of a source's studies: its kind where a study's spec keeps
    /// it (`workloads[i].kind`, or `workloads[i].spec.kind`); else TPC-C's where any of its
    /// runs carries TPC-C's five transaction classes (only TPC-C's runs have classes, and
    /// only TPC-C's `tps` counts New-Orders).
    pub(crate) fn of_workload(src: &Source, index: i64) -> Unit {
        for s in &src.studies {
            let w = &s.spec()["workloads"][index as usize];
            if let Some(kind) = w["kind"].as_str().or(w["spec"]["kind"].as_str()) {
                return Unit::of_kind(kind);
            }
        }
        let tpcc = src.studies.iter().any(|s| {
            s.runs
                .iter()
                .filter(|r| num(r, "workload") as i64 == index)
                .any(|r| {
                    let classes = s.classes.get(&(num(r, "id") as i64));
                    classes.is_some_and(|c| c.len() == TPCC_CLASSES)
                })
        });
        match tpcc {
            true => Unit::of_kind(TPCC),
            false => Unit::Tps,
        }
    }

    /// The unit of every workload the source's runs ran, by workload index.
    pub(crate) fn of_workloads(src: &Source) -> BTreeMap<i64, Unit> {
        let runs = src.studies.iter().flat_map(|s| &s.runs);
        let indices: BTreeSet<i64> = runs.map(|r| num(r, "workload") as i64).collect();
        indices
            .into_iter()
            .map(|i| (i, Unit::of_workload(src, i)))
            .collect()
    }

    /// A stored throughput (per second) in this unit.
    pub fn of(self, tps: f64) -> f64 {
        match self {
            Unit::Tps => tps,
            Unit::Nopm => tps * 60.0,
        }
    }

    /// A stored throughput in this unit where it is not the stored one (for the JSON's
    /// `*_nopm` fields beside the stored `*_tps`).
    pub fn converted(self, tps: f64) -> Option<f64> {
        (self != Unit::Tps).then(|| self.of(tps))
    }

    /// The column head, and the word after a figure: "tps", "NOPM".
    pub fn name(self) -> &'static str {
        match self {
            Unit::Tps => "tps",
            Unit::Nopm => "NOPM",
        }
    }

    /// A stored throughput said in this unit with `digits` decimals: "88.2 tps", "5292 NOPM".
    pub fn say(self, tps: f64, digits: usize) -> String {
        format!("{:.digits$} {}", self.of(tps), self.name())
    }

    /// What the server's CPU is per, in a few letters: "cpu/tx", "cpu/NO" (the terminal's).
    pub fn per(self) -> &'static str {
        match self {
            Unit::Tps => "tx",
            Unit::Nopm => "NO",
        }
    }

    /// The same, as the report's page abbreviates it ("server CPU us/txn").
    pub fn abbrev(self) -> &'static str {
        match self {
            Unit::Tps => "txn",
            Unit::Nopm => "NO",
        }
    }

    /// One of what is counted: "transaction", "New-Order".
    pub fn event(self) -> &'static str {
        match self {
            Unit::Tps => "transaction",
            Unit::Nopm => "New-Order",
        }
    }

    /// Many of them: "transactions", "New-Orders".
    pub fn events(self) -> &'static str {
        match self {
            Unit::Tps => "transactions",
            Unit::Nopm => "New-Orders",
        }
    }

    /// A chart's throughput axis.
    pub fn axis(self) -> &'static str {
        match self {
            Unit::Tps => "throughput (transactions/s)",
            Unit::Nopm => "throughput (New-Orders per minute, NOPM)",
        }
    }
}

/// The one unit of `units`, or None where they differ (or there are none).
pub(crate) fn one_of(units: impl Iterator<Item = Unit>) -> Option<Unit> {
    let mut units: Vec<Unit> = units.collect();
    units.sort_by_key(|u| u.name());
    units.dedup();
    match units[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// What a million of is priced, for costs in `units`: "transactions", "New-Orders", or both
/// where the workloads count differently.
pub(crate) fn priced(units: impl Iterator<Item = Unit>) -> String {
    match one_of(units) {
        Some(u) => u.events().to_string(),
        None => "transactions (New-Orders for TPC-C)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpcc_counts_new_orders_per_minute_and_the_rest_transactions_per_second() {
        let (no, tx) = (Unit::of_kind("tpcc"), Unit::of_kind("oltp_read_write"));
        assert_eq!((no, tx), (Unit::Nopm, Unit::Tps));
        assert_eq!(no.say(88.2, 0), "5292 NOPM");
        assert_eq!(tx.say(88.2, 1), "88.2 tps");
        assert_eq!((no.converted(2.0), tx.converted(2.0)), (Some(120.0), None));
        assert_eq!(serde_json::to_string(&no).unwrap(), "\"nopm\"");
        assert_eq!(serde_json::to_string(&tx).unwrap(), "\"tps\"");
    }
}
