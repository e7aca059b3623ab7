//! The machine's profile as a study records it: each probe at sysbench's defaults (fileio
//! sized down to 256 MiB over 16 files so it takes seconds, not minutes), one figure each.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bakeoff_workload::Rng;
use serde::Serialize;

use crate::cpu::Cpu;
use crate::fileio::{self, FileioSpec, Mode};
use crate::memory::{Access, Block, Memory, Oper};
use crate::runner::{run, ProbeResult, ProbeSpec, Quiet, Worker};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HostProbe {
    Cpu,
    Memory,
    Fileio,
}

impl HostProbe {
    pub fn parse(s: &str) -> Option<HostProbe> {
        Some(match s {
            "cpu" => HostProbe::Cpu,
            "memory" => HostProbe::Memory,
            "fileio" => HostProbe::Fileio,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            HostProbe::Cpu => "cpu",
            HostProbe::Memory => "memory",
            HostProbe::Fileio => "fileio",
        }
    }
}

/// A probe's headline: the figure, its unit, and the run behind it.
#[derive(Debug, Clone, Serialize)]
pub struct Profiled {
    pub figure: f64,
    pub unit: &'static str,
    pub result: ProbeResult,
}

/// Run `probe` at `threads` for `time`; fileio works in a marked directory under `scratch`
/// and removes its files afterwards.
pub fn profile(
    probe: HostProbe,
    threads: u32,
    time: Duration,
    scratch: &Path,
    interrupt: &AtomicBool,
) -> Result<Profiled, String> {
    let spec = ProbeSpec {
        time: Some(time),
        events: None,
        tick: Duration::from_secs(1),
        percentile: 95.0,
        rate: None,
        checkpoints: Vec::new(),
    };
    let per_sec = |r: &ProbeResult, n: f64| n / r.elapsed_seconds.max(1e-9);
    match probe {
        HostProbe::Cpu => {
            let w = (0..threads)
                .map(|_| Box::new(Cpu { max_prime: 10_000 }) as Box<dyn Worker>)
                .collect();
            let r = run(&spec, w, interrupt, &mut Quiet);
            Ok(Profiled {
                figure: per_sec(&r, r.total.events as f64),
                unit: "events/s",
                result: r,
            })
        }
        HostProbe::Memory => {
            let block = Arc::new(Block::new(1024)?);
            let per_thread = (100u64 << 30) / 1024 / u64::from(threads);
            let w = (0..threads)
                .map(|i| {
                    Box::new(Memory {
                        block: block.clone(),
                        oper: Oper::Write,
                        access: Access::Seq,
                        left: Some(per_thread),
                        rng: Rng::seeded(u64::from(i)),
                    }) as Box<dyn Worker>
                })
                .collect();
            let r = run(&spec, w, interrupt, &mut Quiet);
            Ok(Profiled {
                figure: per_sec(&r, r.total.events as f64 * 1024.0 / 1_048_576.0),
                unit: "MiB/s",
                result: r,
            })
        }
        HostProbe::Fileio => {
            // A fresh name, made here (0700, exclusively): a fixed one in a shared temporary
            // directory is one another local user can prepare first.
            let name = bakeoff_driver::random_hex(8).map_err(|e| e.to_string())?;
            let fs = FileioSpec::new(
                scratch.join(format!("bakeoff-fileio-{name}")),
                16,
                256 << 20,
                Mode::Rndrw,
            );
            fileio::prepare(&fs, |_, _| {})?;
            let outcome = fileio::workers(&fs, threads, 1).map(|(w, c)| {
                let r = run(&spec, w, interrupt, &mut Quiet);
                let ops = c.reads.load(Ordering::Relaxed) + c.writes.load(Ordering::Relaxed);
                Profiled {
                    figure: per_sec(&r, ops as f64),
                    unit: "reads+writes/s",
                    result: r,
                }
            });
            fileio::cleanup(&fs)?;
            outcome
        }
    }
}
