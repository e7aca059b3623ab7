//! How many blocks an auto study runs (Stein's first stage): after its pilot, the pilot's
//! spread says how many make every comparison's family-adjusted interval as narrow as asked;
//! the study runs that many, at most `max_repetitions`, and is not sized again. The runner
//! and the decision simulations both step through this.

use bakeoff_store::Row;

use crate::StudySpec;

/// What the study does after a block: the blocks now planned, whether it has run them all,
/// and what to say.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub planned: u32,
    pub stop: bool,
    pub note: Option<String>,
}

/// After `block` of a study planned to `planned` blocks, with `rows` (the runs stored so far,
/// read only when the pilot has just ended). The need is judged from the pilot's blocks by
/// number, so a study run again after it finished asks for what it asked for the first time.
pub fn after_block<E>(
    spec: &StudySpec,
    spec_json: &str,
    block: u32,
    planned: u32,
    rows: impl FnOnce() -> Result<Vec<Row>, E>,
) -> Result<Step, E> {
    let last = spec.auto.map_or(spec.repetitions, |a| a.max_repetitions);
    let Some(auto) = spec.auto else {
        return Ok(Step {
            planned,
            stop: block >= last,
            note: None,
        });
    };
    if block != auto.pilot {
        return Ok(Step {
            planned,
            stop: block >= planned,
            note: None,
        });
    }
    let asked = format!("+-{:.1}%", auto.precision * 100.0);
    let pilot: Vec<Row> = rows()?
        .into_iter()
        .filter(|r| {
            r["repetition"]
                .as_u64()
                .is_some_and(|n| n <= u64::from(auto.pilot))
        })
        .collect();
    let status = bakeoff_report::blocks_needed(spec_json, pilot);
    let settled = match status {
        Ok(Some(ref a)) if a.settled > 0 => format!(
            "; {} comparison(s) they settle alone, beyond the equivalence margin, ask for no more",
            a.settled
        ),
        _ => String::new(),
    };
    let (planned, note) = match status.map(|a| a.map(|a| a.needed)) {
        Ok(Some(needed)) if needed <= last => (
            needed.max(auto.pilot),
            format!("the pilot's {block} blocks ask for {needed} in all for every comparison within {asked} (at the study's family level{settled}): running {}", needed.max(auto.pilot)),
        ),
        Ok(Some(needed)) => (
            last,
            format!("the pilot's {block} blocks ask for {needed} for every comparison within {asked}{settled}, more than max_repetitions = {last}: running {last}, so the intervals will be wider than asked (the report says what a new study would need)"),
        ),
        Ok(None) => (
            last,
            format!("after the pilot's {block} blocks no comparison has an interval: the study runs all {last} blocks"),
        ),
        Err(e) => (
            last,
            format!("the pilot could not be judged ({e}): the study runs all {last} blocks"),
        ),
    };
    Ok(Step {
        planned,
        stop: block >= planned,
        note: Some(note),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::{trial, Machine, Mode, Truth};

    #[test]
    fn a_finished_study_run_again_asks_for_what_its_pilot_asked() {
        let src = "duration = 2\nrepetitions = \"auto\"\nmax_repetitions = 12\nthreads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n";
        let spec = crate::parse(src, "again").unwrap();
        let json = serde_json::to_string(&spec).unwrap();
        let pilot = spec.auto.unwrap().pilot;
        let vm = Machine::shared_vm();
        for seed in 0..20 {
            let t = trial(&spec, Mode::Blocks, vm, &Truth::null(2), seed).unwrap();
            let first: Vec<Row> = t
                .rows
                .iter()
                .filter(|r| r["repetition"].as_u64() <= Some(u64::from(pilot)))
                .cloned()
                .collect();
            let ok = |rows: Vec<Row>| move || Ok::<_, String>(rows);
            let then = after_block(&spec, &json, pilot, pilot, ok(first)).unwrap();
            let again = after_block(&spec, &json, pilot, pilot, ok(t.rows.clone())).unwrap();
            assert_eq!(then.planned, again.planned, "seed {seed}");
            assert_eq!(t.blocks, then.planned.max(pilot), "seed {seed}");
        }
    }
}
