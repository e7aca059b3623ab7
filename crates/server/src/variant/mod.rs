//! Variants: how a server is set up beyond its binary (allocator, CPUs, NUMA policy, server
//! settings), applied at launch and verified on the running process, because every one of them
//! can silently not take effect.

mod allocator;
mod cpus;
mod instances;
mod numa;
mod verify;

use std::fmt;

pub use allocator::{Allocator, Library};
pub use cpus::CpuList;
pub use instances::expand as instance_variants;
pub use numa::{online_nodes, NumaPolicy};
pub use verify::{same_value, Check};

pub(crate) use numa::apply as apply_numa;
pub(crate) use verify::check_process;

/// A server variable the variant sets, checked against the running value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Setting {
    pub name: String,
    pub value: String,
}

impl std::str::FromStr for Setting {
    type Err = String;

    fn from_str(s: &str) -> Result<Setting, String> {
        let (name, value) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not name=value (e.g. innodb_thread_concurrency=8)"))?;
        let name = name.trim().replace('-', "_");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("'{name}' is not a server variable name"));
        }
        Ok(Setting {
            name,
            value: value.trim().to_string(),
        })
    }
}

/// Everything that makes one server setup differ from another, besides the binary.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Variant {
    pub allocator: Allocator,
    /// CPUs the server may run on (taskset); None = all.
    pub cpus: Option<CpuList>,
    pub numa: NumaPolicy,
    pub settings: Vec<Setting>,
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "allocator={}", self.allocator)?;
        if let Some(c) = &self.cpus {
            write!(f, " cpus={c}")?;
        }
        if self.numa != NumaPolicy::Default {
            write!(f, " numa={}", self.numa)?;
        }
        for s in &self.settings {
            write!(f, " {}={}", s.name, s.value)?;
        }
        Ok(())
    }
}

/// Problems that would stop the variant from starting, found before anything is launched:
/// CPUs not available to us, NUMA nodes offline, an allocator that is not installed.
pub fn preflight(v: &Variant) -> Result<Option<Library>, String> {
    if let Some(cpus) = &v.cpus {
        // Against the machine, not bakeoff's own affinity: `taskset -c 1 bakeoff --cpus 0`
        // puts the server on CPU 0 and the client on CPU 1.
        let online =
            crate::placement::online_cpus().map_err(|e| format!("reading online CPUs: {e}"))?;
        if !cpus.is_subset(&online) {
            return Err(format!(
                "--cpus={cpus}: this machine has CPUs {online} online (that bakeoff's cgroup may use); choose CPUs among them"
            ));
        }
    }
    if let Some(nodes) = v.numa.nodes() {
        let online = online_nodes().map_err(|e| format!("reading NUMA nodes: {e}"))?;
        if !nodes.is_subset(&online) {
            return Err(format!(
                "--numa={}: NUMA nodes online here are {online}",
                v.numa
            ));
        }
    }
    v.allocator.library()
}
