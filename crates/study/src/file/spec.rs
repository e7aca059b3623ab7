//! What a study file says, validated: the [`StudySpec`] the runner reads, nothing left to parse.

use std::path::PathBuf;
use std::time::Duration;

use bakeoff_engine::ClientWait;
use bakeoff_hostbench::profile::HostProbe;
use bakeoff_server::variant::{CpuList, Setting};
use bakeoff_server::Engine;
use bakeoff_server::Variant;
use bakeoff_workload::{WorkloadKind, WorkloadSpec};

/// Most cells a study may declare: beyond this it is almost surely a mistake (an axis with a
/// range typed out by accident), and it would run for days.
pub const MAX_CELLS: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Within each repetition, series of different variants alternate (A B C A B C ...).
    Interleaved,
    /// Each repetition's series in a random order (seeded, so reproducible).
    Randomized,
    /// Each variant's series back to back (only when the machine is known to be quiet).
    Sequential,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetPolicy {
    /// Load the tables again before every series.
    Rebuild,
    /// Load once, then give every series a copy of the prepared datadir.
    Copy,
}

/// `repetitions = "auto"`: Stein's two-stage design. A pilot of `pilot` blocks runs first; its
/// spread fixes how many blocks make every comparison's family-adjusted interval within
/// `precision` (a fraction: 0.05 is +-5%), at most `max_repetitions`; the study runs that many
/// and stops (the report's intervals use the pilot's spread, so their coverage holds).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Auto {
    pub precision: f64,
    pub max_repetitions: u32,
    pub pilot: u32,
}

/// The pilot's blocks: enough that its spread (4 degrees of freedom) is not a lottery, few
/// enough that a quiet machine's study ends with the pilot.
pub const MIN_AUTO: u32 = 5;

/// The equivalence margin of a study that names none. An auto study's precision defaults to
/// half of it, so that a comparison with nothing there ends inside the margin ("equivalent")
/// instead of straddling it ("undecided").
pub const DEFAULT_MARGIN: f64 = 0.05;
pub const DEFAULT_MAX_REPETITIONS: u32 = 20;

/// A server setup of the study: one per instance (usually one), or a server the user runs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NamedVariant {
    pub name: String,
    /// The database engine its servers run (a given server's: its URL's).
    pub engine: Engine,
    /// What its engine's section (`[postgresql] settings`) sets, before the variant's own:
    /// kept apart from `instances`, so that the report's axes are the variants' differences.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub engine_settings: Vec<Setting>,
    pub binary: Option<PathBuf>,
    pub instances: Vec<Variant>,
    /// Where the load runs for this variant, over the study's `client_cpus`.
    pub client_cpus: Option<CpuList>,
    /// `server = "mysql://..."`: a server the user runs; `binary` and `instances` do not apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub given: Option<GivenServer>,
    /// `price_per_hour`: what this variant's machine costs (a managed database's instance
    /// type), for its cost per transaction; over the `[prices]` of the study's platform.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_per_hour: Option<f64>,
    /// `procedures = true|false`: how this variant's load runs TPC-C (the server's stored
    /// procedures, or client-side statements), over the workload's own `procedures`. A client
    /// setting like `client_cpus`, kept on the variant so that a study can compare the two
    /// ways on one server, with verdicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub procedures: Option<bool>,
}

impl NamedVariant {
    /// A variant of servers bakeoff starts, with nothing set but what is given.
    pub fn started(name: &str, binary: Option<PathBuf>, instances: Vec<Variant>) -> Self {
        NamedVariant {
            name: name.to_string(),
            engine: Engine::default(),
            engine_settings: Vec::new(),
            binary,
            instances,
            client_cpus: None,
            given: None,
            price_per_hour: None,
            procedures: None,
        }
    }
}

/// A server the user runs, named by URL. bakeoff never starts, stops or reconfigures it; it
/// loads its own tables there (refusing tables it did not create), runs, and drops them.
/// Where its password comes from is stored; the password never is.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GivenServer {
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_command: Option<String>,
    /// `existing_tables = "use"`: run on the sbtest tables already there (the user's),
    /// loading and dropping nothing; the default, "refuse", loads bakeoff's own and fails on
    /// tables it did not create.
    pub use_existing_tables: bool,
    /// `ssh = "ssh://..."`: the server's machine, where its process is found by its port and
    /// its CPU read; None: its CPU is unknown (unless it is on this machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<String>,
}

impl GivenServer {
    /// The engine its URL speaks to (a URL that does not parse was refused with the file).
    pub fn engine(&self) -> Engine {
        match bakeoff_driver::ServerUrl::parse(&self.url).map(|u| u.protocol) {
            Ok(bakeoff_driver::Protocol::Postgres) => Engine::PostgreSql,
            _ => Engine::MariaDb,
        }
    }

    /// How to connect, the password found now or the command kept to run at every connect
    /// (MySQL: `MYSQL_PWD` or the option file; PostgreSQL: libpq's service, `PGPASSWORD` or
    /// password file); the database is `sbtest` when the URL names none.
    pub fn connect_options(&self) -> Result<bakeoff_driver::ConnectOptions, String> {
        let found = bakeoff_driver::PasswordSource {
            defaults_file: self.defaults_file.clone(),
            defaults_group: self.defaults_group.clone(),
            password_command: self.password_command.clone(),
        }
        .find()?;
        Ok(bakeoff_driver::ServerUrl::parse(&self.url)?.connect_options(found))
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Workload {
    pub label: String,
    #[serde(skip)]
    pub spec: WorkloadSpec,
    /// mysqlslap-style fixed work instead of a timed run: (iterations, events per
    /// connection); the thread counts are then the concurrency levels.
    pub fixed: Option<(u32, u64)>,
    /// What a study does not call of a user's script (a Lua script's `init()`, `done()`,
    /// report hooks), found when the file was read: said before the study runs.
    #[serde(skip)]
    pub uncalled: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Price {
    pub platform: String,
    pub on_demand_per_hour: f64,
    pub reserved_per_hour: Option<f64>,
}

/// A study, validated: everything the runner needs, nothing left to parse.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StudySpec {
    pub name: String,
    pub description: Option<String>,
    pub seed: u64,
    /// Blocks (each variant's series once, in an order shuffled per block); with `auto`, the
    /// blocks run before the first judgement of precision.
    pub repetitions: u32,
    /// `repetitions = "auto"`: blocks until every comparison is as precise as asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto: Option<Auto>,
    /// The equivalence margin (a fraction, symmetric on the log scale): a comparison whose
    /// adjusted 90% interval lies within +-this is equivalent. Default: the precision (5%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<f64>,
    /// Each block runs the first variant a second time (stored as variant index
    /// `variants.len()`, or as `noise_twin`): the A/A check of the set-up.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub noise_check: bool,
    /// A listed variant the same as the first in everything but its name (an A/A/B's
    /// `a-again`): with the noise check on, its runs are the check's, and no second run of
    /// the first is added. Another server of the same set-up tells nothing a declared one
    /// does not, and costs every block a turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_twin: Option<usize>,
    /// Comparisons are paired within blocks (any order but sequential); results written
    /// before blocks existed lack it and keep their unpaired intervals.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paired: bool,
    pub duration: Duration,
    /// Unmeasured load before the first run of each series (one server at a time) or of each
    /// block (by turns), at the first thread count: a fresh server's caches are cold.
    pub warmup: Duration,
    /// `[dataset] prewarm = true`: every table read into the buffer pool after each server
    /// is loaded (or started from a copy), as `bakeoff prewarm` does, before any warmup.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prewarm: bool,
    pub order: Order,
    pub threads: Vec<u32>,
    pub tables: u32,
    pub table_size: u32,
    pub dataset_policy: DatasetPolicy,
    pub workloads: Vec<Workload>,
    pub variants: Vec<NamedVariant>,
    /// The variants are `[[variant]]` entries (compared with the first listed), not the
    /// combinations of `[axes]` (compared along the first axis).
    pub listed: bool,
    pub prices: Vec<Price>,
    /// Which price-table entry this machine is.
    pub platform: Option<String>,
    /// Host probes run once before the first series (the machine's profile).
    pub probes: Vec<HostProbe>,
    pub probe_threads: Vec<u32>,
    pub probe_seconds: Duration,
    /// Where the load (and the host probes) run; None: outside the servers' CPUs when they
    /// are pinned and any are left, else anywhere.
    pub client_cpus: Option<CpuList>,
    /// How the load waits for responses; None: poll when the client's CPUs are none of the
    /// servers', else sleep (`ClientWait::auto`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_wait: Option<ClientWait>,
    /// `[hosts] server`: the machine the server variants run on (ssh://...), None: this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_host: Option<String>,
    /// `[hosts] clients`: the machines the load is spread over ("local" among them is this
    /// one); empty: the load runs here, in this process.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub client_hosts: Vec<String>,
    /// `server_start_timeout`: seconds a launched server may take to answer an authenticated
    /// `SELECT 1`, here or on the server host (None: the lab's default, 60 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_start_timeout: Option<u64>,
    /// `[alternation]`: how a block's servers take turns, where they can.
    pub alternation: super::alternation::Alternation,
}

impl std::fmt::Display for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Order::Interleaved => "interleaved",
            Order::Randomized => "randomized",
            Order::Sequential => "sequential",
        })
    }
}

impl std::fmt::Display for DatasetPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DatasetPolicy::Rebuild => "rebuilt for every series",
            DatasetPolicy::Copy => "loaded once, copied for every series",
        })
    }
}

impl StudySpec {
    /// The variant a series runs: listed ones by index; one past the last is the noise
    /// check's second run of the first.
    pub fn variant(&self, index: usize) -> &NamedVariant {
        self.variants.get(index).unwrap_or(&self.variants[0])
    }

    /// What series of variant `variant` and workload `workload` run: the workload, with what
    /// the variant sets for the load (`procedures`, on TPC-C only).
    pub fn workload_spec(&self, variant: usize, workload: usize) -> WorkloadSpec {
        let mut w = self.workloads[workload].spec.clone();
        if let (WorkloadKind::Tpcc, Some(p)) = (w.kind, self.variant(variant).procedures) {
            w.tpcc.procedures = p;
        }
        w
    }

    /// The name a series' runs are stored under ("<first> (A/A)" for the noise check's).
    pub fn variant_name(&self, index: usize) -> String {
        match self.variants.get(index) {
            Some(v) => v.name.clone(),
            None => format!("{} (A/A)", self.variants[0].name),
        }
    }

    /// The CPUs a series of variant `v` asks for its load (the variant's `client_cpus`, else
    /// the study's) and each of its servers' CPUs: where the runner places the client, and
    /// what `study check` judges apart or not.
    pub fn client_request<'s>(
        &'s self,
        v: &'s NamedVariant,
    ) -> (Option<&'s CpuList>, Vec<Option<&'s CpuList>>) {
        let given = v.client_cpus.as_ref().or(self.client_cpus.as_ref());
        (given, v.instances.iter().map(|i| i.cpus.as_ref()).collect())
    }

    /// A study resumed keeps the block it began with: one stored by a build before listed
    /// twins (its spec without `noise_twin`) goes on adding the check's own twin, so its
    /// blocks stay alike and the report finds the twin where the stored spec says.
    pub fn keep_layout_of(&mut self, stored_json: &str) {
        let stored: serde_json::Value = serde_json::from_str(stored_json).unwrap_or_default();
        if stored["noise_check"] == true && !stored["noise_twin"].is_u64() {
            self.noise_twin = None;
        }
    }

    /// The variants a block runs: every one, and the noise check's twin of the first unless
    /// a listed variant is that twin.
    pub fn block_variants(&self) -> usize {
        self.variants.len() + usize::from(self.noise_check && self.noise_twin.is_none())
    }

    pub fn cells(&self) -> usize {
        self.variants.len() * self.workloads.len() * self.threads.len()
    }

    /// This machine's platform label and on-demand price per hour, when the study has both.
    pub fn own_price(&self) -> Option<(&str, f64)> {
        let label = self.platform.as_deref()?;
        let price = self.prices.iter().find(|p| p.platform == label)?;
        Some((label, price.on_demand_per_hour))
    }
}
