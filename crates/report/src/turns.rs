//! How a study's runs were measured, where that bears on how far to trust them: a workload
//! that wrote while its servers took turns carries the gap bakeoff measured between taking
//! turns and one server at a time on write workloads (docs/src/verdicts.md). `study check`
//! and `study plan` say it before a study runs; this says it beside the verdicts, from what
//! the runs themselves record.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::model::AaCheck;
use crate::source::{num, opt, text, Source};

/// Said under a workload whose runs wrote while their servers took turns.
pub(crate) const CAVEAT: &str = "Runs of this workload wrote while their servers took turns: on bakeoff's own 2-CPU VM, taking turns read b/a for a durability setting on a write workload up to 29% higher than one server at a time did in the same session (1.65-2.07x against 1.52-1.69x, A/A checks holding both ways), a gap not yet explained, while on a 16-CPU VM the two agreed (1.43-1.45x against 1.42-1.43x); before acting on a verdict here, check it with [alternation] enabled = false (docs/src/verdicts.md).";

/// The workloads (labels) with a run (ok) that took turns and wrote: in a merged source, one
/// study's such runs are enough, and the sentence says "runs of", not all.
pub(crate) fn written_in_turns(src: &Source) -> BTreeSet<String> {
    labels_where(src, |method| num(method, "writes") > 0.0)
}

/// The workloads (labels) with a run (ok) that took turns: their verdicts say so.
pub(crate) fn taken_in_turns(src: &Source) -> BTreeSet<String> {
    labels_where(src, |_| true)
}

/// The workloads with an ok run that took turns and whose method row passes `and`.
fn labels_where(src: &Source, and: impl Fn(&bakeoff_store::Row) -> bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in &src.studies {
        let chosen: HashMap<i64, bool> = s
            .methods
            .iter()
            .map(|r| {
                let turns = opt(r, "turn_slice_ms").is_some();
                (num(r, "id") as i64, turns && and(r))
            })
            .collect();
        for r in s.runs.iter().filter(|r| text(r, "status") == "ok") {
            if chosen.get(&(num(r, "id") as i64)) == Some(&true) {
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

/// Slices a run needs on each side (after its own turn, after another's) for its switch
/// penalty to be read.
const SLICES_EACH_SIDE: usize = 3;

/// Each variant's switch penalty taking turns, per workload: how much slower its slices ran
/// right after another server's turn than right after its own (a pair of rounds, an order
/// then its reverse, gives the server that ended the first a slice after itself), as the
/// mean over its runs of mean ln(tps) after itself minus after another. A ratio taken by
/// turns carries the difference of two variants' penalties (times the share of slices after
/// a switch), which no number of blocks removes.
pub(crate) fn switch_penalties(src: &Source) -> BTreeMap<String, BTreeMap<String, Penalty>> {
    // Per run: (mean ln tps after itself minus after another, the share of its slices after
    // another).
    let mut runs: BTreeMap<String, BTreeMap<String, Vec<(f64, f64)>>> = BTreeMap::new();
    for s in &src.studies {
        let server: HashMap<i64, i64> = s
            .methods
            .iter()
            .filter_map(|r| Some((num(r, "id") as i64, opt(r, "turn_server")? as i64)))
            .collect();
        let mut by_run: HashMap<i64, (Vec<f64>, Vec<f64>)> = HashMap::new();
        for t in &s.slices {
            let run = num(t, "run_id") as i64;
            let (Some(&own), Some(after)) = (server.get(&run), opt(t, "after")) else {
                continue;
            };
            let tps = num(t, "tps");
            if tps <= 0.0 {
                continue;
            }
            let e = by_run.entry(run).or_default();
            match after as i64 == own {
                true => e.0.push(tps.ln()),
                false => e.1.push(tps.ln()),
            }
        }
        for r in s.runs.iter().filter(|r| text(r, "status") == "ok") {
            let Some((own, other)) = by_run.get(&(num(r, "id") as i64)) else {
                continue;
            };
            if own.len() < SLICES_EACH_SIDE || other.len() < SLICES_EACH_SIDE {
                continue;
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            runs.entry(text(r, "workload_label"))
                .or_default()
                .entry(text(r, "variant_name"))
                .or_default()
                .push((
                    mean(own) - mean(other),
                    other.len() as f64 / (own.len() + other.len()) as f64,
                ));
        }
    }
    runs.into_iter()
        .map(|(w, per)| {
            let per = per
                .into_iter()
                .map(|(v, per_run)| {
                    let logs: Vec<f64> = per_run.iter().map(|r| r.0).collect();
                    let (m, sd) = crate::stats::mean_sd(&logs);
                    let n = logs.len();
                    let after_other = per_run.iter().map(|r| r.1).sum::<f64>() / n as f64;
                    (
                        v,
                        Penalty {
                            ratio: m.exp() - 1.0,
                            log: m,
                            se: sd / (n as f64).sqrt(),
                            runs: n,
                            after_other,
                        },
                    )
                })
                .collect();
            (w, per)
        })
        .collect()
}

/// One variant's switch penalty: the mean over its runs (a fraction, and on the log scale),
/// the standard error of that mean on the log scale (0 with one run), its runs, and the share
/// of its slices that ran right after another server's turn.
pub(crate) struct Penalty {
    pub ratio: f64,
    pub log: f64,
    pub se: f64,
    pub runs: usize,
    pub after_other: f64,
}

/// Where the variants' switch penalties differ by enough to move a verdict: the verdict the
/// ratio would get one server at a time, as the penalties estimate it, on the comparison.
///
/// A run by turns reads, on the log scale, what it would alone less its penalty on the share of
/// its slices that ran after another server (those after its own ran on without a switch). So
/// one server at a time would read the ratio by turns times exp(f_v p_v - f_b p_b); judged at
/// the comparison's own level, with its own spread. The penalties' own uncertainty is said,
/// not added: this flags a verdict to check, it does not replace it.
pub(crate) fn carry_over(
    comparisons: &mut [crate::model::Comparison],
    penalties: &BTreeMap<String, BTreeMap<String, Penalty>>,
) {
    for c in comparisons.iter_mut() {
        let (Some(e), Some(per)) = (c.evidence, penalties.get(&c.workload)) else {
            continue;
        };
        let (Some(v), Some(b)) = (per.get(&c.variant), per.get(&c.against)) else {
            continue;
        };
        let shift = v.after_other * v.log - b.after_other * b.log;
        let solo = crate::evidence::Evidence {
            estimate: e.estimate + shift,
            ..e
        };
        let j = crate::decide::judge_at(solo, crate::decide::alpha(c), c.margin);
        if j.verdict != c.verdict {
            c.carry_over = Some(crate::model::CarryOver {
                ratio: j.ratio,
                verdict: j.verdict,
                shift: shift.exp(),
                se: (v.after_other.powi(2) * v.se.powi(2) + b.after_other.powi(2) * b.se.powi(2))
                    .sqrt(),
            });
        }
    }
}

/// A workload's switch penalties in a sentence, where its runs recorded them.
pub(crate) fn penalty_sentence(
    label: &str,
    penalties: &BTreeMap<String, BTreeMap<String, Penalty>>,
) -> Option<String> {
    let per = penalties.get(label)?;
    let each: Vec<String> = per
        .iter()
        .map(|(v, p)| match p.runs {
            1 => format!("{v} {:+.1}% (1 run)", p.ratio * 100.0),
            n => format!(
                "{v} {:+.1}% +-{:.1} ({n} runs)",
                p.ratio * 100.0,
                p.se * 100.0
            ),
        })
        .collect();
    let (lo, hi) = per
        .values()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.ratio), b.max(p.ratio))
        });
    Some(format!(
        "Taking turns, each variant's slices right after its own turn ran faster than right after another server's by (mean over its runs, +- its standard error): {}; a ratio by turns carries the difference between two variants' ({:.1} points here), which more blocks do not remove: where it is as large as a verdict's margin from 1, check that verdict with [alternation] enabled = false.",
        each.join(", "),
        (hi - lo) * 100.0
    ))
}

/// A workload's closing sentences: its A/A check's, then the caveat where it wrote in turns.
pub(crate) fn sentences(label: &str, aa: &[AaCheck], written: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = crate::decide::aa_sentence(label, aa).into_iter().collect();
    if written.contains(label) {
        out.push(CAVEAT.to_string());
    }
    out
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;
