//! The carry-over check simulated: studies by turns whose variants' switch penalties differ,
//! judged by the decision chain (`decide`) and checked by `carry_over`.

use std::collections::BTreeMap;

use super::{carry_over, Penalty};
use crate::decide::judge_all;
use crate::decide::tests::comparison;
use crate::evidence::Evidence;
use crate::model::Verdict;
use crate::seeded::Lcg;

/// The design's risk simulated: a study by turns of two variants with no difference one at a
/// time, whose switch penalties differ (b loses 10% on a slice after another server's turn, a
/// 5%, on 80% of their slices), so that by turns b reads 4% slower in every block. With 8
/// blocks a run's noise of 2% calls that "different" nearly always; the carry-over check,
/// from penalties estimated with their own noise, must flag nearly every such verdict, and
/// flag few where the penalties are the same. A rule that moved the ratio the wrong way (or
/// not at all) flags none, and fails.
#[test]
fn the_carry_over_check_flags_verdicts_that_switch_penalties_made() {
    let (blocks, noise, f) = (8usize, 0.02, 0.8);
    let mut rng = Lcg(7);
    let mut simulate = |p_a: f64, p_b: f64| {
        let (mut differ, mut flagged_of_differ, mut flagged) = (0, 0, 0);
        let trials = 400;
        for _ in 0..trials {
            let bias = -f * (p_b - p_a);
            let pairs: Vec<(u32, f64, f64)> = (0..blocks)
                .map(|k| {
                    let a = (noise * rng.normal()).exp();
                    let b = (bias + noise * rng.normal()).exp();
                    (k as u32 + 1, a, b)
                })
                .collect();
            let mut c = comparison("w");
            c.evidence = Evidence::paired(&pairs, None);
            let mut all = vec![c];
            judge_all(&mut all);
            // Each run's penalty read from its own slices: 2% noise a run.
            let mut estimate = |p: f64| {
                let runs: Vec<f64> = (0..blocks).map(|_| p + 0.02 * rng.normal()).collect();
                let (m, sd) = crate::stats::mean_sd(&runs);
                Penalty {
                    ratio: m.exp() - 1.0,
                    log: m,
                    se: sd / (blocks as f64).sqrt(),
                    runs: blocks,
                    after_other: f,
                }
            };
            let per: BTreeMap<String, Penalty> = [
                ("a".to_string(), estimate(p_a)),
                ("b".to_string(), estimate(p_b)),
            ]
            .into_iter()
            .collect();
            let penalties: BTreeMap<String, BTreeMap<String, Penalty>> =
                [("w".to_string(), per)].into_iter().collect();
            carry_over(&mut all, &penalties);
            let c = &all[0];
            let moved = c.carry_over.is_some();
            flagged += usize::from(moved);
            if matches!(c.verdict, Verdict::Different | Verdict::DifferentWithin) {
                differ += 1;
                flagged_of_differ += usize::from(moved);
            }
        }
        (
            differ as f64 / trials as f64,
            flagged_of_differ as f64 / differ.max(1) as f64,
            flagged as f64 / trials as f64,
        )
    };
    let (differ, caught, _) = simulate(0.05, 0.10);
    assert!(
        differ > 0.9,
        "by turns the penalties make a difference: {differ}"
    );
    assert!(caught > 0.9, "the check flags them: {caught}");
    let (_, _, flagged) = simulate(0.07, 0.07);
    assert!(
        flagged < 0.15,
        "equal penalties move few verdicts: {flagged}"
    );
}
