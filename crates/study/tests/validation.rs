//! The built-in validation simulated (`[alternation] validate_every`): a study taking turns
//! runs check blocks one server at a time, and the report tests that the two ways agree (the
//! ratio of their ratios). A carry-over that differs between variants, which the A/A check
//! cannot see, is the design's risk; here the model machine's turns charge one variant for
//! the other's, and the check must catch it, while on a machine whose turns carry nothing it
//! must warn no more often than its level says.

use bakeoff_study::simulate::{trial, Machine, Mode, Truth};
use bakeoff_study::StudySpec;

/// The quickstart's shape (2 variants, 2 workloads at 4 and 16 threads, auto up to 8
/// blocks) taking turns, a check block after every block.
fn quickstart_checked() -> StudySpec {
    let src = "name = \"sim\"\nduration = 2\nwarmup = 1\nrepetitions = \"auto\"\nmax_repetitions = 8\nthreads = [4, 16]\n[alternation]\nvalidate_every = 1\n[[workload]]\nname = \"oltp_point_select\"\n[[workload]]\nname = \"oltp_read_only\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n";
    let mut spec = bakeoff_study::parse(src, "sim").unwrap_or_else(|e| panic!("{e:?}"));
    spec.noise_twin = None;
    spec
}

/// Over `trials` studies: the share where turns read some comparison different, the share
/// whose check found some comparison disagreeing, and, of the comparisons turns read
/// different, the share the check flagged.
fn run(truth: &Truth, trials: usize, seed: u64) -> (f64, f64, f64) {
    run_on(Machine::shared_vm(), truth, trials, seed)
}

/// `run` on machine `m`.
fn run_on(m: Machine, truth: &Truth, trials: usize, seed: u64) -> (f64, f64, f64) {
    run_with(&quickstart_checked(), m, truth, trials, seed)
}

/// `run` of `spec` on machine `m`: every comparison against the first variant.
fn run_with(
    spec: &StudySpec,
    m: Machine,
    truth: &Truth,
    trials: usize,
    seed: u64,
) -> (f64, f64, f64) {
    let (mut different, mut warned, mut claims, mut caught) = (0, 0, 0, 0);
    for i in 0..trials {
        let t = trial(spec, Mode::Turns, m, truth, seed + i as u64).unwrap();
        let checked: Vec<_> = t
            .model
            .comparisons
            .iter()
            .filter(|c| c.variant != spec.variants[0].name)
            .collect();
        assert!(
            checked.iter().all(|c| c.checked.is_some()),
            "every comparison has its check blocks: {:?}",
            checked.iter().map(|c| c.checked).collect::<Vec<_>>()
        );
        different += usize::from(checked.iter().any(|c| c.significant));
        warned += usize::from(checked.iter().any(|c| !c.checked.unwrap().agree));
        for c in checked.iter().filter(|c| c.significant) {
            claims += 1;
            caught += usize::from(!c.checked.unwrap().agree);
        }
    }
    let share = |k: usize, n: usize| k as f64 / n.max(1) as f64;
    (
        share(different, trials),
        share(warned, trials),
        share(caught, claims),
    )
}

/// Three standard errors of a rate `p` estimated from `trials`.
fn slack(p: f64, trials: usize) -> f64 {
    3.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

/// Turns that carry nothing: the checks share 5%, so a study warns at most 1 time in 20.
#[test]
fn the_check_warns_at_most_its_level_where_turns_carry_nothing() {
    let trials = 1500;
    let (_, warned, _) = run(&Truth::null(2), trials, 11);
    eprintln!("turns carry nothing: the check warned in {warned:.4} of studies");
    assert!(warned <= 0.05 + slack(0.05, trials), "warned {warned}");
}

/// Turns that charge b 10% more than a (the ratio of ratios the issue measured on this VM read
/// 0.91-0.92), with no difference one server at a time: by turns the study calls b different
/// almost always; the check must warn in most of those studies. Its power is the check blocks'
/// noise: one server at a time, a block's ratio carries the machine's spells, so on the
/// fitted model 8 check blocks flag about a quarter of such comparisons one by one (each at
/// 98.75%), and a study warns when any is flagged: in about 6 studies of 10 (before the fit,
/// with one-at-a-time blocks quieter than this VM's, 76%).
#[test]
fn the_check_catches_turns_that_charge_one_variant_for_the_other() {
    let trials = 400;
    let mut truth = Truth::null(2);
    truth.carry = vec![0.0, 0.10];
    let (different, warned, caught) = run(&truth, trials, 17);
    eprintln!(
        "b pays 10% more by turns: turns read different in {different:.3} of studies, the check warned in {warned:.3}, and flagged {caught:.3} of the claims"
    );
    assert!(different > 0.9, "turns read it different: {different}");
    assert!(warned > 0.5, "the check warns: {warned}");
    assert!(caught > 0.2, "the check flags the claims: {caught}");
}

/// The model machine fitted to this VM's own A/A spreads. Measured with `bench/validation/run`
/// (6 blocks by turns and 6 check blocks one server at a time, 4 threads, 2 s runs, 21
/// comparisons over MariaDB and PostgreSQL, three workloads; the table is in
/// docs/src/verdicts.md): the median over the comparisons of a block's log ratio spread, by
/// turns `TURNS_MEASURED` and one server at a time `SOLO_MEASURED`. Every rate these
/// simulations claim assumes the model spreads as this VM does: its A/A spreads, simulated
/// the same way, must lie within 10% of the measured medians. The model before its fit
/// (spells 0.10, restart and run noise 0.01) fails this: 1.92% and 8.6%.
const TURNS_MEASURED: f64 = 0.0174;
const SOLO_MEASURED: f64 = 0.1042;

#[test]
fn the_vm_model_spreads_as_this_vm_measured() {
    let src = "name = \"sim\"\nduration = 2\nwarmup = 1\nrepetitions = 6\nthreads = [4]\n[alternation]\nvalidate_every = 1\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"again\"\n";
    let mut spec = bakeoff_study::parse(src, "sim").unwrap_or_else(|e| panic!("{e:?}"));
    spec.noise_twin = None;
    let trials = 400;
    let (mut turns, mut solo) = (Vec::new(), Vec::new());
    for i in 0..trials {
        let t = trial(
            &spec,
            Mode::Turns,
            Machine::shared_vm(),
            &Truth::null(2),
            100 + i,
        )
        .unwrap();
        let k = t.model.comparisons[0].checked.expect("checked");
        turns.push(k.turns_spread);
        solo.push(k.spread);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (t, s) = (median(&mut turns), median(&mut solo));
    eprintln!("the model's A/A spread: by turns {t:.4}, one server at a time {s:.4}");
    assert!(
        (t / TURNS_MEASURED - 1.0).abs() < 0.1,
        "by turns {t} against {TURNS_MEASURED} measured"
    );
    assert!(
        (s / SOLO_MEASURED - 1.0).abs() < 0.1,
        "one at a time {s} against {SOLO_MEASURED} measured"
    );
}

/// The fitted model spreads one server at a time as this VM's median comparison (10.3%);
/// its noisier comparisons spread 15-26% (write_only's, `bench/validation/run`). With the
/// spells at 0.17 (an A/A block one at a time then spreads about 15%), the check blocks tell
/// less: a 10% carry-over is warned of in about 3 studies of 10, 20% in 6, 30% (the write gap
/// this VM once showed) in 8 or 9. The check must still hold its level there and catch the
/// 30%.
#[test]
fn on_this_vms_one_at_a_time_noise_the_check_still_catches_a_gross_carry_over() {
    let m = Machine {
        spell_sd: 0.17,
        ..Machine::shared_vm()
    };
    let trials = 300;
    let mut truth = Truth::null(2);
    truth.carry = vec![0.0, 0.3];
    let (_, warned, _) = run_on(m, &truth, trials, 17);
    let (_, null, _) = run_on(m, &Truth::null(2), 2 * trials, 11);
    eprintln!("noisier one at a time: a 30% carry-over warned of in {warned:.3} of studies, none in {null:.3}");
    assert!(warned > 0.7, "the check warns: {warned}");
    assert!(null <= 0.05 + slack(0.05, 2 * trials), "warned {null}");
}

/// Three variants, one truly 10% faster with nothing carried, a check block after every other
/// block: the check still warns at most its level, whatever the true differences (it tests
/// the two ways against each other, not the variants).
#[test]
fn the_check_holds_its_level_every_other_block_with_a_real_difference_and_three_variants() {
    let src = "name = \"sim\"\nduration = 2\nwarmup = 1\nrepetitions = \"auto\"\nmax_repetitions = 8\nthreads = [4, 16]\n[alternation]\nvalidate_every = 2\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n[[variant]]\nname = \"c\"\n";
    let mut spec = bakeoff_study::parse(src, "sim").unwrap_or_else(|e| panic!("{e:?}"));
    spec.noise_twin = None;
    let mut truth = Truth::null(3);
    truth.tps[1] = 1.10;
    let trials = 1000;
    let (different, warned, _) = run_with(&spec, Machine::shared_vm(), &truth, trials, 23);
    eprintln!("three variants, b 10% faster, checked every other block: turns read some difference in {different:.3}, the check warned in {warned:.4}");
    assert!(different > 0.9, "b's 10% is seen by turns: {different}");
    assert!(warned <= 0.05 + slack(0.05, trials), "warned {warned}");
}
