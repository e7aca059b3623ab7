//! The smaller tables of a study file: `[dataset]`, `[hosts]`, each `[[workload]]`, `[prices]`.

use toml::de::DeValue;

use bakeoff_workload::{Distribution, OltpOptions, PsMode, RandType, WorkloadKind, WorkloadSpec};

use super::spec::{DatasetPolicy, Price, Workload};
use crate::reader::{kind, one_of, str_value, Problems, Table, Value};

/// The tables every workload of the study loads: sysbench's (`tables`, `table_size`) and
/// TPC-C's (`warehouses`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Dataset {
    pub tables: u32,
    pub table_size: u32,
    pub warehouses: u32,
    /// Read every table into the buffer pool once loaded (`bakeoff prewarm`).
    pub prewarm: bool,
}

/// TPC-C's scale when the study does not say: as `bakeoff tpcc run`'s.
const WAREHOUSES: u32 = 10;

pub(super) fn dataset(p: &mut Problems, top: &mut Table) -> (Dataset, DatasetPolicy) {
    let Some(mut t) = top.tables(p, "dataset").into_iter().next() else {
        let d = Dataset {
            tables: 1,
            table_size: 10_000,
            warehouses: WAREHOUSES,
            prewarm: false,
        };
        return (d, DatasetPolicy::Rebuild);
    };
    let tables = t.int(p, "tables", 1..10_001).unwrap_or(1) as u32;
    let size = t.int(p, "table_size", 1..2_000_000_001).unwrap_or(10_000) as u32;
    let warehouses = t
        .int(p, "warehouses", 1..100_001)
        .unwrap_or(WAREHOUSES.into()) as u32;
    let prewarm = t.bool(p, "prewarm").unwrap_or(false);
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
    let d = Dataset {
        tables,
        table_size: size,
        warehouses,
        prewarm,
    };
    (d, policy)
}

/// `[hosts]`: where the servers run (`server`, default this machine) and where the load runs
/// (`clients`, default this machine): (server host, client hosts), the latter empty when the
/// load stays here.
pub(super) fn hosts(
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

pub(super) fn workload(
    p: &mut Problems,
    mut t: Table,
    d: Dataset,
    dir: &std::path::Path,
) -> Option<Workload> {
    t.require(
        p,
        "name",
        "the workload: one of sysbench's, e.g. \"oltp_read_only\", \"tpcc\", a Lua script's path (\"mine.lua\") or pgbench scripts' (\"mine.sql\", or \"pgbench\" with `scripts`)",
    );
    if let Some((s, span)) = t.string(p, "name") {
        if bakeoff_workload::scripting::user::is_script(s, dir) {
            return script_entry(p, t, (s, span), dir);
        }
    }
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
    let fixed = fixed_work(p, &mut t);
    let mut o = OltpOptions {
        tables: d.tables,
        table_size: d.table_size,
        ..OltpOptions::default()
    };
    let all_warehouses = t.bool(p, "all_warehouses").unwrap_or(false);
    let procedures = t.bool(p, "procedures").unwrap_or(false);
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
        tpcc: bakeoff_workload::tpcc::TpccOptions {
            warehouses: d.warehouses,
            all_warehouses,
            procedures,
            ..Default::default()
        },
        script: None,
    };
    Some(Workload {
        uncalled: Vec::new(),
        label: label.unwrap_or_else(|| spec.kind.to_string()),
        spec,
        fixed,
    })
}

/// A workload of the user's own (`scripts.rs`): its label and fixed work as any workload's.
fn script_entry(
    p: &mut Problems,
    mut t: Table,
    name: (&str, std::ops::Range<usize>),
    dir: &std::path::Path,
) -> Option<Workload> {
    let label = t.string(p, "label").map(|(s, _)| s.to_string());
    let fixed = fixed_work(p, &mut t);
    let read = super::scripts::script_workload(p, &mut t, name, dir);
    t.finish(p);
    let (spec, uncalled) = read?;
    Some(Workload {
        label: label.unwrap_or_else(|| spec.default_label()),
        spec,
        fixed,
        uncalled,
    })
}

/// `iterations` and `events_per_connection`: mysqlslap-style fixed work, if asked.
fn fixed_work(p: &mut Problems, t: &mut Table) -> Option<(u32, u64)> {
    let iterations = t.int(p, "iterations", 1..10_001);
    let per_conn = t.int(p, "events_per_connection", 1..10_000_001);
    match (iterations, per_conn) {
        (None, None) => None,
        (i, e) => Some((i.unwrap_or(1) as u32, e.unwrap_or(1) as u64)),
    }
}

pub(super) fn prices(p: &mut Problems, mut t: Table) -> Vec<Price> {
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
            &format!("prices.{platform}.on_demand_per_hour"),
        );
        let rs = money(
            p,
            pt.get("reserved_per_hour"),
            &format!("prices.{platform}.reserved_per_hour"),
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

/// A price per hour: a number >= 0; `name` is the key as the message shows it.
pub(super) fn money(p: &mut Problems, v: Option<&Value>, name: &str) -> Option<f64> {
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
                    "`{name}` must be a price per hour (a number >= 0, e.g. 0.25), found {}",
                    kind(v)
                ),
            );
            None
        }
    }
}
