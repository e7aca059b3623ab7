//! One simulated study: the study's blocks measured on the model machine, stored as rows,
//! stepped through the runner's sizing and judged by the report.

use bakeoff_report::Comparison;
use bakeoff_store::{Row, RunKey, RunRecord};

use super::machine::{Machine, Speed};
use crate::matrix::block_series;
use crate::StudySpec;

/// How a simulated study's blocks measure their variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One server at a time: each series its own stretch of the machine's time.
    Blocks,
    /// Every server of a block up at once, taking turns in slices (`[alternation]`).
    Turns,
}

/// What a study's variants truly are against its first, by variant index: throughput and
/// CPU per transaction (the noise check's twin is the first variant again).
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    pub tps: Vec<f64>,
    pub cost: Vec<f64>,
    /// A run's own log-scale noise beyond the machine's, by variant: a variant whose ratio
    /// to the others moves with the machine's state (one CPU-bound against one waiting on
    /// fsync, whose block ratios spread 4% where the A/A pair's spread 1%).
    pub noise: Vec<f64>,
    /// What taking turns costs each variant's throughput beyond one server at a time (log
    /// scale, by variant): a carry-over from the other servers' turns. Where it differs
    /// between variants, a ratio by turns is not the solo one, whatever the blocks.
    pub carry: Vec<f64>,
}

impl Truth {
    /// No variant differs from the first.
    pub fn null(variants: usize) -> Truth {
        Truth {
            tps: vec![1.0; variants],
            cost: vec![1.0; variants],
            noise: vec![0.0; variants],
            carry: vec![0.0; variants],
        }
    }

    fn of(&self, variant: usize) -> (f64, f64) {
        let at = |v: &[f64]| v.get(variant).copied().unwrap_or(1.0);
        (at(&self.tps), at(&self.cost))
    }

    fn noise_of(&self, variant: usize) -> f64 {
        self.noise.get(variant).copied().unwrap_or(0.0)
    }

    /// The twin (past the listed variants) is the first again, and pays what it pays.
    fn carry_of(&self, variant: usize) -> f64 {
        let v = if variant < self.tps.len() { variant } else { 0 };
        self.carry.get(v).copied().unwrap_or(0.0)
    }
}

/// One simulated study: the blocks it ran and the report's model of it.
pub struct Trial {
    pub blocks: u32,
    pub model: bakeoff_report::Model,
    /// The runs as stored.
    pub rows: Vec<Row>,
}

/// Run `spec` once on `machine` (seeded), measuring in `mode`, judged as a real study is.
pub fn trial(
    spec: &StudySpec,
    mode: Mode,
    machine: Machine,
    truth: &Truth,
    seed: u64,
) -> Result<Trial, String> {
    // Each trial its own block orders, as each real study has from its own seed.
    let spec = &StudySpec {
        seed,
        ..spec.clone()
    };
    let spec_json = serde_json::to_string(spec).map_err(|e| e.to_string())?;
    let mut lab = Lab {
        spec,
        truth,
        speed: Speed::new(machine, seed),
        clock: 0.0,
        rows: Vec::new(),
    };
    let last = spec.auto.map_or(spec.repetitions, |a| a.max_repetitions);
    let mut planned = spec.repetitions;
    let mut blocks = 0;
    for block in 1..=last {
        match mode {
            Mode::Blocks => lab.blocks(block, block_series(spec, block)),
            Mode::Turns => {
                lab.turns(block);
                // The runner's check blocks, one server at a time (`validate_every`).
                if let Some(check) = crate::matrix::check_after(spec, block) {
                    lab.blocks(check, crate::matrix::check_series(spec, check));
                }
            }
        }
        blocks = block;
        let rows = || Ok::<_, String>(lab.rows.clone());
        let step = crate::sizing::after_block(spec, &spec_json, block, planned, rows)?;
        planned = step.planned;
        if step.stop {
            break;
        }
    }
    let model = bakeoff_report::judge_runs(&spec_json, lab.rows.clone())?;
    Ok(Trial {
        blocks,
        model,
        rows: lab.rows,
    })
}

/// The truth of a comparison's variant, by its name (None for rows the model made of
/// something else).
pub fn truth_of(spec: &StudySpec, truth: &Truth, c: &Comparison) -> Option<(f64, f64)> {
    let v = spec.variants.iter().position(|v| v.name == c.variant)?;
    let b = spec.variants.iter().position(|v| v.name == c.against)?;
    let (tv, cv) = truth.of(v);
    let (tb, cb) = truth.of(b);
    Some((tv / tb, cv / cb))
}

/// The simulated machine, and the runs it has stored.
struct Lab<'a> {
    spec: &'a StudySpec,
    truth: &'a Truth,
    speed: Speed,
    /// Seconds since the study began.
    clock: f64,
    rows: Vec<Row>,
}

impl Lab<'_> {
    /// A block one server at a time: each series (a server start) in the block's order,
    /// its warmup, then its thread counts one after another.
    fn blocks(&mut self, block: u32, series: Vec<crate::matrix::Series>) {
        let (warmup, duration) = self.times();
        let slide = self.speed.machine().slide;
        for (place, s) in series.into_iter().enumerate() {
            let restart = self.restart();
            self.clock += warmup;
            for (t, &threads) in self.spec.threads.iter().enumerate() {
                // A slide over the block (a cache warming, a neighbour): the later a
                // series' place, the slower.
                let speed = self.speed.mean(self.clock, self.clock + duration)
                    * (-slide * place as f64).exp();
                self.clock += duration;
                self.store(block, s.variant, s.workload, t, threads, restart, speed);
            }
        }
    }

    /// A block taking turns: every server starts (one level each for the block), warms up,
    /// then per workload and thread count they take turns in slices, the order shuffled
    /// every round and the settle after each switch unmeasured.
    fn turns(&mut self, block: u32) {
        let (warmup, duration) = self.times();
        let a = &self.spec.alternation;
        let (slice, settle) = (a.slice.as_secs_f64(), a.settle.as_secs_f64());
        let servers = self.spec.block_variants();
        let restarts: Vec<(f64, f64)> = (0..servers).map(|_| self.restart()).collect();
        self.clock += warmup;
        let rounds = (duration / slice).ceil().max(1.0) as usize;
        for w in 0..self.spec.workloads.len() {
            for (t, &threads) in self.spec.threads.iter().enumerate() {
                let mut seen = vec![0.0; servers];
                for _ in 0..rounds {
                    let mut order: Vec<usize> = (0..servers).collect();
                    for i in (1..servers).rev() {
                        let j = ((self.speed.unit() * (i + 1) as f64) as usize).min(i);
                        order.swap(i, j);
                    }
                    for v in order {
                        seen[v] += self.speed.mean(self.clock + settle, self.clock + slice);
                        self.clock += slice;
                    }
                }
                for (v, speed) in seen.into_iter().enumerate() {
                    let speed = speed / rounds as f64 * (-self.truth.carry_of(v)).exp();
                    self.store(block, v, w, t, threads, restarts[v], speed);
                }
            }
        }
    }

    fn times(&self) -> (f64, f64) {
        (
            self.spec.warmup.as_secs_f64(),
            self.spec.duration.as_secs_f64().max(0.1),
        )
    }

    /// A server start's own level: (throughput, CPU per transaction) on the log scale.
    fn restart(&mut self) -> (f64, f64) {
        let m = self.speed.machine();
        let r = m.restart_sd * self.speed.normal();
        (r, -m.cost_sees_speed * r)
    }

    /// One run's row: its truth, its server's level, the speed it met, its own noise.
    #[allow(clippy::too_many_arguments)]
    fn store(
        &mut self,
        block: u32,
        variant: usize,
        workload: usize,
        t: usize,
        threads: u32,
        (restart, restart_cost): (f64, f64),
        speed: f64,
    ) {
        let m = self.speed.machine();
        let (tps, cost) = self.truth.of(variant);
        // Drawn only where asked, so studies without it keep their seeds' streams.
        let own = match self.truth.noise_of(variant) {
            0.0 => 0.0,
            sd => sd * self.speed.normal(),
        };
        // Each cell its own base figure; only ratios within a cell matter.
        let base = 1000.0 * (1.0 + workload as f64) * (1.0 + t as f64);
        let run = RunRecord {
            key: Some(RunKey {
                repetition: block,
                variant: variant as u32,
                workload: workload as u32,
                threads,
            }),
            variant_name: self.spec.variant_name(variant),
            workload_label: self.spec.workloads[workload].label.clone(),
            status: "ok".into(),
            tps: base * tps * speed * (restart + m.run_sd * self.speed.run_noise() + own).exp(),
            server_cpu_us_per_event: Some(
                100.0
                    * cost
                    * speed.powf(-m.cost_sees_speed)
                    * (restart_cost + m.cost_sd * self.speed.run_noise()).exp(),
            ),
            ..RunRecord::default()
        };
        self.rows.push(run.row());
    }
}
