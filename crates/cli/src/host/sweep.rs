//! How a probe runs as sysbench runs its tests: the probe's part of the report ([`Probe`]), a
//! sweep over thread counts, the run's header, interval lines, checkpoints and report.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use bakeoff_engine::Checkpoint;
use bakeoff_hostbench::{run, ProbeObserver, ProbeResult, ProbeSpec, ProbeTick, Worker};
use serde::Serialize;

use crate::args::{Format, ProbeArgs};
use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED, INTERRUPTED};
use crate::output;

fn spec(p: &ProbeArgs) -> ProbeSpec {
    ProbeSpec {
        time: (p.time > 0).then(|| Duration::from_secs(p.time)),
        events: (p.events > 0).then_some(p.events),
        tick: Duration::from_secs(p.report_interval.max(1)),
        percentile: p.percentile,
        rate: (p.rate > 0).then_some(p.rate as f64),
        checkpoints: p
            .report_checkpoints
            .0
            .iter()
            .map(|&s| Duration::from_secs(s))
            .collect(),
    }
}

/// What a probe adds to the report, and its headline figure for JSON.
pub(super) trait Probe {
    fn name(&self) -> &'static str;
    fn mode(&self) -> String;
    fn workers(&self, threads: u32) -> Result<Vec<Box<dyn Worker>>>;
    fn interval(&self, t: &ProbeTick) -> String;
    /// The probe's own block of sysbench's report, over a stretch of the run (all of it, or
    /// one between checkpoints; called for each in order).
    fn result_block(&self, r: &Checkpoint) -> String;
}

#[derive(Serialize)]
struct JsonRun<'a> {
    probe: &'static str,
    threads: u32,
    result: &'a ProbeResult,
    /// The headline: events per second (cpu) or MiB per second (memory).
    events_per_second: f64,
}

/// Prints a probe's run as it goes: interval lines when asked, checkpoint reports.
struct ProbePrinter<'a> {
    probe: &'a dyn Probe,
    threads: u32,
    interval: bool,
    text: bool,
    percentile: f64,
}

impl ProbeObserver for ProbePrinter<'_> {
    fn on_tick(&mut self, t: &ProbeTick) {
        if self.interval {
            println!(
                "[ {:.0}s ] thds: {} {}",
                t.t,
                self.threads,
                self.probe.interval(t)
            );
        }
    }

    fn on_checkpoint(&mut self, c: &Checkpoint) {
        if self.text {
            println!("[ {:.0}s ] Checkpoint report:", c.t);
            print!("{}", report(self.probe, c, self.percentile));
        }
    }
}

/// sysbench's report of a stretch of a probe's run: the probe's block, then the general ones.
fn report(probe: &dyn Probe, c: &Checkpoint, percentile: f64) -> String {
    let general = output::general_block(
        c.t,
        &c.total,
        0,
        percentile,
        c.connections.iter().map(|t| (t.events, t.latency_sum_ns)),
    );
    format!("{}{general}", probe.result_block(c))
}

pub(super) fn sweep(probe: &dyn Probe, p: &ProbeArgs) -> Result<ExitCode> {
    let cpus = crate::client::parse(p.client_cpus.as_deref())?;
    crate::client::place(cpus.as_ref(), &[])?;
    let mut json = Vec::new();
    let mut code = ExitCode::SUCCESS;
    for &threads in &p.threads {
        let text = p.format == Format::Text && crate::dialect::shows(crate::dialect::NOTICE);
        if text {
            print!("{}", header(probe, threads, p));
        }
        let mut printer = ProbePrinter {
            probe,
            threads,
            interval: p.report_interval > 0 && text,
            text,
            percentile: p.percentile,
        };
        let result = run(
            &spec(p),
            probe.workers(threads)?,
            &INTERRUPTED,
            &mut printer,
        );
        if text {
            if p.histogram {
                print!("{}", output::histogram(&result.histogram));
            }
            print!("{}", report(probe, &result.last_stretch(), p.percentile));
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
pub(super) fn rate_line(label: &str, t: &ProbeTick) -> String {
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
        checkpoints: p.report_checkpoints.0.clone(),
        validate: p.validate,
        ..output::RunHeader::default()
    });
    format!(
        "{banner}{head}\n\n\n{}Initializing worker threads...\n\nThreads started!\n\n",
        probe.mode()
    )
}
