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
    let mut spec = bakeoff_study::parse(&src, "sim").unwrap_or_else(|e| panic!("{e:?}\n{src}"));
    // The variants here differ by their truths, not their settings: none is the first's
    // twin unless a grid says so (`aab`).
    spec.noise_twin = None;
    spec
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
            "shared VM, cost sees all of a spell",
            Machine {
                cost_sees_speed: 1.0,
                ..vm
            },
        ),
        (
            "shared VM, 2% slide per place in a block",
            Machine { slide: 0.02, ..vm },
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

/// A cell's own seed, from its name: no two cells (nor a cell's two halves) share a stream.
fn seed_of(name: &str, half: u64) -> u64 {
    name.bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
        .wrapping_add(half)
}

/// Both halves of a cell: false claims with nothing there, coverage and the margin with
/// something there.
fn cell(spec: &StudySpec, mode: Mode, m: Machine, trials: usize, name: &str) -> (Rates, Rates) {
    let v = spec.variants.len();
    let margin = spec.auto.map_or(0.05, |a| a.precision * 2.0);
    let null = rates(spec, mode, m, &Truth::null(v), trials, seed_of(name, 0)).unwrap();
    let mixed = rates(spec, mode, m, &mixed(v, margin), trials, seed_of(name, 1)).unwrap();
    (null, mixed)
}

fn row(name: &str, mode: Mode, spec: &StudySpec, null: &Rates, mixed: &Rates) -> String {
    let m = (spec.variants.len() - 1) * spec.workloads.len() * spec.threads.len();
    let cap = spec.auto.map_or(0, |a| a.max_repetitions);
    format!(
        "| {name} | {mode:?} | {m} | {cap} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.3} | {:.1} |",
        null.false_different,
        null.false_different_per_workload,
        mixed.coverage,
        mixed.coverage_per_workload,
        null.cost_false_different,
        mixed.cost_coverage,
        mixed.false_equivalent,
        mixed.cost_false_equivalent,
        null.aa_warned,
        null.all_decided,
        null.mean_blocks
    )
}

/// Three standard errors of a rate `p` estimated from `trials`.
fn slack(p: f64, trials: usize) -> f64 {
    3.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

/// The quickstart's shape taking turns on the shared-VM model, 20,000 studies with nothing
/// there: a study claims a difference at most 5.5% of the time. A rule at 5% passes that
/// within three standard errors (5.46%); one at 6% fails it within three (5.50%), so this
/// tells the two apart where 2,000 studies cannot.
#[test]
fn the_quickstart_claims_a_difference_with_none_there_at_most_five_percent() {
    let trials = 20_000;
    let spec = shape(2, 2, 2, 8, true);
    let vm = Machine::shared_vm();
    let null = rates(&spec, Mode::Turns, vm, &Truth::null(2), trials, 3).unwrap();
    eprintln!("{null:?}");
    assert!(null.false_different <= 0.055, "{null:?}");
    assert!(null.cost_false_different <= 0.055, "{null:?}");
    assert!(null.aa_warned <= 0.055, "{null:?}");
}

/// Cells of 2,000 studies: 30 comparisons in blocks with heavy tails, 8 under a slow drift,
/// 8 taking turns where CPU per transaction sees all of a spell. Each rate within three
/// standard errors of what the rule states: false "different" and "equivalent" at the margin
/// (throughput and cost) and the A/A warnings at most 5%, coverage at least 95%.
#[test]
fn decisions_hold_their_error_rates_per_study() {
    let trials = 2000;
    let vm = Machine::shared_vm();
    let cells = [
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
        (
            "8 comparisons taking turns, cost sees all of a spell",
            shape(3, 2, 2, 8, true),
            Mode::Turns,
            Machine {
                cost_sees_speed: 1.0,
                ..vm
            },
        ),
    ];
    for (name, spec, mode, m) in &cells {
        let (null, mixed) = cell(spec, *mode, *m, trials, name);
        eprintln!("{}", row(name, *mode, spec, &null, &mixed));
        let most = 0.05 + slack(0.05, trials);
        assert!(
            null.false_different <= most,
            "{name}: false different {null:?}"
        );
        assert!(
            null.cost_false_different <= most,
            "{name}: cost false different {null:?}"
        );
        assert!(null.aa_warned <= most, "{name}: A/A warned {null:?}");
        assert!(
            mixed.false_equivalent <= most,
            "{name}: false equivalent {mixed:?}"
        );
        assert!(
            mixed.cost_false_equivalent <= most,
            "{name}: cost false equivalent {mixed:?}"
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
    println!("| machine | mode | comparisons | cap | false different per study | per workload | coverage per study | per workload | cost false different | cost coverage | equivalent at the margin | cost equivalent at the margin | A/A warned | all decided | mean blocks |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, m) in machines() {
        for mode in [Mode::Blocks, Mode::Turns] {
            for (v, w, t) in [(2, 1, 1), (2, 2, 2), (3, 2, 2), (4, 2, 5)] {
                for cap in [8, 20] {
                    let spec = shape(v, w, t, cap, mode == Mode::Turns);
                    let id = format!("{name} {mode:?} {v} {w} {t} {cap}");
                    let (null, mixed) = cell(&spec, mode, m, trials, &id);
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

/// The A/A/B shape (a, a again, b; one workload, one thread count, cap 20) taking
/// turns, where b's ratio moves with the machine's state (its block ratios spread 4%, the A/A
/// pair's 1%), at `b` times a.
fn aab(b: f64) -> (StudySpec, Truth) {
    let mut spec = shape(3, 1, 1, 20, true);
    spec.variants[1].name = "a-again".into();
    // As a real A/A/B's file parses: a-again is a's twin, and the check reads its runs.
    spec.noise_twin = Some(1);
    let mut truth = Truth::null(3);
    truth.tps[2] = b;
    truth.cost[2] = 1.0 / b;
    truth.noise[2] = 0.04;
    (spec, truth)
}

/// A comparison the pilot settles beyond the margin asks for no more blocks, so a study of a
/// variant far ahead ends at its pilot; and a null comparison beside one whose settling is a
/// coin toss (b at 1.22x, its block ratios spread 4%) keeps its error rate: judged on all the
/// blocks run it was called different 3.5% of the time at 2.5%, and b's interval covered
/// 93.7%; each judged on the blocks it asked for, at its look's share, they hold.
#[test]
fn the_pilot_settles_what_is_far_beyond_the_margin_and_the_rest_keep_their_rates() {
    let trials = 2000;
    let (spec, truth) = aab(1.22);
    let vm = Machine::shared_vm();
    let r = rates(
        &spec,
        Mode::Turns,
        vm,
        &truth,
        trials,
        seed_of("settling", 0),
    )
    .unwrap();
    eprintln!("{r:?}");
    assert!(r.false_different <= 0.025 + slack(0.025, trials), "{r:?}");
    assert!(r.coverage >= 0.95 - slack(0.95, trials), "{r:?}");
    assert!(r.cost_coverage >= 0.95 - slack(0.95, trials), "{r:?}");
    // The A/A check beside them, read from a-again (the listed twin, which also sizes the
    // study): 4.0-4.5% on this cell and its neighbours in the settling grid (b 1.20 to
    // 1.25, 12,000 studies each), about its nominal 5%, so held to 5% with the slack.
    assert!(r.aa_warned <= 0.05 + slack(0.05, trials), "{r:?}");
    // Far beyond: b settled at the pilot in nearly every study; the blocks are a again's.
    let (spec, far) = aab(1.85);
    let settled = rates(&spec, Mode::Turns, vm, &far, 200, seed_of("far", 0)).unwrap();
    let (spec, near) = aab(1.03);
    let sized = rates(&spec, Mode::Turns, vm, &near, 200, seed_of("near", 0)).unwrap();
    assert!(
        settled.mean_blocks < 0.6 * sized.mean_blocks,
        "{settled:?} {sized:?}"
    );
}

/// The pilot's early settling, over b's ratios from inside the margin to far beyond it
/// (worst where a settling is a coin toss): false "different" for a again, coverage, blocks.
#[test]
#[ignore]
fn settling_grid() {
    let trials: usize = std::env::var("TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    println!("| b | false different (a again) | coverage | cost false different | cost coverage | A/A warned | all decided | mean blocks |");
    println!("|---|---|---|---|---|---|---|---|");
    for b in [1.03, 1.10, 1.15, 1.18, 1.20, 1.22, 1.25, 1.30, 1.85] {
        let (spec, truth) = aab(b);
        let name = format!("aab {b}");
        let r = rates(
            &spec,
            Mode::Turns,
            Machine::shared_vm(),
            &truth,
            trials,
            seed_of(&name, 0),
        )
        .unwrap();
        println!(
            "| {b:.2} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.3} | {:.1} |",
            r.false_different,
            r.coverage,
            r.cost_false_different,
            r.cost_coverage,
            r.aa_warned,
            r.all_decided,
            r.mean_blocks
        );
    }
}
