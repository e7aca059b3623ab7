//! Variants: how a server is set up beyond its binary (allocator, CPUs, NUMA policy, server
//! settings), applied at launch and verified on the running process, because every one of them
//! can silently not take effect.

mod allocator;
mod axes;
mod cpus;
mod instances;
mod numa;
mod verify;

pub use allocator::{Allocator, Library};
pub use axes::{Setting, Variant};
pub use cpus::{online_cpus, CpuList};
pub use instances::expand as instance_variants;
pub use numa::{online_nodes, NumaPolicy};
pub use verify::{same_value, Check};

pub(crate) use numa::apply as apply_numa;
pub(crate) use verify::check_process;

/// Problems that would stop the variant from starting, found before anything is launched:
/// CPUs not available to us, NUMA nodes offline, an allocator that is not installed.
pub fn preflight(v: &Variant) -> Result<Option<Library>, String> {
    if let Some(cpus) = &v.cpus {
        // Against the machine, not bakeoff's own affinity: `taskset -c 1 bakeoff --cpus 0`
        // puts the server on CPU 0 and the client on CPU 1.
        let online = online_cpus().map_err(|e| format!("reading online CPUs: {e}"))?;
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
