//! The environment manifests of a study's variants: where each ran, what the server lab
//! verified, and which server variables differ between them.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Environment, VariableDiff};
use crate::source::{text, variant_name, Source};

/// Each variant's first manifest, parsed once, with the variant's report name.
pub type Manifests = Vec<(String, serde_json::Value)>;

pub fn manifests(src: &Source, origins: &[String]) -> Manifests {
    src.studies
        .iter()
        .enumerate()
        .flat_map(|(si, s)| {
            s.manifests.iter().filter_map(move |m| {
                let json = serde_json::from_str(&text(m, "manifest_json")).ok()?;
                Some((
                    variant_name(src, si, &text(m, "variant_name"), origins),
                    json,
                ))
            })
        })
        .collect()
}

pub fn environments(all: &Manifests) -> Vec<Environment> {
    all.iter()
        .map(|(variant, m)| {
            let s = |k: &str| m[k].as_str().unwrap_or("").to_string();
            Environment {
                variant: variant.clone(),
                engine: crate::engines::engine_of(m).to_string(),
                host: m["host"].clone(),
                server_binary: s("server_binary"),
                server_version: s("server_version"),
                bakeoff_version: s("bakeoff_version"),
                checks: m["checks"].as_array().cloned().unwrap_or_default(),
                lab_defaults: m["lab_defaults"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|d| d.as_str().map(str::to_string))
                    .collect(),
                client: m["client"].clone(),
                given: m["given"].clone(),
            }
        })
        .collect()
}

/// Variables that differ on every server start whatever the variant: where its files are,
/// its identity. Listing them would bury the differences that matter.
const PER_START: [&str; 13] = [
    "datadir",
    "report_port",
    "tmpdir",
    "pid_file",
    "socket",
    "port",
    "log_error",
    "general_log_file",
    "slow_query_log_file",
    "hostname",
    "server_uid",
    "innodb_data_home_dir",
    "innodb_log_group_home_dir",
];

pub fn variable_diffs(all: &Manifests) -> Vec<VariableDiff> {
    if all.len() < 2 {
        return Vec::new();
    }
    let vars: Vec<(String, BTreeMap<String, String>)> = all
        .iter()
        .map(|(v, m)| {
            let vars = m["server_variables"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                        .collect()
                })
                .unwrap_or_default();
            (v.clone(), vars)
        })
        .collect();
    // Across engines a name only one engine has is no difference between variants: it is
    // the engines' (their settings side by side are `engines.rs`'s).
    let cross = crate::engines::is_cross_engine(all);
    let names: BTreeSet<&String> = vars
        .iter()
        .flat_map(|(_, m)| m.keys())
        .filter(|n| !cross || vars.iter().all(|(_, m)| m.contains_key(*n)))
        .collect();
    names
        .into_iter()
        .filter(|n| !PER_START.contains(&n.as_str()))
        .filter_map(|name| {
            let values: Vec<(String, String)> = vars
                .iter()
                .map(|(v, m)| {
                    (
                        v.clone(),
                        m.get(name).cloned().unwrap_or_else(|| "-".into()),
                    )
                })
                .collect();
            let differ = values.iter().any(|(_, x)| *x != values[0].1);
            let per_start = values.iter().any(|(_, x)| x.contains("/bakeoff-"));
            (differ && !per_start).then(|| VariableDiff {
                name: name.clone(),
                values,
            })
        })
        .collect()
}

/// What the lab set on the servers it started, a line per engine: a reader of a comparison
/// learns there that a "large" buffer pool may be the lab's own default.
pub fn lab_lines(environments: &[Environment]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in environments.iter().filter(|e| !e.lab_defaults.is_empty()) {
        let line = format!(
            "the lab started each {} with {} (a variant's own settings win)",
            e.engine,
            e.lab_defaults.join(" ")
        );
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}
