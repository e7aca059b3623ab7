//! Answers that decide, at the error rates they state.
//!
//! - **The family.** A study's throughput comparisons are tested together, every workload's:
//!   each at the family's 5% shared out (Bonferroni, 5% / m), so that chance alone makes any
//!   throughput claim in the study at most 5% of the time. A family per workload let a study of two workloads claim a
//!   difference with none there 7-9% of the time. Cost (CPU per transaction) is a family of
//!   its own beside throughput's, with its own 5%.
//! - **Four verdicts.** Different (the adjusted interval excludes 1); different but within
//!   +-margin; equivalent within +-margin (two one-sided tests: the adjusted 90% interval lies
//!   inside +-margin, symmetric on the log scale); undecided. Each verdict is shown with the
//!   interval it was judged on, at its level: the two one-sided tests' for equivalent and
//!   different-but-within, the two-sided one for different and undecided.
//! - **The stopping rule** of `repetitions = "auto"`: Stein's two-stage design. A pilot of a
//!   few blocks fixes the number of blocks from its spread; every interval then uses the
//!   pilot's spread and its degrees of freedom, which keeps its coverage exact for normal,
//!   independent blocks whatever number the pilot chose (the mean of all blocks is
//!   independent of the pilot's spread); the wider-of choice (`Evidence::spread_at`) only
//!   adds caution.
//! - **The A/A runs** check the set-up (their interval should hold 1, at 5% shared by the
//!   study's A/A checks) and measure run-to-run and block-to-block noise; they never move a
//!   target.

use std::collections::BTreeMap;

pub use crate::evidence::Evidence;
use crate::model::{AaCheck, AutoStatus, Comparison, CostVerdict, Verdict};
use crate::stats::{mean_sd, t_quantile};

/// The family's level: the chance that any claim of a study's comparisons is chance alone.
pub const ALPHA: f64 = 0.05;
/// The power the smallest detectable difference is given at.
pub const POWER: f64 = 0.80;

/// An equivalence margin as the interval it is: symmetric on the log scale, so +-5% is
/// 0.952x-1.050x ("0.952x-1.050x (+-5.0%)").
pub fn margin_text(margin: f64) -> String {
    let m = 1.0 + margin;
    format!("{:.3}x-{:.3}x (+-{:.1}%)", 1.0 / m, m, margin * 100.0)
}

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
    /// The interval the verdict was judged on (`ci` or `tost`) and its level.
    pub shown: (f64, f64),
    pub level: f64,
    /// The smallest difference this comparison detects at 80% power at the adjusted level,
    /// from its spread and degrees of freedom (never from the observed effect).
    pub detectable: f64,
}

pub fn judge(e: Evidence, family: usize, margin: f64) -> Judged {
    judge_at(e, ALPHA / family.max(1) as f64, margin)
}

/// What evidence decides at its own two-sided level `alpha` (the family's share for it).
pub fn judge_at(e: Evidence, alpha: f64, margin: f64) -> Judged {
    // Each interval with the spread that is wider at its own quantile (see `spread_at`).
    let around = |p: f64| {
        let (se, df) = e.spread_at(p);
        let t = t_quantile(df, p);
        ((e.estimate - t * se).exp(), (e.estimate + t * se).exp())
    };
    let (two, one) = (1.0 - alpha / 2.0, 1.0 - alpha);
    let (ci, tost) = (around(two), around(one));
    let m = (1.0 + margin).ln();
    let different = ci.0 > 1.0 || ci.1 < 1.0;
    let within = tost.0.ln() > -m && tost.1.ln() < m;
    let verdict = match (different, within) {
        (true, true) => Verdict::DifferentWithin,
        (true, false) => Verdict::Different,
        (false, true) => Verdict::Equivalent,
        (false, false) => Verdict::Undecided,
    };
    let (shown, level) = match verdict {
        Verdict::Equivalent | Verdict::DifferentWithin => (tost, 1.0 - 2.0 * alpha),
        _ => (ci, 1.0 - alpha),
    };
    let (se, df) = e.spread_at(two);
    Judged {
        ratio: e.estimate.exp(),
        ci,
        tost,
        verdict,
        shown,
        level,
        detectable: ((t_quantile(df, two) + t_quantile(df, POWER)) * se).exp() - 1.0,
    }
}

/// Judge every comparison with evidence, all of them one family (the study's claims are
/// made together, whatever workload each is of).
pub fn judge_all(comparisons: &mut [Comparison]) {
    let family = comparisons.iter().filter(|c| c.evidence.is_some()).count();
    for c in comparisons.iter_mut() {
        let Some(e) = c.evidence else {
            c.verdict = Verdict::Open;
            continue;
        };
        c.family = family as u32;
        let j = judge_at(e, alpha(c), c.margin);
        c.ratio = Some(j.ratio);
        c.ci = Some(j.ci);
        c.tost = Some(j.tost);
        c.interval = Some(j.shown);
        c.level = Some(j.level);
        c.significant = matches!(j.verdict, Verdict::Different | Verdict::DifferentWithin);
        c.verdict = j.verdict;
        c.detectable = Some(j.detectable);
    }
    // Cost, a family of its own: claims about CPU per transaction are made together; latency
    // (p99) another. Cost's and latency's blocks were cut where throughput's were, so whether
    // they are the pilot's hangs on throughput's pilot mean, which a slow spell moves with
    // theirs: each spends its share as throughput does (two looks, one bound).
    let costs = family_verdicts(comparisons, |c| c.cost_evidence, 0);
    // p99's and p95's claims one latency family: each the other's companion in its size.
    let count = |f: fn(&Comparison) -> Option<Evidence>| {
        comparisons.iter().filter(|c| f(c).is_some()).count()
    };
    let (n99, n95) = (
        count(|c| c.latency_evidence),
        count(|c| c.latency_p95_evidence),
    );
    let latencies = family_verdicts(comparisons, |c| c.latency_evidence, n95);
    let p95s = family_verdicts(comparisons, |c| c.latency_p95_evidence, n99);
    for (((c, cost), latency), p95) in comparisons.iter_mut().zip(costs).zip(latencies).zip(p95s) {
        c.cost = cost;
        c.latency = latency;
        c.latency_p95 = p95;
    }
}

/// The verdicts of a family of its own (cost, latency): each comparison with `evidence`,
/// 5% shared by them all and the `beside` claims of the same family judged apart.
fn family_verdicts(
    comparisons: &[Comparison],
    evidence: impl Fn(&Comparison) -> Option<Evidence>,
    beside: usize,
) -> Vec<Option<CostVerdict>> {
    let family = comparisons.iter().filter(|c| evidence(c).is_some()).count() + beside;
    comparisons
        .iter()
        .map(|c| {
            evidence(c).map(|e| {
                let j = judge_at(e, share(c) * ALPHA / family.max(1) as f64, c.margin);
                CostVerdict {
                    ratio: j.ratio,
                    verdict: j.verdict,
                    interval: j.shown,
                    level: j.level,
                    ci: j.ci,
                    tost: j.tost,
                    family: family as u32,
                    blocks: e.n,
                }
            })
        })
        .collect()
}

/// The two-sided level a comparison is judged at: its share of its family's 5%.
pub(crate) fn alpha(c: &Comparison) -> f64 {
    share(c) * ALPHA / c.family.max(1) as f64
}

/// The part of its family's share a comparison is judged at: an auto study spends it in two
/// looks, a tenth at the pilot on settling comparisons beyond the margin, the rest on those
/// judged at the end (see [`SETTLE_SHARE`]); any other study all at once.
fn share(c: &Comparison) -> f64 {
    match &c.asked {
        None => 1.0,
        Some(a) if a.settled => SETTLE_SHARE,
        Some(_) => 1.0 - SETTLE_SHARE,
    }
}

/// Stein's first stage: how many blocks make the family-adjusted interval of a comparison no
/// wider than +-`precision`, from the pilot's log ratios (at least the pilot's own blocks).
/// None with fewer than two pilot blocks.
pub fn stein_blocks(pilot: &[(u32, f64, f64)], family: usize, precision: f64) -> Option<u32> {
    let e = Evidence::paired(pilot, None)?;
    Some(blocks_for(&e, family, precision))
}

/// The blocks a comparison needs for +-`precision` at the family's adjusted level, from the
/// spread that sizes it (its pilot's, see `Evidence::sizing`): at least the pilot's own.
pub fn blocks_for(e: &Evidence, family: usize, precision: f64) -> u32 {
    let s = e.sizing();
    let alpha = (1.0 - SETTLE_SHARE) * ALPHA / family.max(1) as f64;
    let t = t_quantile(s.df, 1.0 - alpha / 2.0);
    let h = (1.0 + precision).ln();
    let n = (t * s.sd / h).powi(2).ceil();
    (n.min(1e6) as u32).max(s.df as u32 + 1)
}

/// The part of an auto study's 5% spent at the pilot's look, on settling comparisons beyond
/// the margin (see [`settled_by_pilot`]); small, since only differences far beyond it are to
/// be settled there. The rest is spent on the comparisons judged at the end, so a
/// comparison's two looks together claim a difference with none there at most 5%/m of the
/// time (Bonferroni over the looks).
pub const SETTLE_SHARE: f64 = 0.1;

/// A comparison's two-sided level in percent as judged at the end, and, in an auto study, the
/// level at which its pilot settles what lies beyond the margin: a tenth of its share there,
/// the rest at the end (see [`SETTLE_SHARE`]).
pub fn looks(c: &Comparison) -> (f64, Option<f64>) {
    let each = 100.0 * ALPHA / f64::from(c.family.max(1));
    match c.asked {
        None => (each, None),
        Some(_) => ((1.0 - SETTLE_SHARE) * each, Some(SETTLE_SHARE * each)),
    }
}

/// A level's share in percent with as many decimals as it needs, up to three ("1.125%",
/// "0.25%").
pub fn percent(p: f64) -> String {
    let s = format!("{p:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// Whether the pilot alone settles a comparison: its own two-sided interval at
/// 1 - `SETTLE_SHARE` x 5%/m lies wholly beyond +-`margin`, so no number of further blocks
/// could make it equivalent or different-but-within, and sizing it to +-precision would only
/// narrow an interval nobody needs narrow (a variant 1.85x its baseline whose block ratios
/// spread 4% asked for 30 blocks). The need then counts the comparisons still open; each
/// comparison is judged on the blocks it asked for (see `asked.rs`).
pub fn settled_by_pilot(e: &Evidence, family: usize, margin: f64) -> bool {
    let p = e.sizing();
    let alpha = SETTLE_SHARE * ALPHA / family.max(1) as f64;
    let half = t_quantile(p.df, 1.0 - alpha / 2.0) * p.sd / (p.df + 1.0).sqrt();
    let m = (1.0 + margin).ln();
    p.mean - half > m || p.mean + half < -m
}

/// The last block a comparison asks the study to run, of a pilot of `pilot` blocks: the
/// pilot's where the pilot settled it, else those for +-`precision` (see [`blocks_for`]).
/// Blocks are numbered from 1 and a study runs up to the largest ask, so the count asked is a
/// block number (a failed run leaves a gap, not a later block).
pub fn blocks_asked(e: &Evidence, family: usize, precision: f64, margin: f64, pilot: u32) -> u32 {
    if settled_by_pilot(e, family, margin) {
        return pilot;
    }
    blocks_for(e, family, precision).max(pilot)
}

/// The blocks a study of `family` comparisons will run for +-`precision` when a planning
/// pilot found a block's log ratio spread `sd` from `df` degrees of freedom: its 10th, 50th
/// and 90th percentiles. The study's own pilot (`study_pilot` blocks) sizes it again when it
/// runs, from its own spread: that spread over the planning pilot's is, squared, an F(study
/// pilot - 1, df) variable under the model, so both pilots' uncertainty is in the range (a
/// planning pilot of 3 blocks leaves it x0.23 to x9.2 wide).
pub fn need_range(
    sd: f64,
    df: f64,
    family: usize,
    precision: f64,
    study_pilot: u32,
) -> (u32, u32, u32) {
    use statrs::distribution::{ContinuousCDF, FisherSnedecor};
    let k = f64::from(study_pilot.max(2) - 1);
    let at = |q: f64| -> u32 {
        let f = FisherSnedecor::new(k, df.max(1.0)).map_or(1.0, |f| f.inverse_cdf(q));
        let e = Evidence {
            estimate: 0.0,
            se: sd,
            df: k,
            n: 1,
            pilot: Some(crate::evidence::Pilot {
                sd: sd * f.max(0.0).sqrt(),
                df: k,
                mean: 0.0,
            }),
        };
        blocks_for(&e, family, precision)
    };
    (at(0.1), at(0.5), at(0.9))
}

/// The A/A checks, from each study's twin runs (`twins`: workload -> threads -> (block,
/// tps)) paired with its first variant's (`first`, the same shape). In an auto study
/// (`pilot`: its pilot's blocks) a check's interval takes the pilot's spread where that is
/// the wider, as a comparison's does (`Evidence::spread_at`): how many blocks run hangs on
/// the pilots' spreads, a's among them, and all the blocks' spread alone then reads narrow
/// after a quiet pilot. Simulated over the A/A/B's grid (`settling_grid`, 4,000 studies a
/// row), the check warned 4.6-5.7% of the time at 5% on all the blocks' spread, 2.2-3.8%
/// with the pilot's beside it. Cut to the blocks its own pilot asked for, it warned 4.9-5.9%
/// on its plain spread and 4.4-5.6% with the pilot's, on fewer blocks, so it keeps them all.
/// Those figures are for a twin added to the blocks. A listed twin (`listed_twin`, the
/// A/A/B's a-again) also sizes the study, so the pilot's spread is the check's own: it then
/// warned 2.2-5.15% (12,000 a row), about its nominal rate.
pub fn aa_checks(
    twins: &BTreeMap<String, BTreeMap<u32, BTreeMap<u32, f64>>>,
    first: &BTreeMap<String, BTreeMap<u32, BTreeMap<u32, f64>>>,
    pilot: Option<u32>,
    listed_twin: Option<&str>,
) -> Vec<AaCheck> {
    let mut found = Vec::new();
    for (workload, by_threads) in twins {
        for (&threads, reps) in by_threads {
            let Some(base) = first.get(workload).and_then(|b| b.get(&threads)) else {
                continue;
            };
            let pairs: Vec<(u32, f64, f64)> = reps
                .iter()
                .filter_map(|(&r, &tps)| Some((r, *base.get(&r)?, tps)))
                .collect();
            if Evidence::paired(&pairs, pilot).is_some() {
                found.push((workload, threads, pairs));
            }
        }
    }
    // The checks share 5% as the comparisons do: unadjusted, a clean study of four cells
    // warned of a faulty set-up in about one study in five.
    let level = 1.0 - ALPHA / found.len().max(1) as f64;
    let mut out = Vec::new();
    for (workload, threads, pairs) in found {
        let Some(e) = Evidence::paired(&pairs, pilot) else {
            continue;
        };
        let p = 1.0 - (1.0 - level) / 2.0;
        let (se, df) = e.spread_at(p);
        let half = t_quantile(df, p) * se;
        let (ratio, lo, hi) = (
            e.estimate.exp(),
            (e.estimate - half).exp(),
            (e.estimate + half).exp(),
        );
        let logs: Vec<f64> = pairs.iter().map(|&(_, a, b)| (b / a).ln()).collect();
        // Two runs of one set-up: their log ratio's spread is sqrt(2) runs' spread.
        let run = mean_sd(&logs).1 / std::f64::consts::SQRT_2;
        // Between blocks: the spread of the block means beyond what the runs explain.
        let means: Vec<f64> = pairs
            .iter()
            .map(|&(_, a, b)| (a.ln() + b.ln()) / 2.0)
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
            level,
            run_noise: run,
            block_noise: block,
            twin: listed_twin.map(str::to_string),
        });
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
    let runs = match &noisiest.twin {
        Some(twin) => format!("'{twin}', listed the same as the first variant, over all {} blocks; its comparison reads the same runs on the blocks it asked for", noisiest.blocks),
        None => format!("the first variant twice in each of {} blocks", noisiest.blocks),
    };
    let mut s = format!(
        "The A/A runs ({runs}) put run-to-run noise at {:.1}% and block-to-block drift at {:.1}% (largest at {} threads).",
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
            " Warning: identical runs differed systematically at {}: something in the set-up favours one place in the block (warm-up, a cache, the order); the study's {} checks share 5% ({:.2}% intervals), so chance alone warns in at most 1 study in 20: look before trusting this workload's comparisons.",
            off.join(", "),
            checks.len(),
            noisiest.level * 100.0
        ));
    }
    Some(s)
}

/// Where an auto study stopped, in words.
pub fn auto_line(a: &AutoStatus) -> String {
    let asked = format!("+-{:.1}%", a.precision * 100.0);
    let settled = match a.settled {
        0 => String::new(),
        1 => " (1 comparison the pilot settled alone, beyond the equivalence margin, asked for no more)".to_string(),
        n => format!(" ({n} comparisons the pilot settled alone, beyond the equivalence margin, asked for no more)"),
    };
    let sized = format!(
        "a pilot of {} blocks sized the study for every comparison's family-adjusted interval within {asked}{settled}",
        a.pilot
    );
    if a.needed <= a.max_repetitions {
        return format!(
            "repetitions = \"auto\": {sized}: {} blocks needed, {} run (Stein's two-stage design: each comparison is judged on the blocks it asked for, with the pilot's spread, so its coverage holds).",
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
pub(crate) mod tests;
