//! Turns checked against one server at a time, on the study's own machine and workloads.
//!
//! A ratio taken by turns is not solo throughput: each server runs right after another did,
//! and a carry-over that differs between variants (a larger working set evicted by the other's
//! turns, background work landing in turns) is a bias no number of blocks removes. A study with
//! `[alternation] validate_every = k` therefore runs, after every k-th block by turns, a check
//! block of the same variants one server at a time, numbered apart
//! (`bakeoff_store::is_check_block`), so its pilot, sizing and verdicts never count them. Here
//! the check blocks are judged as a study of their own (paired, fixed blocks), and each verdict
//! by turns is set beside theirs: the ratio of the two ratios, by turns over one at a time, with
//! its interval (Welch's, on the log scale: the two are independent sets of blocks). Three
//! outcomes: the interval excludes 1 (they disagree: the verdict by turns is not the solo
//! answer); it lies within the equivalence margin (they agree: any carry-over is smaller than
//! the margin, and only then do the write caveat and the switch penalties' estimate give way);
//! or neither (too wide to tell: the check blocks were too few or too noisy).
//!
//! The checks are a family of their own: they share 5%, so a study whose turns carry nothing
//! warns at most 1 time in 20, however many comparisons it checks.

use crate::model::{Comparison, TurnsCheck};
use crate::source::{num, Source, StudySource};
use crate::stats::t_quantile;

/// Where the study ran check blocks: its own runs, and those apart as a study of their own
/// (fixed blocks, no pilot, no A/A twin, the study's margin). None without check blocks: the
/// source is used as it is (most reports, and every sizing step, copy nothing).
pub(crate) fn split(
    src: &Source,
    margin_of: impl Fn(&StudySource) -> f64,
) -> Option<(Source, Source)> {
    let is_check =
        |r: &bakeoff_store::Row| bakeoff_store::is_check_block(num(r, "repetition") as u32);
    if !src.studies.iter().any(|s| s.runs.iter().any(is_check)) {
        return None;
    }
    let main = Source {
        name: src.name.clone(),
        set_aside: Vec::new(),
        studies: src
            .studies
            .iter()
            .map(|s| StudySource {
                runs: s.runs.iter().filter(|r| !is_check(r)).cloned().collect(),
                ..s.clone()
            })
            .collect(),
    };
    let checks = Source {
        name: src.name.clone(),
        set_aside: Vec::new(),
        studies: src
            .studies
            .iter()
            .map(|s| {
                let mut spec = s.spec();
                spec["equivalence"] = margin_of(s).into();
                spec["auto"] = serde_json::Value::Null;
                spec["noise_check"] = false.into();
                spec["noise_twin"] = serde_json::Value::Null;
                StudySource {
                    spec_json: spec.to_string(),
                    runs: s.runs.iter().filter(|r| is_check(r)).cloned().collect(),
                    // Ticks by run id: the check runs' own feed their suspect screens.
                    slices: Vec::new(),
                    ..s.clone()
                }
            })
            .collect(),
    };
    Some((main, checks))
}

/// Set each comparison by turns beside its check blocks' (`solo`: the same comparisons judged
/// on the check blocks alone), the checks one family.
pub(crate) fn attach(comparisons: &mut [Comparison], solo: &[Comparison]) {
    let found = |c: &Comparison| {
        solo.iter().find(|s| {
            (&s.workload, &s.variant, &s.against, s.threads)
                == (&c.workload, &c.variant, &c.against, c.threads)
                && s.evidence.is_some()
        })
    };
    let family = comparisons
        .iter()
        .filter(|c| c.evidence.is_some() && found(c).is_some())
        .count();
    if family == 0 {
        return;
    }
    let alpha = crate::decide::ALPHA / family as f64;
    for i in 0..comparisons.len() {
        let c = &comparisons[i];
        let (Some(t), Some(s)) = (c.evidence, found(c)) else {
            continue;
        };
        let Some(e) = s.evidence else { continue };
        let judged = crate::decide::judge_at(e, crate::decide::alpha(c), c.margin);
        // The turns side with the spread its own verdict uses (an auto study's pilot's, where
        // that is the wider at this level), so the check claims no more than the verdict.
        let by_turns = t.spread_at(1.0 - alpha / 2.0);
        let (estimate, se, df) = welch(t.estimate - e.estimate, by_turns, (e.se, e.df));
        let half = t_quantile(df, 1.0 - alpha / 2.0) * se;
        let agreement = ((estimate - half).exp(), (estimate + half).exp());
        comparisons[i].checked = Some(TurnsCheck {
            blocks: e.n,
            ratio: judged.ratio,
            verdict: judged.verdict,
            interval: judged.shown,
            ratio_of_ratios: estimate.exp(),
            agreement,
            level: 1.0 - alpha,
            agree: agreement.0 <= 1.0 && agreement.1 >= 1.0,
            within: agreement.0 > 1.0 / (1.0 + c.margin) && agreement.1 < 1.0 + c.margin,
            spread: e.se * f64::from(e.n).sqrt(),
            turns_spread: t.se * f64::from(t.n).sqrt(),
            turns_blocks: t.n,
        });
    }
}

/// The half-width (log scale) of the check's interval with `turns` blocks by turns and `checks`
/// check blocks, a block's log ratio spreading by `turns_spread` and `spread` (one server at a
/// time), in a family of `family` checks: what a study of that size can tell from 1 (`study
/// plan`).
pub fn resolves(
    (turns_spread, turns): (f64, u32),
    (spread, checks): (f64, u32),
    family: u32,
) -> Option<f64> {
    if turns < 2 || checks < 2 {
        return None;
    }
    let a = (turns_spread / f64::from(turns).sqrt(), f64::from(turns - 1));
    let b = (spread / f64::from(checks).sqrt(), f64::from(checks - 1));
    let (_, se, df) = welch(0.0, a, b);
    let alpha = crate::decide::ALPHA / f64::from(family.max(1));
    Some(t_quantile(df, 1.0 - alpha / 2.0) * se)
}

/// The difference of two independent means' standard errors combined, with Welch-Satterthwaite
/// degrees of freedom.
fn welch(estimate: f64, (se_a, df_a): (f64, f64), (se_b, df_b): (f64, f64)) -> (f64, f64, f64) {
    let (va, vb) = (se_a * se_a, se_b * se_b);
    let var = va + vb;
    let df = match var > 0.0 {
        true => var * var / (va * va / df_a.max(1.0) + vb * vb / df_b.max(1.0)),
        false => df_a.min(df_b).max(1.0),
    };
    (estimate, var.sqrt(), df)
}

/// A workload's check, in sentences: per comparison checked, both ways and whether they agree.
pub(crate) fn sentence(label: &str, comparisons: &[Comparison]) -> Option<String> {
    let checked: Vec<(&Comparison, TurnsCheck)> = comparisons
        .iter()
        .filter(|c| c.workload == label)
        .filter_map(|c| Some((c, c.checked?)))
        .collect();
    let (_, first) = checked.first()?;
    let level = first.level * 100.0;
    let each: Vec<String> = checked
        .iter()
        .map(|(c, k)| {
            format!(
                "{} at {} thread{}: by turns {:.2}x, one at a time {:.2}x ({:.2}x-{:.2}x, {}), turns over one at a time {:.3}x ({:.3}x-{:.3}x){}",
                c.variant,
                c.threads,
                if c.threads == 1 { "" } else { "s" },
                c.ratio.unwrap_or(1.0),
                k.ratio,
                k.interval.0,
                k.interval.1,
                k.verdict.word(),
                k.ratio_of_ratios,
                k.agreement.0,
                k.agreement.1,
                outcome(k)
            )
        })
        .collect();
    let disagree = checked.iter().filter(|(_, k)| !k.agree).count();
    let wide = checked.iter().filter(|(_, k)| k.agree && !k.within).count();
    let margin = crate::decide::margin_text(checked[0].0.margin);
    let mut close = match disagree {
        0 => format!("none disagree ({level:.2}%, the checks sharing 5%)"),
        n => format!(
            "{n} of {} disagree ({level:.2}%, the checks sharing 5%): taking turns carried something into those ratios that one server at a time does not see, so their verdicts by turns are not the solo answer; take the one-at-a-time figures, or run the study with [alternation] enabled = false for verdicts on them",
            checked.len()
        ),
    };
    close.push_str(&match wide {
        0 => format!("; every agreement lies within {margin}."),
        n => format!(
            "; {n} of {} cannot tell: their intervals hold 1 but reach beyond {margin}, so a carry-over that large is not ruled out (more check blocks would narrow them: more blocks, or a lower validate_every).",
            checked.len()
        ),
    });
    Some(format!(
        "Checked one server at a time ([alternation] validate_every, {} check block(s)): {}; {close}",
        first.blocks,
        each.join("; ")
    ))
}

/// A check's outcome after its figures: "" where it agrees within the margin.
pub(crate) fn outcome(k: &TurnsCheck) -> &'static str {
    match (k.agree, k.within) {
        (false, _) => ": they disagree",
        (true, false) => ": too wide to tell",
        (true, true) => "",
    }
}

/// The opening line's words on the checks, where any comparison of the workload was checked.
pub(crate) fn opening(checked: &[&Comparison]) -> Option<String> {
    let all: Vec<TurnsCheck> = checked.iter().filter_map(|c| c.checked).collect();
    let margin = crate::decide::margin_text(checked.first()?.margin);
    if all.is_empty() {
        return None;
    }
    let n = |f: fn(&TurnsCheck) -> bool| all.iter().filter(|k| f(k)).count();
    let mut parts = Vec::new();
    for (count, what) in [
        (n(|k| !k.agree), "disagree with turns (see below)"),
        (n(|k| k.agree && k.within), "agree within the margin"),
        (n(|k| k.agree && !k.within), "too wide to tell"),
    ] {
        if count > 0 {
            parts.push(format!("{count} {what}"));
        }
    }
    Some(format!(
        "; checked one server at a time, of {}: {}, for the margin {margin}",
        all.len(),
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::tests::comparison;
    use crate::evidence::Evidence;

    fn with(estimate: f64, se: f64) -> Comparison {
        Comparison {
            evidence: Some(Evidence {
                estimate: estimate.ln(),
                se,
                df: 7.0,
                n: 8,
                pilot: None,
            }),
            ..comparison("w")
        }
    }

    /// Turns at 1.00x (se 0.5%) against check blocks that read: 1.00x tightly (agree within
    /// the margin), 1.00x loosely (too wide to tell), 1.20x tightly (disagree).
    #[test]
    fn a_check_agrees_within_the_margin_cannot_tell_or_disagrees() {
        let cases = [
            (1.00, 0.005, true, true),
            (1.00, 0.05, true, false),
            (1.20, 0.005, false, false),
        ];
        for (solo, se, agree, within) in cases {
            let mut turns = [with(1.0, 0.005)];
            attach(&mut turns, &[with(solo, se)]);
            let k = turns[0].checked.expect("checked");
            assert_eq!((k.agree, k.within), (agree, within), "{solo} {se}: {k:?}");
            assert!((k.ratio_of_ratios - 1.0 / solo).abs() < 1e-9, "{k:?}");
            assert_eq!(k.level, 0.95, "one check: the family's whole 5%");
        }
    }
}
