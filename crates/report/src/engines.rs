//! Comparisons across database engines (MariaDB or MySQL against PostgreSQL): what such a
//! ratio can and cannot mean, and the settings that decide it, side by side.
//!
//! A ratio between engines measures two servers as they were configured, running the same
//! statements through different optimizers, storage and concurrency designs. The durability a
//! commit buys, the isolation level a transaction runs at and the memory each is given are
//! the settings most often left unequal, so they are listed here for every variant, read from
//! the server itself when the run began.

use serde::Serialize;

use crate::environment::Manifests;

/// One aspect (durability, isolation, ...), with each variant's settings for it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Aspect {
    pub aspect: &'static str,
    /// (variant, "name=value, ..." as its server reported them)
    pub values: Vec<(String, String)>,
}

/// What the report says when a study's variants run on more than one engine.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CrossEngine {
    /// The engines, as prose writes them, in the study's order.
    pub engines: Vec<String>,
    /// What a cross-engine ratio can and cannot mean, sentence by sentence.
    pub meaning: Vec<String>,
    pub aspects: Vec<Aspect>,
}

/// The settings each aspect is made of: MariaDB's and MySQL's, then PostgreSQL's.
const ASPECTS: &[(&str, &[&str], &[&str])] = &[
    (
        "commit durability",
        &["innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin"],
        &["synchronous_commit", "fsync", "wal_sync_method"],
    ),
    (
        "torn-page protection",
        &["innodb_doublewrite"],
        &["full_page_writes"],
    ),
    (
        "isolation level",
        &["transaction_isolation", "tx_isolation"],
        &["default_transaction_isolation"],
    ),
    (
        "buffer pool",
        &["innodb_buffer_pool_size"],
        &["shared_buffers", "effective_cache_size"],
    ),
    (
        "redo/WAL size",
        &["innodb_log_file_size"],
        &["max_wal_size", "checkpoint_timeout"],
    ),
    (
        "connections",
        &["max_connections", "thread_handling"],
        &["max_connections"],
    ),
];

/// The engine of a manifest: its own word, else guessed from what its server reported.
pub(crate) fn engine_of(m: &serde_json::Value) -> &'static str {
    match m["engine"].as_str() {
        Some("postgresql") => "PostgreSQL",
        Some("mysql") => "MySQL",
        Some(_) => "MariaDB",
        None if m["server_variables"]["server_version_num"].is_string() => "PostgreSQL",
        None => "MariaDB",
    }
}

/// Whether the variants ran on more than one engine.
pub fn is_cross_engine(all: &Manifests) -> bool {
    let mut engines = all.iter().map(|(_, m)| engine_of(m));
    let first = engines.next();
    engines.any(|e| Some(e) != first)
}

/// The cross-engine section, when the variants ran on more than one engine.
pub fn cross_engine(all: &Manifests) -> Option<CrossEngine> {
    if !is_cross_engine(all) {
        return None;
    }
    let mut engines: Vec<String> = Vec::new();
    for (_, m) in all {
        let e = engine_of(m).to_string();
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    let aspects = ASPECTS
        .iter()
        .map(|(aspect, mysql, pg)| Aspect {
            aspect,
            values: all
                .iter()
                .map(|(v, m)| {
                    let names = if engine_of(m) == "PostgreSQL" {
                        pg
                    } else {
                        mysql
                    };
                    (v.clone(), said(m, names))
                })
                .collect(),
        })
        .collect();
    Some(CrossEngine {
        meaning: meaning(&engines),
        engines,
        aspects,
    })
}

/// "name=value, ..." for the names the server reported (in the order given).
fn said(m: &serde_json::Value, names: &[&str]) -> String {
    let vars = &m["server_variables"];
    let parts: Vec<String> = names
        .iter()
        .filter_map(|n| vars[*n].as_str().map(|v| format!("{n}={v}")))
        .collect();
    if parts.is_empty() {
        "not reported".into()
    } else {
        parts.join(", ")
    }
}

fn meaning(engines: &[String]) -> Vec<String> {
    vec![
        format!(
            "These variants run on different engines ({}): a ratio between them measures these servers as configured, on this machine and this workload, not the engines in general.",
            engines.join(", ")
        ),
        "It can say which server, set up as listed below, answered these statements faster here; it cannot say how either would do tuned for the workload, on other hardware, or under another schema or query mix.".into(),
        "The same statements run through different optimizers, storage engines and concurrency designs (PostgreSQL a process per connection, MariaDB and MySQL a thread per connection): a difference may come from any of them.".into(),
        "Defaults differ: the lab gives each server its own defaults plus a 512 MiB buffer pool (innodb_buffer_pool_size, shared_buffers); anything else left at its default is each engine's own idea of a sensible value.".into(),
        "Durability is what a commit waits for: InnoDB flushes its redo log per commit at innodb_flush_log_at_trx_commit=1 and PostgreSQL its WAL at synchronous_commit=on; write workloads are only comparable where both wait for the same (see below).".into(),
        "Isolation differs by default: InnoDB runs REPEATABLE READ, PostgreSQL READ COMMITTED; the same transactions then take different locks and see different snapshots.".into(),
    ]
}

/// The section as the comparison's text prints it.
pub fn text(c: &CrossEngine) -> String {
    use std::fmt::Write;
    let mut s = String::from("\nacross engines:\n");
    for line in &c.meaning {
        let _ = writeln!(s, "  {line}");
    }
    let _ = writeln!(
        s,
        "  settings that decide a cross-engine comparison, as each server reported them:"
    );
    for a in &c.aspects {
        let _ = writeln!(s, "    {}:", a.aspect);
        for (v, said) in &a.values {
            let _ = writeln!(s, "      {v:<36} {said}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(engine: &str, vars: &[(&str, &str)]) -> serde_json::Value {
        let vars: serde_json::Map<String, serde_json::Value> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        serde_json::json!({ "engine": engine, "server_variables": vars })
    }

    #[test]
    fn one_engine_says_nothing() {
        let all = vec![
            ("a".to_string(), manifest("mariadb", &[])),
            ("b".to_string(), manifest("mariadb", &[])),
        ];
        assert!(cross_engine(&all).is_none());
    }

    #[test]
    fn two_engines_list_each_ones_own_settings() {
        let all = vec![
            (
                "m".to_string(),
                manifest(
                    "mariadb",
                    &[
                        ("innodb_flush_log_at_trx_commit", "1"),
                        ("sync_binlog", "0"),
                    ],
                ),
            ),
            (
                "p".to_string(),
                manifest("postgresql", &[("synchronous_commit", "off")]),
            ),
        ];
        let c = cross_engine(&all).expect("two engines");
        assert_eq!(c.engines, ["MariaDB", "PostgreSQL"]);
        let durability = &c.aspects[0];
        assert_eq!(
            durability.values[0].1,
            "innodb_flush_log_at_trx_commit=1, sync_binlog=0"
        );
        assert_eq!(durability.values[1].1, "synchronous_commit=off");
        assert_eq!(c.aspects[1].values[1].1, "not reported");
        assert!(text(&c).contains("synchronous_commit=off"));
    }
}
