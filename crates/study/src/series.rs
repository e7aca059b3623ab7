//! One series: a server lifetime (variant x workload x repetition). Its servers start (or
//! the series is recorded as failed or invalid with the reason), its tables load, it warms up,
//! then each of its thread counts is measured and stored before the next starts.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bakeoff_driver::ConnectOptions;
use bakeoff_engine::{Observer, Quiet, RunSpec, RunStatus, Tick};
use bakeoff_remote::HostUrl;
use bakeoff_server::placement::ClientPlacement;
use bakeoff_server::{global_variables, Engine, Server, ServerSpec, Template};
use bakeoff_store::{RunKey, RunRecord};
use bakeoff_workload::{dataset, SessionContext, Unique};

use crate::cell::{
    load_tables, set_up, CellError, CellObserver, Load, LoadTell, Ready, ServerPlan, SetUp, Stop,
};
use crate::lab::{Death, Running, Servers, StartError};
use crate::manifest::{GivenInfo, Host, Manifest};
use crate::matrix::Series;
use crate::measure::{measure, measure_fixed, Measure, MeasureError, RunObserver};
use crate::record::fill;
use crate::results::{Results, StudyError, StudyObserver, StudyOutcome};
use crate::run_spec::{remaining, run_spec};
use crate::spread::{ClientHosts, HostShare};
use crate::{DatasetPolicy, StudySpec};

pub(crate) fn key(s: &Series, threads: u32) -> RunKey {
    RunKey {
        repetition: s.repetition,
        variant: s.variant as u32,
        workload: s.workload as u32,
        threads,
    }
}

/// A loaded datadir is reused by every series of the same engine, binary and workload.
pub(crate) type TemplateKey = (Engine, Option<PathBuf>, usize);

pub(crate) struct SeriesCtx<'a> {
    pub(crate) spec: &'a StudySpec,
    pub(crate) series: &'a Series,
    pub(crate) hash: &'a str,
    pub(crate) host: &'a Host,
    pub(crate) store: &'a mut dyn Results,
    pub(crate) out: &'a mut StudyOutcome,
    pub(crate) obs: &'a mut dyn StudyObserver,
    pub(crate) interrupt: &'a AtomicBool,
    /// (study start, runs done in this invocation, runs finished before it, all runs)
    pub(crate) progress: (Instant, &'a mut usize, usize, usize),
    /// `dataset.policy = "copy"`: one loaded datadir per (binary, workload).
    pub(crate) templates: &'a mut HashMap<TemplateKey, Template>,
    /// Where this series' load runs; this thread is pinned there (see `place_client`).
    pub(crate) client: ClientPlacement,
    /// The study's server host, when not this machine.
    pub(crate) server_host: Option<HostUrl>,
    /// The client hosts the load is spread over; None: it runs in this process.
    pub(crate) clients: Option<&'a mut ClientHosts>,
}

impl SeriesCtx<'_> {
    fn variant_name(&self) -> String {
        self.spec.variant_name(self.series.variant)
    }

    fn workload_label(&self) -> String {
        self.spec.workloads[self.series.workload].label.clone()
    }

    /// Store `status` with `reason` for every run in `threads` (a series that could not run).
    pub(crate) fn record_all(
        &mut self,
        threads: &[u32],
        status: &str,
        reason: &str,
        manifest: &str,
    ) -> Result<(), StudyError> {
        for &t in threads {
            let r = RunRecord {
                status: status.into(),
                reason: Some(reason.into()),
                ..self.record_of(t, manifest)
            };
            self.store.record(&r)?;
            self.count(&r);
            self.obs.on_run_done(&r);
        }
        Ok(())
    }

    /// An empty record of this series' run at `threads`, to fill in.
    fn record_of(&self, threads: u32, manifest: &str) -> RunRecord {
        RunRecord {
            key: Some(key(self.series, threads)),
            variant_name: self.variant_name(),
            workload_label: self.workload_label(),
            manifest_json: manifest.into(),
            summary_json: "{}".into(),
            ..Default::default()
        }
    }

    /// Ctrl-C has come: the series stops unrecorded (a resume runs it), and the study says
    /// it was interrupted. Loading the tables stops early then, which is not a failure.
    fn interrupted_now(&mut self) -> bool {
        let now = self.interrupt.load(Ordering::Relaxed);
        self.out.interrupted |= now;
        now
    }

    fn count(&mut self, r: &RunRecord) {
        self.out.count(r);
        *self.progress.1 += 1;
    }

    pub(crate) fn run(&mut self, todo: &[u32]) -> Result<(), StudyError> {
        let given = self.spec.variant(self.series.variant).given.clone();
        let ready = match &given {
            Some(g) => self.set_up_given(g, todo)?.map(|(servers, info)| {
                let manifest = self.manifest(&servers, Some(&info));
                (servers, manifest)
            }),
            None => self.set_up_started(todo)?,
        };
        let Some((mut servers, manifest)) = ready else {
            return Ok(());
        };
        let measured = self.measure_all(&mut servers, &manifest, todo);
        if let Some(g) = &given {
            self.clean_up_given(g, &servers);
        }
        measured
    }

    /// The variant's servers started, checked and loaded, with the series' manifest; None
    /// when nothing can be measured (recorded, or left for a resume on Ctrl-C).
    pub(crate) fn set_up_started(
        &mut self,
        todo: &[u32],
    ) -> Result<Option<(Servers, String)>, StudyError> {
        let v = &self.spec.variant(self.series.variant);
        let copy = self.spec.dataset_policy == DatasetPolicy::Copy;
        let datadir_from = if copy {
            match self.template(v.engine, v.binary.clone()) {
                Ok(dir) => Some(dir),
                Err(_) if self.interrupted_now() => return Ok(None),
                Err(e) => {
                    let reason = format!("preparing the datadir to copy failed: {e}");
                    self.record_all(todo, "failed", &reason, "{}")?;
                    return Ok(None);
                }
            }
        } else {
            None
        };
        let v = &self.spec.variant(self.series.variant);
        let specs: Vec<ServerSpec> = v
            .instances
            .iter()
            .map(|inst| ServerSpec {
                engine: Some(v.engine),
                binary: v.binary.clone(),
                variant: inst.with_settings_before(&v.engine_settings),
                datadir_from: datadir_from.clone(),
                start_timeout: self.start_timeout(),
                ..ServerSpec::default()
            })
            .collect();
        let plan = ServerPlan::Launch {
            host: self.server_host.as_ref(),
            specs,
        };
        let setup = SetUp {
            servers: &plan,
            tables: self.tables(),
            load: !copy,
            check: None,
            prewarm: self.spec.prewarm,
            connections: None,
        };
        let mut tell = LoadTell(self.obs.loading());
        match set_up(&setup, self.clients.as_deref(), &mut tell) {
            Ok(Ready { servers, stop }) => {
                let manifest = self.manifest(&servers, None);
                match stop {
                    None => Ok(Some((servers, manifest))),
                    Some(stop) => {
                        self.stopped(&servers, stop, todo, &manifest)?;
                        Ok(None)
                    }
                }
            }
            Err(e) => {
                let reason = format!("the variant did not start: {}", start_error(e));
                let name = self.variant_name();
                self.obs.on_note(&format!("{name}: {reason}"));
                self.record_all(todo, "failed", &reason, "{}")?;
                Ok(None)
            }
        }
    }

    /// Warm up, then measure and store each thread count in turn.
    fn measure_all(
        &mut self,
        servers: &mut Servers,
        manifest: &str,
        todo: &[u32],
    ) -> Result<(), StudyError> {
        let endpoints = servers.endpoints();
        if !self.spec.warmup.is_zero() {
            // Unmeasured: warm the buffer pool and the server's caches at the first thread count.
            let threads = self.spec.threads[0];
            let warm = self.run_spec(threads, self.spec.warmup);
            let m = Measure {
                servers,
                session: self.session(&endpoints, threads),
                run: &warm,
                sampled_client_threads: warm.client_threads,
                interrupt: self.interrupt,
            };
            let _ = measure(m, self.clients.as_deref_mut(), &mut Quiet);
        }
        for (i, &threads) in todo.iter().enumerate() {
            if self.interrupt.load(Ordering::Relaxed) {
                self.out.interrupted = true;
                return Ok(());
            }
            let record = self.measure(servers, &endpoints, threads, manifest);
            self.store.record(&record)?;
            self.count(&record);
            self.obs.on_run_done(&record);
            if record.status == "interrupted" {
                return Ok(());
            }
            if let Some(dead) = servers.ended().map(Death::said) {
                let rest = &todo[i + 1..];
                let first = dead.lines().next().unwrap_or("").to_string();
                return self.record_all(
                    rest,
                    "failed",
                    &format!("the server exited earlier in this series ({first})"),
                    manifest,
                );
            }
        }
        Ok(())
    }

    /// The loaded datadir every server of this workload (and binary) starts from: made once, by
    /// a plain server of that binary that loads the tables and stops cleanly.
    fn template(&mut self, engine: Engine, binary: Option<PathBuf>) -> Result<PathBuf, String> {
        let key = (engine, binary.clone(), self.series.workload);
        if let Some(t) = self.templates.get(&key) {
            return Ok(t.datadir());
        }
        let note = format!(
            "loading the tables once for '{}'; every series gets a copy",
            self.workload_label()
        );
        self.obs.on_note(&note);
        let server = Server::start(&ServerSpec {
            engine: Some(engine),
            binary,
            start_timeout: self.start_timeout(),
            ..ServerSpec::default()
        })
        .map_err(|e| e.to_string())?;
        self.load_template(&[server.connect_options()])?;
        let t = server.stop_into_template().map_err(|e| e.to_string())?;
        let dir = t.datadir();
        self.templates.insert(key, t);
        Ok(dir)
    }

    /// The study's server start timeout, else the lab's default.
    fn start_timeout(&self) -> Duration {
        self.spec
            .server_start_timeout
            .map_or(bakeoff_server::DEFAULT_START_TIMEOUT, Duration::from_secs)
    }

    /// The tables, loaded for the series' largest thread count.
    pub(crate) fn tables(&self) -> Load<'_> {
        Load {
            workload: &self.spec.workloads[self.series.workload].spec,
            threads: self.spec.threads.iter().copied().max().unwrap_or(1),
            loaders: dataset::default_connections(),
            seed: self.spec.seed,
            interrupt: self.interrupt,
            shared: false,
        }
    }

    /// Record why the series' servers, up, measure nothing: the variant did not take effect
    /// (invalid), or loading failed (failed); Ctrl-C records nothing (a resume runs it).
    pub(crate) fn stopped(
        &mut self,
        servers: &Servers,
        stop: Stop,
        todo: &[u32],
        manifest: &str,
    ) -> Result<(), StudyError> {
        match stop {
            Stop::NotInEffect(_) => {
                let first = servers.started().iter().find_map(Running::variant_problems);
                let problems = first.unwrap_or_default();
                let reason = format!("the variant did not take effect: {problems}");
                self.record_all(todo, "invalid", &reason, manifest)
            }
            _ if self.interrupted_now() => Ok(()),
            Stop::InterruptedLoading { .. } => Ok(()),
            Stop::Failed(e) => {
                let reason = format!("loading the tables failed: {e}");
                self.record_all(todo, "failed", &reason, manifest)
            }
        }
    }

    /// A datadir to copy: loaded once by a plain server (see `template`).
    fn load_template(&self, endpoints: &[ConnectOptions]) -> Result<(), String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let tell = LoadTell(self.obs.loading());
        load_tables(&rt, endpoints, &self.tables(), &|p| tell.on_load(p))
            .map(drop)
            .map_err(|e| e.to_string())
    }

    pub(crate) fn session(
        &self,
        endpoints: &[ConnectOptions],
        threads: u32,
    ) -> Arc<SessionContext> {
        Arc::new(SessionContext::new(
            endpoints.to_vec(),
            self.spec
                .workload_spec(self.series.variant, self.series.workload),
            threads,
            Unique::new(self.spec.seed),
            self.spec.seed,
        ))
    }

    fn run_spec(&self, threads: u32, time: Duration) -> RunSpec {
        run_spec(self.spec, &self.client, self.series, threads, time)
    }

    fn measure(
        &mut self,
        servers: &mut Servers,
        endpoints: &[ConnectOptions],
        threads: u32,
        manifest: &str,
    ) -> RunRecord {
        let (started, done, before, total) = (
            self.progress.0,
            *self.progress.1,
            self.progress.2,
            self.progress.3,
        );
        let left = remaining(self.spec, started, done, total - before);
        let what = format!(
            "{} | {} | {threads} threads",
            self.variant_name(),
            self.workload_label()
        );
        self.obs.on_run_start(before + done, total, &what, left);
        let run_spec = self.run_spec(threads, self.spec.duration);
        let session = self.session(endpoints, threads);
        if let Some((iterations, per_conn)) = self.spec.workloads[self.series.workload].fixed {
            let work = (iterations, per_conn);
            return self.measure_fixed(session, servers, run_spec, work, threads, manifest);
        }
        let mut fwd = Forward {
            obs: &mut *self.obs,
        };
        let m = Measure {
            servers,
            session,
            run: &run_spec,
            sampled_client_threads: self.client.cpu_count().min(threads),
            interrupt: self.interrupt,
        };
        let result = measure(m, self.clients.as_deref_mut(), &mut fwd);
        let mut r = self.record_of(threads, manifest);
        match result {
            Ok(measured) => {
                fill(&mut r, &measured.result);
                let spec = self
                    .spec
                    .workload_spec(self.series.variant, self.series.workload);
                crate::tpcc::judge(&mut r, &measured.result.total, &spec, endpoints);
                self.note_client_hosts(&mut r, &measured.hosts);
            }
            // Ctrl-C while the client hosts connected: not a failure, and run again on resume.
            Err(MeasureError::InterruptedBeforeStart) => r.status = "interrupted".into(),
            Err(e) => {
                r.status = "failed".into();
                r.reason = Some(e.to_string());
            }
        }
        if let Some(death) = servers.ended().map(Death::said) {
            r.status = "failed".into();
            r.reason = Some(death);
        }
        r
    }

    /// Each client host's share goes into the run's summary; a host that was client-bound is
    /// named, since its figures may measure that host rather than the server.
    fn note_client_hosts(&mut self, r: &mut RunRecord, shares: &[HostShare]) {
        if shares.is_empty() {
            return;
        }
        if let Ok(mut summary) = serde_json::from_str::<serde_json::Value>(&r.summary_json) {
            summary["client_hosts"] = serde_json::json!(shares);
            r.summary_json = summary.to_string();
        }
        for h in shares.iter().filter(|h| h.client_bound) {
            self.obs.on_note(&format!(
                "client host {} was client-bound ({:.0}% of its CPUs): {} threads may measure that host, not the server",
                h.host,
                h.client_cpu_share * 100.0,
                r.key.as_ref().map_or(0, |k| k.threads)
            ));
        }
    }

    /// mysqlslap's way: every connection runs its events, `iterations` times (here, or
    /// each client host its block of connections); the run's seconds are the average
    /// iteration's, its tps the events over all iterations' time.
    fn measure_fixed(
        &mut self,
        session: Arc<SessionContext>,
        servers: &Servers,
        mut run_spec: RunSpec,
        (iterations, per_conn): (u32, u64),
        threads: u32,
        manifest: &str,
    ) -> RunRecord {
        run_spec.time = None;
        run_spec.events_per_connection = Some(per_conn);
        let mut r = self.record_of(threads, manifest);
        let m = Measure {
            servers,
            session,
            run: &run_spec,
            sampled_client_threads: run_spec.client_threads,
            interrupt: self.interrupt,
        };
        let (done, shares) =
            match measure_fixed(m, iterations, self.clients.as_deref_mut(), &mut Quiet) {
                Ok(w) => (Ok(w.work), w.hosts),
                Err(e) => (Err(e), Vec::new()),
            };
        match done {
            Ok(fw) => {
                let total_s: f64 = fw
                    .iterations
                    .iter()
                    .map(|i| i.seconds)
                    .sum::<f64>()
                    .max(f64::MIN_POSITIVE);
                let events: u64 = fw.iterations.iter().map(|i| i.events).sum();
                r.status = match &fw.status {
                    RunStatus::Completed => "ok".into(),
                    RunStatus::Interrupted => "interrupted".into(),
                    RunStatus::Failed(why) => {
                        r.reason = Some(why.clone());
                        "failed".into()
                    }
                };
                r.seconds = fw.avg_seconds();
                r.events = events;
                r.tps = events as f64 / total_s;
                r.qps = fw.iterations.iter().map(|i| i.statements).sum::<u64>() as f64 / total_s;
                r.errors = fw.iterations.iter().map(|i| i.errors).sum();
                r.summary_json = serde_json::to_string(&serde_json::json!({
                    "fixed_work": fw, "min_seconds": fw.min_seconds(), "avg_seconds": fw.avg_seconds(),
                    "max_seconds": fw.max_seconds(), "stddev_seconds": fw.stddev_seconds(),
                }))
                .unwrap_or_else(|_| "{}".into());
            }
            Err(MeasureError::InterruptedBeforeStart) => r.status = "interrupted".into(),
            Err(e) => {
                r.status = "failed".into();
                r.reason = Some(e.to_string());
            }
        }
        self.note_client_hosts(&mut r, &shares);
        r
    }

    pub(crate) fn manifest(&self, servers: &Servers, given: Option<&GivenInfo>) -> String {
        let started = servers.started();
        let first = started.first();
        let server_version = first
            .map(Running::version)
            .or_else(|| given.and_then(|g| g.version.clone()));
        let engine = self.spec.variant(self.series.variant).engine;
        let m = Manifest {
            engine: engine.by_version(server_version.as_deref().unwrap_or("")),
            client: &self.client,
            client_hosts: self
                .clients
                .as_deref()
                .map(ClientHosts::names)
                .unwrap_or_default(),
            bakeoff_version: env!("CARGO_PKG_VERSION"),
            study_hash: self.hash,
            seed: self.spec.seed,
            host: self.host,
            server_host: first.and_then(Running::host),
            server_machine: first.and_then(Running::machine),
            server_binary: first.map(Running::binary),
            server_binary_sha256: first.and_then(Running::binary_sha256),
            server_version,
            checks: started
                .iter()
                .flat_map(|s| s.checks().iter().cloned())
                .collect(),
            server_variables: servers
                .endpoints()
                .first()
                .map(global_variables)
                .unwrap_or_default(),
            given: given.cloned(),
            lab_defaults: match started.is_empty() {
                true => Vec::new(),
                false => engine
                    .lab_defaults()
                    .iter()
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect(),
            },
        };
        serde_json::to_string(&m).unwrap_or_else(|_| "{}".into())
    }
}

struct Forward<'o> {
    obs: &'o mut dyn StudyObserver,
}

impl RunObserver for Forward<'_> {}

impl Observer for Forward<'_> {
    fn on_tick(&mut self, t: &Tick) {
        self.obs.on_tick(t.window.tps);
        self.obs.on_window(&t.window, t.telemetry.as_ref());
    }
}

/// A start's error as a series records it: the server's own words, without the context
/// `bakeoff run` puts before them.
fn start_error(e: CellError) -> String {
    match e {
        CellError::StartHere { source, .. } => StartError::Server(source).to_string(),
        other => other.to_string(),
    }
}
