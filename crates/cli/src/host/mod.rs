//! `bakeoff host cpu|memory|fileio|threads|mutex`: the machine measured as sysbench measures
//! it, with its report.

use std::fmt::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use bakeoff_hostbench::cpu::Cpu;
use bakeoff_hostbench::fileio::{self, Counters, FileState, FileioSpec, Mode};
use bakeoff_hostbench::locks;
use bakeoff_hostbench::memory::{Access, Block, Memory, Oper};
use bakeoff_hostbench::{run, ProbeResult, ProbeSpec, ProbeTick, Worker};
use bakeoff_workload::Rng;
use serde::Serialize;

use crate::args::{CpuArgs, FileioArgs, Format, MemoryArgs, MutexArgs, ProbeArgs, ThreadsArgs};
use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED, INTERRUPTED};
use crate::output;

fn spec(p: &ProbeArgs) -> ProbeSpec {
    ProbeSpec {
        time: (p.time > 0).then(|| Duration::from_secs(p.time)),
        events: (p.events > 0).then_some(p.events),
        tick: Duration::from_secs(p.report_interval.max(1)),
        percentile: p.percentile,
        rate: (p.rate > 0).then_some(p.rate as f64),
    }
}

/// What a probe adds to the report, and its headline figure for JSON.
trait Probe {
    fn name(&self) -> &'static str;
    fn mode(&self) -> String;
    fn workers(&self, threads: u32) -> Result<Vec<Box<dyn Worker>>>;
    fn interval(&self, t: &ProbeTick) -> String;
    fn result_block(&self, r: &ProbeResult) -> String;
}

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
    fn result_block(&self, r: &ProbeResult) -> String {
        format!(
            "CPU speed:\n    events per second: {:>8.2}\n\n",
            r.total.events as f64 / r.elapsed_seconds.max(1e-9)
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
    fn result_block(&self, r: &ProbeResult) -> String {
        let secs = r.elapsed_seconds.max(1e-9);
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

struct FileioProbe {
    spec: FileioSpec,
    seed: u64,
    /// --events, which sysbench states as the number of IO requests (0: no limit).
    events: u64,
    /// The counters of the run in progress (set by `workers`).
    counters: std::cell::RefCell<Option<Arc<Counters>>>,
}

impl Probe for FileioProbe {
    fn name(&self) -> &'static str {
        "fileio"
    }
    /// sysbench's lines, in its order; no blank line after them (cpu's and memory's have one).
    fn mode(&self) -> String {
        let s = &self.spec;
        let mut m = format!(
            "Extra file open flags: {}\n{} files, {}B each\n{}B total file size\nBlock size {}B\n",
            extra_flags(s),
            s.num,
            size_str(s.file_size()),
            size_str(s.file_size() * u64::from(s.num)),
            size_str(s.block)
        );
        if matches!(s.mode, Mode::Rndrd | Mode::Rndwr | Mode::Rndrw) {
            let _ = writeln!(m, "Number of IO requests: {}", self.events);
            let _ = writeln!(
                m,
                "Read/Write ratio for combined random IO test: {:.2}",
                s.rw_ratio
            );
        }
        if s.fsync_freq > 0 {
            let _ = writeln!(
                m,
                "Periodic FSYNC enabled, calling fsync() each {} requests.",
                s.fsync_freq
            );
        }
        if s.fsync_end {
            m.push_str("Calling fsync() at the end of test, Enabled.\n");
        }
        if s.fsync_all {
            m.push_str("Calling fsync() after each write operation.\n");
        }
        m.push_str("Using synchronous I/O mode\n");
        if s.validate {
            m.push_str("Using checksums validation.\n");
        }
        let _ = writeln!(m, "Doing {}", s.mode.describe());
        m
    }
    fn workers(&self, threads: u32) -> Result<Vec<Box<dyn Worker>>> {
        let (w, c) = fileio::workers(&self.spec, threads, self.seed).map_err(anyhow::Error::msg)?;
        *self.counters.borrow_mut() = Some(c);
        Ok(w)
    }
    fn interval(&self, t: &ProbeTick) -> String {
        rate_line("events/s", t)
    }
    fn result_block(&self, r: &ProbeResult) -> String {
        let secs = r.elapsed_seconds.max(1e-9);
        let c = self.counters.borrow();
        let get = |f: fn(&Counters) -> &std::sync::atomic::AtomicU64| {
            c.as_ref()
                .map_or(0, |c| f(c).load(std::sync::atomic::Ordering::Relaxed)) as f64
        };
        let (reads, writes, fsyncs) = (get(|c| &c.reads), get(|c| &c.writes), get(|c| &c.fsyncs));
        let mib = |n: f64| n * self.spec.block as f64 / 1_048_576.0 / secs;
        format!(
            "\nFile operations:\n    reads/s:                      {:.2}\n    writes/s:                     {:.2}\n    fsyncs/s:                     {:.2}\n\nThroughput:\n    read, MiB/s:                  {:.2}\n    written, MiB/s:               {:.2}\n\n",
            reads / secs,
            writes / secs,
            fsyncs / secs,
            mib(reads),
            mib(writes)
        )
    }
}

/// A size as sysbench prints one: in the largest binary unit it reaches, to five significant
/// digits (16384 -> "16Ki", 163840 -> "160Ki", 4097 -> "4.001Ki").
fn size_str(bytes: u64) -> String {
    let (mut v, mut unit) = (bytes as f64, 0);
    while v >= 1024.0 && unit < 5 {
        v /= 1024.0;
        unit += 1;
    }
    let digits = if v >= 1.0 {
        v.log10().floor() as i32 + 1
    } else {
        1
    };
    let decimals = (5 - digits).max(0) as usize;
    let mut n = format!("{v:.decimals$}");
    if n.contains('.') {
        n = n.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    match unit {
        0 => n,
        u => format!("{n}{}i", ['K', 'M', 'G', 'T', 'P'][u - 1]),
    }
}

/// sysbench's checks of the files before a run, in its words: each file there, and whole
/// unless the test writes them sequentially.
fn files_ready(spec: &FileioSpec) -> bool {
    let need = spec.file_size();
    for i in 0..spec.num {
        let name = format!("test_file.{i}");
        match std::fs::metadata(spec.dir.join(&name)) {
            Err(e) => {
                let errno = e.raw_os_error().unwrap_or(0);
                let why = e.to_string();
                let why = why.split(" (os error").next().unwrap_or(&why);
                crate::dialect::fatal(&format!(
                    "Cannot open file '{name}' errno = {errno} ({why})"
                ));
                crate::dialect::warning("Did you forget to run the prepare step?");
                return false;
            }
            Ok(m) if m.len() < need && spec.mode != Mode::Seqwr => {
                crate::dialect::fatal(&format!(
                    "Size of file '{name}' is {}B, but at least {}B is expected.",
                    size_str(m.len()),
                    size_str(need)
                ));
                crate::dialect::warning(
                    "Did you run 'prepare' with different --file-total-size or --file-num values?",
                );
                return false;
            }
            Ok(_) => {}
        }
    }
    true
}

/// sysbench's "Extra file open flags" value.
fn extra_flags(s: &FileioSpec) -> String {
    let flags: Vec<&str> = [(s.sync, "sync"), (s.dsync, "dsync"), (s.direct, "directio")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    match flags.is_empty() {
        true => "(none)".to_string(),
        // sysbench writes each flag followed by a space.
        false => flags.iter().map(|f| format!("{f} ")).collect(),
    }
}

pub fn fileio_cmd(a: &FileioArgs) -> Result<ExitCode> {
    let mut flags = (false, false, false);
    for f in a.file_extra_flags.iter().filter(|f| !f.is_empty()) {
        match f.as_str() {
            "sync" => flags.0 = true,
            "dsync" => flags.1 = true,
            "direct" => flags.2 = true,
            other => bail!("--file-extra-flags={other}: use sync, dsync or direct"),
        }
    }
    if a.file_block_size == 0 || a.file_total_size < a.file_block_size * u64::from(a.file_num) {
        bail!(
            "--file-total-size={} is less than one --file-block-size={} per file (--file-num={}): nothing to test",
            a.file_total_size, a.file_block_size, a.file_num
        );
    }
    let mode = match (&a.file_test_mode, a.command.as_str()) {
        (Some(m), _) => Mode::parse(m).ok_or_else(|| match crate::dialect::is_sysbench() {
            true => anyhow::anyhow!("Invalid IO operations mode: {m}."),
            false => anyhow::anyhow!(
                "--file-test-mode={m}: use seqwr, seqrewr, seqrd, rndrd, rndwr or rndrw"
            ),
        })?,
        (None, "run") if crate::dialect::is_sysbench() => {
            bail!("Missing required argument: --file-test-mode")
        }
        (None, "run") => bail!(
            "--file-test-mode is needed for run: seqwr, seqrewr, seqrd, rndrd, rndwr or rndrw"
        ),
        (None, _) => Mode::Rndrw,
    };
    let sysbench = crate::dialect::is_sysbench();
    let spec = FileioSpec {
        // sysbench's grammar: its files in the working directory, shared with sysbench.
        dir: if sysbench {
            ".".into()
        } else {
            a.file_dir.clone()
        },
        marked: !sysbench,
        num: a.file_num,
        block: a.file_block_size,
        total: a.file_total_size,
        mode,
        sync: flags.0,
        dsync: flags.1,
        direct: flags.2,
        fsync_freq: a.file_fsync_freq,
        fsync_all: a.file_fsync_all,
        fsync_end: a.file_fsync_end,
        fdatasync: a.file_fsync_mode == "fdatasync",
        rw_ratio: a.file_rw_ratio,
        validate: a.probe.validate,
    };
    match a.command.as_str() {
        "prepare" => {
            use crate::dialect::notice;
            let (kb, mb) = (spec.file_size() / 1024, spec.total / 1_048_576);
            match sysbench {
                true => {
                    notice!("{} files, {kb}Kb each, {mb}Mb total", spec.num);
                    notice!("Creating files for the test...");
                    notice!("Extra file open flags: {}", extra_flags(&spec));
                }
                false => println!("{} files, {kb}KiB each, {mb}MiB total", spec.num),
            }
            let name = |p: &std::path::Path| match sysbench {
                true => p
                    .file_name()
                    .map_or(p.display().to_string(), |n| n.to_string_lossy().into()),
                false => p.display().to_string(),
            };
            let (bytes, secs) = fileio::prepare(&spec, |p, state| {
                let verb = match state {
                    FileState::Creating => "Creating",
                    FileState::Extending => "Extending existing",
                    FileState::Reusing => "Reusing existing",
                };
                notice!("{verb} file {}", name(p))
            })
            .map_err(anyhow::Error::msg)?;
            match bytes {
                0 => notice!("No bytes written."),
                _ => notice!(
                    "{bytes} bytes written in {secs:.2} seconds ({:.2} MiB/sec).",
                    bytes as f64 / 1_048_576.0 / secs.max(1e-9)
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        "cleanup" => {
            crate::dialect::notice!("Removing test files...");
            let n = fileio::cleanup(&spec).map_err(anyhow::Error::msg)?;
            crate::dialect::said!("removed {n} file(s) from {}", spec.dir.display());
            Ok(ExitCode::SUCCESS)
        }
        _ if sysbench && !files_ready(&spec) => Ok(ExitCode::from(EXIT_FAILED)),
        _ => sweep(
            &FileioProbe {
                spec,
                seed: 0x5eed,
                events: a.probe.events,
                counters: Default::default(),
            },
            &a.probe,
        ),
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
    fn result_block(&self, _: &ProbeResult) -> String {
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

#[derive(Serialize)]
struct JsonRun<'a> {
    probe: &'static str,
    threads: u32,
    result: &'a ProbeResult,
    /// The headline: events per second (cpu) or MiB per second (memory).
    events_per_second: f64,
}

fn sweep(probe: &dyn Probe, p: &ProbeArgs) -> Result<ExitCode> {
    if !p.report_checkpoints.0.is_empty() {
        bail!("--report-checkpoints is not built for the host probes yet (it is for OLTP workloads and Lua scripts); use --report-interval for the figures over time");
    }
    let cpus = crate::client::parse(p.client_cpus.as_deref())?;
    crate::client::place(cpus.as_ref(), &[])?;
    let mut json = Vec::new();
    let mut code = ExitCode::SUCCESS;
    for &threads in &p.threads {
        let text = p.format == Format::Text && crate::dialect::shows(crate::dialect::NOTICE);
        if text {
            print!("{}", header(probe, threads, p));
        }
        let interval = p.report_interval > 0 && text;
        let result = run(&spec(p), probe.workers(threads)?, &INTERRUPTED, &mut |t| {
            if interval {
                println!("[ {:.0}s ] thds: {threads} {}", t.t, probe.interval(t));
            }
        });
        if text {
            if p.histogram {
                print!("{}", output::histogram(&result.histogram));
            }
            print!("{}", probe.result_block(&result));
            print!(
                "{}",
                output::general_block(
                    result.elapsed_seconds,
                    &result.total,
                    0,
                    p.percentile,
                    result.threads.iter().map(|t| (t.events, t.latency_sum_ns))
                )
            );
        } else {
            json.push(serde_json::to_value(JsonRun {
                probe: probe.name(),
                threads,
                events_per_second: result.total.events as f64 / result.elapsed_seconds.max(1e-9),
                result: &result,
            })?);
        }
        if let Some(f) = &result.failure {
            crate::dialect::fatal(f);
            code = ExitCode::from(EXIT_FAILED);
        }
        if result.interrupted {
            code = ExitCode::from(EXIT_INTERRUPTED);
            break;
        }
    }
    if p.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    }
    Ok(code)
}

/// An interval line's events per second and sysbench's percentile.
fn rate_line(label: &str, t: &ProbeTick) -> String {
    let l = &t.window.latency;
    format!(
        "{label}: {:.2} lat (ms,{}%): {:.2}",
        t.window.tps, l.percentile as u32, l.sysbench_percentile_ms
    )
}

fn header(probe: &dyn Probe, threads: u32, p: &ProbeArgs) -> String {
    // In sysbench's dialect its banner was printed before the line was run.
    let banner = match crate::dialect::is_sysbench() {
        true => String::new(),
        false => format!(
            "bakeoff {} (sysbench 1.0.20 compatible)\n\n",
            env!("CARGO_PKG_VERSION")
        ),
    };
    let head = output::run_options(&output::RunHeader {
        threads,
        rate: (p.rate > 0).then_some(p.rate as f64),
        interval: (p.report_interval > 0).then(|| Duration::from_secs(p.report_interval)),
        validate: p.validate,
        ..output::RunHeader::default()
    });
    format!(
        "{banner}{head}\n\n\n{}Initializing worker threads...\n\nThreads started!\n\n",
        probe.mode()
    )
}
