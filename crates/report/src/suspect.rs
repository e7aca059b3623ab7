//! Runs whose figure may not measure what it claims, each with why: its throughput moved
//! within the run (a trend tested against the run's own tick noise), it stalled, it lies far
//! outside its cell's other runs, or the machine was busy with something else. They stay in
//! the results and the report (flagged); `bakeoff compare --exclude-suspect` leaves them out
//! of the comparisons. Only measured ticks count: warmup is never stored as ticks, so a cold
//! start that warmup absorbed is not flagged.

use crate::model::Tick;
use crate::stats::t_quantile;
use crate::unit::Unit;

/// The hypervisor took 2 points more of the machine's CPU time (steal) than in the study's
/// usual run (see `usual_steal`).
pub const STEAL: f64 = 0.02;
/// Other processes busy beyond half a CPU, or 10% of the machine if that is less.
pub const OTHERS: f64 = 0.10;
pub const OTHERS_CPUS: f64 = 0.5;
/// A tick below this share of the run's median throughput is a stall.
pub const STALL: f64 = 0.05;
/// A run further than this many robust standard deviations (1.4826 MAD) from its cell's
/// median, on the log scale, is far outside its cell's others.
pub const OUTLIER: f64 = 3.5;
/// Fewer ticks than this say nothing about a trend (a line through them needs 2 spare).
const MIN_TICKS: usize = 4;

/// What makes a run suspect, in one sentence: the report, `compare --help` and the guide (docs/src/verdicts.md) say
/// these words, so that the three agree.
pub fn criteria() -> String {
    format!(
        "a trend through the run beyond its tick noise and larger than the study's equivalence margin, a stall (ticks below {:.0}% of the run's median), a run further than {:.1} robust standard deviations from its cell's others (MAD-based, in cells of five runs or more), steal {:.0} points beyond the study's usual run, or other processes busy beyond half a CPU (at most {:.0}% of the machine; what the server's processes, bakeoff's client and the kernel's interrupt work and threads, the run's own I/O, did not use)",
        STALL * 100.0,
        OUTLIER,
        STEAL * 100.0,
        OTHERS * 100.0,
    )
}

/// What the run's telemetry says of the machine (see `Store::run_health`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Health {
    pub steal: Option<f64>,
    pub host_busy: Option<f64>,
    /// Of `host_busy`, the kernel's interrupts and softirqs (None in stores from before it was
    /// kept: then they count as other processes', as they did).
    pub host_irq: Option<f64>,
    /// Of `host_busy`, the kernel's threads over the run (kworkers' writeback, jbd2): none in
    /// stores from before it was kept, nor in a turn's slice.
    pub host_kthreads: Option<f64>,
    pub seconds: Option<f64>,
    pub server_cpu_seconds: Option<f64>,
    pub client_cpu_seconds: Option<f64>,
    pub client_idle_poll_seconds: Option<f64>,
}

impl Health {
    /// CPU time not charged to the run, as a share of the machine's (`cpus` CPUs): the
    /// machine's busy time less what its server processes (every thread, every instance) and
    /// bakeoff's client threads used, their idle polling included, and less the kernel's
    /// interrupt and softirq work and its threads' (kworkers writing back the server's dirty
    /// pages, the journal). That work is charged to no process; on a machine that runs the
    /// load it is mostly the run's own I/O, so it moves with the variant (a small buffer pool
    /// writes more) and is the run's, not a disturbance. None when the figures are not all
    /// there (a server not on this machine).
    pub fn others(&self, cpus: f64) -> Option<f64> {
        let machine = self.seconds? * cpus;
        let ours = self.server_cpu_seconds?
            + self.client_cpu_seconds.unwrap_or(0.0)
            + self.client_idle_poll_seconds.unwrap_or(0.0);
        let kernel = self.host_irq.unwrap_or(0.0) + self.host_kthreads.unwrap_or(0.0);
        let busy = self.host_busy? - kernel;
        (machine > 0.0).then(|| (busy - ours / machine).max(0.0))
    }
}

/// The share of the machine other processes may use before a run is suspect: half a CPU,
/// or 10% of the machine where that is less (on 2 CPUs, 10%; on 64, 0.8%).
pub fn others_limit(cpus: f64) -> f64 {
    (OTHERS_CPUS / cpus.max(1.0)).min(OTHERS)
}

/// The steal of the study's median run: a VM that always loses a few percent to its host
/// slows every variant alike (the paired blocks cancel it), so it is the machine's, said once;
/// only a run that lost more than that is suspect. Zero when no run measured steal.
pub fn usual_steal<'a>(runs: impl Iterator<Item = &'a Health>) -> f64 {
    let mut steal: Vec<f64> = runs.filter_map(|h| h.steal).collect();
    if steal.is_empty() {
        return 0.0;
    }
    steal.sort_by(f64::total_cmp);
    steal[steal.len() / 2]
}

/// What the report says of a study whose usual run lost `steal` to the hypervisor.
pub fn usual_steal_sentence(steal: f64) -> String {
    format!(
        "the hypervisor stole {:.1}% of the machine's CPU time in the study's usual run: the machine's own, shared by every variant (the paired blocks cancel it); a run is suspect for steal only beyond {:.1}%",
        steal * 100.0,
        (steal + STEAL) * 100.0
    )
}

/// Why a run is suspect; empty when it is not. `threshold`: the smallest change within a
/// run worth a flag (the study's precision); `usual_steal`: the study's (`usual_steal`);
/// `unit`: the workload's, that the throughput is said in.
pub fn reasons(
    ticks: &[Tick],
    health: &Health,
    cpus: Option<f64>,
    threshold: f64,
    usual_steal: f64,
    unit: Unit,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = trend(ticks) {
        let critical = t_quantile(t.df, 0.995);
        if t.change.abs() > threshold && t.t.abs() > critical {
            out.push(format!(
                "throughput {} from about {:.0} to {} through the run (its first third's mean to its last's; not settled: lengthen the warmup or the run; a trend beyond its tick noise, t = {:.1} on {} df, larger than +-{:.0}%, the study's equivalence margin)",
                if t.change < 0.0 { "fell" } else { "rose" },
                unit.of(t.from),
                unit.say(t.to, 0),
                t.t,
                t.df,
                threshold * 100.0
            ));
        }
    }
    if let Some(s) = stall(ticks) {
        out.push(s);
    }
    if let Some(steal) = health.steal.filter(|s| *s > usual_steal + STEAL) {
        out.push(if usual_steal >= STEAL / 2.0 {
            format!(
                "the hypervisor stole {:.1}% of the machine's CPU time (the study's usual run lost {:.1}%; flagged beyond {:.1}%)",
                steal * 100.0,
                usual_steal * 100.0,
                (usual_steal + STEAL) * 100.0
            )
        } else {
            format!(
                "the hypervisor stole {:.1}% of the machine's CPU time (more than {:.0}%)",
                steal * 100.0,
                STEAL * 100.0
            )
        });
    }
    if let Some(c) = cpus {
        if let Some(others) = health.others(c).filter(|o| *o > others_limit(c)) {
            out.push(format!(
                "other processes used {:.1}% of the machine's CPU time ({:.2} of its {c:.0} CPUs; more than {:.1}%)",
                others * 100.0,
                others * c,
                others_limit(c) * 100.0
            ));
        }
    }
    out
}

/// A run's linear trend: its change over the run as a fraction of its mean throughput, and
/// the slope's t statistic against the ticks' scatter around the line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// The fitted line's change over the run, over the run's mean (what is judged).
    pub change: f64,
    pub t: f64,
    pub df: f64,
    /// Mean throughput of the run's first and last thirds of ticks (what is said: a line
    /// through a collapse can fall "-358%", which no reader can use).
    pub from: f64,
    pub to: f64,
}

pub fn trend(ticks: &[Tick]) -> Option<Trend> {
    if ticks.len() < MIN_TICKS {
        return None;
    }
    let n = ticks.len() as f64;
    let (tm, ym) = (
        ticks.iter().map(|t| t.t).sum::<f64>() / n,
        ticks.iter().map(|t| t.tps).sum::<f64>() / n,
    );
    let sxx: f64 = ticks.iter().map(|t| (t.t - tm).powi(2)).sum();
    if sxx <= 0.0 || ym <= 0.0 {
        return None;
    }
    let slope = ticks.iter().map(|t| (t.t - tm) * (t.tps - ym)).sum::<f64>() / sxx;
    let residual: f64 = ticks
        .iter()
        .map(|t| (t.tps - ym - slope * (t.t - tm)).powi(2))
        .sum();
    let df = n - 2.0;
    let se = (residual / df / sxx).sqrt();
    let span = ticks.last()?.t - ticks.first()?.t;
    let third = (ticks.len() / 3).max(1);
    let mean = |ts: &[Tick]| ts.iter().map(|t| t.tps).sum::<f64>() / ts.len() as f64;
    Some(Trend {
        from: mean(&ticks[..third]),
        to: mean(&ticks[ticks.len() - third..]),
        change: slope * span / ym,
        t: if se > 0.0 {
            slope / se
        } else {
            f64::INFINITY.copysign(slope)
        },
        df,
    })
}

/// Ticks in which the run all but stopped (below 5% of its median throughput).
fn stall(ticks: &[Tick]) -> Option<String> {
    let mut tps: Vec<f64> = ticks.iter().map(|t| t.tps).collect();
    tps.sort_by(f64::total_cmp);
    let median = *tps.get(tps.len() / 2)?;
    let stalled: Vec<&Tick> = ticks.iter().filter(|t| t.tps < STALL * median).collect();
    let first = stalled.first()?;
    Some(format!(
        "stalled: {} tick(s) below {:.0}% of its median throughput, the first ending at {:.2} s",
        stalled.len(),
        STALL * 100.0,
        first.t
    ))
}

/// A run whose throughput lies far outside its cell's other runs (`cell`: every run's tps
/// there, this one's included), by the median and the median absolute deviation of their
/// logs: robust, so the outlier itself does not widen the yardstick.
pub fn outlier(tps: f64, cell: &[f64], unit: Unit) -> Option<String> {
    // A MAD from three or four runs is the gap between two of them: no scale to judge by.
    if cell.len() < 5 || tps <= 0.0 || cell.iter().any(|x| *x <= 0.0) {
        return None;
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len().is_multiple_of(2) {
            (v[m - 1] + v[m]) / 2.0
        } else {
            v[m]
        }
    };
    let logs: Vec<f64> = cell.iter().map(|x| x.ln()).collect();
    let mid = median(logs.clone());
    let mad = 1.4826 * median(logs.iter().map(|l| (l - mid).abs()).collect());
    let z = (tps.ln() - mid) / mad;
    (mad > 0.0 && z.abs() > OUTLIER).then(|| {
        format!(
            "far outside its cell's other runs: {} against their median {:.0} ({z:+.1} robust standard deviations, MAD-based)",
            unit.say(tps, 0),
            unit.of(mid.exp())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(tps: &[f64]) -> Vec<Tick> {
        tps.iter()
            .enumerate()
            .map(|(i, &tps)| Tick {
                t: i as f64 + 1.0,
                tps,
                p99_ms: 1.0,
            })
            .collect()
    }

    #[test]
    fn a_steady_run_is_not_suspect_and_a_trending_one_is() {
        let steady = ticks(&[1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0]);
        assert!(reasons(&steady, &Health::default(), None, 0.05, 0.0, Unit::Tps).is_empty());
        let falling = ticks(&[1000.0, 1000.0, 900.0, 850.0, 800.0, 780.0]);
        let r = reasons(&falling, &Health::default(), None, 0.05, 0.0, Unit::Tps);
        assert!(
            r.len() == 1 && r[0].contains("throughput fell from about "),
            "{r:?}"
        );
        // A noisy run of the same means is not a trend: its scatter hides the slope.
        let noisy = ticks(&[1000.0, 700.0, 1200.0, 650.0, 1100.0, 780.0]);
        assert!(reasons(&noisy, &Health::default(), None, 0.05, 0.0, Unit::Tps).is_empty());
        assert_eq!(
            trend(&ticks(&[1.0, 2.0, 3.0])),
            None,
            "too few ticks to say"
        );
    }

    #[test]
    fn a_stall_and_an_outlying_run_are_named() {
        let r = reasons(
            &ticks(&[1000.0, 990.0, 3.0, 1010.0, 1000.0]),
            &Health::default(),
            None,
            0.05,
            0.0,
            Unit::Tps,
        );
        assert!(
            r.iter().any(|x| x.starts_with("stalled: 1 tick(s)")),
            "{r:?}"
        );
        let cell = [1000.0, 1010.0, 990.0, 1005.0, 600.0];
        assert!(outlier(600.0, &cell, Unit::Tps).is_some_and(|w| w.contains("far outside")));
        assert_eq!(outlier(1010.0, &cell, Unit::Tps), None);
        assert_eq!(
            outlier(600.0, &cell[1..], Unit::Tps),
            None,
            "four runs give no scale"
        );
    }

    #[test]
    fn the_other_processes_limit_scales_with_the_machine() {
        assert!((others_limit(2.0) - 0.10).abs() < 1e-12);
        assert!((others_limit(64.0) - 0.5 / 64.0).abs() < 1e-12);
    }

    #[test]
    fn steal_and_other_processes_are_named_with_their_share() {
        let h = Health {
            steal: Some(0.05),
            host_busy: Some(0.9),
            host_irq: None,
            host_kthreads: None,
            seconds: Some(10.0),
            server_cpu_seconds: Some(8.0),
            client_cpu_seconds: Some(4.0),
            client_idle_poll_seconds: None,
        };
        // 2 CPUs x 10 s = 20 s; busy 18 s, ours 12 s: others 30%.
        let r = reasons(&ticks(&[1.0; 6]), &h, Some(2.0), 0.05, 0.0, Unit::Tps);
        assert!(r[0].contains("stole 5.0%"), "{r:?}");
        assert!(
            r[1].contains(
                "other processes used 30.0% of the machine's CPU time (0.60 of its 2 CPUs"
            ),
            "{r:?}"
        );
        assert!(
            reasons(&[], &h, None, 0.05, 0.0, Unit::Tps).len() == 1,
            "no CPU count: steal only"
        );
        // The kernel's interrupt work is the run's I/O: 10% of the machine less for others.
        let io = Health {
            host_irq: Some(0.1),
            ..h
        };
        assert!(
            (io.others(2.0).unwrap() - 0.2).abs() < 1e-12,
            "{:?}",
            io.others(2.0)
        );
        // And so is its kernel threads' (the server's writeback): 15% less again, none left
        // but 5%, which is within the limit.
        let writeback = Health {
            host_kthreads: Some(0.15),
            ..io
        };
        assert!((writeback.others(2.0).unwrap() - 0.05).abs() < 1e-12);
        assert!(
            reasons(
                &ticks(&[1.0; 6]),
                &writeback,
                Some(2.0),
                0.05,
                0.0,
                Unit::Tps
            )
            .len()
                == 1
        );
    }

    #[test]
    fn steal_is_judged_against_the_studys_usual_run() {
        let run = |steal| Health {
            steal: Some(steal),
            ..Health::default()
        };
        // A VM that always loses about 4%: that is the machine's, and no run is suspect for it.
        let runs: Vec<Health> = [0.038, 0.041, 0.040, 0.043, 0.039, 0.071]
            .into_iter()
            .map(run)
            .collect();
        let usual = usual_steal(runs.iter());
        assert!((usual - 0.041).abs() < 1e-12, "{usual}");
        for h in &runs[..5] {
            assert!(reasons(&[], h, None, 0.05, usual, Unit::Tps).is_empty());
        }
        // The one that lost 7.1% lost 3 points more than usual.
        let r = reasons(&[], &runs[5], None, 0.05, usual, Unit::Tps);
        assert!(
            r.len() == 1 && r[0].contains("stole 7.1%") && r[0].contains("usual run lost 4.1%"),
            "{r:?}"
        );
        // On a machine with no steal to speak of the fixed limit reads as before.
        assert_eq!(usual_steal([].iter()), 0.0);
        assert!(reasons(&[], &run(0.025), None, 0.05, 0.0, Unit::Tps)[0].contains("(more than 2%)"));
    }
}
