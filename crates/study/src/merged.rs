//! The client hosts' parts of a run merged into one: tick `i` of every host into the run's
//! tick `i` (counts added, histograms merged bucket for bucket), the ends into one status, and
//! each host's share with its own CPU.

use std::collections::BTreeMap;
use std::time::Instant;

use bakeoff_engine::{RunResult, RunSpec, RunStatus, Tick};
use bakeoff_remote::wire::{HostLoad, LoadTick};
use bakeoff_telemetry::{Sampler, Telemetry, Window};
use serde::Serialize;

/// One host's share of a run, as recorded with it.
#[derive(Debug, Clone, Serialize)]
pub struct HostShare {
    pub host: String,
    pub connections: u32,
    pub events: u64,
    pub client_cpu_seconds: f64,
    pub client_cpu_share: f64,
    pub client_bound: bool,
}

/// A run spread over the client hosts: the merged result and each host's share.
pub struct Spread {
    pub result: RunResult,
    pub hosts: Vec<HostShare>,
}

/// The run's ticks and ends as the hosts report them.
pub(crate) struct Merge {
    pub(crate) hosts: Vec<usize>,
    tick_s: f64,
    percentile: f64,
    /// Tick index -> what the hosts reported for it so far.
    open: BTreeMap<usize, Partial>,
    seen: BTreeMap<usize, usize>,
    pub(crate) ticks: Vec<Tick>,
    ends: BTreeMap<usize, Result<HostLoad, String>>,
}

#[derive(Default)]
struct Partial {
    hosts: usize,
    t: f64,
    threads: u32,
    queue_length: u64,
    concurrency: u64,
    window: Window,
    clients: Vec<Telemetry>,
}

impl Merge {
    pub(crate) fn new(spec: &RunSpec, hosts: &[usize]) -> Merge {
        Merge {
            hosts: hosts.to_vec(),
            tick_s: spec.tick.as_secs_f64(),
            percentile: spec.percentile,
            open: BTreeMap::new(),
            seen: BTreeMap::new(),
            ticks: Vec::new(),
            ends: BTreeMap::new(),
        }
    }

    pub(crate) fn running(&self) -> bool {
        self.ends.len() < self.hosts.len()
    }

    /// Add host `k`'s next tick; the run's tick once every host has reported it.
    pub(crate) fn tick(
        &mut self,
        k: usize,
        t: LoadTick,
        sampler: &mut Option<&mut Sampler>,
    ) -> Option<(Tick, Window)> {
        let seen = self.seen.entry(k).or_default();
        let index = *seen;
        *seen += 1;
        let p = self.open.entry(index).or_default();
        p.hosts += 1;
        p.t = p.t.max(t.t);
        p.threads += t.threads;
        p.queue_length += t.queue_length;
        p.concurrency += t.concurrency;
        p.window.add(&t.window);
        p.clients.extend(t.telemetry);
        if p.hosts < self.hosts.len() {
            return None;
        }
        let p = self.open.remove(&index)?;
        let window = p.window.summary(self.tick_s, self.percentile);
        let own = sampler
            .as_deref_mut()
            .and_then(|s| s.tick(self.tick_s, window.events));
        let tick = Tick {
            t: p.t,
            threads: p.threads,
            queue_length: p.queue_length,
            concurrency: p.concurrency,
            telemetry: with_clients(own, &p.clients),
            histogram: p.window.sb_histogram().buckets().collect(),
            window,
        };
        Some((tick, p.window))
    }

    pub(crate) fn ended(&mut self, k: usize, end: Result<HostLoad, String>) {
        self.ends.insert(k, end);
    }

    pub(crate) fn elapsed(&self, started: Instant) -> f64 {
        let reported = self
            .ends
            .values()
            .filter_map(|e| e.as_ref().ok())
            .map(|h| h.elapsed_seconds)
            .fold(0.0, f64::max);
        if reported > 0.0 {
            reported
        } else {
            started.elapsed().as_secs_f64()
        }
    }

    pub(crate) fn finish(
        self,
        names: &[String],
        parts: &[RunSpec],
        spec: &RunSpec,
        elapsed: f64,
        sampler: Option<&mut Sampler>,
    ) -> Spread {
        let mut total = Window::default();
        let mut status = RunStatus::Completed;
        let (mut connections, mut shares, mut clients) = (Vec::new(), Vec::new(), Vec::new());
        let (mut unfinished, mut setup) = (0, 0.0f64);
        for (&k, end) in &self.ends {
            let host = names[k].clone();
            match end {
                Ok(h) => {
                    total.add(&h.window);
                    connections.extend_from_slice(&h.connections);
                    unfinished += h.unfinished_events;
                    setup = setup.max(h.setup_seconds);
                    status = worse(status, &h.status, &host);
                    shares.push(share_of(&host, parts[k].connections, h));
                    clients.extend(h.telemetry.clone());
                }
                Err(why) => status = worse(status, &RunStatus::Failed(why.clone()), &host),
            }
        }
        let summary = total.summary(elapsed, spec.percentile);
        let own = sampler.and_then(|s| s.total(elapsed, summary.events));
        Spread {
            result: RunResult {
                status,
                setup_seconds: setup,
                elapsed_seconds: elapsed,
                total: summary,
                telemetry: with_clients(own, &clients),
                ticks: self.ticks,
                connections,
                unfinished_events: unfinished,
                histogram: total.sb_histogram().clone(),
                window: total,
                // Checkpoints are sysbench's, for a run on one machine (its grammar never
                // spreads a run); a spread run reports its ticks instead.
                checkpoints: Vec::new(),
                after_checkpoint: None,
                // Each host's connecting is its own: not merged yet.
                connect: None,
            },
            hosts: shares,
        }
    }
}

/// The run's status once host `host` ended with `theirs`: a failure (named) over an
/// interrupt over completion.
pub(crate) fn worse(ours: RunStatus, theirs: &RunStatus, host: &str) -> RunStatus {
    match (&ours, theirs) {
        (RunStatus::Failed(_), _) => ours,
        (_, RunStatus::Failed(why)) if why.contains(host) => RunStatus::Failed(why.clone()),
        (_, RunStatus::Failed(why)) => RunStatus::Failed(format!("client host {host}: {why}")),
        (_, RunStatus::Interrupted) => RunStatus::Interrupted,
        _ => ours,
    }
}

pub(crate) fn share_of(host: &str, connections: u32, h: &HostLoad) -> HostShare {
    let t = h.telemetry.as_ref();
    HostShare {
        host: host.into(),
        connections,
        events: h.window.events,
        client_cpu_seconds: t.map_or(0.0, |t| t.client_cpu_seconds),
        client_cpu_share: t.map_or(0.0, |t| t.client_cpu_share),
        client_bound: t.is_some_and(|t| t.client_bound),
    }
}

/// Fold one round's shares into the shares so far: events and CPU seconds added, the
/// busiest round's CPU share, bound if any round was.
pub(crate) fn add_shares(total: &mut Vec<HostShare>, round: &[HostShare]) {
    for r in round {
        match total.iter_mut().find(|t| t.host == r.host) {
            None => total.push(r.clone()),
            Some(t) => {
                t.events += r.events;
                t.client_cpu_seconds += r.client_cpu_seconds;
                t.client_cpu_share = t.client_cpu_share.max(r.client_cpu_share);
                t.client_bound |= r.client_bound;
            }
        }
    }
}

/// The server's figures as sampled here, with the client's taken from the client hosts:
/// their CPU seconds added, the busiest host's share, bound if any host was.
pub(crate) fn with_clients(own: Option<Telemetry>, clients: &[Telemetry]) -> Option<Telemetry> {
    if clients.is_empty() {
        return own;
    }
    let mut t = own.unwrap_or_else(|| Telemetry {
        seconds: clients.iter().map(|c| c.seconds).fold(0.0, f64::max),
        ..Telemetry::default()
    });
    t.client_cpu_seconds = clients.iter().map(|c| c.client_cpu_seconds).sum();
    t.client_idle_poll_seconds = clients.iter().map(|c| c.client_idle_poll_seconds).sum();
    t.client_cpu_share = clients
        .iter()
        .map(|c| c.client_cpu_share)
        .fold(0.0, f64::max);
    t.client_bound = clients.iter().any(|c| c.client_bound);
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_its_host_once_and_outranks_an_interrupt() {
        let s = worse(
            RunStatus::Interrupted,
            &RunStatus::Failed("FATAL: gone".into()),
            "ssh://b",
        );
        assert_eq!(
            s,
            RunStatus::Failed("client host ssh://b: FATAL: gone".into())
        );
        let s = worse(s, &RunStatus::Interrupted, "ssh://c");
        assert!(matches!(s, RunStatus::Failed(why) if why.contains("ssh://b")));
    }
}
