//! `bakeoff study ...`: study files from the command line.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use bakeoff_study::{estimate, parse, series, StudySpec};

use crate::commands::EXIT_USAGE;

pub fn check(file: &Path) -> Result<ExitCode> {
    let src = std::fs::read_to_string(file)
        .with_context(|| format!("reading the study file {}", file.display()))?;
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("study");
    let spec = match parse(&src, stem) {
        Ok(s) => s,
        Err(problems) => {
            for p in &problems {
                eprintln!("{}:{}:{}: {}", file.display(), p.line, p.column, p.message);
            }
            eprintln!(
                "{}: {} problem(s); nothing was run",
                file.display(),
                problems.len()
            );
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    print!("{}", describe(&spec, file));
    for note in environment_notes(&spec) {
        eprintln!("note: {note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The expanded matrix, as a reader checks it before hours of machine time.
fn describe(s: &StudySpec, file: &Path) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let series = series(s);
    let runs = series.len() * s.threads.len();
    let _ = writeln!(out, "study {} ({})", s.name, file.display());
    if let Some(d) = &s.description {
        let _ = writeln!(out, "  {d}");
    }
    let _ = writeln!(
        out,
        "{} variant(s) x {} workload(s) x {} thread count(s) = {} cells; x {} repetition(s) = {runs} runs in {} series",
        s.variants.len(),
        s.workloads.len(),
        s.threads.len(),
        s.cells(),
        s.repetitions,
        series.len()
    );
    let _ = writeln!(
        out,
        "order: {} (seed {}); dataset: {} table(s) x {} rows, {}",
        s.order, s.seed, s.tables, s.table_size, s.dataset_policy
    );
    let _ = writeln!(
        out,
        "each series: {} s warmup, then one {} s run per thread count {:?}",
        s.warmup.as_secs(),
        s.duration.as_secs(),
        s.threads
    );
    let _ = writeln!(out, "variants:");
    for (i, v) in s.variants.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}  {}", i + 1, v.name);
    }
    let _ = writeln!(out, "workloads:");
    for (i, w) in s.workloads.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}  {} ({})", i + 1, w.label, w.spec.kind);
    }
    if let Some((platform, price)) = s.own_price() {
        let _ = writeln!(out, "platform: {platform} at {price:.2}/hour on demand");
    }
    let est = estimate(s).as_secs();
    let _ = writeln!(
        out,
        "estimated duration: {}h {:02}m",
        est / 3600,
        est % 3600 / 60
    );
    out
}

/// What this machine lacks for the study (allocators not installed, CPUs or nodes missing):
/// not problems of the file, but worth knowing before starting it here.
fn environment_notes(s: &StudySpec) -> Vec<String> {
    let mut notes = Vec::new();
    for v in &s.variants {
        for inst in &v.instances {
            if let Err(e) = bakeoff_server::variant::preflight(inst) {
                let note = format!("variant '{}': {e}", v.name);
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        }
    }
    notes
}
