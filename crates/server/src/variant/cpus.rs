//! CPU lists as taskset and /proc print them: "0", "0-3", "0,2,4-5".

use std::collections::BTreeSet;
use std::fmt;
use std::io;
use std::str::FromStr;

/// A set of CPU (or NUMA node) numbers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuList(BTreeSet<u32>);

impl CpuList {
    pub fn contains(&self, n: u32) -> bool {
        self.0.contains(&n)
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    pub fn is_subset(&self, other: &CpuList) -> bool {
        self.0.is_subset(&other.0)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn single(cpu: u32) -> CpuList {
        CpuList(BTreeSet::from([cpu]))
    }

    /// A list of these CPUs; None when there are none (a CpuList is never empty).
    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> Option<CpuList> {
        let set: BTreeSet<u32> = cpus.into_iter().filter(|&c| c < 1024).collect();
        (!set.is_empty()).then_some(CpuList(set))
    }

    pub fn union(&self, other: &CpuList) -> CpuList {
        CpuList(self.0.union(&other.0).copied().collect())
    }

    /// The CPUs in both; None when they share none.
    pub fn intersection(&self, other: &CpuList) -> Option<CpuList> {
        CpuList::from_cpus(self.0.intersection(&other.0).copied())
    }

    /// The CPUs of `self` not in `other`; None when none are left.
    pub fn difference(&self, other: &CpuList) -> Option<CpuList> {
        CpuList::from_cpus(self.0.difference(&other.0).copied())
    }

    /// The kernel's bitmask for sched_setaffinity.
    pub fn to_cpu_set(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for c in self.iter() {
            // SAFETY: a CpuList holds numbers below 1024, the set's size (CPU_SETSIZE).
            unsafe { libc::CPU_SET(c as usize, &mut set) };
        }
        set
    }
}

impl FromStr for CpuList {
    type Err = String;

    fn from_str(s: &str) -> Result<CpuList, String> {
        let mut set = BTreeSet::new();
        for part in s.trim().split(',').filter(|p| !p.is_empty()) {
            let bad = || format!("'{part}' in '{s}' is not a number or a range like 0-3");
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (
                    a.trim().parse::<u32>().map_err(|_| bad())?,
                    b.trim().parse::<u32>().map_err(|_| bad())?,
                ),
                None => {
                    let n = part.trim().parse::<u32>().map_err(|_| bad())?;
                    (n, n)
                }
            };
            // 1024: the size of the kernel interface's default cpu_set_t (CPU_SETSIZE).
            if lo > hi || hi >= 1024 {
                return Err(bad());
            }
            set.extend(lo..=hi);
        }
        if set.is_empty() {
            return Err(format!("'{s}' names no CPU; write a list like 0-3 or 0,2"));
        }
        Ok(CpuList(set))
    }
}

/// Ranges collapsed, as the kernel prints them.
impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut iter = self.0.iter().copied().peekable();
        while let Some(lo) = iter.next() {
            let mut hi = lo;
            while iter.peek() == Some(&(hi + 1)) {
                hi = iter.next().unwrap_or(hi);
            }
            parts.push(if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            });
        }
        f.write_str(&parts.join(","))
    }
}

impl From<CpuList> for String {
    fn from(c: CpuList) -> String {
        c.to_string()
    }
}

/// CPUs online on this machine that this process's cgroup lets it use (a container's cpuset
/// can be smaller than the machine; sched_setaffinity refuses CPUs outside it).
pub fn online_cpus() -> io::Result<CpuList> {
    let online: CpuList = read_list("/sys/devices/system/cpu/online")?;
    match read_list("/sys/fs/cgroup/cpuset.cpus.effective") {
        Ok(cg) => Ok(online.intersection(&cg).unwrap_or(online)),
        Err(_) => Ok(online),
    }
}

fn read_list(path: &str) -> io::Result<CpuList> {
    std::fs::read_to_string(path)?
        .trim()
        .parse()
        .map_err(|e: String| io::Error::other(format!("{path}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_taskset_takes_and_prints_what_proc_prints() {
        for (input, shown) in [
            ("0", "0"),
            ("0-1", "0-1"),
            ("0,2", "0,2"),
            ("3,0-1,2", "0-3"),
            ("0-1,5-6", "0-1,5-6"),
        ] {
            assert_eq!(
                input.parse::<CpuList>().unwrap().to_string(),
                shown,
                "{input}"
            );
        }
    }

    #[test]
    fn rejects_what_is_not_a_list_with_the_culprit() {
        for bad in ["", "a", "3-1", "0-", "1,,x", "5000"] {
            let e = bad.parse::<CpuList>().unwrap_err();
            assert!(e.contains('\''), "{bad}: {e}");
        }
    }
}

/// For the agent protocol, which carries variants as their text.
impl TryFrom<String> for CpuList {
    type Error = String;
    fn try_from(s: String) -> Result<CpuList, String> {
        s.parse()
    }
}
