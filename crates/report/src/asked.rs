//! An auto study's comparisons, each judged on the blocks it asked for.
//!
//! Stein's design is exact when the number of blocks a comparison is judged on depends on its
//! pilot's spread alone. A study runs as many blocks as its neediest comparison asks, and a
//! comparison the pilot settles beyond the margin asks for none past the pilot (see
//! `decide::settled_by_pilot`), so how many blocks run depends on other comparisons' means
//! too: judged on all of them, a null comparison sharing its baseline with one whose settling
//! was a coin toss was called different 3.5% of the time at 2.5% (simulated, the A/A/B
//! shape). Judged on the first blocks up to its own ask (capped), each comparison's number
//! depends on its own pilot alone, and its interval is still within the precision asked.

use crate::evidence::Evidence;
use crate::model::Comparison;

/// Cut every auto comparison's evidence to the blocks it asked for, at the family size the
/// verdicts will use (every comparison with evidence).
pub(crate) fn judge_on_asked(comparisons: &mut [Comparison]) {
    let family = comparisons.iter().filter(|c| c.evidence.is_some()).count();
    for c in comparisons.iter_mut() {
        let (Some(a), Some(e)) = (&mut c.asked, c.evidence) else {
            continue;
        };
        // A pilot with fewer than two pairs sized nothing: all the blocks, as before.
        if a.pairs.iter().filter(|p| p.0 <= a.pilot).count() < 2 {
            continue;
        }
        a.settled = crate::decide::settled_by_pilot(&e, family, c.margin);
        let ask =
            crate::decide::blocks_asked(&e, family, a.precision, c.margin, a.pilot).min(a.cap);
        let within = |pairs: &[(u32, f64, f64)]| -> Vec<(u32, f64, f64)> {
            pairs.iter().copied().filter(|p| p.0 <= ask).collect()
        };
        let pairs = within(&a.pairs);
        if pairs.len() == a.pairs.len() {
            continue;
        }
        let Some(cut) = Evidence::paired(&pairs, Some(a.pilot)) else {
            continue;
        };
        let cpu = within(&a.cpu);
        c.cost_evidence =
            Evidence::paired_beside(&cpu, Some(a.pilot)).filter(|_| !a.cpu.is_empty());
        if c.latency_evidence.is_some() {
            let p99 = within(&a.p99);
            c.latency_evidence =
                Evidence::paired_beside(&p99, Some(a.pilot)).filter(|_| !a.p99.is_empty());
        }
        if c.latency_p95_evidence.is_some() {
            let p95 = within(&a.p95);
            c.latency_p95_evidence =
                Evidence::paired_beside(&p95, Some(a.pilot)).filter(|_| !a.p95.is_empty());
        }
        c.evidence = Some(cut);
        c.blocks = pairs.len() as u32;
    }
}
