//! The environment a run happened in, stored with it: enough to trust and reproduce a number
//! months later (host, kernel, CPUs, NUMA, governor, THP, server binary and its hash, the
//! verified variant, the server's variables, bakeoff's version, the study's hash and seed).

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Serialize)]
pub struct Host {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub numa_nodes: String,
    pub governor: Option<String>,
    pub transparent_hugepages: Option<String>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl Host {
    pub fn read() -> Host {
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                matches!(k.trim(), "model name" | "CPU part" | "Model")
                    .then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Host {
            hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            cpu_model,
            // The machine's, not this thread's: bakeoff may have pinned itself already.
            cpus: bakeoff_server::placement::online_cpus().map_or_else(
                |_| std::thread::available_parallelism().map_or(1, |n| n.get()),
                |c| c.len(),
            ),
            numa_nodes: read("/sys/devices/system/node/online").unwrap_or_else(|| "0".into()),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            transparent_hugepages: read("/sys/kernel/mm/transparent_hugepage/enabled"),
        }
    }
}

/// SHA-256 of the study file's text: what "edited" means for resuming.
/// What a study's results are tied to: its file's text and, for a workload of the user's own,
/// each script's text (an edited script must not be resumed into the same study). A study
/// with no script hashes as its text alone, as before scripts could be studied.
pub fn study_sha256(text: &str, spec: &crate::StudySpec) -> String {
    let scripts: Vec<String> = spec
        .workloads
        .iter()
        .filter_map(|w| w.spec.script.as_ref())
        .filter_map(|s| serde_json::to_string(s).ok())
        .collect();
    match scripts.is_empty() {
        true => text_sha256(text),
        false => text_sha256(&format!("{text}\0{}", scripts.join("\0"))),
    }
}

pub fn text_sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What is known of one series' servers.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest<'a> {
    /// The database engine that ran: "mariadb", "mysql" or "postgresql".
    pub engine: bakeoff_server::Engine,
    pub bakeoff_version: &'static str,
    pub study_hash: &'a str,
    pub seed: u64,
    pub host: &'a Host,
    /// The host the servers ran on, when not this one (the study's `[hosts] server`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_host: Option<String>,
    /// That host's profile (as `host` is this machine's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_machine: Option<serde_json::Value>,
    pub server_binary: Option<String>,
    pub server_binary_sha256: Option<String>,
    pub server_version: Option<String>,
    pub checks: Vec<bakeoff_server::Check>,
    pub server_variables: BTreeMap<String, String>,
    /// Where the load ran: its CPUs, how they were chosen, CPUs shared with a server.
    pub client: &'a bakeoff_server::placement::ClientPlacement,
    /// The client hosts the load was spread over (`[hosts] clients`); then `client` is only
    /// where bakeoff itself ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub client_hosts: Vec<String>,
    /// A server the user runs (a variant's `server` URL): what is known of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub given: Option<GivenInfo>,
    /// What the server lab set on the servers it started, before the variant's own
    /// settings ("max_connections=5000", ...); empty for a server the user runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lab_defaults: Vec<String>,
}

/// What the manifest says of a given server.
#[derive(Debug, Clone, Serialize, Default)]
pub struct GivenInfo {
    pub url: String,
    pub version: Option<String>,
    pub hostname: Option<String>,
    /// "TLSv1.3 TLS13_AES_256_GCM_SHA384", or None on a plain connection.
    pub tls: Option<String>,
    pub server_cpu: String,
    pub dataset: String,
    /// The tables went as multi-row INSERTs: the server refused LOAD DATA LOCAL.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub loaded_with_inserts: bool,
}
