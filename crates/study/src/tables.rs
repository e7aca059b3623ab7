//! The commands on a given server's tables (`bakeoff prepare`, `prewarm`, `cleanup`): the
//! dataset's own steps, and for prepare the CPU each side spent on it, so its report can say
//! where the time went.

use bakeoff_driver::ConnectOptions;
use bakeoff_server::placement::{process_cpus, thread_cpus};
use bakeoff_server::variant::CpuList;
use bakeoff_telemetry::{own_cpu_seconds, read_process};
use bakeoff_workload::dataset::{self, DatasetError, Prepared, Progress};

use crate::cell::{load_tables, Load};

/// Load the tables into the server at `opts` (whose process is `server_pid` when known here),
/// metering the CPU this process and the server spent on it.
pub fn prepare(
    opts: &ConnectOptions,
    load: &Load<'_>,
    server_pid: Option<u32>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(Prepared, Spent), DatasetError> {
    let cpu = CpuMeter::start(server_pid);
    if load.shared {
        let p = dataset::prepare_shared(
            opts,
            load.workload,
            load.threads,
            load.seed,
            load.interrupt,
            progress,
        )?;
        return Ok((p, cpu.stop()));
    }
    let mut prepared = load_tables(&runtime()?, std::slice::from_ref(opts), load, progress)?;
    let prepared = prepared.pop().expect("one server, one report");
    Ok((prepared, cpu.stop()))
}

/// Read every table into the server's buffer pool; the number of tables read.
pub fn prewarm(
    opts: &ConnectOptions,
    load: &Load<'_>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<u32, DatasetError> {
    let p = dataset::prewarm(opts, load.workload, load.threads, load.loaders, progress);
    runtime()?.block_on(p)
}

/// Refuse unless the load's tables are the ones `bakeoff prepare` made (`dataset::check_tables`).
pub fn check_marked(opts: &ConnectOptions, load: &Load<'_>) -> Result<(), DatasetError> {
    let check = dataset::check_tables(opts, load.workload, load.threads, dataset::Adopt::Marked);
    runtime()?.block_on(check)
}

/// Drop the tables bakeoff made in the server at `opts`, and only those; or, given the tables
/// `shared` with sysbench, those tables, as sysbench's cleanup does. The tables dropped.
pub fn cleanup(
    opts: &ConnectOptions,
    shared: Option<&Load<'_>>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let rt = runtime()?;
    match shared {
        Some(t) => rt.block_on(dataset::cleanup_shared(
            opts, t.workload, t.threads, progress,
        )),
        None => rt.block_on(bakeoff_workload::cleanup_tables(opts, progress)),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, DatasetError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DatasetError::Thread(e.to_string()))
}

/// CPU seconds of this process (rusage, to the microsecond) and of the server (its /proc
/// stat, in clock ticks; when its process is known and readable here), from one reading to
/// the next.
struct CpuMeter {
    client: f64,
    server: Option<(u32, f64)>,
}

/// The CPU both sides spent on the work and the CPUs each may use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    pub client_seconds: f64,
    pub client_cpus: u32,
    /// Seconds and the server's CPUs; None when its process is not known here.
    pub server: Option<(f64, u32)>,
}

fn cpu_seconds(pid: u32) -> Option<f64> {
    read_process(pid, false).map(|p| p.user_s + p.sys_s)
}

impl CpuMeter {
    /// Start counting; `server` is the server's pid when known (embedded, or a unix socket's
    /// peer).
    pub fn start(server: Option<u32>) -> CpuMeter {
        CpuMeter {
            client: own_cpu_seconds(),
            server: server.and_then(|pid| Some((pid, cpu_seconds(pid)?))),
        }
    }

    pub fn stop(&self) -> Spent {
        let count = |c: Option<CpuList>| c.map_or(1, |c| c.len().max(1) as u32);
        Spent {
            client_seconds: own_cpu_seconds() - self.client,
            client_cpus: count(thread_cpus().ok()),
            server: self.server.and_then(|(pid, before)| {
                Some((cpu_seconds(pid)? - before, count(process_cpus(pid))))
            }),
        }
    }
}
