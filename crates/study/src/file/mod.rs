//! The study file (TOML) -> a validated [`StudySpec`], or every problem in the file at once.
//!
//! - `spec`: what a study says (the types the runner reads);
//! - this file: the top-level keys, in order;
//! - `sections`: `[dataset]`, `[hosts]`, `[[workload]]`, `[prices]`;
//! - `variants`: `[axes]` (every combination) and `[[variant]]` entries.

mod alternation;
mod brackets;
mod defaults;
mod engines;
mod given;
mod repetitions;
mod scripts;
mod sections;
mod spec;
mod variants;

use std::time::Duration;

use bakeoff_engine::ClientWait;
use bakeoff_hostbench::profile::HostProbe;
use toml::de::DeTable;

use crate::reader::{a_span, cpu_list, int_value, one_of, str_value, Problem, Problems, Table};
pub use alternation::{Alternation, Idle};
pub use defaults::lab_lines;
pub use engines::setting_refused;
use sections::{dataset, hosts, prices, workload};
pub use spec::{
    DatasetPolicy, GivenServer, NamedVariant, Order, Price, StudySpec, Workload, MAX_CELLS,
};
use variants::{axes_variants, default_variant, listed_variant};

/// Parse and validate `src`; `default_name` names the study when the file does not. Scripts
/// it names are read relative to the working directory (see [`parse_in`]).
pub fn parse(src: &str, default_name: &str) -> Result<StudySpec, Vec<Problem>> {
    parse_in(src, default_name, std::path::Path::new(""))
}

/// [`parse`] a study file that lives in `dir`: the scripts it names are read from there.
pub fn parse_in(
    src: &str,
    default_name: &str,
    dir: &std::path::Path,
) -> Result<StudySpec, Vec<Problem>> {
    let mut p = Problems::new(src);
    let (doc, syntax) = DeTable::parse_recoverable(src);
    // An array or inline table left open: its `[` first, and none of what the parser then
    // found in the lines it read on into (they follow from it).
    let open = (!syntax.is_empty())
        .then(|| brackets::unclosed(src))
        .flatten();
    if let Some(at) = open {
        let what = if src.as_bytes()[at] == b'[' {
            "array"
        } else {
            "inline table"
        };
        let close = if what == "array" { ']' } else { '}' };
        p.at(at..at + 1, format!("this {what} is never closed: add `{close}` at the end of its value (the parser read on into the lines after it)"));
    }
    for e in syntax {
        let span = e.span().unwrap_or(0..0);
        if open.is_none_or(|at| span.start < at) {
            p.at(span, e.message().to_string());
        }
    }
    if !p.list.is_empty() {
        // Values after a syntax error are guesses: report the syntax first.
        return Err(p.list);
    }
    let spec = read(&mut p, doc.get_ref(), doc.span(), default_name, dir);
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
    dir: &std::path::Path,
) -> Option<StudySpec> {
    let mut top = Table::new(doc, span, "");
    let name = top
        .string(p, "name")
        .map_or(default_name.to_string(), |(s, _)| s.to_string());
    let description = top.string(p, "description").map(|(s, _)| s.to_string());
    let seed = top.int(p, "seed", 0..i64::MAX).unwrap_or(1) as u64;
    let reps = repetitions::repetitions(p, &mut top);
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
    let (data, policy) = dataset(p, &mut top);
    let (server_host, client_hosts) = hosts(p, &mut top, policy);
    top.require(
        p,
        "workload",
        "at least one [[workload]] with a name, e.g. name = \"oltp_point_select\"",
    );
    let workloads: Vec<Workload> = top
        .tables(p, "workload")
        .into_iter()
        .filter_map(|t| workload(p, t, data, dir))
        .collect();
    let long_events = workloads
        .iter()
        .any(|w| w.spec.kind == bakeoff_workload::WorkloadKind::Tpcc);
    let alternation = alternation::alternation(p, &mut top, long_events);
    let eng = engines::engines(p, &mut top, server_host.is_none());
    let axes = top.tables(p, "axes");
    let listed = top.tables(p, "variant");
    let is_listed = !listed.is_empty();
    let variants = match (axes.into_iter().next(), listed.is_empty()) {
        (Some(a), true) => axes_variants(p, a, &eng),
        (None, false) => listed
            .into_iter()
            .filter_map(|t| listed_variant(p, t, &eng, long_events))
            .collect(),
        (None, true) => default_variant(p, &eng),
        (Some(_), false) => {
            p.at(a_span(doc, "axes"), "use either [axes] (every combination) or [[variant]] entries (an explicit list), not both");
            Vec::new()
        }
    };
    let pgbench = workloads
        .iter()
        .find(|w| w.spec.kind == bakeoff_workload::WorkloadKind::Pgbench);
    let not_pg = variants
        .iter()
        .find(|v| v.engine != bakeoff_server::Engine::PostgreSql);
    if let (Some(w), Some(v)) = (pgbench, not_pg) {
        p.at(
            a_span(doc, "workload"),
            format!("workload '{}' is pgbench scripts, which run on PostgreSQL, and variant '{}' is {}: give every variant engine = \"postgresql\" (or run the scripts in a study of their own)", w.label, v.name, v.engine),
        );
    }
    if server_host.is_some() && variants.iter().any(|v| v.given.is_some()) {
        p.at(
            a_span(doc, "hosts"),
            "[hosts] server starts the variants on that machine; a variant with `server = ...` is one you run already: give one or the other",
        );
    }
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
        repetitions: reps.count,
        auto: reps.auto,
        noise_check: reps.noise_check,
        noise_twin: reps
            .noise_check
            .then(|| variants::twin_of_first(&variants))
            .flatten(),
        equivalence: reps.equivalence,
        paired: order != Some(Order::Sequential),
        duration: Duration::from_secs(duration),
        warmup: Duration::from_secs(warmup),
        prewarm: data.prewarm,
        order: order?,
        threads,
        tables: data.tables,
        table_size: data.table_size,
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
        alternation,
    };
    if spec.cells() > MAX_CELLS {
        p.at(0..0, format!(
            "the matrix has {} cells ({} variants x {} workloads x {} thread counts), more than {MAX_CELLS}; shorten an axis or split the study",
            spec.cells(), spec.variants.len(), spec.workloads.len(), spec.threads.len()
        ));
    }
    Some(spec)
}
