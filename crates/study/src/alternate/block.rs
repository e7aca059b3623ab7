//! One turn-taking block: for each group of workloads that share tables, every variant's
//! servers up at once (started, checked and loaded as a series starts them), then each
//! workload and thread count measured with the servers taking turns, then the servers killed
//! (their datadirs are copies or throwaway loads). The block's runs are kept together when it
//! ends: one measurement, resumed all or nothing; Ctrl-C in the middle loses only this block.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bakeoff_engine::{run_turns, EngineError, TurnSpec, TurnsResult};
use bakeoff_server::placement::ClientPlacement;
use bakeoff_server::Template;
use bakeoff_store::{ProbeRecord, Row, RunKey, RunRecord};
use bakeoff_telemetry::{SampleTarget, Sampler};
use bakeoff_workload::{SessionContext, Unique};

use super::idle::{freezing_line, groups_of, Turns};
use crate::lab::{Death, Servers};
use crate::manifest::Host;
use crate::matrix::Series;
use crate::record::fill_turns;
use crate::results::{Results, StudyError, StudyObserver, StudyOutcome};
use crate::run_spec::{remaining, run_spec};
use crate::series::{SeriesCtx, TemplateKey};
use crate::{Idle, StudySpec};

pub(crate) struct BlockRun<'a> {
    pub spec: &'a StudySpec,
    pub hash: &'a str,
    pub host: &'a Host,
    pub store: &'a mut dyn Results,
    pub out: &'a mut StudyOutcome,
    pub obs: &'a mut dyn StudyObserver,
    pub interrupt: &'a AtomicBool,
    /// (study start, runs done in this invocation, runs finished before it, all runs)
    pub progress: (Instant, &'a mut usize, usize, usize),
    pub templates: &'a mut HashMap<TemplateKey, Template>,
    /// Where the load runs (this thread is pinned there): the same for every variant.
    pub client: ClientPlacement,
    /// Notes already said in this study (how idle servers are frozen, a cell's slow
    /// events): said in every block they repeated some twenty times under load.
    pub said: &'a mut HashSet<String>,
}

/// A variant's servers, up for a group of the block, and its manifest.
struct Up {
    variant: usize,
    servers: Servers,
    manifest: String,
}

/// The block's runs until it ends. A series' set-up records its failures here (and counts
/// them as it records them); what the block measured is counted when it is kept.
#[derive(Default)]
struct Held {
    set_up: Vec<RunRecord>,
    measured: Vec<RunRecord>,
}

impl Results for Held {
    fn finished(&self) -> Result<HashSet<RunKey>, StudyError> {
        Ok(HashSet::new())
    }
    fn probes_done(&self) -> Result<HashSet<(String, u32)>, StudyError> {
        Ok(HashSet::new())
    }
    fn record(&mut self, r: &RunRecord) -> Result<(), StudyError> {
        self.set_up.push(r.clone());
        Ok(())
    }
    fn record_probe(&mut self, _p: &ProbeRecord) -> Result<(), StudyError> {
        Ok(())
    }
    fn rows(&self) -> Result<Vec<Row>, StudyError> {
        Ok(Vec::new())
    }
}

impl BlockRun<'_> {
    /// Run block `block` and keep its runs (those not in `finished`) together.
    pub fn run(&mut self, block: u32, finished: &HashSet<RunKey>) -> Result<(), StudyError> {
        let mut held = Held::default();
        for group in super::plan::table_groups(self.spec) {
            if self
                .keys(block, &group)
                .iter()
                .all(|k| finished.contains(k))
            {
                continue;
            }
            self.group(block, &group, &mut held)?;
            if self.interrupt.load(Ordering::Relaxed) {
                self.out.interrupted = true;
                return Ok(());
            }
        }
        // Runs an earlier invocation kept (a block begun one server at a time) stay as they are.
        let fresh = |r: &RunRecord| r.key.is_none_or(|k| !finished.contains(&k));
        let set_up: Vec<RunRecord> = held.set_up.into_iter().filter(fresh).collect();
        let measured: Vec<RunRecord> = held.measured.into_iter().filter(fresh).collect();
        self.store
            .record_block(&[set_up.as_slice(), measured.as_slice()].concat())?;
        // The set-up's records were counted and told as the series recorded them.
        for r in &measured {
            self.out.count(r);
            self.obs.on_run_done(r);
        }
        Ok(())
    }

    /// Every run of `group` in block `block`.
    fn keys(&self, block: u32, group: &[usize]) -> Vec<RunKey> {
        let mut keys = Vec::new();
        for v in 0..self.spec.block_variants() {
            for &w in group {
                for &t in &self.spec.threads {
                    keys.push(RunKey {
                        repetition: block,
                        variant: v as u32,
                        workload: w as u32,
                        threads: t,
                    });
                }
            }
        }
        keys
    }

    /// One group of workloads on one set of servers: up, measured cell by cell, killed.
    fn group(&mut self, block: u32, group: &[usize], held: &mut Held) -> Result<(), StudyError> {
        let mut up = Vec::new();
        for v in 0..self.spec.block_variants() {
            if self.interrupt.load(Ordering::Relaxed) {
                break;
            }
            up.extend(self.set_up(block, v, group, held)?);
        }
        let cells: Vec<(usize, u32)> = group
            .iter()
            .flat_map(|&w| self.spec.threads.iter().map(move |&t| (w, t)))
            .collect();
        for (i, &(w, t)) in cells.iter().enumerate() {
            if up.is_empty() || self.interrupt.load(Ordering::Relaxed) {
                break;
            }
            let runs = self.cell(block, w, t, i == 0, &up);
            held.measured.extend(runs);
            self.bury_the_dead(block, &mut up, &cells[i + 1..], held);
        }
        for u in up {
            u.servers.discard();
        }
        Ok(())
    }

    /// Variant `v`'s servers for `group`, as a series sets them up (a datadir copied or the
    /// tables loaded, the variant verified); None when they cannot be measured, recorded for
    /// every workload of the group.
    fn set_up(
        &mut self,
        block: u32,
        v: usize,
        group: &[usize],
        held: &mut Held,
    ) -> Result<Option<Up>, StudyError> {
        let series = Series {
            repetition: block,
            variant: v,
            workload: group[0],
        };
        let threads = self.spec.threads.clone();
        let before = held.set_up.len();
        let mut ctx = SeriesCtx {
            spec: self.spec,
            series: &series,
            hash: self.hash,
            host: self.host,
            store: held,
            out: self.out,
            obs: self.obs,
            interrupt: self.interrupt,
            progress: (
                self.progress.0,
                &mut *self.progress.1,
                self.progress.2,
                self.progress.3,
            ),
            templates: self.templates,
            client: self.client.clone(),
            server_host: None,
            clients: None,
        };
        let ready = ctx.set_up_started(&threads)?;
        // The series recorded why for the group's first workload; the others share the reason.
        let why: Vec<RunRecord> = held.set_up[before..].to_vec();
        for &w in &group[1..] {
            for r in &why {
                let mut copy = r.clone();
                copy.key = copy.key.map(|k| RunKey {
                    workload: w as u32,
                    ..k
                });
                copy.workload_label = self.spec.workloads[w].label.clone();
                held.measured.push(copy);
            }
        }
        Ok(ready.map(|(servers, manifest)| Up {
            variant: v,
            servers,
            manifest,
        }))
    }

    /// Measure workload `w` at `threads` with every server of `up` taking turns (warmed
    /// first when `warm`); one run per variant.
    fn cell(
        &mut self,
        block: u32,
        w: usize,
        threads: u32,
        warm: bool,
        up: &[Up],
    ) -> Vec<RunRecord> {
        let spec = self.spec;
        // One seed for every server: each gets the same keys in the same order.
        let series = Series {
            repetition: block,
            variant: 0,
            workload: w,
        };
        // Client threads enough for the neediest variant (PostgreSQL's backends beside the
        // client want more than MariaDB's threads do; see `run_spec`).
        let mut run = run_spec(spec, &self.client, &series, threads, spec.duration);
        run.client_threads = up
            .iter()
            .map(|u| {
                let s = Series {
                    variant: u.variant,
                    ..series
                };
                run_spec(spec, &self.client, &s, threads, spec.duration).client_threads
            })
            .max()
            .unwrap_or(run.client_threads);
        let how = TurnSpec {
            run,
            slice: spec.alternation.slice,
            settle: spec.alternation.settle,
            warmup: if warm { spec.warmup } else { Duration::ZERO },
            measured: spec.duration,
        };
        let sources: Vec<Arc<SessionContext>> = up
            .iter()
            .map(|u| {
                Arc::new(SessionContext::new(
                    u.servers.endpoints(),
                    spec.workload_spec(u.variant, w),
                    threads,
                    Unique::new(spec.seed),
                    spec.seed,
                ))
            })
            .collect();
        // Each slice reads the server's process only (a few /proc files); its status
        // counters, a query's worth of work, are read once around the whole cell: between
        // its turns a server does next to nothing to count.
        let pids: Vec<Vec<u32>> = up.iter().map(|u| u.servers.pids()).collect();
        let groups = match spec.alternation.idle {
            Idle::Freeze => {
                let made = groups_of(&pids);
                if self.said.insert("freezing".into()) {
                    self.obs.on_note(&freezing_line(&made));
                }
                made.unwrap_or_default()
            }
            Idle::Run => Vec::new(),
        };
        let mut samplers: Vec<Option<Sampler>> = up
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let mut s =
                    Sampler::new(process_only(&u.servers), how.run.client_threads).slices_only();
                if let Some(g) = groups.get(i).cloned() {
                    s.cpu_from(Arc::new(move || g.cpu_seconds()));
                }
                Some(s)
            })
            .collect();
        // The first also reads the kernel's threads at the cell's two ends (see below).
        let mut statuses: Vec<Sampler> = up
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let s = Sampler::new(status_only(&u.servers), how.run.client_threads);
                if i == 0 {
                    s
                } else {
                    s.slices_only()
                }
            })
            .collect();
        statuses.iter_mut().for_each(Sampler::begin);
        self.tell_start(block, w, threads, up.len());
        let (mut res, unheld) = {
            let mut turns = Turns::new(spec.alternation.idle, pids, groups, &mut *self.obs);
            let res = run_turns(&sources, &how, self.interrupt, &mut samplers, &mut turns);
            (res, turns.unheld())
        };
        if let Ok(res) = res.as_mut() {
            let mut kernel = None;
            for (s, status) in res.servers.iter_mut().zip(&mut statuses) {
                let cell = status.total(res.elapsed_seconds, s.total.events);
                if let (Some(t), Some(cell)) = (s.telemetry.as_mut(), cell) {
                    kernel = kernel.or(Some(cell.host.kernel_threads));
                    t.status = cell.status;
                }
            }
            // The kernel's threads (writeback, the journal) worked for the whole cell, for
            // every server's writes alike and often in another's turn: each run is charged
            // the cell's share of the machine, not what fell in its own slices.
            for t in res.servers.iter_mut().filter_map(|s| s.telemetry.as_mut()) {
                t.host.kernel_threads = kernel.unwrap_or(0.0);
            }
        }
        *self.progress.1 += up.len();
        if let Ok(res) = &res {
            for (u, s) in up.iter().zip(&res.servers) {
                if let Some(why) = slow_events(s.total.latency.p95_ms, how.slice) {
                    let v = spec.variant_name(u.variant);
                    let label = &spec.workloads[w].label;
                    let cell = format!("{v} | {label} | {threads} threads");
                    if self.said.insert(cell.clone()) {
                        self.obs
                            .on_note(&format!("{cell}: {why} (said once a cell)"));
                    }
                }
            }
        }
        up.iter()
            .enumerate()
            .map(|(i, u)| {
                let mut r = self.record(block, u, w, threads, &res, i, &how);
                // A process left running in its server's idle turns: no turn was only its own.
                if let (Some(why), "ok") = (&unheld, r.status.as_str()) {
                    r.status = "invalid".into();
                    r.reason = Some(format!("a server process could not be frozen between turns ({why}): the turns were not each server's alone"));
                }
                r
            })
            .collect()
    }

    fn tell_start(&mut self, block: u32, w: usize, threads: u32, servers: usize) {
        let (started, done, before, total) = (
            self.progress.0,
            *self.progress.1,
            self.progress.2,
            self.progress.3,
        );
        let left = remaining(self.spec, started, done, total - before);
        let what = format!(
            "block {block} | {} | {threads} threads | {servers} servers taking turns",
            self.spec.workloads[w].label
        );
        self.obs.on_run_start(before + done, total, &what, left);
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        block: u32,
        u: &Up,
        w: usize,
        threads: u32,
        res: &Result<TurnsResult, EngineError>,
        i: usize,
        how: &TurnSpec,
    ) -> RunRecord {
        let mut r = self.record_of(block, u, w, threads);
        match res {
            Ok(res) => {
                fill_turns(&mut r, res, i, how);
                let spec = self.spec.workload_spec(u.variant, w);
                crate::tpcc::judge(&mut r, &res.servers[i].total, &spec, &u.servers.endpoints());
            }
            Err(e) => {
                r.status = "failed".into();
                r.reason = Some(e.to_string());
            }
        }
        r
    }

    fn record_of(&self, block: u32, u: &Up, w: usize, threads: u32) -> RunRecord {
        RunRecord {
            key: Some(RunKey {
                repetition: block,
                variant: u.variant as u32,
                workload: w as u32,
                threads,
            }),
            variant_name: self.spec.variant_name(u.variant),
            workload_label: self.spec.workloads[w].label.clone(),
            manifest_json: u.manifest.clone(),
            summary_json: "{}".into(),
            ..Default::default()
        }
    }

    /// A server that exited during the last cell: that cell's run is its failure (the death
    /// said, with the end of its log), its later cells failed with the same first line; the
    /// others go on without it.
    fn bury_the_dead(
        &mut self,
        block: u32,
        up: &mut Vec<Up>,
        later: &[(usize, u32)],
        held: &mut Held,
    ) {
        let mut i = 0;
        while i < up.len() {
            let Some(death) = up[i].servers.ended().map(Death::said) else {
                i += 1;
                continue;
            };
            let u = up.remove(i);
            let first = death.lines().next().unwrap_or("").to_string();
            let key = |r: &RunRecord| r.key.map(|k| k.variant as usize);
            if let Some(last) = held
                .measured
                .iter_mut()
                .rev()
                .find(|r| key(r) == Some(u.variant))
            {
                last.status = "failed".into();
                last.reason = Some(death);
            }
            for &(w, t) in later {
                let mut r = self.record_of(block, &u, w, t);
                r.status = "failed".into();
                r.reason = Some(format!("the server exited earlier in this block ({first})"));
                held.measured.push(r);
            }
            u.servers.discard();
        }
    }
}

/// What a slice samples of `servers`: their processes.
fn process_only(servers: &Servers) -> Vec<SampleTarget> {
    let mut targets = servers.sample_targets();
    targets.iter_mut().for_each(|t| t.status = None);
    targets
}

/// What a cell samples of `servers` around all its turns: their status counters.
fn status_only(servers: &Servers) -> Vec<SampleTarget> {
    let mut targets = servers.sample_targets();
    for t in &mut targets {
        (t.pid, t.remote) = (None, None);
    }
    targets
}

/// Why a server's figures in turns of `slice` miss its slowest events, when they do: an
/// event that outlasts its slice's measured span is never counted, so when the 95th
/// percentile reaches a fifth of the slice the slowest tail is cut off (its p99 reads short,
/// and its throughput a little high).
fn slow_events(p95_ms: f64, slice: Duration) -> Option<String> {
    let slice_ms = slice.as_secs_f64() * 1e3;
    (p95_ms * 5.0 > slice_ms).then(|| {
        format!(
            "its events are slow for {slice_ms:.0} ms turns (p95 {p95_ms:.1} ms): events longer than a turn are not counted, so its p99 reads short; give [alternation] slice_ms = {} or more",
            ((p95_ms * 10.0 / 50.0).ceil() * 50.0) as u64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_as_slow_as_a_fifth_of_a_turn_are_said_with_the_slice_that_fits_them() {
        let slice = Duration::from_millis(50);
        assert_eq!(slow_events(9.9, slice), None);
        let why = slow_events(12.0, slice).unwrap();
        assert!(
            why.contains("p95 12.0 ms") && why.contains("slice_ms = 150 or more"),
            "{why}"
        );
    }
}
