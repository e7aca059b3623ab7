//! The study file (TOML) -> a validated [`StudySpec`], or every problem in the file at once.

use std::path::PathBuf;
use std::time::Duration;

use bakeoff_engine::ClientWait;
use bakeoff_hostbench::profile::HostProbe;
use bakeoff_server::variant::{instance_variants, Allocator, CpuList, Setting};
use bakeoff_server::Variant;
use bakeoff_workload::{Distribution, OltpOptions, PsMode, RandType, WorkloadKind, WorkloadSpec};
use toml::de::{DeTable, DeValue};

use crate::reader::{int_value, kind, str_value, Problem, Problems, Table, Value};

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

/// A server setup of the study: one per instance (usually one).
#[derive(Debug, Clone, serde::Serialize)]
pub struct NamedVariant {
    pub name: String,
    pub binary: Option<PathBuf>,
    pub instances: Vec<Variant>,
    /// Where the load runs for this variant, over the study's `client_cpus`.
    pub client_cpus: Option<CpuList>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Workload {
    pub label: String,
    #[serde(skip)]
    pub spec: WorkloadSpec,
    /// mysqlslap-style fixed work instead of a timed run: (iterations, events per
    /// connection); the thread counts are then the concurrency levels.
    pub fixed: Option<(u32, u64)>,
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
    pub repetitions: u32,
    pub duration: Duration,
    /// Load before the first run of each series (a fresh server's caches are cold).
    pub warmup: Duration,
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

/// Parse and validate `src`; `default_name` names the study when the file does not.
pub fn parse(src: &str, default_name: &str) -> Result<StudySpec, Vec<Problem>> {
    let mut p = Problems::new(src);
    let (doc, syntax) = DeTable::parse_recoverable(src);
    for e in syntax {
        p.at(e.span().unwrap_or(0..0), e.message().to_string());
    }
    if !p.list.is_empty() {
        // Values after a syntax error are guesses: report the syntax first.
        return Err(p.list);
    }
    let spec = read(&mut p, doc.get_ref(), doc.span(), default_name);
    match spec {
        Some(s) if p.list.is_empty() => Ok(s),
        _ => {
            p.list.sort_by_key(|x| (x.line, x.column));
            Err(p.list)
        }
    }
}

fn read(
    p: &mut Problems,
    doc: &DeTable,
    span: std::ops::Range<usize>,
    default_name: &str,
) -> Option<StudySpec> {
    let mut top = Table::new(doc, span, "");
    let name = top
        .string(p, "name")
        .map_or(default_name.to_string(), |(s, _)| s.to_string());
    let description = top.string(p, "description").map(|(s, _)| s.to_string());
    let seed = top.int(p, "seed", 0..i64::MAX).unwrap_or(1) as u64;
    let repetitions = top.int(p, "repetitions", 1..101).unwrap_or(1) as u32;
    let duration = top.int(p, "duration", 1..86_401).unwrap_or(30) as u64;
    let warmup = top.int(p, "warmup", 0..3_601).unwrap_or(0) as u64;
    let order = match top.string(p, "order") {
        None => Some(Order::Interleaved),
        Some((s, span)) => one_of(
            p,
            span,
            "order",
            s,
            &[
                ("interleaved", Order::Interleaved),
                ("randomized", Order::Randomized),
                ("sequential", Order::Sequential),
            ],
        ),
    };
    top.require(
        p,
        "threads",
        "the client thread counts to sweep, e.g. threads = [1, 4, 16, 64]",
    );
    let threads: Vec<u32> = top
        .list(p, "threads")
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| int_value(p, v, "`threads`", 1..100_001).map(|n| n as u32))
        .collect();
    let (tables, table_size, policy) = dataset(p, &mut top);
    let (server_host, client_hosts) = hosts(p, &mut top, policy);
    top.require(
        p,
        "workload",
        "at least one [[workload]] with a name, e.g. name = \"oltp_point_select\"",
    );
    let workloads: Vec<Workload> = top
        .tables(p, "workload")
        .into_iter()
        .filter_map(|t| workload(p, t, tables, table_size))
        .collect();
    let axes = top.tables(p, "axes");
    let listed = top.tables(p, "variant");
    let is_listed = !listed.is_empty();
    let variants = match (axes.into_iter().next(), listed.is_empty()) {
        (Some(a), true) => axes_variants(p, a),
        (None, false) => listed
            .into_iter()
            .filter_map(|t| listed_variant(p, t))
            .collect(),
        (None, true) => vec![NamedVariant {
            name: "default".into(),
            binary: None,
            instances: vec![Variant::default()],
            client_cpus: None,
        }],
        (Some(_), false) => {
            p.at(a_span(doc, "axes"), "use either [axes] (every combination) or [[variant]] entries (an explicit list), not both");
            Vec::new()
        }
    };
    let prices = top
        .tables(p, "prices")
        .into_iter()
        .next()
        .map(|t| prices(p, t))
        .unwrap_or_default();
    let platform = top.string(p, "platform").map(|(s, _)| s.to_string());
    let client_cpus = top
        .string(p, "client_cpus")
        .and_then(|(s, span)| cpu_list(p, s, span, "client_cpus"));
    let client_wait = top.string(p, "client_wait").and_then(|(s, span)| {
        let waits = [
            ("auto", None),
            ("sleep", Some(ClientWait::Sleep)),
            ("poll", Some(ClientWait::Poll)),
        ];
        one_of(p, span, "client_wait", s, &waits).flatten()
    });
    let probes: Vec<HostProbe> = top
        .list(p, "probes")
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| {
            let name = str_value(p, v, "`probes`")?;
            let probe = HostProbe::parse(name);
            if probe.is_none() {
                p.at(
                    v.span(),
                    format!("`probes`: '{name}' is not a host probe; use cpu, memory or fileio"),
                );
            }
            probe
        })
        .collect();
    let probe_threads: Vec<u32> = top
        .list(p, "probe_threads")
        .map(|l| {
            l.into_iter()
                .filter_map(|v| int_value(p, v, "`probe_threads`", 1..4097).map(|n| n as u32))
                .collect()
        })
        .unwrap_or_else(|| vec![1]);
    let probe_seconds = top.int(p, "probe_seconds", 1..601).unwrap_or(10) as u64;
    let server_start_timeout = top
        .int(p, "server_start_timeout", 1..86_401)
        .map(|n| n as u64);
    if let (Some(pl), false) = (&platform, prices.is_empty()) {
        if !prices.iter().any(|x| &x.platform == pl) {
            let (_, span) = Table::new(doc, 0..0, "").string(p, "platform")?;
            p.at(span, format!("platform `{pl}` has no entry in [prices]"));
        }
    }
    top.finish(p);
    let spec = StudySpec {
        name,
        description,
        seed,
        repetitions,
        duration: Duration::from_secs(duration),
        warmup: Duration::from_secs(warmup),
        order: order?,
        threads,
        tables,
        table_size,
        dataset_policy: policy,
        workloads,
        variants,
        listed: is_listed,
        prices,
        platform,
        probes,
        probe_threads,
        probe_seconds: Duration::from_secs(probe_seconds),
        client_cpus,
        client_wait,
        server_host,
        client_hosts,
        server_start_timeout,
    };
    if spec.cells() > MAX_CELLS {
        p.at(0..0, format!(
            "the matrix has {} cells ({} variants x {} workloads x {} thread counts), more than {MAX_CELLS}; shorten an axis or split the study",
            spec.cells(), spec.variants.len(), spec.workloads.len(), spec.threads.len()
        ));
    }
    Some(spec)
}

/// A CPU list as taskset takes it; the machine it runs on is checked by `study check`.
fn cpu_list(p: &mut Problems, s: &str, span: std::ops::Range<usize>, key: &str) -> Option<CpuList> {
    s.parse::<CpuList>()
        .map_err(|e| p.at(span, format!("`{key}`: {e}")))
        .ok()
}

fn a_span(doc: &DeTable, key: &str) -> std::ops::Range<usize> {
    doc.iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map_or(0..0, |(k, _)| k.span())
}

fn one_of<T: Copy>(
    p: &mut Problems,
    span: std::ops::Range<usize>,
    key: &str,
    v: &str,
    options: &[(&str, T)],
) -> Option<T> {
    let found = options.iter().find(|(n, _)| *n == v).map(|(_, t)| *t);
    if found.is_none() {
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        p.at(
            span,
            format!("`{key}` = \"{v}\": use one of {}", names.join(", ")),
        );
    }
    found
}

fn dataset(p: &mut Problems, top: &mut Table) -> (u32, u32, DatasetPolicy) {
    let Some(mut t) = top.tables(p, "dataset").into_iter().next() else {
        return (1, 10_000, DatasetPolicy::Rebuild);
    };
    let tables = t.int(p, "tables", 1..10_001).unwrap_or(1) as u32;
    let size = t.int(p, "table_size", 1..2_000_000_001).unwrap_or(10_000) as u32;
    let policy = match t.string(p, "policy") {
        None => DatasetPolicy::Rebuild,
        Some((s, span)) => one_of(
            p,
            span,
            "dataset.policy",
            s,
            &[
                ("rebuild", DatasetPolicy::Rebuild),
                ("copy", DatasetPolicy::Copy),
            ],
        )
        .unwrap_or(DatasetPolicy::Rebuild),
    };
    t.finish(p);
    (tables, size, policy)
}

/// `[hosts]`: where the servers run (`server`, default this machine) and where the load runs
/// (`clients`, default this machine): (server host, client hosts), the latter empty when the
/// load stays here.
fn hosts(
    p: &mut Problems,
    top: &mut Table,
    policy: DatasetPolicy,
) -> (Option<String>, Vec<String>) {
    use bakeoff_remote::HostUrl;
    let Some(mut t) = top.tables(p, "hosts").into_iter().next() else {
        return (None, Vec::new());
    };
    let server = t
        .string(p, "server")
        .and_then(|(s, span)| match HostUrl::parse(s) {
            Ok(HostUrl::Local) => None,
            Ok(_) if policy == DatasetPolicy::Copy => {
                p.at(span, "`hosts.server` on another machine needs `dataset.policy = \"rebuild\"`: the copied datadirs of \"copy\" are kept on this machine");
                None
            }
            Ok(_) => Some(s.to_string()),
            Err(e) => {
                p.at(span, format!("`hosts.server`: {e}"));
                None
            }
        });
    let mut clients = Vec::new();
    let mut remote = false;
    for v in t.list(p, "clients").unwrap_or_default() {
        let Some(c) = str_value(p, v, "`hosts.clients`") else {
            continue;
        };
        match HostUrl::parse(c) {
            Ok(u) if clients.contains(&u.to_string()) => p.at(
                v.span(),
                format!("`hosts.clients`: '{c}' is listed twice; list each client host once"),
            ),
            Ok(u) => {
                remote |= u != HostUrl::Local;
                clients.push(u.to_string());
            }
            Err(e) => p.at(v.span(), format!("`hosts.clients`: {e}")),
        }
    }
    t.finish(p);
    // Only this machine: the load runs in this process, as without `clients`.
    (server, if remote { clients } else { Vec::new() })
}

/// OLTP options a workload entry may set, by sysbench's 1.0 names.
const COUNTS: [&str; 9] = [
    "point_selects",
    "simple_ranges",
    "sum_ranges",
    "order_ranges",
    "distinct_ranges",
    "index_updates",
    "non_index_updates",
    "delete_inserts",
    "range_size",
];
const FLAGS: [&str; 5] = [
    "range_selects",
    "skip_trx",
    "auto_inc",
    "secondary",
    "create_secondary",
];

fn workload(p: &mut Problems, mut t: Table, tables: u32, table_size: u32) -> Option<Workload> {
    t.require(p, "name", "the sysbench workload, e.g. \"oltp_read_only\"");
    let kind = t
        .string(p, "name")
        .and_then(|(s, span)| match s.parse::<WorkloadKind>() {
            Ok(k) => Some(k),
            Err(e) => {
                p.at(span, e);
                None
            }
        });
    let label = t.string(p, "label").map(|(s, _)| s.to_string());
    let iterations = t.int(p, "iterations", 1..10_001);
    let per_conn = t.int(p, "events_per_connection", 1..10_000_001);
    let fixed = match (iterations, per_conn) {
        (None, None) => None,
        (i, e) => Some((i.unwrap_or(1) as u32, e.unwrap_or(1) as u64)),
    };
    let mut o = OltpOptions {
        tables,
        table_size,
        ..OltpOptions::default()
    };
    for key in COUNTS {
        if let Some(n) = t.int(p, key, 0..1_000_001) {
            let n = n as u32;
            match key {
                "point_selects" => o.point_selects = n,
                "simple_ranges" => o.simple_ranges = n,
                "sum_ranges" => o.sum_ranges = n,
                "order_ranges" => o.order_ranges = n,
                "distinct_ranges" => o.distinct_ranges = n,
                "index_updates" => o.index_updates = n,
                "non_index_updates" => o.non_index_updates = n,
                "delete_inserts" => o.delete_inserts = n,
                _ => o.range_size = n,
            }
        }
    }
    for key in FLAGS {
        if let Some(b) = t.bool(p, key) {
            match key {
                "range_selects" => o.range_selects = b,
                "skip_trx" => o.skip_trx = b,
                "auto_inc" => o.auto_inc = b,
                "secondary" => o.secondary = b,
                _ => o.create_secondary = b,
            }
        }
    }
    if let Some((s, span)) = t.string(p, "ps_mode") {
        o.ps_mode = one_of(
            p,
            span,
            "ps_mode",
            s,
            &[("auto", PsMode::Auto), ("disable", PsMode::Disable)],
        )
        .unwrap_or(PsMode::Auto);
    }
    // The default is stated, not inherited: sysbench 1.0.20's special would surprise a study.
    let rand = match t.string(p, "rand_type") {
        None => Some(RandType::Uniform),
        Some((s, span)) => s
            .parse::<RandType>()
            .map_err(|e| p.at(span, format!("`rand_type`: {e}")))
            .ok(),
    };
    t.finish(p);
    let spec = WorkloadSpec {
        kind: kind?,
        options: o,
        distribution: Distribution::new(rand?),
    };
    Some(Workload {
        label: label.unwrap_or_else(|| spec.kind.to_string()),
        spec,
        fixed,
    })
}

/// The per-variant keys, as axes (lists) or as one variant's values.
struct VariantKeys<'t, 'i> {
    allocator: Option<Vec<&'t Value<'i>>>,
    cpus: Option<Vec<&'t Value<'i>>>,
    numa: Option<Vec<&'t Value<'i>>>,
    instances: Option<Vec<&'t Value<'i>>>,
    binary: Option<Vec<&'t Value<'i>>>,
    settings: Option<Vec<&'t Value<'i>>>,
}

fn keys<'t, 'i>(p: &mut Problems, t: &mut Table<'t, 'i>) -> VariantKeys<'t, 'i> {
    VariantKeys {
        allocator: t.list(p, "allocator"),
        cpus: t.list(p, "cpus"),
        numa: t.list(p, "numa"),
        instances: t.list(p, "instances"),
        binary: t.list(p, "binary"),
        settings: t.list(p, "settings"),
    }
}

/// An axis's values, or one "not set" when the axis is absent.
fn pick<'t, 'i>(o: &Option<Vec<&'t Value<'i>>>) -> Vec<Option<&'t Value<'i>>> {
    o.clone()
        .map(|v| v.into_iter().map(Some).collect())
        .unwrap_or_else(|| vec![None])
}

fn first<'t, 'i>(o: &Option<Vec<&'t Value<'i>>>) -> Option<&'t Value<'i>> {
    o.as_ref().and_then(|v| v.first().copied())
}

/// Every combination of the axes' values.
fn axes_variants(p: &mut Problems, mut t: Table) -> Vec<NamedVariant> {
    let k = keys(p, &mut t);
    t.finish(p);
    let (al, cp, nu, ins, bi, se): (Vec<Option<&Value>>, _, _, _, _, _) = (
        pick(&k.allocator),
        pick(&k.cpus),
        pick(&k.numa),
        pick(&k.instances),
        pick(&k.binary),
        pick(&k.settings),
    );
    let mut out = Vec::new();
    for a in &al {
        for c in &cp {
            for n in &nu {
                for i in &ins {
                    for b in &bi {
                        for s in &se {
                            if let Some(v) = one_variant(p, *a, *c, *n, *i, *b, *s, None) {
                                out.push(v);
                            }
                        }
                    }
                }
            }
        }
    }
    // Name variants by what differs between them.
    let varying: Vec<bool> = [
        &k.allocator,
        &k.cpus,
        &k.numa,
        &k.instances,
        &k.binary,
        &k.settings,
    ]
    .iter()
    .map(|o| o.as_ref().is_some_and(|v| v.len() > 1))
    .collect();
    let total = out.len();
    for v in &mut out {
        v.name = describe(v, &varying, total);
    }
    out
}

fn listed_variant(p: &mut Problems, mut t: Table) -> Option<NamedVariant> {
    let name = t.string(p, "name").map(|(s, _)| s.to_string());
    let client_cpus = t
        .string(p, "client_cpus")
        .map(|(s, span)| cpu_list(p, s, span, "variant.client_cpus"));
    let k = keys(p, &mut t);
    t.finish(p);
    let single = |o: &Option<Vec<&'_ Value<'_>>>, p: &mut Problems, key: &str| -> Result<(), ()> {
        match o {
            Some(v) if v.len() > 1 => {
                p.at(
                    v[0].span(),
                    format!("`variant.{key}` takes one value; lists belong in [axes]"),
                );
                Err(())
            }
            _ => Ok(()),
        }
    };
    let ok = [
        ("allocator", &k.allocator),
        ("cpus", &k.cpus),
        ("numa", &k.numa),
        ("instances", &k.instances),
        ("binary", &k.binary),
    ]
    .iter()
    .all(|(key, o)| single(o, p, key).is_ok());
    let mut v = one_variant(
        p,
        first(&k.allocator),
        first(&k.cpus),
        first(&k.numa),
        first(&k.instances),
        first(&k.binary),
        first(&k.settings),
        name,
    )?;
    if v.name.is_empty() {
        v.name = describe(&v, &[true; 6], 2);
    }
    v.client_cpus = client_cpus.flatten();
    ok.then_some(v)
}

#[allow(clippy::too_many_arguments)]
fn one_variant(
    p: &mut Problems,
    allocator: Option<&Value>,
    cpus: Option<&Value>,
    numa: Option<&Value>,
    instances: Option<&Value>,
    binary: Option<&Value>,
    settings: Option<&Value>,
    name: Option<String>,
) -> Option<NamedVariant> {
    let mut bad = false;
    let mut base = Variant::default();
    if let Some(v) = allocator {
        match str_value(p, v, "`allocator`").map(str::parse::<Allocator>) {
            Some(Ok(a)) => base.allocator = a,
            Some(Err(e)) => {
                p.at(v.span(), e);
                bad = true;
            }
            None => bad = true,
        }
    }
    if let Some(v) = settings {
        match v.get_ref() {
            DeValue::Table(t) => {
                for (k, val) in t.iter() {
                    let value = match val.get_ref() {
                        DeValue::String(s) => s.to_string(),
                        DeValue::Integer(i) => i.as_str().to_string(),
                        DeValue::Boolean(b) => {
                            if *b {
                                "ON".into()
                            } else {
                                "OFF".into()
                            }
                        }
                        _ => {
                            p.at(
                                val.span(),
                                format!(
                                    "setting `{}` must be a string, number or true/false, found {}",
                                    k.get_ref(),
                                    kind(val)
                                ),
                            );
                            bad = true;
                            continue;
                        }
                    };
                    match format!("{}={value}", k.get_ref()).parse::<Setting>() {
                        Ok(s) => base.settings.push(s),
                        Err(e) => {
                            p.at(k.span(), e);
                            bad = true;
                        }
                    }
                }
            }
            _ => {
                p.at(v.span(), format!("`settings` must be a table like {{ innodb_adaptive_hash_index = \"OFF\" }}, found {}", kind(v)));
                bad = true;
            }
        }
    }
    let count = match instances {
        Some(v) => int_value(p, v, "`instances`", 1..65).unwrap_or_else(|| {
            bad = true;
            1
        }) as u32,
        None => 1,
    };
    let cpus = cpus.and_then(|v| str_value(p, v, "`cpus`").map(|s| (s, v.span())));
    let numa = numa.and_then(|v| str_value(p, v, "`numa`").map(|s| (s, v.span())));
    let binary = binary
        .and_then(|v| str_value(p, v, "`binary`"))
        .map(PathBuf::from);
    let instances = match instance_variants(
        &base,
        count,
        cpus.as_ref().map(|(s, _)| *s),
        numa.as_ref().map_or("default", |(s, _)| *s),
    ) {
        Ok(v) => v,
        Err(e) => {
            let span = if e.starts_with("--numa") {
                numa.map(|(_, s)| s)
            } else {
                cpus.map(|(_, s)| s)
            };
            p.at(
                span.unwrap_or(0..0),
                e.replace("--instances", "instances").replace("--", ""),
            );
            return None;
        }
    };
    (!bad).then(|| NamedVariant {
        name: name.unwrap_or_default(),
        binary,
        instances,
        client_cpus: None,
    })
}

fn describe(v: &NamedVariant, varying: &[bool], total: usize) -> String {
    let first = &v.instances[0];
    let mut parts = Vec::new();
    let show = |i: usize| total == 1 || varying[i];
    if show(0) {
        parts.push(format!("allocator={}", first.allocator));
    }
    if show(1) && first.cpus.is_some() {
        let sets: Vec<String> = v
            .instances
            .iter()
            .map(|i| i.cpus.as_ref().map_or("all".into(), |c| c.to_string()))
            .collect();
        parts.push(format!("cpus={}", sets.join("/")));
    }
    if show(2) {
        parts.push(format!("numa={}", first.numa));
    }
    if show(3) && v.instances.len() > 1 {
        parts.push(format!("instances={}", v.instances.len()));
    }
    if show(4) {
        if let Some(b) = &v.binary {
            parts.push(format!("binary={}", b.display()));
        }
    }
    if show(5) {
        for s in &first.settings {
            parts.push(format!("{}={}", s.name, s.value));
        }
    }
    if parts.is_empty() {
        "default".into()
    } else {
        parts.join(" ")
    }
}

fn prices(p: &mut Problems, mut t: Table) -> Vec<Price> {
    let mut out = Vec::new();
    for (platform, span, v) in t.entries() {
        let DeValue::Table(inner) = v.get_ref() else {
            p.at(span, format!("`prices.{platform}` must be a table like {{ on_demand_per_hour = 0.68, reserved_per_hour = 0.43 }}"));
            continue;
        };
        let mut pt = Table::new(inner, v.span(), format!("prices.{platform}"));
        pt.require(p, "on_demand_per_hour", "the hourly price of this platform");
        let od = money(
            p,
            pt.get("on_demand_per_hour"),
            platform,
            "on_demand_per_hour",
        );
        let rs = money(
            p,
            pt.get("reserved_per_hour"),
            platform,
            "reserved_per_hour",
        );
        pt.finish(p);
        if let Some(od) = od {
            out.push(Price {
                platform: platform.to_string(),
                on_demand_per_hour: od,
                reserved_per_hour: rs,
            });
        }
    }
    out
}

fn money(p: &mut Problems, v: Option<&Value>, platform: &str, key: &str) -> Option<f64> {
    let v = v?;
    let n = match v.get_ref() {
        DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
        DeValue::Integer(i) => i.as_str().replace('_', "").parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(x) if x.is_finite() && x >= 0.0 => Some(x),
        _ => {
            p.at(
                v.span(),
                format!(
                    "`prices.{platform}.{key}` must be a price per hour (a number >= 0), found {}",
                    kind(v)
                ),
            );
            None
        }
    }
}
