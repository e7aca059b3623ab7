//! Answers that decide: each comparison's interval read as a verdict (a significant
//! difference, or a bound on any difference), the machine's noise floor from the noise check
//! (the first variant run twice in every block), and whether an auto study's comparisons got
//! as precise as it asked.

use std::collections::BTreeMap;

use crate::model::{AutoStatus, Comparison, NoiseFloor, Verdict};
use crate::stats::{half_width, paired_ratio_ci, reach};

/// The noise floors, from each study's A/A runs (`twins`: workload -> threads -> (block,
/// tps)) paired with its first variant's (`first`, the same shape).
pub fn noise_floors(
    twins: &BTreeMap<String, BTreeMap<u32, BTreeMap<u32, f64>>>,
    first: &BTreeMap<String, BTreeMap<u32, BTreeMap<u32, f64>>>,
) -> Vec<NoiseFloor> {
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
            if let Some((ratio, lo, hi)) = paired_ratio_ci(&pairs) {
                out.push(NoiseFloor {
                    workload: workload.clone(),
                    threads,
                    blocks: pairs.len() as u32,
                    ratio,
                    ci: (lo, hi),
                    floor: reach(lo, hi),
                });
            }
        }
    }
    out
}

/// Each comparison's verdict and bound, read against the noise floor of its cell.
pub fn judge(comparisons: &mut [Comparison], noise: &[NoiseFloor]) {
    for c in comparisons.iter_mut() {
        let floor = noise
            .iter()
            .find(|n| n.workload == c.workload && n.threads == c.threads);
        c.noise_floor = floor.map(|n| n.floor);
        (c.verdict, c.bound) = match c.ci {
            None => (Verdict::Open, None),
            Some(_) if c.significant => (Verdict::Significant, None),
            Some((lo, hi)) => match floor {
                Some(n) if lo >= 1.0 - n.floor && hi <= 1.0 + n.floor => {
                    (Verdict::WithinNoise, Some(reach(lo, hi)))
                }
                _ => (Verdict::Bounded, Some(reach(lo, hi))),
            },
        };
    }
}

/// The precision a comparison must reach to stop an auto study: the asked one, or the noise
/// floor where the machine itself shows a difference between identical runs (an A/A interval
/// that excludes 1: asking for less than that is said, not chased).
pub fn target(precision: f64, floor: Option<&NoiseFloor>) -> f64 {
    match floor {
        Some(n) if n.ci.0 > 1.0 || n.ci.1 < 1.0 => precision.max(n.floor),
        _ => precision,
    }
}

/// Whether `c` is as precise as `precision` asks (with `noise` as in [`target`]); a
/// comparison without an interval is not.
pub fn precise(c: &Comparison, precision: f64, noise: &[NoiseFloor]) -> bool {
    let floor = noise
        .iter()
        .find(|n| n.workload == c.workload && n.threads == c.threads);
    c.ci.is_some_and(|(lo, hi)| half_width(lo, hi) <= target(precision, floor))
}

/// Where an auto study stopped, in words.
pub fn auto_line(a: &AutoStatus) -> String {
    let asked = format!("+-{:.1}%", a.precision * 100.0);
    match a.unresolved {
        0 => format!(
            "repetitions = \"auto\": {} blocks; every comparison's 95% interval is within {asked} (or this machine's noise floor, where it shows a difference between identical runs)",
            a.blocks
        ),
        n => format!(
            "repetitions = \"auto\": {} blocks (max_repetitions = {}); {n} comparison(s) are still wider than {asked} (marked +; where identical runs differ systematically, the noise floor is the target instead){}",
            a.blocks,
            a.max_repetitions,
            if a.blocks >= a.max_repetitions { ": the study stopped at its maximum" } else { ": the study has not finished its blocks" }
        ),
    }
}

/// A noise floor above this is a warning: the machine hides differences a user may care about.
pub const LOUD: f64 = 0.05;

/// The noise floor of workload `workload` in a sentence (its widest thread count), with what
/// the telemetry saw when it is above [`LOUD`]: steal, other processes, a client on the
/// server's CPUs (from the suspect runs and the warnings of that workload).
pub fn noise_sentence(
    workload: &str,
    noise: &[NoiseFloor],
    suspects: &[crate::model::Suspect],
    warnings: &[crate::model::Warning],
) -> Option<String> {
    let widest = noise
        .iter()
        .filter(|n| n.workload == workload)
        .max_by(|a, b| a.floor.total_cmp(&b.floor))?;
    let mut s = format!(
        "Differences below {:.1}% are within this machine's noise here (the first variant against itself in each of {} blocks; widest at {} threads).",
        widest.floor * 100.0,
        widest.blocks,
        widest.threads
    );
    if widest.floor > LOUD {
        let runs = |kind: &str| {
            suspects
                .iter()
                .filter(|x| x.workload == workload && x.reasons.iter().any(|r| r.starts_with(kind)))
                .count()
        };
        let mut seen: Vec<String> = [
            (
                "throughput drifted",
                "runs whose throughput drifted more than 10% within the run",
            ),
            ("the hypervisor stole", "runs with more than 2% steal"),
            (
                "other processes used",
                "runs with other processes using more than 10% of the CPU",
            ),
        ]
        .iter()
        .filter_map(|(kind, what)| match runs(kind) {
            0 => None,
            n => Some(format!("{n} {what}")),
        })
        .collect();
        if warnings
            .iter()
            .any(|w| w.workload == workload && w.text.starts_with("client shares CPUs"))
        {
            seen.push("a client that shared the server's CPUs".into());
        }
        let saw = match seen.is_empty() {
            true => "the telemetry flagged no steal, no other busy process and no drifting run: longer runs, the server and the client on CPUs of their own (cpus, client_cpus), or a quieter machine narrow it".to_string(),
            false => format!("the telemetry saw {}", seen.join(", ")),
        };
        s.push_str(&format!(
            " Warning: a noise floor above {:.0}% hides smaller differences; {saw}.",
            LOUD * 100.0
        ));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lo: f64, hi: f64) -> Comparison {
        Comparison {
            workload: "w".into(),
            variant: "v".into(),
            threads: 4,
            against: "b".into(),
            ratio: Some((lo * hi).sqrt()),
            ci: Some((lo, hi)),
            significant: lo > 1.0 || hi < 1.0,
            note: None,
            method: "paired",
            blocks: 5,
            verdict: Verdict::Open,
            bound: None,
            noise_floor: None,
        }
    }

    fn floor(lo: f64, hi: f64) -> NoiseFloor {
        NoiseFloor {
            workload: "w".into(),
            threads: 4,
            blocks: 5,
            ratio: 1.0,
            ci: (lo, hi),
            floor: reach(lo, hi),
        }
    }

    #[test]
    fn verdicts_say_significant_within_noise_or_bounded() {
        let mut rows = vec![row(1.08, 1.16), row(0.99, 1.015), row(0.96, 1.05)];
        judge(&mut rows, &[floor(0.98, 1.021)]);
        assert_eq!(rows[0].verdict, Verdict::Significant);
        assert_eq!(rows[1].verdict, Verdict::WithinNoise);
        assert!(
            (rows[1].bound.unwrap() - 0.015).abs() < 1e-9,
            "the interval's own reach"
        );
        assert!((rows[1].noise_floor.unwrap() - 0.021).abs() < 1e-9);
        assert_eq!(rows[2].verdict, Verdict::Bounded);
        assert!((rows[2].bound.unwrap() - 0.05).abs() < 1e-9);
    }

    #[test]
    fn a_systematic_aa_difference_raises_the_target_and_noise_alone_does_not() {
        assert_eq!(
            target(0.03, Some(&floor(0.97, 1.04))),
            0.03,
            "A/A contains 1"
        );
        assert!((target(0.01, Some(&floor(1.02, 1.06))) - 0.06).abs() < 1e-9);
        let r = row(0.98, 1.02);
        assert!(precise(&r, 0.03, &[]));
        assert!(!precise(&r, 0.01, &[]));
        assert!(precise(&r, 0.01, &[floor(1.01, 1.05)]));
    }
}
