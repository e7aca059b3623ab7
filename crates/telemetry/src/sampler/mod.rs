//! Samplers: what the server process, the host and the client did over an interval, read
//! from /proc and from the server's SHOW GLOBAL STATUS. The only part of this crate that
//! touches the file system or a connection.

mod listener;
mod merge;
mod procfs;
mod status;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bakeoff_driver::ConnectOptions;
use serde::{Deserialize, Serialize};

pub use listener::listening_process;
pub use procfs::own_cpu_seconds;
use procfs::{read_host, read_kernel_threads, HostReading};
pub use procfs::{read_process, ProcReading};
use status::{StatusReader, GAUGES};

/// The server process over one interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerSample {
    pub cpu_user_seconds: f64,
    pub cpu_sys_seconds: f64,
    /// At the end of the interval.
    pub rss_bytes: u64,
    pub vsz_bytes: u64,
    pub threads: u64,
    /// Growth over the interval (negative when memory was returned).
    pub rss_growth_bytes: i64,
    pub vsz_growth_bytes: i64,
    pub voluntary_context_switches: u64,
    pub involuntary_context_switches: u64,
    /// Resident bytes per NUMA node at the end (machines with more than one node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_node_bytes: Option<BTreeMap<u32, u64>>,
}

/// Shares of all CPU time on the host over the interval.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostSample {
    pub user: f64,
    /// System time, the kernel's interrupt and softirq work included.
    pub sys: f64,
    /// Of `sys`, the interrupts and softirqs: charged to no process, mostly the run's own I/O
    /// (a server's disk completions and network) on a machine that runs the load alone.
    #[serde(default)]
    pub irq: f64,
    /// Of `sys`, the kernel's threads (kworkers' writeback, jbd2, kswapd): charged to no
    /// process either, and on a machine that runs the load mostly the run's own writes. Read
    /// over a whole run only (0 in its ticks); threads that ended during it are not counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kernel_threads: f64,
    pub iowait: f64,
    pub idle: f64,
    pub steal: f64,
}

/// Everything sampled over one interval (a Tick, or the whole run).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Telemetry {
    pub seconds: f64,
    /// None when the server is not a local process bakeoff knows (a remote server).
    pub server: Option<ServerSample>,
    pub host: HostSample,
    /// CPU seconds bakeoff itself used, and that as a share of the CPUs its client threads
    /// may use.
    pub client_cpu_seconds: f64,
    pub client_cpu_share: f64,
    /// The client used >= 90% of the CPU it may use: the figures may measure the client.
    pub client_bound: bool,
    /// CPU seconds the client spent polling sockets that had nothing yet (a client that polls
    /// instead of sleeping), left out of `client_cpu_seconds`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub client_idle_poll_seconds: f64,
    /// SHOW GLOBAL STATUS: deltas of Com_*, Innodb_rows_*, Handler_*, buffer pool reads
    /// (nonzero ones), values of Threads_running and Threads_connected.
    pub status: BTreeMap<String, i64>,
    pub server_cpu_us_per_event: Option<f64>,
    pub context_switches_per_event: Option<f64>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

#[derive(Clone)]
struct Reading {
    server: Option<ProcReading>,
    host: HostReading,
    /// The client's CPU seconds, less `idle`.
    client: f64,
    idle: f64,
    status: Option<BTreeMap<String, i64>>,
    /// Kernel threads' CPU seconds by pid, at the span's two ends only.
    kernel: Option<BTreeMap<u32, f64>>,
}

/// Reads a server process's counters where /proc cannot: on the server's own host, through
/// its agent. None when it cannot (the process or the link is gone).
pub type RemoteProcess = std::sync::Arc<dyn Fn() -> Option<ProcReading> + Send + Sync>;

/// Reads the CPU time (user, system seconds) of every process of the servers sampled.
pub type CpuReader = std::sync::Arc<dyn Fn() -> Option<(f64, f64)> + Send + Sync>;

/// One server to sample: its process when it runs here (or a reader of it on its host), and
/// how to read its status.
#[derive(Default)]
pub struct SampleTarget {
    pub pid: Option<u32>,
    pub status: Option<ConnectOptions>,
    pub remote: Option<RemoteProcess>,
}

/// Where a server's process counters come from.
enum Process {
    Here(u32),
    There(RemoteProcess),
}

impl Process {
    fn read(&self, numa: bool) -> Option<ProcReading> {
        match self {
            Process::Here(pid) => read_process(*pid, numa),
            Process::There(f) => f(),
        }
    }
}

/// Whether this machine has more than one NUMA node (worth reading numa_maps for).
pub fn several_nodes() -> bool {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .map(|n| n.trim() != "0")
        .unwrap_or(false)
}

/// Samples the server processes (summed when the load is spread over several instances), the
/// host and this process.
pub struct Sampler {
    processes: Vec<Process>,
    numa: bool,
    status: Vec<StatusReader>,
    client_cpus: f64,
    /// Nanoseconds of the client's CPU it spent polling by choice (see `discount_client`).
    idle_client_ns: Option<Arc<AtomicU64>>,
    /// Where the servers' CPU time is read instead of /proc (see `cpu_from`).
    cpu: Option<CpuReader>,
    first: Option<Reading>,
    last: Option<Reading>,
    /// Whether `begin` and `total` walk /proc for the kernel threads' CPU (a run's two
    /// ends); not for a turn's slices, which begin twenty times a second and never total.
    kernel_threads: bool,
}

impl Sampler {
    /// `client_cpus`: how many CPUs the client's threads can use at most.
    pub fn new(targets: Vec<SampleTarget>, client_cpus: u32) -> Sampler {
        let processes: Vec<Process> = targets
            .iter()
            .filter_map(|t| match (&t.remote, t.pid) {
                (Some(f), _) => Some(Process::There(f.clone())),
                (None, Some(pid)) => Some(Process::Here(pid)),
                (None, None) => None,
            })
            .collect();
        Sampler {
            // Every server's process, or none: a partial sum would read as a smaller server.
            processes: if processes.len() == targets.len() {
                processes
            } else {
                Vec::new()
            },
            // Walking numa_maps costs the server page-table locks; on one node it says nothing
            // that RSS does not.
            numa: several_nodes(),
            status: targets
                .into_iter()
                .filter_map(|t| t.status.and_then(StatusReader::new))
                .collect(),
            client_cpus: f64::from(client_cpus.max(1)),
            idle_client_ns: None,
            cpu: None,
            first: None,
            last: None,
            kernel_threads: true,
        }
    }

    /// A sampler of turns' slices: no walk of /proc for the kernel threads at each begin.
    pub fn slices_only(mut self) -> Sampler {
        self.kernel_threads = false;
        self
    }

    fn read(&mut self) -> Reading {
        let servers: Option<Vec<ProcReading>> =
            self.processes.iter().map(|p| p.read(self.numa)).collect();
        // A server that did not answer this time leaves the whole reading without status,
        // rather than a sum that looks like a drop.
        let mut status: Option<BTreeMap<String, i64>> =
            (!self.status.is_empty()).then(BTreeMap::new);
        for reader in &mut self.status {
            let (Some(m), Some(total)) = (reader.read(), status.as_mut()) else {
                status = None;
                break;
            };
            m.into_iter()
                .for_each(|(k, v)| *total.entry(k).or_insert(0) += v);
        }
        let idle = self
            .idle_client_ns
            .as_ref()
            .map_or(0.0, |n| n.load(Ordering::Relaxed) as f64 / 1e9);
        let mut server = servers.filter(|s| !s.is_empty()).map(|s| sum(&s));
        if let (Some(r), Some(cpu)) = (server.as_mut(), &self.cpu) {
            // The kernel's own count or nothing: /proc's ticks beside it would mix clocks.
            match cpu() {
                Some((user, sys)) => (r.user_s, r.sys_s) = (user, sys),
                None => server = None,
            }
        }
        Reading {
            server,
            host: read_host(),
            client: own_cpu_seconds() - idle,
            idle,
            status,
            kernel: None,
        }
    }

    /// A reading with the kernel threads' CPU: the span's ends.
    fn read_ends(&mut self) -> Reading {
        let mut r = self.read();
        r.kernel = self.kernel_threads.then(read_kernel_threads);
        r
    }

    /// The client's CPU is counted less what `ns` says it spent idle by choice (polling
    /// sockets that had nothing), so its share still says whether the load needed the CPU.
    pub fn discount_client(&mut self, ns: Arc<AtomicU64>) {
        self.idle_client_ns = Some(ns);
    }

    /// The servers' CPU time (user, system seconds, all of them together) read from `f`
    /// instead of /proc's clock ticks: a cgroup's count, in microseconds, where the servers
    /// have one of their own.
    pub fn cpu_from(&mut self, f: CpuReader) {
        self.cpu = Some(f);
    }

    /// Start of the measured span.
    pub fn begin(&mut self) {
        let r = self.read_ends();
        self.first = Some(r.clone());
        self.last = Some(r);
    }

    /// The interval since the last call (or `begin`).
    pub fn tick(&mut self, seconds: f64, events: u64) -> Option<Telemetry> {
        let now = self.read();
        let before = self.last.replace(now.clone())?;
        Some(self.delta(&before, &now, seconds, events))
    }

    /// The whole span since `begin`, read now.
    pub fn total(&mut self, seconds: f64, events: u64) -> Option<Telemetry> {
        let now = self.read_ends();
        let first = self.first.clone()?;
        self.last = Some(now.clone());
        Some(self.delta(&first, &now, seconds, events))
    }

    fn delta(&self, a: &Reading, b: &Reading, seconds: f64, events: u64) -> Telemetry {
        let server = match (&a.server, &b.server) {
            (Some(x), Some(y)) => Some(ServerSample {
                cpu_user_seconds: (y.user_s - x.user_s).max(0.0),
                cpu_sys_seconds: (y.sys_s - x.sys_s).max(0.0),
                rss_bytes: y.rss_bytes,
                vsz_bytes: y.vsz_bytes,
                threads: y.threads,
                rss_growth_bytes: y.rss_bytes as i64 - x.rss_bytes as i64,
                vsz_growth_bytes: y.vsz_bytes as i64 - x.vsz_bytes as i64,
                voluntary_context_switches: y.voluntary.saturating_sub(x.voluntary),
                involuntary_context_switches: y.involuntary.saturating_sub(x.involuntary),
                numa_node_bytes: y.numa_bytes.clone(),
            }),
            _ => None,
        };
        let h = |f: fn(&HostReading) -> f64| f(&b.host) - f(&a.host);
        let host_total = h(|r| r.user + r.sys + r.iowait + r.idle + r.steal).max(1e-9);
        let client = (b.client - a.client).max(0.0);
        let client_share = client / (seconds.max(1e-9) * self.client_cpus);
        let per_event = |v: f64| (events > 0).then(|| v / events as f64);
        Telemetry {
            seconds,
            host: HostSample {
                user: h(|r| r.user) / host_total,
                sys: h(|r| r.sys) / host_total,
                irq: h(|r| r.irq) / host_total,
                iowait: h(|r| r.iowait) / host_total,
                idle: h(|r| r.idle) / host_total,
                steal: h(|r| r.steal) / host_total,
                kernel_threads: kernel_seconds(a, b) / host_total,
            },
            client_cpu_seconds: client,
            client_cpu_share: client_share,
            client_bound: client_share >= 0.9,
            client_idle_poll_seconds: (b.idle - a.idle).max(0.0),
            status: status_delta(a.status.as_ref(), b.status.as_ref()),
            server_cpu_us_per_event: server
                .as_ref()
                .and_then(|s| per_event((s.cpu_user_seconds + s.cpu_sys_seconds) * 1e6)),
            context_switches_per_event: server.as_ref().and_then(|s| {
                per_event((s.voluntary_context_switches + s.involuntary_context_switches) as f64)
            }),
            server,
        }
    }
}

/// The kernel threads' CPU seconds between two readings that have them: each thread's
/// growth, a thread born meanwhile from zero (one that ended meanwhile is lost with it).
fn kernel_seconds(a: &Reading, b: &Reading) -> f64 {
    let (Some(x), Some(y)) = (&a.kernel, &b.kernel) else {
        return 0.0;
    };
    y.iter()
        .map(|(pid, s)| (s - x.get(pid).copied().unwrap_or(0.0)).max(0.0))
        .sum()
}

fn sum(readings: &[ProcReading]) -> ProcReading {
    let mut total = ProcReading::default();
    for r in readings {
        total.user_s += r.user_s;
        total.sys_s += r.sys_s;
        total.threads += r.threads;
        total.vsz_bytes += r.vsz_bytes;
        total.rss_bytes += r.rss_bytes;
        total.voluntary += r.voluntary;
        total.involuntary += r.involuntary;
        if let Some(nodes) = &r.numa_bytes {
            let t = total.numa_bytes.get_or_insert_with(BTreeMap::new);
            nodes
                .iter()
                .for_each(|(n, b)| *t.entry(*n).or_insert(0) += b);
        }
    }
    total
}

fn status_delta(
    a: Option<&BTreeMap<String, i64>>,
    b: Option<&BTreeMap<String, i64>>,
) -> BTreeMap<String, i64> {
    let (Some(a), Some(b)) = (a, b) else {
        return BTreeMap::new();
    };
    b.iter()
        .filter_map(|(k, v)| {
            let d = if GAUGES.contains(&k.as_str()) {
                *v
            } else {
                v - a.get(k).copied().unwrap_or(0)
            };
            (d != 0).then(|| (k.clone(), d))
        })
        .collect()
}
