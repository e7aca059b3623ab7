//! How a stored study was run, as its spec says: in blocks (so its comparisons pair within
//! them) or not, with a noise check (which variant index is the first variant's second run),
//! with auto repetitions (the precision asked), and on how many CPUs (its manifests).

use std::collections::{BTreeMap, HashMap};

use crate::model::AutoStatus;
use crate::model::Model;
use crate::source::{num, text, StudySource};
use crate::suspect::Health;

/// Throughput by workload, thread count and block.
pub(crate) type BlockTps = BTreeMap<String, BTreeMap<u32, BTreeMap<u32, f64>>>;

pub(crate) struct Design {
    /// Blocks with every variant's series: comparisons pair within them. Studies written
    /// before blocks, and sequential ones, are not.
    pub paired: bool,
    /// The noise check's runs: the variant index one past the study's variants, or a listed
    /// variant the same as the first (`noise_twin`), whose runs are compared as well.
    pub twin: Option<i64>,
    /// The twin's name where it is a listed variant: its runs are the check's and a
    /// comparison's.
    pub listed_twin: Option<String>,
    /// `repetitions = "auto"`: (precision, max_repetitions).
    pub auto: Option<(f64, u32)>,
    /// The blocks of an auto study's pilot, whose spread sized it and makes every interval
    /// (Stein's design). None for fixed repetitions and for auto studies from before it.
    pub pilot: Option<u32>,
    /// The equivalence margin: `equivalence`, else an auto study's precision, else 5%.
    pub margin: f64,
    /// The machine's CPUs, from the study's manifests.
    pub cpus: Option<f64>,
    /// `order = "sequential"`: every block in one fixed order, so no verdict can be made.
    pub fixed_order: bool,
}

/// The margin of a study that names none and is not auto.
pub const DEFAULT_MARGIN: f64 = 0.05;

impl Design {
    pub fn of(s: &StudySource) -> Design {
        let spec = s.spec();
        let variants = spec["variants"].as_array().map_or(0, Vec::len) as i64;
        let auto = &spec["auto"];
        let precision = auto["precision"].as_f64();
        Design {
            paired: spec["paired"] == true,
            fixed_order: spec["order"] == "sequential",
            twin: (spec["noise_check"] == true)
                .then(|| spec["noise_twin"].as_i64().unwrap_or(variants)),
            listed_twin: spec["noise_twin"]
                .as_u64()
                .and_then(|i| spec["variants"][i as usize]["name"].as_str())
                .map(str::to_string),
            auto: precision.zip(auto["max_repetitions"].as_u64().map(|n| n as u32)),
            pilot: auto["pilot"].as_u64().map(|n| n as u32),
            margin: spec["equivalence"]
                .as_f64()
                .or(precision)
                .unwrap_or(DEFAULT_MARGIN),
            cpus: s.manifests.iter().find_map(|m| {
                let json: serde_json::Value =
                    serde_json::from_str(&text(m, "manifest_json")).ok()?;
                json["host"]["cpus"].as_f64()
            }),
        }
    }
}

/// Each run's health (see `suspect.rs`), by run id.
pub(crate) fn health_by_run(s: &StudySource) -> HashMap<i64, Health> {
    let get = |r: &bakeoff_store::Row, k: &str| r.get(k).and_then(|v| v.as_f64());
    s.health
        .iter()
        .map(|r| {
            (
                num(r, "id") as i64,
                Health {
                    steal: get(r, "host_steal"),
                    host_busy: get(r, "host_busy"),
                    host_irq: get(r, "host_irq"),
                    host_kthreads: get(r, "host_kthreads"),
                    seconds: get(r, "seconds"),
                    server_cpu_seconds: get(r, "server_cpu_seconds"),
                    client_cpu_seconds: get(r, "client_cpu_seconds"),
                    client_idle_poll_seconds: get(r, "client_idle_poll_seconds"),
                },
            )
        })
        .collect()
}

/// An auto study's precision, what its pilot said it needs, and what it ran (one study only).
pub(crate) fn auto_status(designs: &[Design], m: &Model) -> Option<AutoStatus> {
    let [d] = designs else {
        return None;
    };
    let (precision, max_repetitions) = d.auto?;
    let rows: Vec<_> = m
        .comparisons
        .iter()
        .filter(|c| c.note.is_none() && c.evidence.is_some())
        .collect();
    let pilot = d.pilot.unwrap_or(0);
    // Settled as the verdicts took it (`asked.rs`).
    let settled = |c: &&&crate::model::Comparison| c.asked.as_ref().is_some_and(|a| a.settled);
    let needed = rows
        .iter()
        .filter_map(|c| {
            let e = c.evidence?;
            Some(crate::decide::blocks_asked(
                &e,
                c.family as usize,
                precision,
                c.margin,
                pilot,
            ))
        })
        .max()
        .unwrap_or(pilot);
    Some(AutoStatus {
        precision,
        max_repetitions,
        pilot,
        needed,
        settled: rows.iter().filter(settled).count() as u32,
        // The blocks run, not the fewer a comparison was judged on.
        blocks: rows
            .iter()
            .map(|c| c.asked.as_ref().map_or(c.blocks, |a| a.pairs.len() as u32))
            .max()
            .unwrap_or(0),
        steadiness: m
            .probes
            .iter()
            .find(|p| p.probe == crate::decide::STEADINESS_PROBE && p.status == "ok")
            .map(|p| p.figure / 100.0),
    })
}
