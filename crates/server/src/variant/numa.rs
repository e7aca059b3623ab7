//! NUMA memory policy, set the way numactl sets it (set_mempolicy before exec, inherited by
//! the server) and verified in /proc/PID/numa_maps.

use std::fmt;
use std::str::FromStr;

use super::cpus::CpuList;

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum NumaPolicy {
    /// Leave the kernel's default (local allocation, no explicit policy).
    #[default]
    Default,
    Interleave(CpuList),
    Bind(CpuList),
    Preferred(u32),
    LocalAlloc,
}

// linux/mempolicy.h
const MPOL_PREFERRED: i32 = 1;
const MPOL_BIND: i32 = 2;
const MPOL_INTERLEAVE: i32 = 3;
const MPOL_LOCAL: i32 = 4;

impl FromStr for NumaPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<NumaPolicy, String> {
        let nodes = |v: &str| -> Result<CpuList, String> {
            if v == "all" {
                return online_nodes().map_err(|e| format!("reading the online NUMA nodes: {e}"));
            }
            v.parse::<CpuList>()
        };
        Ok(match s.split_once('=') {
            None if s == "default" => NumaPolicy::Default,
            None if s == "localalloc" || s == "local" => NumaPolicy::LocalAlloc,
            Some(("interleave", v)) => NumaPolicy::Interleave(nodes(v)?),
            Some(("bind" | "membind", v)) => NumaPolicy::Bind(nodes(v)?),
            Some(("preferred", v)) => NumaPolicy::Preferred(
                v.parse()
                    .map_err(|_| format!("preferred={v}: expected one node number"))?,
            ),
            _ => {
                return Err(format!(
                    "'{s}' is not a NUMA policy; use default, interleave=NODES, bind=NODES, preferred=NODE or localalloc (NODES like 0-1 or all)"
                ))
            }
        })
    }
}

impl fmt::Display for NumaPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumaPolicy::Default => f.write_str("default"),
            NumaPolicy::Interleave(n) => write!(f, "interleave={n}"),
            NumaPolicy::Bind(n) => write!(f, "bind={n}"),
            NumaPolicy::Preferred(n) => write!(f, "preferred={n}"),
            NumaPolicy::LocalAlloc => f.write_str("localalloc"),
        }
    }
}

impl From<NumaPolicy> for String {
    fn from(p: NumaPolicy) -> String {
        p.to_string()
    }
}

impl NumaPolicy {
    /// The nodes the policy names, for the preflight check that they are online.
    pub fn nodes(&self) -> Option<CpuList> {
        match self {
            NumaPolicy::Interleave(n) | NumaPolicy::Bind(n) => Some(n.clone()),
            NumaPolicy::Preferred(n) => n.to_string().parse().ok(),
            _ => None,
        }
    }

    /// The mode and node mask for set_mempolicy(2); None for the default policy.
    pub(crate) fn syscall_args(&self) -> Option<(i32, [u64; 16])> {
        let mut mask = [0u64; 16];
        let mut set = |n: u32| {
            if let Some(w) = mask.get_mut((n / 64) as usize) {
                *w |= 1 << (n % 64);
            }
        };
        let mode = match self {
            NumaPolicy::Default => return None,
            NumaPolicy::Interleave(n) => {
                n.iter().for_each(&mut set);
                MPOL_INTERLEAVE
            }
            NumaPolicy::Bind(n) => {
                n.iter().for_each(&mut set);
                MPOL_BIND
            }
            NumaPolicy::Preferred(n) => {
                set(*n);
                MPOL_PREFERRED
            }
            NumaPolicy::LocalAlloc => MPOL_LOCAL,
        };
        Some((mode, mask))
    }

    /// How /proc/PID/numa_maps prints this policy for memory without a policy of its own.
    pub fn numa_maps_word(&self) -> String {
        match self {
            NumaPolicy::Default => "default".into(),
            NumaPolicy::Interleave(n) => format!("interleave:{n}"),
            NumaPolicy::Bind(n) => format!("bind:{n}"),
            NumaPolicy::Preferred(n) => format!("prefer:{n}"),
            NumaPolicy::LocalAlloc => "local".into(),
        }
    }
}

/// Set the calling process's memory policy; called between fork and exec (async-signal-safe:
/// one system call).
pub(crate) fn apply(mode: i32, mask: &[u64; 16]) -> std::io::Result<()> {
    let maxnode = if mode == MPOL_LOCAL {
        0
    } else {
        (mask.len() * 64) as u64
    };
    let ptr = if mode == MPOL_LOCAL {
        std::ptr::null()
    } else {
        mask.as_ptr()
    };
    // SAFETY: set_mempolicy reads maxnode bits from a live array of that many bits.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The NUMA nodes the kernel has online (a one-node machine has "0").
pub fn online_nodes() -> std::io::Result<CpuList> {
    let s = std::fs::read_to_string("/sys/devices/system/node/online")?;
    s.trim()
        .parse()
        .map_err(|e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_print_as_numactl_and_numa_maps_spell_them() {
        for (s, word) in [
            ("default", "default"),
            ("interleave=0-1", "interleave:0-1"),
            ("bind=0", "bind:0"),
            ("preferred=1", "prefer:1"),
            ("localalloc", "local"),
        ] {
            let p: NumaPolicy = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
            assert_eq!(p.numa_maps_word(), word);
        }
        assert!("interleave"
            .parse::<NumaPolicy>()
            .unwrap_err()
            .contains("interleave=NODES"));
        assert!("preferred=0-1"
            .parse::<NumaPolicy>()
            .unwrap_err()
            .contains("one node"));
    }
}

/// For the agent protocol, which carries variants as their text.
impl TryFrom<String> for NumaPolicy {
    type Error = String;
    fn try_from(s: String) -> Result<NumaPolicy, String> {
        s.parse()
    }
}
