//! The decision rule simulated through the code that runs and judges real studies (see
//! `bakeoff_study::simulate`): the runner's pilot and cap, the study's block orders, the
//! report's pairing, families and verdicts, on a model of the machines users have. A few
//! cells run here with 2,000 studies each and a tolerance that fails a rule erring at 6%;
//! `decision_grid` (ignored) prints the full grid:
//! `cargo test --release -p bakeoff-study --test decisions decision_grid -- --ignored --nocapture`.

use bakeoff_study::simulate::{rates, Machine, Mode, Rates, Truth};
use bakeoff_study::StudySpec;

/// A study of `variants` variants (plus the A/A twin), `workloads` workloads and `threads`
/// thread counts: (variants - 1) x workloads x threads comparisons.
fn shape(variants: usize, workloads: usize, threads: usize, max: u32, turns: bool) -> StudySpec {
    let names = ["oltp_point_select", "oltp_read_only", "oltp_write_only"];
    let mut src = format!(
        "name = \"sim\"\nduration = 2\nwarmup = 1\nrepetitions = \"auto\"\nmax_repetitions = {max}\nthreads = {:?}\n[alternation]\nenabled = {turns}\n",
        [4, 16, 64, 128, 256][..threads].to_vec()
    );
    for w in &names[..workloads] {
        src.push_str(&format!("[[workload]]\nname = \"{w}\"\n"));
    }
    for v in 0..variants {
        src.push_str(&format!("[[variant]]\nname = \"v{v}\"\n"));
    }
    bakeoff_study::parse(&src, "sim").unwrap_or_else(|e| panic!("{e:?}\n{src}"))
}

/// The truths of a study of `variants`: the first the baseline, the second 10% faster and 10%
/// cheaper, the third at exactly the margin, the rest like the first.
fn mixed(variants: usize, margin: f64) -> Truth {
    let mut t = Truth::null(variants);
    if variants > 1 {
        t.tps[1] = 1.10;
        t.cost[1] = 0.90;
    }
    if variants > 2 {
        t.tps[2] = 1.0 + margin;
        t.cost[2] = 1.0 / (1.0 + margin);
    }
    t
}

/// The machines the grid runs on.
fn machines() -> Vec<(&'static str, Machine)> {
    let vm = Machine::shared_vm();
    vec![
        ("quiet", Machine::quiet()),
        ("shared VM", vm),
        (
            "shared VM, heavy tails",
            Machine {
                heavy_tails: true,
                ..vm
            },
        ),
        (
            "slow drift only",
            Machine {
                spell_sd: 0.0,
                drift_per_min: 0.08,
                ..vm
            },
        ),
    ]
}

/// Both halves of a cell: false claims with nothing there, coverage and the margin with
/// something there.
fn cell(spec: &StudySpec, mode: Mode, m: Machine, trials: usize, seed: u64) -> (Rates, Rates) {
    let v = spec.variants.len();
    let margin = spec.auto.map_or(0.05, |a| a.precision * 2.0);
    let null = rates(spec, mode, m, &Truth::null(v), trials, seed).unwrap();
    let mixed = rates(spec, mode, m, &mixed(v, margin), trials, seed + 1).unwrap();
    (null, mixed)
}

fn row(name: &str, mode: Mode, spec: &StudySpec, null: &Rates, mixed: &Rates) -> String {
    let m = (spec.variants.len() - 1) * spec.workloads.len() * spec.threads.len();
    let cap = spec.auto.map_or(0, |a| a.max_repetitions);
    format!(
        "| {name} | {mode:?} | {m} | {cap} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.3} | {:.1} |",
        null.false_different,
        null.false_different_per_workload,
        mixed.coverage,
        mixed.coverage_per_workload,
        null.cost_false_different,
        mixed.cost_coverage,
        mixed.false_equivalent,
        null.aa_warned,
        null.all_decided,
        null.mean_blocks
    )
}

/// Within three standard errors of `p`, at `trials`: a rate above `p` plus this fails.
fn slack(p: f64, trials: usize) -> f64 {
    3.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

/// A rule that errs 6% of the time fails this bound at `trials` (three standard errors
/// below 6%); one that errs under about 4.5% passes it.
fn bound(trials: usize) -> f64 {
    0.06 - slack(0.06, trials)
}

/// The cells CI runs: the quickstart's shape (4 comparisons, cap 8) taking turns on the
/// shared VM, a study of 30 comparisons in blocks with heavy tails, and a slow drift.
#[test]
fn decisions_hold_their_error_rates_per_study() {
    let trials = 2000;
    let vm = Machine::shared_vm();
    let cells = [
        (
            "quickstart, shared VM",
            shape(2, 2, 2, 8, true),
            Mode::Turns,
            vm,
        ),
        (
            "30 comparisons, heavy tails",
            shape(4, 2, 5, 20, false),
            Mode::Blocks,
            Machine {
                heavy_tails: true,
                ..vm
            },
        ),
        (
            "8 comparisons, slow drift",
            shape(3, 2, 2, 20, false),
            Mode::Blocks,
            Machine {
                spell_sd: 0.0,
                drift_per_min: 0.08,
                ..vm
            },
        ),
    ];
    for (i, (name, spec, mode, m)) in cells.iter().enumerate() {
        let (null, mixed) = cell(spec, *mode, *m, trials, 40 + i as u64);
        eprintln!("{}", row(name, *mode, spec, &null, &mixed));
        let fails = bound(trials);
        assert!(
            null.false_different <= fails,
            "{name}: false different {null:?}"
        );
        assert!(
            null.cost_false_different <= fails,
            "{name}: cost false different {null:?}"
        );
        // The A/A checks are tested at 5% shared out, and independent: at 5%, not under it.
        assert!(
            null.aa_warned <= 0.05 + slack(0.05, trials),
            "{name}: A/A warned {null:?}"
        );
        assert!(
            mixed.false_equivalent <= fails,
            "{name}: false equivalent {mixed:?}"
        );
        let covers = 0.95 - slack(0.95, trials);
        assert!(mixed.coverage >= covers, "{name}: coverage {mixed:?}");
        assert!(
            mixed.cost_coverage >= covers,
            "{name}: cost coverage {mixed:?}"
        );
    }
}

/// The full grid, for the tables.
#[test]
#[ignore]
fn decision_grid() {
    let trials: usize = std::env::var("TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    println!("| machine | mode | comparisons | cap | false different per study | per workload | coverage per study | per workload | cost false different | cost coverage | equivalent at the margin | A/A warned | all decided | mean blocks |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, m) in machines() {
        for mode in [Mode::Blocks, Mode::Turns] {
            for (v, w, t) in [(2, 1, 1), (2, 2, 2), (3, 2, 2), (4, 2, 5)] {
                for cap in [8, 20] {
                    let spec = shape(v, w, t, cap, mode == Mode::Turns);
                    let (null, mixed) = cell(&spec, mode, m, trials, 7);
                    println!("{}", row(name, mode, &spec, &null, &mixed));
                }
            }
        }
    }
}

/// A study in a fixed order has ratios and no verdicts: nothing in it is shuffled, so a slide
/// over the block would read as a difference.
#[test]
fn a_fixed_order_gives_ratios_and_no_verdict() {
    let mut spec = shape(2, 1, 2, 8, false);
    spec.order = bakeoff_study::Order::Sequential;
    spec.paired = false;
    let t =
        bakeoff_study::simulate::trial(&spec, Mode::Blocks, Machine::quiet(), &Truth::null(2), 1)
            .unwrap();
    assert!(!t.model.comparisons.is_empty());
    for c in &t.model.comparisons {
        assert!(c.ratio.is_some(), "{c:?}");
        assert_eq!(c.verdict, bakeoff_report::Verdict::Open, "{c:?}");
        assert!(
            c.note.as_deref().unwrap_or("").contains("sequential"),
            "{c:?}"
        );
    }
}

/// Cost is judged beside throughput: on a quiet machine a variant 10% faster and 10% cheaper
/// is different in both, and the cost verdict's family is the cost comparisons.
#[test]
fn cost_is_decided_beside_throughput() {
    let spec = shape(3, 1, 1, 8, true);
    let t =
        bakeoff_study::simulate::trial(&spec, Mode::Turns, Machine::quiet(), &mixed(3, 0.05), 2)
            .unwrap();
    let v1 = t
        .model
        .comparisons
        .iter()
        .find(|c| c.variant == "v1")
        .unwrap();
    let cost = v1.cost.as_ref().unwrap();
    assert_eq!(v1.verdict, bakeoff_report::Verdict::Different, "{v1:?}");
    assert_eq!(cost.verdict, bakeoff_report::Verdict::Different, "{cost:?}");
    assert!(cost.interval.1 < 0.95 && cost.family == 2, "{cost:?}");
}
