//! What a study needs in each way of running its blocks, from a pilot run one way and the
//! machine's spells: taking turns, a block's ratio moves by its servers' restarts (each block
//! starts them afresh) and little else; one server at a time, each run also meets its own
//! stretch of the machine's speed, which averages over a run only as far as the run is long
//! beside a spell.

use std::time::Duration;

use bakeoff_hostbench::steadiness::CpuSteadiness;
use bakeoff_study::StudySpec;

/// One way of running the study's blocks, sized.
pub struct Mode {
    pub name: &'static str,
    /// Measured by the pilot, or estimated from the machine's spells.
    pub measured: bool,
    /// A block's log ratio spread (the widest comparison's).
    pub spread: f64,
    /// Blocks needed: (low, middle, high) over the pilot's uncertainty.
    pub blocks: (u32, u32, u32),
    pub per_block: f64,
}

/// The machine's spells: their size (a speed's spread) and correlation length in seconds,
/// from the least steady CPU. A run on one side of the median spans about two correlation
/// lengths (a new spell lands on the same side half the time), so half of it.
pub fn spells(cpus: &[CpuSteadiness]) -> Option<(f64, f64)> {
    let w = bakeoff_study::steady::worst(cpus)?;
    Some((w.spread, w.spell_ms / 2000.0))
}

/// The share of a speed's variance left in the mean over a run of `d` seconds, when its
/// spells last `l` seconds on average (an exponential correlation: 1 for a run inside one
/// spell, about 2l/d over many).
pub fn left_after(d: f64, l: f64) -> f64 {
    if l <= 0.0 || d <= 0.0 {
        return 0.0;
    }
    let x = d / l;
    (2.0 / (x * x) * (x - 1.0 + (-x).exp())).clamp(0.0, 1.0)
}

/// Both ways of running the study's blocks: the pilot's (`spread` measured over `df`
/// degrees of freedom, `per_block` seconds a block) and the other, estimated, or measured by
/// the pilot's check blocks where it ran them (`checked`: one server at a time, the widest
/// comparison's spread and its degrees of freedom). The pilot's blocks were timed with their
/// check blocks: each way's block is its share of that time.
#[allow(clippy::too_many_arguments)]
pub fn modes(
    spec: &StudySpec,
    turns: bool,
    spread: f64,
    df: f64,
    per_block: f64,
    spells: Option<(f64, f64)>,
    family: usize,
    precision: f64,
    study_pilot: u32,
    checked: Option<(f64, f64)>,
) -> Vec<Mode> {
    let need_at = |sd: f64, df: f64| {
        bakeoff_report::decide::need_range(sd, df, family, precision, study_pilot)
    };
    let need = |sd: f64| need_at(sd, df);
    // Two runs, each meeting its own stretch of the machine: twice one run's share.
    let spell_var = spells.map_or(0.0, |(size, l)| {
        2.0 * size * size * left_after(spec.duration.as_secs_f64(), l)
    });
    let other = match (turns, checked) {
        (true, Some((measured, _))) => measured,
        (true, None) => (spread * spread + spell_var).sqrt(),
        // Only what the restarts leave; never below a quarter of the blocks' own spread.
        (false, _) => (spread * spread - spell_var)
            .max(spread * spread / 16.0)
            .sqrt(),
    };
    let time = |alternate: bool| block_seconds(spec, alternate);
    let checks = match (turns, spec.alternation.validate_every) {
        (true, k) if k > 0 => time(false) / f64::from(k),
        _ => 0.0,
    };
    let scale = per_block / (time(turns) + checks).max(1.0);
    let mine = Mode {
        name: if turns {
            "taking turns"
        } else {
            "one server at a time"
        },
        measured: true,
        spread,
        blocks: need(spread),
        per_block: time(turns) * scale,
    };
    let theirs = Mode {
        name: if turns {
            "one server at a time"
        } else {
            "taking turns"
        },
        measured: turns && checked.is_some(),
        spread: other,
        blocks: match checked.filter(|_| turns) {
            Some((_, check_df)) => need_at(other, check_df),
            None => need(other),
        },
        per_block: time(!turns) * scale,
    };
    vec![mine, theirs]
}

/// The study's own estimate of one block, one way or the other.
fn block_seconds(spec: &StudySpec, alternate: bool) -> f64 {
    let mut one = spec.clone();
    one.repetitions = 1;
    one.auto = None;
    one.alternation.enabled = alternate;
    one.alternation.validate_every = 0;
    let d: Duration = bakeoff_study::estimate(&one);
    d.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_averages_a_spell_only_as_far_as_it_outlasts_it() {
        assert!(
            (left_after(0.01, 5.0) - 1.0).abs() < 0.01,
            "inside one spell"
        );
        let many = left_after(100.0, 1.0);
        assert!((many - 0.0198).abs() < 0.001, "{many}: about 2l/d");
        assert_eq!(left_after(2.0, 0.0), 0.0);
    }
}
