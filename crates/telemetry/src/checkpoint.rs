//! sysbench's `--report-checkpoints`: at each given second of the measured run, the full
//! report of what happened since the last checkpoint, and its counters start from zero. The
//! run's own total is kept whole (JSON and studies want all of it); what sysbench's final
//! report would show after checkpoints is kept beside it. The engine's coordinator and the
//! host probes' keep them alike.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{Window, WindowSummary};

/// One connection's (or probe thread's) events and their latency sum, for sysbench's
/// "threads fairness".
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Totals {
    pub events: u64,
    pub latency_sum_ns: u64,
}

type ConnTotals = Totals;

/// The report of one stretch of a run between checkpoints.
#[derive(Debug, Clone, Serialize)]
pub struct Checkpoint {
    /// Seconds since the start of the measured run, at the checkpoint.
    pub t: f64,
    /// Seconds since the previous checkpoint (or the start): what the rates are over.
    pub seconds: f64,
    pub total: WindowSummary,
    /// Each connection's events and latency over the stretch (sysbench's threads fairness).
    pub connections: Vec<ConnTotals>,
}

impl Checkpoint {
    /// A whole run of `seconds` as one stretch (what a final report covers without checkpoints).
    pub fn whole(seconds: f64, total: &WindowSummary, connections: &[Totals]) -> Checkpoint {
        Checkpoint {
            t: seconds,
            seconds,
            total: total.clone(),
            connections: connections.to_vec(),
        }
    }
}

/// What a coordinator keeps for checkpoints; inert when none were asked for.
pub struct Checkpoints {
    due: VecDeque<Duration>,
    /// What was recorded since the last checkpoint, and a window a drain lands in first;
    /// neither kept when no checkpoint was asked for (a window's histograms are ~300 KB).
    since: Option<(Window, Window)>,
    base: Vec<ConnTotals>,
    last: Instant,
    taken: Vec<Checkpoint>,
    percentile: f64,
}

impl Checkpoints {
    pub fn new(at: &[Duration], started: Instant, percentile: f64) -> Checkpoints {
        let mut due: Vec<Duration> = at.to_vec();
        due.sort();
        due.dedup();
        let keep = !due.is_empty();
        Checkpoints {
            due: due.into(),
            since: keep.then(|| (Window::default(), Window::default())),
            base: Vec::new(),
            last: started,
            taken: Vec::new(),
            percentile,
        }
    }

    /// Whether checkpoints were asked for (then every drain also feeds the stretch).
    pub fn kept(&self) -> bool {
        self.since.is_some()
    }

    /// Collect what `drain` hands over into `into` (a tick, the run's total), and into the
    /// stretch since the last checkpoint when checkpoints were asked for: a coordinator's every
    /// drain goes through here, the one just before a checkpoint is taken included.
    pub fn collect(&mut self, into: &mut Window, drain: impl FnOnce(&mut Window)) {
        let Some((since, fresh)) = &mut self.since else {
            return drain(into);
        };
        drain(fresh);
        into.add(fresh);
        since.add(fresh);
        fresh.reset();
    }

    /// The measured span starts now (a warmup ended): nothing before it counts.
    pub fn restart(&mut self, at: Instant) {
        if let Some((w, _)) = &mut self.since {
            w.reset();
        }
        self.base.clear();
        self.last = at;
    }

    /// A checkpoint falls due `elapsed` into the measured run (ones already passed are skipped,
    /// as sysbench's checkpoint thread skips them).
    pub fn due(&mut self, elapsed: Duration) -> bool {
        let mut due = false;
        while self.due.front().is_some_and(|&d| d <= elapsed) {
            self.due.pop_front();
            due = true;
        }
        due
    }

    /// When the next checkpoint falls due, into the measured run.
    pub fn next(&self) -> Option<Duration> {
        self.due.front().copied()
    }

    /// Close the stretch at `now` (everything recorded so far already added), and start the
    /// next from zero.
    pub fn take(&mut self, now: Instant, started: Instant, conns: Vec<ConnTotals>) -> Checkpoint {
        let c = self.stretch(now, started, &conns);
        if let Some((w, _)) = &mut self.since {
            w.reset();
        }
        self.base = conns;
        self.last = now;
        self.taken.push(c.clone());
        c
    }

    /// The checkpoints taken, and the stretch after the last (None when none was taken).
    pub fn finish(
        self,
        now: Instant,
        started: Instant,
        conns: &[ConnTotals],
    ) -> (Vec<Checkpoint>, Option<Checkpoint>) {
        let rest = (!self.taken.is_empty()).then(|| self.stretch(now, started, conns));
        (self.taken, rest)
    }

    fn stretch(&self, now: Instant, started: Instant, conns: &[ConnTotals]) -> Checkpoint {
        let seconds = (now - self.last).as_secs_f64();
        let zero = ConnTotals::default();
        let connections = conns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let b = self.base.get(i).unwrap_or(&zero);
                ConnTotals {
                    events: c.events.saturating_sub(b.events),
                    latency_sum_ns: c.latency_sum_ns.saturating_sub(b.latency_sum_ns),
                }
            })
            .collect();
        Checkpoint {
            t: (now - started).as_secs_f64(),
            seconds,
            total: self
                .since
                .as_ref()
                .map(|(w, _)| w.summary(seconds, self.percentile))
                .unwrap_or_else(|| Window::default().summary(seconds, self.percentile)),
            connections,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stretch_counts_what_came_after_the_last_checkpoint_only() {
        let start = Instant::now();
        let mut cps = Checkpoints::new(
            &[Duration::from_secs(2), Duration::from_secs(1)],
            start,
            95.0,
        );
        assert!(cps.kept());
        assert!(!cps.due(Duration::from_millis(999)));
        let mut w = Window::default();
        w.record_event(1_000_000);
        w.record_event(3_000_000);
        let mut tick = Window::default();
        cps.collect(&mut tick, |into| into.add(&w));
        assert_eq!(tick.events, 2, "the tick gets what the stretch gets");
        let conns = vec![ConnTotals {
            events: 2,
            latency_sum_ns: 4_000_000,
        }];
        assert!(cps.due(Duration::from_secs(1)));
        let first = cps.take(start + Duration::from_secs(1), start, conns.clone());
        assert_eq!(first.total.events, 2);
        assert_eq!(first.connections[0].events, 2);
        let mut w = Window::default();
        w.record_event(2_000_000);
        cps.collect(&mut tick, |into| into.add(&w));
        let later = vec![ConnTotals {
            events: 3,
            latency_sum_ns: 6_000_000,
        }];
        let (taken, rest) = cps.finish(start + Duration::from_secs(3), start, &later);
        assert_eq!(taken.len(), 1);
        let rest = rest.expect("a stretch after the checkpoint");
        assert_eq!(rest.total.events, 1);
        assert_eq!(rest.connections[0].events, 1);
        assert_eq!(rest.connections[0].latency_sum_ns, 2_000_000);
        assert!((rest.seconds - 2.0).abs() < 1e-9);
        assert!((rest.t - 3.0).abs() < 1e-9);
    }

    #[test]
    fn checkpoints_passed_together_fall_due_once_and_none_means_inert() {
        let start = Instant::now();
        let mut cps = Checkpoints::new(
            &[Duration::from_secs(1), Duration::from_secs(2)],
            start,
            95.0,
        );
        assert!(cps.due(Duration::from_secs(5)));
        assert!(!cps.due(Duration::from_secs(6)));
        let none = Checkpoints::new(&[], start, 95.0);
        assert!(!none.kept());
        let (taken, rest) = none.finish(start, start, &[]);
        assert!(taken.is_empty() && rest.is_none());
    }
}
