//! Runs whose figure may not measure what it claims, each with why: its throughput drifted
//! within the run, or the machine was busy with something else. They stay in the results
//! and the report (flagged); `bakeoff compare --exclude-suspect` leaves them out of the
//! comparisons. Only measured ticks count: warmup (a study's warmup run, `--warmup-time`) is
//! never stored as ticks, so a cold start that warmup absorbed is not flagged.

use crate::model::Tick;

/// The last third of a run's ticks against its first third: beyond 10% either way, the run
/// was still warming up, or the machine changed under it.
pub const DRIFT: f64 = 0.10;
/// The hypervisor took more than 2% of the machine's CPU time (steal).
pub const STEAL: f64 = 0.02;
/// Processes other than the server and bakeoff used more than 10% of the machine's CPU time.
pub const OTHERS: f64 = 0.10;
/// Fewer ticks than this say nothing about drift.
const MIN_TICKS: usize = 3;

/// What the run's telemetry says of the machine (see `Store::run_health`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Health {
    pub steal: Option<f64>,
    pub host_busy: Option<f64>,
    pub seconds: Option<f64>,
    pub server_cpu_seconds: Option<f64>,
    pub client_cpu_seconds: Option<f64>,
    pub client_idle_poll_seconds: Option<f64>,
}

impl Health {
    /// CPU time of other processes, as a share of the machine's (`cpus` CPUs); None when the
    /// figures are not all there (a server not on this machine).
    pub fn others(&self, cpus: f64) -> Option<f64> {
        let machine = self.seconds? * cpus;
        let ours = self.server_cpu_seconds?
            + self.client_cpu_seconds.unwrap_or(0.0)
            + self.client_idle_poll_seconds.unwrap_or(0.0);
        let busy = self.host_busy?;
        (machine > 0.0).then(|| (busy - ours / machine).max(0.0))
    }
}

/// Why a run is suspect; empty when it is not.
pub fn reasons(ticks: &[Tick], health: &Health, cpus: Option<f64>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(d) = drift(ticks) {
        if d.abs() > DRIFT {
            out.push(format!(
                "throughput drifted {:+.1}% from the first third of the run to the last (more than {:.0}%)",
                d * 100.0,
                DRIFT * 100.0
            ));
        }
    }
    if let Some(steal) = health.steal.filter(|s| *s > STEAL) {
        out.push(format!(
            "the hypervisor stole {:.1}% of the machine's CPU time (more than {:.0}%)",
            steal * 100.0,
            STEAL * 100.0
        ));
    }
    if let Some(others) = cpus.and_then(|c| health.others(c)).filter(|o| *o > OTHERS) {
        out.push(format!(
            "other processes used {:.0}% of the machine's CPU time (more than {:.0}%)",
            others * 100.0,
            OTHERS * 100.0
        ));
    }
    out
}

/// The last third's mean throughput over the first third's, less 1; None with too few ticks.
pub fn drift(ticks: &[Tick]) -> Option<f64> {
    if ticks.len() < MIN_TICKS {
        return None;
    }
    let third = ticks.len() / 3;
    let mean = |t: &[Tick]| t.iter().map(|t| t.tps).sum::<f64>() / t.len() as f64;
    let (first, last) = (mean(&ticks[..third]), mean(&ticks[ticks.len() - third..]));
    (first > 0.0).then(|| last / first - 1.0)
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
    fn a_steady_run_is_not_suspect_and_a_drifting_one_is() {
        let steady = ticks(&[1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0]);
        assert!(reasons(&steady, &Health::default(), None).is_empty());
        let falling = ticks(&[1000.0, 1000.0, 900.0, 850.0, 800.0, 780.0]);
        let r = reasons(&falling, &Health::default(), None);
        assert!(r.len() == 1 && r[0].contains("-21.0%"), "{r:?}");
        assert_eq!(drift(&ticks(&[1.0, 2.0])), None, "too few ticks to say");
    }

    #[test]
    fn steal_and_other_processes_are_named_with_their_share() {
        let h = Health {
            steal: Some(0.05),
            host_busy: Some(0.9),
            seconds: Some(10.0),
            server_cpu_seconds: Some(8.0),
            client_cpu_seconds: Some(4.0),
            client_idle_poll_seconds: None,
        };
        // 2 CPUs x 10 s = 20 s; busy 18 s, ours 12 s: others 30%.
        let r = reasons(&ticks(&[1.0; 6]), &h, Some(2.0));
        assert!(r[0].contains("stole 5.0%"), "{r:?}");
        assert!(r[1].contains("other processes used 30%"), "{r:?}");
        assert!(
            reasons(&[], &h, None).len() == 1,
            "no CPU count: steal only"
        );
    }
}
