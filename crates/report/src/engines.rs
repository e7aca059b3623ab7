//! Comparisons across database engines (MariaDB or MySQL against PostgreSQL): what such a
//! ratio can and cannot mean, and the settings that decide it, side by side.
//!
//! A ratio between engines measures two servers as they were configured, running the same
//! statements through different optimizers, storage and concurrency designs. The durability a
//! commit buys, the isolation level a transaction runs at and the memory each is given are
//! the settings most often left unequal, so they are listed here for every variant, read from
//! the server itself when the run began.

use serde::Serialize;

/// Each variant's first manifest with its report name (the environment's list, named again
/// here so that the two files do not import each other).
type Manifests = [(String, serde_json::Value)];

/// One aspect (durability, isolation, ...), with each variant's settings for it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Aspect {
    pub aspect: &'static str,
    /// (variant, "name=value, ..." as its server reported them)
    pub values: Vec<(String, String)>,
    /// Whether every variant does the same here, where that can be judged from the settings
    /// (durability, torn pages, isolation); None where it cannot (sizes in different units
    /// of different structures).
    pub same: Option<bool>,
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
    let aspects: Vec<Aspect> = ASPECTS
        .iter()
        .map(|(aspect, mysql, pg)| {
            let judged: Option<Vec<String>> =
                all.iter().map(|(_, m)| behaviour(aspect, m)).collect();
            Aspect {
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
                same: judged.map(|b| b.iter().all(|x| *x == b[0])),
            }
        })
        .collect();
    Some(CrossEngine {
        meaning: meaning(&engines, &aspects),
        engines,
        aspects,
    })
}

/// What a server does for an aspect, in words both engines share, when its settings say:
/// whether a commit waits for the log; whether pages are guarded; the isolation level.
fn behaviour(aspect: &str, m: &serde_json::Value) -> Option<String> {
    let v = |n: &str| {
        m["server_variables"][n]
            .as_str()
            .map(str::to_ascii_lowercase)
    };
    let on = |x: Option<String>| matches!(x.as_deref(), Some("on" | "1" | "true"));
    let pg = engine_of(m) == "PostgreSQL";
    let word = |yes: bool, a: &str, b: &str| Some(if yes { a } else { b }.to_string());
    match aspect {
        "commit durability" if pg => {
            let waits = v("synchronous_commit")? != "off" && on(v("fsync"));
            word(waits, "waits", "does not wait")
        }
        "commit durability" => {
            let binlog_ok = !on(v("log_bin")) || v("sync_binlog").as_deref() == Some("1");
            let waits = v("innodb_flush_log_at_trx_commit")? == "1" && binlog_ok;
            word(waits, "waits", "does not wait")
        }
        "torn-page protection" => {
            let name = if pg {
                "full_page_writes"
            } else {
                "innodb_doublewrite"
            };
            v(name)?;
            word(on(v(name)), "guarded", "unguarded")
        }
        "isolation level" => {
            let level = match pg {
                true => v("default_transaction_isolation")?,
                false => v("transaction_isolation").or_else(|| v("tx_isolation"))?,
            };
            Some(level.replace('-', " "))
        }
        _ => None,
    }
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

fn meaning(engines: &[String], aspects: &[Aspect]) -> Vec<String> {
    let same = |name: &str| {
        aspects
            .iter()
            .find(|a| a.aspect == name)
            .and_then(|a| a.same)
    };
    let durability = match same("commit durability") {
        Some(true) => "Durability is comparable here: every server waits, or every one does not wait, for its log to reach the disk at commit (listed below).",
        Some(false) => "Durability differs here: some servers wait at commit for their log to reach the disk and others do not (listed below), so write workloads compare different promises; make them equal (innodb_flush_log_at_trx_commit=1 with no binary log or sync_binlog=1, against synchronous_commit=on with fsync=on) before reading their ratios.",
        None => "Durability is what a commit waits for: InnoDB flushes its redo log per commit at innodb_flush_log_at_trx_commit=1 and PostgreSQL its WAL at synchronous_commit=on; write workloads are only comparable where both wait for the same (listed below).",
    };
    let isolation = match same("isolation level") {
        Some(true) => "Isolation is the same level on every server here (listed below); the engines still implement it differently (InnoDB's locking reads, PostgreSQL's snapshots).",
        _ => "Isolation differs: InnoDB defaults to REPEATABLE READ, PostgreSQL to READ COMMITTED (what each ran is listed below); the same transactions then take different locks and see different snapshots.",
    };
    vec![
        format!(
            "These variants run on different engines ({}): a ratio between them measures these servers as configured, on this machine and this workload, not the engines in general.",
            engines.join(", ")
        ),
        "It can say which server, set up as listed below, answered these statements faster here; it cannot say how either would do tuned for the workload, on other hardware, or under another schema or query mix.".into(),
        "The same statements run through different optimizers, storage engines and concurrency designs (PostgreSQL a process per connection, MariaDB and MySQL a thread per connection): a difference may come from any of them.".into(),
        "Defaults differ: the lab gives each server its own defaults plus a 512 MiB buffer pool (innodb_buffer_pool_size, shared_buffers); anything else left at its default is each engine's own idea of a sensible value.".into(),
        durability.into(),
        isolation.into(),
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
        let judged = match a.same {
            Some(true) => " (the same on every server)",
            Some(false) => " (differs)",
            None => "",
        };
        let _ = writeln!(s, "    {}{judged}:", a.aspect);
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
        // InnoDB flushes at commit, PostgreSQL does not wait: said to differ.
        assert_eq!(durability.same, Some(false));
        assert!(c
            .meaning
            .iter()
            .any(|l| l.starts_with("Durability differs here")));
        assert!(text(&c).contains("commit durability (differs):"));
    }

    #[test]
    fn settings_made_equal_are_said_to_be_so() {
        let maria = [
            ("innodb_flush_log_at_trx_commit", "1"),
            ("log_bin", "OFF"),
            ("tx_isolation", "READ-COMMITTED"),
        ];
        let pg = [
            ("synchronous_commit", "on"),
            ("fsync", "on"),
            ("default_transaction_isolation", "read committed"),
        ];
        let all = vec![
            ("m".to_string(), manifest("mariadb", &maria)),
            ("p".to_string(), manifest("postgresql", &pg)),
        ];
        let c = cross_engine(&all).expect("two engines");
        assert_eq!(c.aspects[0].same, Some(true));
        assert_eq!(c.aspects[2].same, Some(true), "{:?}", c.aspects[2]);
        assert_eq!(c.aspects[1].same, None, "not reported, not judged");
        assert_eq!(c.aspects[3].same, None, "sizes are not judged");
        assert!(c
            .meaning
            .iter()
            .any(|l| l.starts_with("Durability is comparable here")));
        assert!(c
            .meaning
            .iter()
            .any(|l| l.starts_with("Isolation is the same level")));
    }
}
