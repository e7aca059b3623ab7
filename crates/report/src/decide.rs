//! Answers that decide, at the error rates they state.
//!
//! - **The family.** A workload's comparisons in one study are tested together: each at the
//!   family's 5% shared out (Bonferroni, 5% / m), so that chance alone makes any claim in the
//!   family at most 5% of the time. Every interval shown is the adjusted one, so an interval
//!   agrees with its verdict.
//! - **Four verdicts.** Different (the adjusted interval excludes 1); different but within
//!   +-margin; equivalent within +-margin (two one-sided tests: the adjusted 90% interval lies
//!   inside +-margin, symmetric on the log scale); undecided.
//! - **The stopping rule** of `repetitions = "auto"`: Stein's two-stage design. A pilot of a
//!   few blocks fixes the number of blocks from its spread; every interval then uses the
//!   pilot's spread and its degrees of freedom, which keeps its coverage exact whatever number
//!   the pilot chose (the mean of all blocks is independent of the pilot's spread).
//! - **The A/A runs** check the set-up (their interval should hold 1) and measure run-to-run
//!   and block-to-block noise; they never move a target.

use std::collections::BTreeMap;

pub use crate::evidence::Evidence;
use crate::model::{AaCheck, AutoStatus, Comparison, Verdict};
use crate::stats::{mean_sd, paired_ratio_ci, t_quantile};

/// The family's level: the chance that any claim of a workload's comparisons is chance alone.
pub const ALPHA: f64 = 0.05;
/// The power the smallest detectable difference is given at.
pub const POWER: f64 = 0.80;

/// What a comparison's evidence decides in a family of `family` at equivalence margin
/// `margin` (a fraction, symmetric on the log scale).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub ratio: f64,
    /// The family-adjusted two-sided interval (1 - 5%/m): different when it excludes 1.
    pub ci: (f64, f64),
    /// The family-adjusted 90% interval of the two one-sided tests: equivalent when it lies
    /// inside +-margin.
    pub tost: (f64, f64),
    pub verdict: Verdict,
    /// The smallest difference this comparison detects at 80% power at the adjusted level,
    /// from its spread and degrees of freedom (never from the observed effect).
    pub detectable: f64,
}

pub fn judge(e: Evidence, family: usize, margin: f64) -> Judged {
    let alpha = ALPHA / family.max(1) as f64;
    let t_two = t_quantile(e.df, 1.0 - alpha / 2.0);
    let t_one = t_quantile(e.df, 1.0 - alpha);
    let around = |t: f64| ((e.estimate - t * e.se).exp(), (e.estimate + t * e.se).exp());
    let (ci, tost) = (around(t_two), around(t_one));
    let m = (1.0 + margin).ln();
    let different = ci.0 > 1.0 || ci.1 < 1.0;
    let within = tost.0.ln() > -m && tost.1.ln() < m;
    let verdict = match (different, within) {
        (true, true) => Verdict::DifferentWithin,
        (true, false) => Verdict::Different,
        (false, true) => Verdict::Equivalent,
        (false, false) => Verdict::Undecided,
    };
    Judged {
        ratio: e.estimate.exp(),
        ci,
        tost,
        verdict,
        detectable: ((t_two + t_quantile(e.df, POWER)) * e.se).exp() - 1.0,
    }
}

/// Judge every comparison with evidence, each workload's comparisons as one family.
pub fn judge_all(comparisons: &mut [Comparison]) {
    let mut families: BTreeMap<String, usize> = BTreeMap::new();
    for c in comparisons.iter().filter(|c| c.evidence.is_some()) {
        *families.entry(c.workload.clone()).or_default() += 1;
    }
    for c in comparisons.iter_mut() {
        let Some(e) = c.evidence else {
            c.verdict = Verdict::Open;
            continue;
        };
        let family = families.get(&c.workload).copied().unwrap_or(1);
        let j = judge(e, family, c.margin);
        c.family = family as u32;
        c.ratio = Some(j.ratio);
        c.ci = Some(j.ci);
        c.tost = Some(j.tost);
        c.significant = matches!(j.verdict, Verdict::Different | Verdict::DifferentWithin);
        c.verdict = j.verdict;
        c.detectable = Some(j.detectable);
    }
}

/// Stein's first stage: how many blocks make the family-adjusted interval of a comparison no
/// wider than +-`precision`, from the pilot's log ratios (at least the pilot's own blocks).
/// None with fewer than two pilot blocks.
pub fn stein_blocks(pilot: &[(f64, f64)], family: usize, precision: f64) -> Option<u32> {
    let e = Evidence::paired(pilot, None)?;
    Some(blocks_for(&e, pilot.len() as u32, family, precision))
}

/// The blocks evidence from `blocks` blocks (its spread the pilot's) says the comparison
/// needs for +-`precision` at the family's adjusted level.
pub fn blocks_for(e: &Evidence, blocks: u32, family: usize, precision: f64) -> u32 {
    let sd = e.se * f64::from(blocks).sqrt();
    let t = t_quantile(e.df, 1.0 - ALPHA / family.max(1) as f64 / 2.0);
    let h = (1.0 + precision).ln();
    let n = (t * sd / h).powi(2).ceil();
    (n.min(1e6) as u32).max(e.df as u32 + 1)
}

/// The A/A checks, from each study's twin runs (`twins`: workload -> threads -> (block,
/// tps)) paired with its first variant's (`first`, the same shape).
pub fn aa_checks(
    twins: &BTreeMap<String, BTreeMap<u32, BTreeMap<u32, f64>>>,
    first: &BTreeMap<String, BTreeMap<u32, BTreeMap<u32, f64>>>,
) -> Vec<AaCheck> {
    let mut out = Vec::new();
    for (workload, by_threads) in twins {
        for (&threads, reps) in by_threads {
            let Some(base) = first.get(workload).and_then(|b| b.get(&threads)) else {
                continue;
            };
            let pairs: Vec<(f64, f64)> = reps
                .iter()
                .filter_map(|(r, &tps)| Some((*base.get(r)?, tps)))
                .collect();
            let Some((ratio, lo, hi)) = paired_ratio_ci(&pairs) else {
                continue;
            };
            let logs: Vec<f64> = pairs.iter().map(|&(a, b)| (b / a).ln()).collect();
            // Two runs of one set-up: their log ratio's spread is sqrt(2) runs' spread.
            let run = mean_sd(&logs).1 / std::f64::consts::SQRT_2;
            // Between blocks: the spread of the block means beyond what the runs explain.
            let means: Vec<f64> = pairs
                .iter()
                .map(|&(a, b)| (a.ln() + b.ln()) / 2.0)
                .collect();
            let block = (mean_sd(&means).1.powi(2) - run.powi(2) / 2.0)
                .max(0.0)
                .sqrt();
            out.push(AaCheck {
                workload: workload.clone(),
                threads,
                blocks: pairs.len() as u32,
                ratio,
                ci: (lo, hi),
                holds_one: lo <= 1.0 && 1.0 <= hi,
                run_noise: run,
                block_noise: block,
            });
        }
    }
    out
}

/// The A/A check of a workload in a sentence: its noise, and a warning when identical runs
/// differed systematically (a fault of the set-up, not a floor to hide differences under).
pub fn aa_sentence(workload: &str, checks: &[AaCheck]) -> Option<String> {
    let mine: Vec<&AaCheck> = checks.iter().filter(|n| n.workload == workload).collect();
    let noisiest = mine
        .iter()
        .max_by(|a, b| a.run_noise.total_cmp(&b.run_noise))?;
    let mut s = format!(
        "The A/A runs (the first variant twice in each of {} blocks) put run-to-run noise at {:.1}% and block-to-block drift at {:.1}% (largest at {} threads).",
        noisiest.blocks,
        noisiest.run_noise * 100.0,
        noisiest.block_noise * 100.0,
        noisiest.threads
    );
    let off: Vec<String> = mine
        .iter()
        .filter(|n| !n.holds_one)
        .map(|n| format!("{} threads ({:.3}x - {:.3}x)", n.threads, n.ci.0, n.ci.1))
        .collect();
    if !off.is_empty() {
        s.push_str(&format!(
            " Warning: identical runs differed systematically at {}: something in the set-up favours one place in the block (warm-up, a cache, the order); 1 in 20 such checks does so by chance, so look before trusting this workload's comparisons.",
            off.join(", ")
        ));
    }
    Some(s)
}

/// Where an auto study stopped, in words.
pub fn auto_line(a: &AutoStatus) -> String {
    let asked = format!("+-{:.1}%", a.precision * 100.0);
    let sized = format!(
        "a pilot of {} blocks sized the study for every comparison's family-adjusted interval within {asked}",
        a.pilot
    );
    if a.needed <= a.max_repetitions {
        return format!(
            "repetitions = \"auto\": {sized}: {} blocks needed, {} run (Stein's two-stage design: each interval uses the pilot's spread, so its coverage holds).",
            a.needed, a.blocks
        );
    }
    let mut s = format!(
        "repetitions = \"auto\": {sized}: {} blocks needed, more than max_repetitions = {}; {} run, so intervals are wider than asked. A new study would need {} blocks for {asked} (or a larger precision, or a quieter set-up); this one's results stand as they are.",
        a.needed, a.max_repetitions, a.blocks, a.needed
    );
    if let Some(spread) = a.steadiness {
        s.push(' ');
        s.push_str(&machine_said(spread));
    }
    s
}

/// The host probe that times the machine before an auto study's pilot (the study writes it,
/// the report reads it).
pub const STEADINESS_PROBE: &str = "steadiness";

/// A CPU of a machine of its own times a fixed loop's 100 ms slices within this (robust
/// spread over median); a shared VM's may vary by tens of percent.
pub const STEADY: f64 = 0.02;

/// Whose noise made the pilot ask for more: the machine's own (its CPUs' speed moved), or the
/// set-up's (the machine was steady).
fn machine_said(spread: f64) -> String {
    let pct = spread * 100.0;
    if spread < STEADY {
        return format!(
            "The machine itself was steady in a 3 s check before the pilot (a fixed loop's 100 ms slices varied by {pct:.1}%): look first at the set-up (pin the server and the client apart, longer runs, a longer warmup), though so short a check can miss a slow spell."
        );
    }
    format!(
        "Before the pilot a fixed loop's 100 ms slices on this machine varied by {pct:.1}% (a machine of its own: under {:.0}%): its CPUs change speed on their own, which no set-up removes and a 3 s check sees only part of; a steadier machine needs fewer blocks.",
        STEADY * 100.0
    )
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
