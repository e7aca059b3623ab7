//! `bakeoff host cpu|memory|fileio|threads|mutex`: the machine measured as sysbench measures
//! it, with its report.

use std::fmt::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Result};
use bakeoff_engine::Checkpoint;
use bakeoff_hostbench::cpu::Cpu;
use bakeoff_hostbench::locks;
use bakeoff_hostbench::memory::{Access, Block, Memory, Oper};
use bakeoff_hostbench::{ProbeTick, Worker};
use bakeoff_workload::Rng;

use crate::args::{CpuArgs, MemoryArgs, MutexArgs, ThreadsArgs};

mod files;
mod sweep;
pub use files::fileio_cmd;
use sweep::{rate_line, sweep, Probe};

struct CpuProbe(u64);

impl Probe for CpuProbe {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn mode(&self) -> String {
        format!("Prime numbers limit: {}\n\n", self.0)
    }
    fn workers(&self, threads: u32) -> Result<Vec<Box<dyn Worker>>> {
        Ok((0..threads)
            .map(|_| Box::new(Cpu { max_prime: self.0 }) as Box<dyn Worker>)
            .collect())
    }
    fn interval(&self, t: &ProbeTick) -> String {
        rate_line("eps", t)
    }
    fn result_block(&self, r: &Checkpoint) -> String {
        format!(
            "CPU speed:\n    events per second: {:>8.2}\n\n",
            r.total.events as f64 / r.seconds.max(1e-9)
        )
    }
}

struct MemoryProbe {
    block: u64,
    total: u64,
    local: bool,
    oper: Oper,
    access: Access,
}

impl Probe for MemoryProbe {
    fn name(&self) -> &'static str {
        "memory"
    }
    fn mode(&self) -> String {
        let oper = match self.oper {
            Oper::Read => "read",
            Oper::Write => "write",
            Oper::None => "none",
        };
        format!(
            "Running memory speed test with the following options:\n  block size: {}KiB\n  total size: {}MiB\n  operation: {oper}\n  scope: {}\n\n",
            self.block / 1024,
            self.total / 1024 / 1024,
            if self.local { "local" } else { "global" }
        )
    }
    fn workers(&self, threads: u32) -> Result<Vec<Box<dyn Worker>>> {
        let global = Arc::new(Block::new(self.block as usize).map_err(anyhow::Error::msg)?);
        // Each thread's share of the total (integer division, as sysbench: it can be 0).
        let per_thread = self.total / self.block / u64::from(threads);
        (0..threads)
            .map(|i| {
                let block = if self.local {
                    Arc::new(Block::new(self.block as usize).map_err(anyhow::Error::msg)?)
                } else {
                    global.clone()
                };
                Ok(Box::new(Memory {
                    block,
                    oper: self.oper,
                    access: self.access,
                    left: (self.total > 0).then_some(per_thread),
                    rng: Rng::seeded(0x5eed ^ u64::from(i)),
                }) as Box<dyn Worker>)
            })
            .collect()
    }
    fn interval(&self, t: &ProbeTick) -> String {
        format!(
            "{:.2} MiB/sec",
            t.window.events as f64 * self.block as f64 / 1_048_576.0 / t.window.seconds.max(1e-9)
        )
    }
    fn result_block(&self, r: &Checkpoint) -> String {
        let secs = r.seconds.max(1e-9);
        let mut s = format!(
            "Total operations: {} ({:8.2} per second)\n\n",
            r.total.events,
            r.total.events as f64 / secs
        );
        if self.oper != Oper::None {
            let mib = r.total.events as f64 * self.block as f64 / 1_048_576.0;
            let _ = writeln!(
                s,
                "{mib:.2} MiB transferred ({:.2} MiB/sec)\n\n",
                mib / secs
            );
        }
        s
    }
}

/// sysbench's threads and mutex tests; their mode lines are info-level in sysbench, so none
/// here, and their report is the general block alone.
enum LocksProbe {
    Threads { yields: u32, locks: u32 },
    Mutex { num: u32, locks: u32, loops: u32 },
}

impl Probe for LocksProbe {
    fn name(&self) -> &'static str {
        match self {
            LocksProbe::Threads { .. } => "threads",
            LocksProbe::Mutex { .. } => "mutex",
        }
    }
    fn mode(&self) -> String {
        String::new()
    }
    fn workers(&self, threads: u32) -> Result<Vec<Box<dyn Worker>>> {
        fn boxed<W: Worker + 'static>(w: Vec<W>) -> Vec<Box<dyn Worker>> {
            w.into_iter()
                .map(|w| Box::new(w) as Box<dyn Worker>)
                .collect()
        }
        Ok(match *self {
            LocksProbe::Threads { yields, locks } => {
                boxed(locks::threads_workers(threads, yields, locks))
            }
            LocksProbe::Mutex { num, locks, loops } => {
                boxed(locks::mutex_workers(threads, num, locks, loops, 0x5eed))
            }
        })
    }
    fn interval(&self, t: &ProbeTick) -> String {
        rate_line("eps", t)
    }
    fn result_block(&self, _: &Checkpoint) -> String {
        "\n".into()
    }
}

pub fn threads(a: &ThreadsArgs) -> Result<ExitCode> {
    let probe = LocksProbe::Threads {
        yields: a.thread_yields,
        locks: a.thread_locks,
    };
    sweep(&probe, &a.probe)
}

pub fn mutex(a: &MutexArgs) -> Result<ExitCode> {
    let probe = LocksProbe::Mutex {
        num: a.mutex_num,
        locks: a.mutex_locks,
        loops: a.mutex_loops,
    };
    sweep(&probe, &a.probe)
}

pub fn cpu(a: &CpuArgs) -> Result<ExitCode> {
    sweep(&CpuProbe(a.cpu_max_prime), &a.probe)
}

pub fn memory(a: &MemoryArgs) -> Result<ExitCode> {
    let b = a.memory_block_size;
    if b < 8 || !b.is_power_of_two() {
        bail!("--memory-block-size={b}: must be a power of 2, at least 8 (e.g. 1K)");
    }
    let probe = MemoryProbe {
        block: b,
        total: a.memory_total_size,
        local: a.memory_scope == "local",
        oper: match a.memory_oper.as_str() {
            "read" => Oper::Read,
            "none" => Oper::None,
            _ => Oper::Write,
        },
        access: if a.memory_access_mode == "rnd" {
            Access::Rnd
        } else {
            Access::Seq
        },
    };
    // As sysbench: memory's events are its total size in blocks, whatever --events says.
    let mut p = a.probe.clone();
    p.events = 0;
    sweep(&probe, &p)
}
