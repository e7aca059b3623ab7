//! fileio as sysbench runs it: its files (sysbench's `test_file.N` in its grammar, a marked
//! directory in bakeoff's), prepare and cleanup, and the probe's mode lines and report.

use std::fmt::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Result};
use bakeoff_engine::Checkpoint;
use bakeoff_hostbench::fileio::{self, Counters, FileState, FileioSpec, Mode};
use bakeoff_hostbench::{ProbeTick, Worker};

use super::sweep::{rate_line, sweep, Probe};
use crate::args::FileioArgs;
use crate::exit::EXIT_FAILED;
struct FileioProbe {
    spec: FileioSpec,
    seed: u64,
    /// --events, which sysbench states as the number of IO requests (0: no limit).
    events: u64,
    /// The counters of the run in progress (set by `workers`).
    counters: std::cell::RefCell<Option<Arc<Counters>>>,
    /// The counters at the last report (reads, writes, fsyncs).
    reported: std::cell::Cell<[u64; 3]>,
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
        self.reported.set([0; 3]);
        Ok(w)
    }
    fn interval(&self, t: &ProbeTick) -> String {
        rate_line("events/s", t)
    }
    fn result_block(&self, r: &Checkpoint) -> String {
        let secs = r.seconds.max(1e-9);
        let c = self.counters.borrow();
        let get = |f: fn(&Counters) -> &std::sync::atomic::AtomicU64| {
            c.as_ref()
                .map_or(0, |c| f(c).load(std::sync::atomic::Ordering::Relaxed))
        };
        let now = [get(|c| &c.reads), get(|c| &c.writes), get(|c| &c.fsyncs)];
        // Each report covers what was done since the one before (checkpoints reset counters).
        let before = self.reported.replace(now);
        let [reads, writes, fsyncs] = std::array::from_fn(|i| (now[i] - before[i]) as f64);
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
                reported: Default::default(),
            },
            &a.probe,
        ),
    }
}
