//! Raw counters from /proc: a process (the server), the host's CPU time, our own CPU time.

use std::collections::BTreeMap;

/// Clock ticks per second for /proc/*/stat times, bytes per page for its rss field.
fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(1) as u64
}

/// One reading of a process's counters (also what an agent sends back for a server on its
/// host).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ProcReading {
    pub user_s: f64,
    pub sys_s: f64,
    pub threads: u64,
    pub vsz_bytes: u64,
    pub rss_bytes: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    /// Bytes per NUMA node, when asked for (it walks the page tables, so not by default).
    pub numa_bytes: Option<BTreeMap<u32, u64>>,
}

/// None when the process is gone. A server of processes (PostgreSQL's postmaster and its
/// backends and workers) is read whole: its children's CPU, threads, context switches and
/// private memory are added, and the CPU of children it has reaped (cutime, cstime: the
/// backends of connections that ended) too. A server of threads (mariadbd) has no children,
/// so its reading is its own.
pub fn read_process(pid: u32, numa: bool) -> Option<ProcReading> {
    let (mut r, reaped) = read_one(pid, numa)?;
    r.user_s += reaped.0;
    r.sys_s += reaped.1;
    for child in children(pid) {
        let Some((c, _)) = read_one(child, false) else {
            continue; // ended meanwhile: its time is in the next reading's cutime
        };
        r.user_s += c.user_s;
        r.sys_s += c.sys_s;
        r.threads += c.threads;
        r.voluntary += c.voluntary;
        r.involuntary += c.involuntary;
        // Shared memory (PostgreSQL's buffers) is counted once, in the parent.
        r.rss_bytes += private_bytes(child).unwrap_or(0);
    }
    Some(r)
}

/// One process's reading, and the CPU of the children it has waited for (user, sys).
fn read_one(pid: u32, numa: bool) -> Option<(ProcReading, (f64, f64))> {
    let stat = proc_text(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let (voluntary, involuntary) = context_switches(pid);
    let reading = ProcReading {
        user_s: num(11) as f64 / clk_tck(),
        sys_s: num(12) as f64 / clk_tck(),
        threads: num(17),
        vsz_bytes: num(20),
        rss_bytes: num(21) * page_size(),
        voluntary,
        involuntary,
        numa_bytes: numa.then(|| numa_bytes(pid)).flatten(),
    };
    let reaped = (num(13) as f64 / clk_tck(), num(14) as f64 / clk_tck());
    Some((reading, reaped))
}

/// The process's children (its main thread's: a process server forks from it).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Resident memory that is not shared (statm's resident less shared pages).
fn private_bytes(pid: u32) -> Option<u64> {
    let statm = proc_text(format!("/proc/{pid}/statm"))?;
    let mut f = statm
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse::<u64>().unwrap_or(0));
    let (resident, shared) = (f.next()?, f.next()?);
    Some(resident.saturating_sub(shared) * page_size())
}

/// Context switches of all the process's threads (/proc/PID/status counts only the main
/// thread's), voluntary and involuntary. Threads that ended take their counts with them.
fn context_switches(pid: u32) -> (u64, u64) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    let mut sum = (0, 0);
    for t in tasks.flatten() {
        let Some(status) = proc_text(t.path().join("status")) else {
            continue;
        };
        for line in status.lines() {
            let num = |v: &str| v.trim().parse::<u64>().unwrap_or(0);
            if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
                sum.0 += num(v);
            } else if let Some(v) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
                sum.1 += num(v);
            }
        }
    }
    sum
}

/// Sum of `N<node>=<pages>` times the mapping's page size over /proc/PID/numa_maps.
fn numa_bytes(pid: u32) -> Option<BTreeMap<u32, u64>> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")).ok()?;
    let mut out = BTreeMap::new();
    for line in maps.lines() {
        let kb = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("kernelpagesize_kB="))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(4);
        for w in line.split_whitespace() {
            let Some((node, pages)) = w.strip_prefix('N').and_then(|r| r.split_once('=')) else {
                continue;
            };
            if let (Ok(node), Ok(pages)) = (node.parse::<u32>(), pages.parse::<u64>()) {
                *out.entry(node).or_insert(0) += pages * kb * 1024;
            }
        }
    }
    Some(out)
}

/// The host's CPU time by kind, seconds since boot (first line of /proc/stat).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HostReading {
    pub user: f64,
    /// System time, interrupts and softirqs included.
    pub sys: f64,
    /// Interrupts and softirqs alone (charged to no process).
    pub irq: f64,
    pub iowait: f64,
    pub idle: f64,
    pub steal: f64,
}

pub(crate) fn read_host() -> HostReading {
    let stat = proc_text("/proc/stat").unwrap_or_default();
    let v: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse::<f64>().unwrap_or(0.0) / clk_tck())
        .collect();
    let g = |i: usize| v.get(i).copied().unwrap_or(0.0);
    // user nice system idle iowait irq softirq steal guest guest_nice (guest is in user)
    HostReading {
        user: g(0) + g(1),
        sys: g(2) + g(5) + g(6),
        irq: g(5) + g(6),
        idle: g(3),
        iowait: g(4),
        steal: g(7),
    }
}

/// Every kernel thread's CPU seconds (user + system), by pid: kthreadd's children, which do
/// the kernel's work that no process is charged for (writeback by kworkers, the journal's
/// jbd2, kswapd's reclaim). ksoftirqd is left out: its time is the softirq time /proc/stat
/// already counts apart. Read at a run's two ends only: a walk of /proc.
pub(crate) fn read_kernel_threads() -> BTreeMap<u32, f64> {
    let mut out = BTreeMap::new();
    let Ok(all) = process_ids() else {
        return out;
    };
    for pid in all {
        let Some(stat) = proc_text(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ... utime stime": comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let ppid = rest.get(1).and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(2) || comm.starts_with("ksoftirqd") {
            continue;
        }
        let ticks = |i: usize| {
            rest.get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // Fields 14 and 15 of stat, 12 and 13 after the state.
        out.insert(pid, (ticks(11) + ticks(12)) / clk_tck());
    }
    out
}

/// Every process's id in /proc, as they are listed (an error: /proc cannot be read).
pub(crate) fn process_ids() -> std::io::Result<impl Iterator<Item = u32>> {
    Ok(std::fs::read_dir("/proc")?
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok())))
}

/// CPU seconds (user + system) this process has used, all threads.
pub fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// A /proc file's text in about two reads. /proc reports its files as empty, so
/// `fs::read_to_string` starts with 32-byte probes and grows from there: six reads and more
/// for a thread's status, once per server thread per sample, on the client's CPU.
fn proc_text(path: impl AsRef<std::path::Path>) -> Option<String> {
    use std::io::Read;
    let mut text = String::with_capacity(4096);
    std::fs::File::open(path)
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_reads_back_sensibly() {
        let r = read_process(std::process::id(), true).expect("our own /proc entry");
        assert!(
            r.threads >= 1 && r.rss_bytes > 0 && r.vsz_bytes >= r.rss_bytes,
            "{r:?}"
        );
        let nodes = r
            .numa_bytes
            .expect("numa_maps is readable for our own process");
        assert!(nodes.values().sum::<u64>() > 0, "{nodes:?}");
        let h = read_host();
        assert!(h.user + h.sys + h.idle > 0.0);
    }

    /// Where this system shows kthreadd (pid 2), its children are read, each with a CPU time;
    /// where it does not (a PID namespace), there is nothing to count and nothing is made up.
    #[test]
    fn kernel_threads_are_kthreadds_children() {
        let threads = super::read_kernel_threads();
        let kthreadd =
            std::fs::read_to_string("/proc/2/stat").is_ok_and(|s| s.contains("(kthreadd)"));
        assert_eq!(!threads.is_empty(), kthreadd, "{threads:?}");
        assert!(threads.values().all(|s| s.is_finite() && *s >= 0.0));
        assert!(
            !threads.contains_key(&std::process::id()),
            "this process is not the kernel's"
        );
    }
}
