//! Error rates over many simulated studies, counted against the truth they were made from.

use bakeoff_report::{Comparison, Verdict};

use super::lab::{trial, truth_of, Mode, Truth};
use super::machine::Machine;
use crate::StudySpec;

/// What `trials` simulated studies decided, as fractions of studies (or, per workload, of
/// workload-studies).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rates {
    pub trials: usize,
    /// Throughput: any comparison with no true difference called different, per study and
    /// per workload.
    pub false_different: f64,
    pub false_different_per_workload: f64,
    /// Throughput: every two-sided interval (the one "different" is judged on) holding its
    /// truth, per study and workload.
    pub coverage: f64,
    pub coverage_per_workload: f64,
    /// The same for CPU per transaction.
    pub cost_false_different: f64,
    pub cost_coverage: f64,
    /// Any comparison at exactly the margin called equivalent (or different but within),
    /// throughput and cost.
    pub false_equivalent: f64,
    pub cost_false_equivalent: f64,
    /// Studies whose A/A check warned of a faulty set-up.
    pub aa_warned: f64,
    /// Every throughput comparison decided (not undecided).
    pub all_decided: f64,
    pub mean_blocks: f64,
}

/// Rates over `trials` seeded studies of `spec` on `machine`.
pub fn rates(
    spec: &StudySpec,
    mode: Mode,
    machine: Machine,
    truth: &Truth,
    trials: usize,
    seed: u64,
) -> Result<Rates, String> {
    let mut n = Counts::default();
    for i in 0..trials {
        let t = trial(
            spec,
            mode,
            machine,
            truth,
            seed.wrapping_mul(1_000_003) + i as u64,
        )?;
        n.blocks += f64::from(t.blocks);
        let judged: Vec<(&Comparison, (f64, f64))> = t
            .model
            .comparisons
            .iter()
            .filter_map(|c| Some((c, truth_of(spec, truth, c)?)))
            .filter(|(c, _)| c.evidence.is_some())
            .collect();
        n.add_study(&Judged::of(judged.iter().copied()));
        for w in &spec.workloads {
            let mine = judged
                .iter()
                .copied()
                .filter(|(c, _)| c.workload == w.label);
            n.add_workload(&Judged::of(mine));
        }
        n.aa += usize::from(t.model.aa.iter().any(|a| !a.holds_one));
    }
    Ok(n.rates(trials, spec.workloads.len()))
}

/// What one study (or one workload of it) got wrong.
struct Judged {
    false_different: bool,
    covered: bool,
    cost_false_different: bool,
    cost_covered: bool,
    false_equivalent: bool,
    cost_false_equivalent: bool,
    all_decided: bool,
}

impl Judged {
    fn of<'a>(rows: impl Iterator<Item = (&'a Comparison, (f64, f64))>) -> Judged {
        let differs = |v: Verdict| matches!(v, Verdict::Different | Verdict::DifferentWithin);
        let holds = |ci: Option<(f64, f64)>, t: f64| ci.is_some_and(|(lo, hi)| lo <= t && t <= hi);
        let at_margin = |t: f64, m: f64| (t.ln().abs() - (1.0 + m).ln()).abs() < 1e-9;
        let within = |v: Verdict| matches!(v, Verdict::Equivalent | Verdict::DifferentWithin);
        let mut j = Judged {
            false_different: false,
            covered: true,
            cost_false_different: false,
            cost_covered: true,
            false_equivalent: false,
            cost_false_equivalent: false,
            all_decided: true,
        };
        for (c, (tps, cost)) in rows {
            j.false_different |= tps == 1.0 && differs(c.verdict);
            j.covered &= holds(c.ci, tps);
            j.all_decided &= c.verdict != Verdict::Undecided;
            j.false_equivalent |= at_margin(tps, c.margin) && within(c.verdict);
            if let Some(k) = &c.cost {
                j.cost_false_different |= cost == 1.0 && differs(k.verdict);
                j.cost_covered &= k.ci.0 <= cost && cost <= k.ci.1;
                j.cost_false_equivalent |= at_margin(cost, c.margin) && within(k.verdict);
            }
        }
        j
    }
}

#[derive(Default)]
struct Counts {
    false_different: usize,
    covered: usize,
    cost_false_different: usize,
    cost_covered: usize,
    false_equivalent: usize,
    cost_false_equivalent: usize,
    all_decided: usize,
    per_workload_false: usize,
    per_workload_covered: usize,
    aa: usize,
    blocks: f64,
}

impl Counts {
    fn add_study(&mut self, j: &Judged) {
        self.false_different += usize::from(j.false_different);
        self.covered += usize::from(j.covered);
        self.cost_false_different += usize::from(j.cost_false_different);
        self.cost_covered += usize::from(j.cost_covered);
        self.false_equivalent += usize::from(j.false_equivalent);
        self.cost_false_equivalent += usize::from(j.cost_false_equivalent);
        self.all_decided += usize::from(j.all_decided);
    }

    fn add_workload(&mut self, j: &Judged) {
        self.per_workload_false += usize::from(j.false_different);
        self.per_workload_covered += usize::from(j.covered);
    }

    fn rates(&self, trials: usize, workloads: usize) -> Rates {
        let n = trials.max(1) as f64;
        let nw = n * workloads.max(1) as f64;
        Rates {
            trials,
            false_different: self.false_different as f64 / n,
            false_different_per_workload: self.per_workload_false as f64 / nw,
            coverage: self.covered as f64 / n,
            coverage_per_workload: self.per_workload_covered as f64 / nw,
            cost_false_different: self.cost_false_different as f64 / n,
            cost_coverage: self.cost_covered as f64 / n,
            false_equivalent: self.false_equivalent as f64 / n,
            cost_false_equivalent: self.cost_false_equivalent as f64 / n,
            aa_warned: self.aa as f64 / n,
            all_decided: self.all_decided as f64 / n,
            mean_blocks: self.blocks / n,
        }
    }
}
