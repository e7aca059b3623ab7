//! Reading results back: `bakeoff export`, `compare`, `report` and `merge`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use bakeoff_report::{Options, Source};
use bakeoff_store::Store;

use crate::args::{ChartFormat, Format, ResultsArgs};

/// The results database at `db`, which must exist: reading never creates one.
fn open(db: &Path) -> Result<Store> {
    if !db.exists() {
        anyhow::bail!(
            "{} does not exist: give the results database a study run wrote (bakeoff study run FILE writes FILE.db)",
            db.display()
        );
    }
    Ok(Store::open(db)?)
}

pub fn export(db: &Path, format: &str, what: &str) -> Result<ExitCode> {
    let store = open(db)?;
    let rows = match what {
        "ticks" => store.tick_rows(None)?,
        "probes" => store.probe_rows(None)?,
        _ => store.runs(None)?,
    };
    if format == "json" {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    let Some(first) = rows.first() else {
        return Ok(ExitCode::SUCCESS);
    };
    let header: Vec<&str> = first.keys().map(String::as_str).collect();
    println!("{}", header.join(","));
    for r in &rows {
        let cells: Vec<String> = header
            .iter()
            .map(|h| match &r[*h] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => csv_quote(s),
                v => v.to_string(),
            })
            .collect();
        println!("{}", cells.join(","));
    }
    Ok(ExitCode::SUCCESS)
}

fn csv_quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn model(r: &ResultsArgs) -> Result<bakeoff_report::Model> {
    if !(r.p99_limit > 0.0) {
        anyhow::bail!(
            "--p99-limit={}: give a latency in milliseconds above 0, like --p99-limit=10",
            r.p99_limit
        );
    }
    let store = open(&r.db)?;
    let src = Source::from_store(&store, r.study.as_deref())
        .map_err(|e| anyhow::anyhow!("{}: {e}", r.db.display()))?;
    let opts = Options {
        baseline: r.baseline.clone(),
        p99_limit_ms: r.p99_limit,
        exclude_suspect: r.exclude_suspect,
    };
    bakeoff_report::build(&src, &opts).map_err(|e| anyhow::anyhow!("--baseline: {e}"))
}

pub fn compare(r: &ResultsArgs, format: Format) -> Result<ExitCode> {
    let model = model(r)?;
    match format {
        Format::Text => print!("{}", bakeoff_report::compare_table(&model)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&model)?),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn report(
    r: &ResultsArgs,
    output: Option<&Path>,
    charts: Option<&Path>,
    format: ChartFormat,
) -> Result<ExitCode> {
    let model = model(r)?;
    let out = output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| r.db.with_extension("html"));
    std::fs::write(&out, bakeoff_report::html(&model))
        .with_context(|| format!("writing {}", out.display()))?;
    println!("report: {}", out.display());
    if let Some(dir) = charts {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let raster = match format {
            ChartFormat::Png => {
                Some(bakeoff_report::Rasterizer::new().map_err(anyhow::Error::msg)?)
            }
            ChartFormat::Svg => None,
        };
        let charts = bakeoff_report::charts(&model);
        for c in &charts {
            let (path, bytes) = match &raster {
                Some(r) => (
                    dir.join(format!("{}.png", c.name)),
                    r.png(&c.svg)
                        .map_err(|e| anyhow::anyhow!("chart {}: {e}", c.name))?,
                ),
                None => (
                    dir.join(format!("{}.svg", c.name)),
                    c.svg.clone().into_bytes(),
                ),
            };
            std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
        println!("charts: {} in {}", charts.len(), dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn merge(inputs: &[PathBuf], output: &Path) -> Result<ExitCode> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    for i in inputs {
        if !i.exists() {
            anyhow::bail!(
                "{} does not exist: give results databases to merge",
                i.display()
            );
        }
        if same(i, output) {
            anyhow::bail!(
                "{} is both an input and --output: merge into a new file, like -o all.db",
                i.display()
            );
        }
    }
    let mut store = Store::open(output)?;
    for i in inputs {
        let m = store.merge_from(i)?;
        let skipped = if m.skipped > 0 {
            format!("; {} study(ies) already there, skipped", m.skipped)
        } else {
            String::new()
        };
        println!(
            "{}: {} study(ies) [{}], {} runs, {} ticks, {} probes{skipped}",
            i.display(),
            m.studies.len(),
            m.studies.join(", "),
            m.runs,
            m.ticks,
            m.probes
        );
    }
    println!("merged into {}", output.display());
    Ok(ExitCode::SUCCESS)
}
