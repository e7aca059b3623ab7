//! `bakeoff study plan FILE`: the machine first (a pinned loop's speed over 10 s: how far and
//! for how long its CPUs change speed), then a short pilot of the study on this machine, then
//! what the study needs for its precision: the blocks each comparison asks for with the
//! pilot's spread at the study's family level, with the range the pilot's few blocks leave
//! open, and the time they take taking turns and one server at a time (the dimensioning step
//! of Kalibera and Jones' "Rigorous benchmarking in reasonable time"). The pilot's results are
//! thrown away.

mod need;

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use bakeoff_report::decide::STEADY;
use bakeoff_store::Store;
use bakeoff_study::{run_study, series, study_sha256, Results, StoredStudy};

use crate::exit::{EXIT_INTERRUPTED, EXIT_USAGE, INTERRUPTED};

/// The precision a study that names none is planned for (an auto study's default: half
/// the default equivalence margin of 5%).
const DEFAULT_PRECISION: f64 = 0.025;

pub fn plan(file: &Path, pilot: u32) -> Result<ExitCode> {
    let (src, spec) = match crate::study::load(file)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    if pilot < 2 {
        eprintln!("--pilot-blocks {pilot}: a spread needs at least 2 blocks; give 2 or more (3, the default, sizes a study roughly: the plan says how roughly)");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let precision = spec.auto.map_or(DEFAULT_PRECISION, |a| a.precision);
    // Sized for the study's own intervals: its pilot's degrees of freedom (an auto study's
    // pilot), or its fixed number of blocks.
    let study_pilot = spec.auto.map_or(spec.repetitions.max(2), |a| a.pilot);
    let most = spec.auto.map(|a| a.max_repetitions);
    let mut pilot_spec = spec.clone();
    pilot_spec.repetitions = pilot;
    pilot_spec.auto = None;
    // The machine first, alone: how steady its CPUs are bounds what any pilot can find.
    // The CPUs bakeoff may use (taskset's set), not 0..N: a pinned run's may start anywhere.
    eprintln!(
        "study plan {}: timing a fixed loop on each of {} CPUs for 10 s",
        spec.name,
        bakeoff_study::steady::cpus().len()
    );
    let steady = bakeoff_study::steady::measure_for(std::time::Duration::from_secs(10));
    if INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("Interrupted before the pilot: nothing was planned.");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    let dir = scratch_dir()?;
    let db = dir.join("pilot.db");
    let result = (|| -> Result<Option<(Vec<bakeoff_report::Planned>, f64)>> {
        let mut store = Store::open(&db)?;
        let spec_json = serde_json::to_string(&pilot_spec)?;
        let hash = study_sha256(&src, &spec);
        let study = store.begin_study(&pilot_spec.name, &hash, &spec_json, true)?;
        let runs = series(&pilot_spec).len() * pilot_spec.threads.len();
        eprintln!(
            "study plan {}: a pilot of {pilot} blocks on this machine ({runs} runs); its results are not kept; {}",
            spec.name,
            bakeoff_study::alternation_line(&spec)
        );
        if let Some(caveat) = bakeoff_study::alternation_caveat(&spec) {
            eprintln!("{caveat}");
        }
        let mut results = StoredStudy {
            store: &mut store,
            study,
        };
        let started = Instant::now();
        let mut quiet = crate::study_status::Progress::new();
        let out = run_study(&pilot_spec, &hash, &mut results, &INTERRUPTED, &mut quiet)?;
        quiet.clear();
        if out.interrupted {
            return Ok(None);
        }
        let per_block = started.elapsed().as_secs_f64() / f64::from(pilot);
        let planned = bakeoff_report::plan(&spec_json, results.rows()?, precision, study_pilot)
            .map_err(anyhow::Error::msg)?;
        Ok(Some((planned, per_block)))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    let Some((planned, per_block)) = result? else {
        eprintln!("Interrupted: the pilot's results are thrown away; nothing was planned.");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    };
    print!("{}", steadiness(&steady));
    let turns = bakeoff_study::why_not_alternate(&spec).is_none();
    // A comparison the pilot already decides (far outside the margin) needs no more blocks,
    // whatever its spread: the ways are sized by the widest of the others.
    let widest = planned
        .iter()
        .filter(|p| !p.settled)
        .max_by(|a, b| a.spread.total_cmp(&b.spread));
    let modes = widest.map(|w| {
        need::modes(
            &spec,
            turns,
            w.spread,
            f64::from(pilot - 1),
            per_block,
            need::spells(&steady),
            w.family as usize,
            precision,
            study_pilot,
            // The pilot's check blocks measured one server at a time: the widest spread, at
            // the check blocks' own degrees of freedom.
            planned
                .iter()
                .filter_map(|p| Some(p.checked?))
                .max_by(|a, b| a.spread.total_cmp(&b.spread))
                .map(|k| (k.spread, f64::from(k.blocks.max(2) - 1))),
        )
    });
    print!("{}", report(&planned, precision, pilot));
    match modes {
        Some(modes) => {
            print!("{}", ways(&modes, turns, most));
            let blocks = most.map_or(spec.repetitions, |m| modes[0].blocks.1.min(m));
            if turns {
                print!("{}", checks(&planned, &modes, &spec, blocks));
            }
        }
        None if !planned.is_empty() => println!(
            "every comparison lies far outside the margin in the pilot's blocks: the study as written ({study_pilot} blocks) should decide them all at its own pilot"
        ),
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan in words: per workload the comparison that asks for most, from the pilot.
fn report(planned: &[bakeoff_report::Planned], precision: f64, pilot: u32) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let Some(family) = planned.first().map(|p| p.family) else {
        return "no comparison had an interval after the pilot (a failed run, or a single variant): nothing to size\n".into();
    };
    let _ = writeln!(
        s,
        "for every comparison within +-{:.1}% at the study's family level (5% shared by its {family} comparisons), from the pilot's {pilot} blocks:",
        precision * 100.0
    );
    let mut workloads: Vec<&str> = planned.iter().map(|p| p.workload.as_str()).collect();
    workloads.dedup();
    for w in workloads {
        let of_w = || planned.iter().filter(|p| p.workload == w);
        let decided: Vec<String> = of_w()
            .filter(|p| p.settled)
            .map(|p| format!("{} at {} threads {:.2}x", p.variant, p.threads, p.estimate))
            .collect();
        let widest = of_w()
            .filter(|p| !p.settled)
            .max_by(|a, b| a.spread.total_cmp(&b.spread));
        let _ = match widest {
            Some(p) => writeln!(
                s,
                "  {w}: {} blocks at the pilot's own spread (the widest: {} at {} threads, whose block ratios spread by {:.1}%)",
                p.blocks, p.variant, p.threads, p.spread * 100.0
            ),
            None => writeln!(s, "  {w}: decided by the pilot alone"),
        };
        if !decided.is_empty() {
            let _ = writeln!(
                s,
                "    decided by the pilot, far outside the margin (more blocks change nothing): {}",
                decided.join(", ")
            );
        }
    }
    s
}

/// Both ways of running the blocks: blocks and time, with the range the pilot leaves open.
fn ways(modes: &[need::Mode], turns: bool, most: Option<u32>) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    // Rounded up to the minute, as the study's own estimate is (never "21h 60m").
    let time = |blocks: u32, per_block: f64| {
        let secs = (per_block * f64::from(blocks)).max(0.0);
        crate::study_status::hours_minutes(std::time::Duration::from_secs_f64(secs))
    };
    for m in modes {
        let (lo, mid, hi) = m.blocks;
        let _ = writeln!(
            s,
            "{}{}: a block's ratio spreads by {:.1}%; {mid} blocks (80% range {lo}-{hi}: this pilot's few blocks and the study's own pilot each know the spread only roughly), about {} ({} - {}) at {:.0} s a block",
            m.name,
            match (m.measured, turns && m.name == "one server at a time") {
                (true, true) => " (measured by this pilot's check blocks)",
                (true, false) => " (measured by this pilot)",
                (false, _) => " (a rough estimate from the pilot and 10 s of the machine's spells)",
            },
            m.spread * 100.0,
            time(mid, m.per_block),
            time(lo, m.per_block),
            time(hi, m.per_block),
            m.per_block
        );
    }
    let need = modes[0].blocks.1;
    let how = if turns {
        "its servers take turns"
    } else {
        "it runs one server at a time"
    };
    if let Some(m) = most {
        let _ = match need <= m {
            true => writeln!(s, "as written {how}: within its max_repetitions = {m}; repetitions = \"auto\" sizes it again from its own pilot"),
            false => writeln!(s, "as written {how}: more than its max_repetitions = {m}; raise it to {need}, widen the precision, or quiet the set-up (pin the server and the client apart, longer runs)"),
        };
    }
    s
}

/// Turns checked one server at a time (`[alternation] validate_every`): what the pilot's check
/// blocks read, and how large a carry-over the study's would tell from none; where the study
/// has none, what `validate_every = 1` would tell, from the one-at-a-time spread estimated.
fn checks(
    planned: &[bakeoff_report::Planned],
    modes: &[need::Mode],
    spec: &bakeoff_study::StudySpec,
    blocks: u32,
) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let family = planned.len() as u32;
    let every = spec.alternation.validate_every;
    let checked: Vec<(&bakeoff_report::Planned, bakeoff_report::TurnsCheck)> = planned
        .iter()
        .filter_map(|p| Some((p, p.checked?)))
        .collect();
    if every == 0 || checked.is_empty() {
        let (Some(turns), Some(solo)) = (modes.first(), modes.get(1)) else {
            return s;
        };
        let h = bakeoff_report::resolves((turns.spread, blocks), (solo.spread, blocks), family);
        if let Some(h) = h {
            let _ = writeln!(
                s,
                "checking turns against one server at a time: with [alternation] validate_every = 1 ({blocks} check blocks, about {} more), the study would tell a carry-over of about +-{:.1}% from none (from the rough one-at-a-time spread above)",
                crate::study_status::hours_minutes(std::time::Duration::from_secs_f64(solo.per_block * f64::from(blocks))),
                (h.exp() - 1.0) * 100.0
            );
        }
        return s;
    }
    let disagree = checked.iter().filter(|(_, k)| !k.agree).count();
    let (lo, hi) = checked.iter().fold((f64::MAX, f64::MIN), |(a, b), (_, k)| {
        (a.min(k.ratio_of_ratios), b.max(k.ratio_of_ratios))
    });
    let _ = writeln!(
        s,
        "turns checked one server at a time in the pilot's {} check block(s): turns over one at a time {lo:.3}x to {hi:.3}x, {}",
        checked[0].1.blocks,
        match disagree {
            0 => "every interval holding 1".to_string(),
            n => format!("{n} of {} disagreeing already: consider [alternation] enabled = false", checked.len()),
        }
    );
    let widest = checked
        .iter()
        .filter_map(|(p, k)| {
            Some((
                p,
                bakeoff_report::resolves(
                    (k.turns_spread, blocks),
                    (k.spread, blocks / every),
                    family,
                )?,
            ))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((p, h)) = widest {
        let _ = writeln!(
            s,
            "  the study's {} check blocks (validate_every = {every}) tell a carry-over of about +-{:.1}% from none (the widest: {} at {} threads)",
            blocks / every,
            (h.exp() - 1.0) * 100.0,
            p.variant,
            p.threads
        );
    }
    s
}

/// The machine's steadiness in words: the CPU whose 100 ms slices varied most, against what
/// a machine of its own shows.
fn steadiness(cpus: &[bakeoff_hostbench::steadiness::CpuSteadiness]) -> String {
    let Some(worst) = bakeoff_study::steady::worst(cpus) else {
        return String::new();
    };
    let slowest = cpus.iter().map(|c| c.slowest).fold(f64::MAX, f64::min);
    let what = match worst.spread < STEADY && slowest > 1.0 - 3.0 * STEADY {
        true => "steady",
        false => "unsteady: its own speed moves by more than small differences between variants; servers taking turns share its spells, one server at a time meets them alone",
    };
    format!(
        "this machine: a fixed loop timed in 100 ms slices on all {} CPUs at once for 10 s varies by {:.1}% (CPU {}) in spells of about {:.1} s, its slowest slice {:.2}x its CPU's median; {what} (a machine of its own varies under {:.0}%)\n",
        cpus.len(),
        worst.spread * 100.0,
        worst.cpu,
        worst.spell_ms / 1000.0,
        slowest,
        STEADY * 100.0
    )
}

/// A fresh private directory for the pilot's database.
fn scratch_dir() -> Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!(
        "bakeoff-plan-{}-{}",
        std::process::id(),
        bakeoff_driver::random_hex(8)?
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ways' times: 21 h 59.6 min is 22h 00m, not "21h 60m".
    #[test]
    fn times_are_hours_and_whole_minutes() {
        let mode = need::Mode {
            name: "taking turns",
            measured: true,
            spread: 0.03,
            blocks: (10, 20, 30),
            per_block: (21.0 * 3600.0 + 59.6 * 60.0) / 20.0,
        };
        let text = ways(&[mode], true, None);
        assert!(text.contains("about 22h 00m ("), "{text}");
        assert!(!text.contains("60m"), "{text}");
    }

    fn planned(variant: &str, spread: f64, settled: bool) -> bakeoff_report::Planned {
        bakeoff_report::Planned {
            workload: "oltp_read_only".into(),
            variant: variant.into(),
            threads: 4,
            family: 2,
            spread,
            estimate: if settled { 5.0 } else { 1.01 },
            settled,
            blocks: if settled { 4 } else { 12 },
            checked: None,
        }
    }

    /// A decided 5x with a wide spread is said to be decided, and the blocks come from the
    /// comparison that is not.
    #[test]
    fn a_comparison_the_pilot_decides_is_said_decided_not_sized() {
        let text = report(
            &[
                planned("small_pool", 0.30, true),
                planned("jemalloc", 0.03, false),
            ],
            0.025,
            3,
        );
        assert!(
            text.contains("12 blocks at the pilot's own spread (the widest: jemalloc"),
            "{text}"
        );
        assert!(text.contains("decided by the pilot, far outside the margin (more blocks change nothing): small_pool at 4 threads 5.00x"), "{text}");
        let alone = report(&[planned("small_pool", 0.30, true)], 0.025, 3);
        assert!(
            alone.contains("oltp_read_only: decided by the pilot alone"),
            "{alone}"
        );
    }
}
