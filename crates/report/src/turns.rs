//! How a study's runs were measured, where that bears on how far to trust them: a workload
//! that wrote while its servers took turns carries the gap bakeoff measured between taking
//! turns and one server at a time on write workloads (docs/src/verdicts.md). `study check`
//! and `study plan` say it before a study runs; this says it beside the verdicts, from what
//! the runs themselves record.

use std::collections::{BTreeSet, HashMap};

use crate::model::AaCheck;
use crate::source::{num, opt, text, Source};

/// Said under a workload whose runs wrote while their servers took turns.
pub(crate) const CAVEAT: &str = "Runs of this workload wrote while their servers took turns: on bakeoff's own 2-CPU VM, taking turns read b/a for a durability setting on a write workload up to 29% higher than one server at a time did in the same session (1.65-2.07x against 1.52-1.69x, A/A checks holding both ways), a gap not yet explained, while on a 16-CPU VM the two agreed (1.43-1.45x against 1.42-1.43x); before acting on a verdict here, check it with [alternation] enabled = false (docs/src/verdicts.md).";

/// The workloads (labels) with a run (ok) that took turns and wrote: in a merged source, one
/// study's such runs are enough, and the sentence says "runs of", not all.
pub(crate) fn written_in_turns(src: &Source) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in &src.studies {
        let wrote_in_turns: HashMap<i64, bool> = s
            .methods
            .iter()
            .map(|r| {
                let turns = opt(r, "turn_slice_ms").is_some();
                (num(r, "id") as i64, turns && num(r, "writes") > 0.0)
            })
            .collect();
        for r in s.runs.iter().filter(|r| text(r, "status") == "ok") {
            if wrote_in_turns.get(&(num(r, "id") as i64)) == Some(&true) {
                out.insert(text(r, "workload_label"));
            }
        }
    }
    out
}

/// The workloads (labels) whose runs took turns with events long beside a turn: a run whose
/// p99 reached a tenth of its slice, with (that p99, the slice) in ms, the largest p99. A turn
/// measures the events that end within it; one of length L misses its share by about L over
/// the slice, so such a tail reads short (and a p99 verdict on it would judge the cut).
pub(crate) fn tails_cut(src: &Source) -> HashMap<String, (f64, f64)> {
    let mut out: HashMap<String, (f64, f64)> = HashMap::new();
    for s in &src.studies {
        let slices: HashMap<i64, f64> = s
            .methods
            .iter()
            .filter_map(|r| Some((num(r, "id") as i64, opt(r, "turn_slice_ms")?)))
            .collect();
        for r in s.runs.iter().filter(|r| text(r, "status") == "ok") {
            let Some(&slice) = slices.get(&(num(r, "id") as i64)) else {
                continue;
            };
            let p99 = num(r, "p99_ms");
            if slice > 0.0 && p99 >= slice / 10.0 {
                let e = out.entry(text(r, "workload_label")).or_insert((p99, slice));
                if p99 > e.0 {
                    *e = (p99, slice);
                }
            }
        }
    }
    out
}

/// A workload's closing sentences: its A/A check's, then the caveat where it wrote in turns.
pub(crate) fn sentences(label: &str, aa: &[AaCheck], written: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = crate::decide::aa_sentence(label, aa).into_iter().collect();
    if written.contains(label) {
        out.push(CAVEAT.to_string());
    }
    out
}
