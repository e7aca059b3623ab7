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
    let (mut columns, mut rows) = store.export_table(what)?;
    if what == "runs" {
        flag_suspects(&store, &mut columns, &mut rows)?;
    }
    if format == "json" {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", columns.join(","));
    for r in &rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|h| match &r[h.as_str()] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => csv_quote(s),
                v => v.to_string(),
            })
            .collect();
        println!("{}", cells.join(","));
    }
    Ok(ExitCode::SUCCESS)
}

/// Each run flagged as the report flags it (`suspect`: 1 or 0, and why), judged within its
/// own study, after `status`: a spreadsheet then filters what the report would set apart.
fn flag_suspects(
    store: &Store,
    columns: &mut Vec<String>,
    rows: &mut [bakeoff_store::Row],
) -> Result<()> {
    let mut why: std::collections::HashMap<i64, Vec<String>> = Default::default();
    for (id, name) in store.studies()? {
        let src = Source::of_study(store, id, &name).map_err(anyhow::Error::msg)?;
        // A study the report cannot judge (no run yet) flags nothing.
        if let Ok(model) = bakeoff_report::build(&src, &Options::default()) {
            why.extend(model.suspects.into_iter().map(|s| (s.run, s.reasons)));
        }
    }
    let at = columns
        .iter()
        .position(|c| c == "status")
        .map_or(columns.len(), |i| i + 1);
    columns.splice(
        at..at,
        ["suspect".to_string(), "suspect_reasons".to_string()],
    );
    for r in rows {
        let reasons = r["id"].as_i64().and_then(|id| why.get(&id));
        r.insert("suspect".into(), i64::from(reasons.is_some()).into());
        r.insert(
            "suspect_reasons".into(),
            reasons.map_or(serde_json::Value::Null, |w| w.join("; ").into()),
        );
    }
    Ok(())
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
    let (src, baseline) = match &r.after {
        None => (
            Source::from_store(&store, r.study.as_deref())
                .map_err(|e| anyhow::anyhow!("{}: {e}", r.db.display()))?,
            r.baseline.clone(),
        ),
        Some(after) => before_and_after(r, &store, after)?,
    };
    say_set_aside(&src.set_aside);
    let opts = Options {
        baseline,
        p99_limit_ms: r.p99_limit,
        exclude_suspect: r.exclude_suspect,
    };
    bakeoff_report::build(&src, &opts).map_err(|e| anyhow::anyhow!("--baseline: {e}"))
}

/// `compare BEFORE.db AFTER.db`: both databases' study, each side named by its file, every
/// variant against itself in BEFORE unless `--baseline` says otherwise.
fn before_and_after(
    r: &ResultsArgs,
    store: &bakeoff_store::Store,
    after: &Path,
) -> Result<(Source, Option<String>)> {
    let other = open(after)?;
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let (a, b) = match (name(&r.db), name(after)) {
        (Some(a), Some(b)) if a != b => (a, b),
        _ => (r.db.display().to_string(), after.display().to_string()),
    };
    let stores = [(a.clone(), store), (b, &other)];
    let src = Source::from_stores(&stores, r.study.as_deref()).map_err(anyhow::Error::msg)?;
    if src.name.contains(" / ") {
        eprintln!(
            "note: the two databases' newest studies have different names ({}): compared as the same study; `--study NAME` picks one that both hold",
            src.name
        );
    }
    let baseline = r.baseline.clone().or(Some(format!("database={a}")));
    Ok((src, baseline))
}

/// `study list DB`: the studies it holds.
pub fn list(db: &Path, format: Format) -> Result<ExitCode> {
    let rows = open(db)?.study_list()?;
    if format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!(
            "{}: no study yet (bakeoff study run FILE --db {})",
            db.display(),
            db.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let s = |r: &bakeoff_store::Row, k: &str| match &r[k] {
        serde_json::Value::Null => "-".to_string(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let when = |r: &bakeoff_store::Row, k: &str| {
        r[k].as_i64()
            .map_or("-".into(), bakeoff_report::opening::utc)
    };
    println!(
        "{:>3}  {:<24} {:<20} {:<20} {:<20} {:>6} {:>7}",
        "id", "study", "made", "last run", "machine", "ok", "not ok"
    );
    for r in &rows {
        let machine = match s(r, "platform").as_str() {
            "-" => s(r, "host"),
            p => p.to_string(),
        };
        println!(
            "{:>3}  {:<24} {:<20} {:<20} {:<20} {:>6} {:>7}",
            s(r, "id"),
            s(r, "name"),
            when(r, "created_at"),
            when(r, "last_run_at"),
            machine,
            s(r, "runs_ok"),
            s(r, "runs_not_ok")
        );
    }
    Ok(ExitCode::SUCCESS)
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
    // What `compare` and `report` will read of it: the newest study of each name from each
    // machine; an older one from the same machine is set aside, and said so here.
    let mut names: Vec<String> = store.studies()?.into_iter().map(|(_, n)| n).collect();
    names.sort();
    names.dedup();
    for name in names {
        let Ok(src) = Source::from_store(&store, Some(&name)) else {
            continue;
        };
        let origins: Vec<String> = src.studies.iter().map(|s| s.origin()).collect();
        println!(
            "  '{name}': compare and report read it from {}",
            origins.join(", ")
        );
        for x in &src.set_aside {
            println!("  '{name}': set aside {x}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Studies `compare` and `report` did not read, said on stderr with the way to read them.
fn say_set_aside(set_aside: &[String]) {
    for x in set_aside {
        eprintln!("note: set aside {x}: `bakeoff study list` lists every study; to compare two runs of one study, keep each in its own database and give both: `bakeoff compare BEFORE.db AFTER.db`");
    }
}
