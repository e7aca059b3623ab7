//! How a comparison's blocks pair: a figure of the variant and of its baseline in every block
//! both ran, and when a study's order makes no pairing worth a verdict.

use crate::model::Point;

/// (block, baseline, variant) of a figure (`of`: a point's figure at a repetition's index)
/// in every block both ran with one.
pub(crate) fn pairs(
    base: &Point,
    p: &Point,
    of: impl Fn(&Point, usize) -> Option<f64>,
) -> Vec<(u32, f64, f64)> {
    (0..p.repetitions.len())
        .filter_map(|i| {
            let r = p.repetitions[i];
            let at = base.repetitions.iter().position(|&b| b == r)?;
            Some((r, of(base, at)?, of(p, i)?))
        })
        .collect()
}

/// The server's CPU per transaction, paired as throughput is, where every one of the
/// `paired` blocks both ran has it (a cost judged on some blocks only would be judged on
/// other blocks than throughput).
pub(crate) fn pairs_cpu(base: &Point, p: &Point, paired: usize) -> Vec<(u32, f64, f64)> {
    every_block(
        pairs(base, p, |p, i| p.cpu_per_event.get(i).copied().flatten()),
        paired,
    )
}

/// Each block's latency percentile (`of`: a point's per-repetition p99 or p95), paired as
/// throughput is, where every one of the `paired` blocks has it.
pub(crate) fn pairs_latency(
    base: &Point,
    p: &Point,
    paired: usize,
    of: impl Fn(&Point) -> &Vec<Option<f64>>,
) -> Vec<(u32, f64, f64)> {
    every_block(
        pairs(base, p, |p, i| of(p).get(i).copied().flatten()),
        paired,
    )
}

fn every_block(pairs: Vec<(u32, f64, f64)>, paired: usize) -> Vec<(u32, f64, f64)> {
    match pairs.len() == paired {
        true => pairs,
        false => Vec::new(),
    }
}

/// Why a study run in a fixed order has ratios but no verdicts.
pub(crate) const FIXED_ORDER: &str = "order = \"sequential\" ran every block in one fixed order, so anything that slides over a block (a cache warming, a neighbour) would read as a difference: ratios only, no verdict; order = \"interleaved\" (the default) shuffles each block and pairs it";
