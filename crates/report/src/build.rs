//! From stored rows to the [`Model`]: group runs into cells and curves, compare, analyse, price.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bakeoff_store::Row;

use crate::analysis::{analyse, median};
use crate::baseline::{Axes, Rule};
use crate::design::{auto_status, health_by_run, BlockTps, Design};
use crate::environment::{environments, manifests, variable_diffs};
use crate::model::*;
use crate::source::{num, opt, origins, text, variant_name, Source, VariantKey};
use crate::stats::{mean_sd, reach};
use crate::unit::Unit;

pub struct Options {
    /// The variant everything is compared with; default the first.
    pub baseline: Option<String>,
    /// The p99 a throughput must keep to count as usable (`Analysis::best_within_p99`).
    pub p99_limit_ms: f64,
    /// Leave suspect runs (see `suspect.rs`) out of the curves and comparisons; they are
    /// listed either way.
    pub exclude_suspect: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            baseline: None,
            p99_limit_ms: 10.0,
            exclude_suspect: false,
        }
    }
}

/// A stored run, as a cell needs it.
struct RunRef<'a> {
    study: usize,
    row: &'a Row,
}

type Cells<'a> = BTreeMap<(i64, String), BTreeMap<VariantKey, BTreeMap<u32, Vec<RunRef<'a>>>>>;

/// The CPUs each variant's client shared with its server, by (study, variant index), from
/// the variant's manifest: placement is chosen per variant, so its first run's holds for all.
fn shared_cpus(src: &Source) -> HashMap<(usize, i64), String> {
    let mut out = HashMap::new();
    for (si, s) in src.studies.iter().enumerate() {
        for m in &s.manifests {
            let json: serde_json::Value =
                serde_json::from_str(&text(m, "manifest_json")).unwrap_or_default();
            if let Some(shared) = json["client"]["shared"].as_str() {
                out.insert((si, num(m, "variant") as i64), shared.to_string());
            }
        }
    }
    out
}

/// Build the model. Only runs with status ok enter a curve; the rest are listed as problems.
/// A study's check blocks (one server at a time beside its turns, `validate.rs`) are judged
/// apart, and each verdict by turns is set beside theirs.
pub fn build(src: &Source, opts: &Options) -> Result<Model, String> {
    match crate::validate::split(src, |s| Design::of(s).margin) {
        Some((main, checks)) => {
            let solo = build_one(&checks, opts, None)?.comparisons;
            build_one(&main, opts, Some(&solo))
        }
        None => build_one(src, opts, None),
    }
}

/// The model of `src`, its verdicts by turns set beside `solo`'s where given.
fn build_one(src: &Source, opts: &Options, solo: Option<&[Comparison]>) -> Result<Model, String> {
    let origins = origins(src);
    let mut cells: Cells = BTreeMap::new();
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut suspects = Vec::new();
    let mut usual_steal: f64 = 0.0;
    let shared_by_variant = shared_cpus(src);
    let ticks = ticks_by_run(src);
    let designs: Vec<Design> = src.studies.iter().map(Design::of).collect();
    let units = Unit::of_workloads(src);
    // The noise check's runs (one study only: merged machines each have their own floor).
    let mut twins: BlockTps = BTreeMap::new();
    // Each cell's runs (study, variant, workload, threads), for the outlier check.
    let mut cell_tps: HashMap<(usize, i64, String, u32), Vec<f64>> = HashMap::new();
    for (si, s) in src.studies.iter().enumerate() {
        for r in s.runs.iter().filter(|r| text(r, "status") == "ok") {
            let key = (
                si,
                num(r, "variant") as i64,
                text(r, "workload_label"),
                num(r, "threads") as u32,
            );
            cell_tps.entry(key).or_default().push(num(r, "tps"));
        }
    }
    for (si, s) in src.studies.iter().enumerate() {
        let health = health_by_run(s);
        let usual = crate::suspect::usual_steal(health.values());
        usual_steal = usual_steal.max(usual);
        for r in &s.runs {
            let variant = VariantKey {
                study: si,
                index: num(r, "variant") as i64,
                name: variant_name(src, si, &text(r, "variant_name"), &origins),
            };
            let (workload, threads, repetition) = (
                text(r, "workload_label"),
                num(r, "threads") as u32,
                num(r, "repetition") as u32,
            );
            if text(r, "status") != "ok" {
                problems.push(Problem {
                    variant: variant.name,
                    workload,
                    threads,
                    repetition,
                    status: text(r, "status"),
                    reason: text(r, "reason"),
                });
                continue;
            }
            let id = num(r, "id") as i64;
            let no_ticks = Vec::new();
            let run_ticks = ticks.get(&(si, id)).unwrap_or(&no_ticks);
            let h = health.get(&id).copied().unwrap_or_default();
            let unit = units.get(&(num(r, "workload") as i64)).copied();
            let unit = unit.unwrap_or_default();
            let d = &designs[si];
            let mut why = crate::suspect::reasons(run_ticks, &h, d.cpus, d.margin, usual, unit);
            let cell = cell_tps.get(&(si, variant.index, workload.clone(), threads));
            why.extend(cell.and_then(|c| crate::suspect::outlier(num(r, "tps"), c, unit)));
            if !why.is_empty() {
                suspects.push(Suspect {
                    run: id,
                    variant: variant.name.clone(),
                    workload: workload.clone(),
                    threads,
                    repetition,
                    reasons: why,
                    excluded: opts.exclude_suspect,
                });
                if opts.exclude_suspect {
                    continue;
                }
            }
            if designs[si].twin == Some(variant.index) {
                if src.studies.len() == 1 {
                    twins
                        .entry(workload.clone())
                        .or_default()
                        .entry(threads)
                        .or_default()
                        .insert(repetition, num(r, "tps"));
                }
                if designs[si].listed_twin.is_none() {
                    continue;
                }
            }
            if let Some(shared) = shared_by_variant.get(&(si, variant.index)) {
                warnings.push(Warning {
                    variant: variant.name.clone(),
                    workload: workload.clone(),
                    threads,
                    repetition,
                    text: format!("client shares CPUs {shared} with the server, so this figure measures both; give the client CPUs of its own (client_cpus)"),
                });
            }
            if num(r, "client_bound") != 0.0 {
                warnings.push(Warning {
                    variant: variant.name.clone(),
                    workload: workload.clone(),
                    threads,
                    repetition,
                    text: "client-bound: the client used 90% or more of its CPUs, so this figure may be the client's limit, not the server's".into(),
                });
            }
            cells
                .entry((num(r, "workload") as i64, workload))
                .or_default()
                .entry(variant)
                .or_default()
                .entry(threads)
                .or_default()
                .push(RunRef { study: si, row: r });
        }
    }
    let variants: Vec<String> = cells
        .values()
        .flat_map(|wl| wl.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|k| k.name.clone())
        .collect();
    let axes = Axes::of(src, &origins);
    let rule = Rule::choose(&axes, opts.baseline.as_deref())?;
    let mut workloads = Vec::new();
    let mut comparisons = Vec::new();
    let tails_cut = crate::turns::tails_cut(src);
    for ((index, label), wl) in &cells {
        let curves: Vec<Curve> = wl
            .iter()
            .map(|(v, pts)| curve(src, v, pts, &ticks, opts.p99_limit_ms))
            .collect();
        let cut = tails_cut.get(label).copied();
        comparisons.extend(crate::comparisons::compare(
            label, &curves, &problems, &axes, &rule, &designs, cut,
        ));
        let mut w = WorkloadModel {
            label: label.clone(),
            unit: Unit::Tps,
            curves,
            summary: Vec::new(),
            answer: Vec::new(),
        };
        w.counted_in(units.get(index).copied().unwrap_or_default());
        workloads.push(w);
    }
    let turned = crate::turns::taken_in_turns(src);
    for c in &mut comparisons {
        c.by_turns = turned.contains(&c.workload);
    }
    let manifests = manifests(src, &origins);
    let first = first_variant_tps(&cells);
    let mut model = Model {
        opening: Default::default(),
        study: src.name.clone(),
        baseline: rule.describe(&axes),
        baseline_rule: rule,
        axes: axes.names.clone(),
        coordinates: axes.variants.iter().cloned().collect(),
        variants,
        p99_limit_ms: opts.p99_limit_ms,
        costs: Vec::new(),
        memory: crate::machine::memory(src, &origins),
        environments: environments(&manifests),
        variable_diffs: variable_diffs(&manifests),
        cross_engine: crate::engines::cross_engine(&manifests),
        probes: crate::machine::probes(src, &origins),
        workloads,
        aa: match designs.first().filter(|_| designs.len() == 1) {
            Some(d) => crate::decide::aa_checks(&twins, &first, d.pilot, d.listed_twin.as_deref()),
            None => Vec::new(),
        },
        auto: None,
        suspects,
        usual_steal: (usual_steal >= crate::suspect::STEAL).then_some(usual_steal),
        comparisons,
        problems,
        warnings,
    };
    crate::asked::judge_on_asked(&mut model.comparisons);
    crate::decide::judge_all(&mut model.comparisons);
    let penalties = crate::turns::switch_penalties(src);
    crate::turns::carry_over(&mut model.comparisons, &penalties);
    if let Some(solo) = solo {
        crate::validate::attach(&mut model.comparisons, solo);
    }
    for c in &mut model.comparisons {
        c.bound = match (c.verdict, c.interval) {
            (Verdict::Equivalent | Verdict::Undecided, Some((lo, hi))) => Some(reach(lo, hi)),
            _ => None,
        };
    }
    model.auto = auto_status(&designs, &model);
    model.costs = costs(src, &cells, &model);
    // A workload whose every verdict check blocks measured within the margin says what they
    // read, not the caveat; one they left too wide to tell keeps it.
    let mut written = crate::turns::written_in_turns(src);
    written.retain(|w| {
        let mine = || {
            model
                .comparisons
                .iter()
                .filter(|c| &c.workload == w && c.evidence.is_some())
        };
        !(mine().count() > 0 && mine().all(|c| c.checked.is_some_and(|k| k.within)))
    });
    let aa = model.aa.clone();
    let checked: HashMap<String, String> = model
        .workloads
        .iter()
        .filter_map(|w| {
            let said = crate::validate::sentence(&w.label, &model.comparisons)?;
            Some((w.label.clone(), said))
        })
        .collect();
    crate::summary::fill(&mut model, |label| {
        let mut said = crate::turns::sentences(label, &aa, &written);
        said.extend(crate::turns::penalty_sentence(label, &penalties));
        said.extend(checked.get(label).cloned());
        said
    });
    model.opening = crate::opening::opening(src, &model);
    Ok(model)
}

/// The first variant's throughput by workload, thread count and block: what the noise
/// check's second run of it is paired with.
fn first_variant_tps(cells: &Cells) -> BlockTps {
    let mut out: BlockTps = BTreeMap::new();
    for ((_, label), wl) in cells {
        let Some((_, pts)) = wl.iter().find(|(v, _)| v.index == 0) else {
            continue;
        };
        for (threads, runs) in pts {
            for r in runs {
                out.entry(label.clone())
                    .or_default()
                    .entry(*threads)
                    .or_default()
                    .insert(num(r.row, "repetition") as u32, num(r.row, "tps"));
            }
        }
    }
    out
}

/// Each run's ticks, by (study, run id).
fn ticks_by_run(src: &Source) -> BTreeMap<(usize, i64), Vec<Tick>> {
    let mut by_run: BTreeMap<(usize, i64), Vec<Tick>> = BTreeMap::new();
    for (si, s) in src.studies.iter().enumerate() {
        for t in &s.ticks {
            by_run
                .entry((si, num(t, "run_id") as i64))
                .or_default()
                .push(Tick {
                    t: num(t, "t"),
                    tps: num(t, "tps"),
                    p99_ms: num(t, "p99_ms"),
                });
        }
    }
    by_run
}

fn curve(
    src: &Source,
    v: &VariantKey,
    pts: &BTreeMap<u32, Vec<RunRef>>,
    ticks: &BTreeMap<(usize, i64), Vec<Tick>>,
    p99_limit_ms: f64,
) -> Curve {
    let points: Vec<Point> = pts.iter().map(|(t, runs)| point(src, *t, runs)).collect();
    let series = pts
        .iter()
        .filter_map(|(threads, runs)| {
            let typical = typical_run(runs)?;
            Some(TickSeries {
                threads: *threads,
                repetition: num(typical.row, "repetition") as u32,
                ticks: ticks
                    .get(&(typical.study, num(typical.row, "id") as i64))
                    .cloned()
                    .unwrap_or_default(),
            })
        })
        .collect();
    Curve {
        variant: v.name.clone(),
        study: v.study,
        cpus: src.studies[v.study].cpus(v.index),
        analysis: analyse(&points, p99_limit_ms),
        points,
        series,
    }
}

/// The repetition with the median throughput (the lower middle one of an even count).
fn typical_run<'r, 'a>(runs: &'r [RunRef<'a>]) -> Option<&'r RunRef<'a>> {
    let mut sorted: Vec<&RunRef> = runs.iter().collect();
    sorted.sort_by(|a, b| num(a.row, "tps").total_cmp(&num(b.row, "tps")));
    sorted.get(sorted.len().saturating_sub(1) / 2).copied()
}

fn point(src: &Source, threads: u32, runs: &[RunRef]) -> Point {
    let col = |k: &str| -> Vec<f64> { runs.iter().map(|r| num(r.row, k)).collect() };
    let some = |k: &str| -> Option<f64> {
        let xs: Vec<f64> = runs.iter().filter_map(|r| opt(r.row, k)).collect();
        (!xs.is_empty()).then(|| median(&xs))
    };
    let tps = col("tps");
    let (mean, sd) = mean_sd(&tps);
    Point {
        threads,
        repetitions: runs
            .iter()
            .map(|r| num(r.row, "repetition") as u32)
            .collect(),
        mean_tps: mean,
        mean_nopm: None,
        cv: if mean > 0.0 { sd / mean } else { 0.0 },
        latency: Latency {
            p50_ms: median(&col("p50_ms")),
            p95_ms: median(&col("p95_ms")),
            p99_ms: median(&col("p99_ms")),
            p999_ms: some("p999_ms"),
            max_ms: median(&col("max_ms")),
        },
        server_cpu_us_per_event: some("server_cpu_us_per_event"),
        cpu_per_event: runs
            .iter()
            .map(|r| opt(r.row, "server_cpu_us_per_event").filter(|x| *x > 0.0))
            .collect(),
        p99_per_rep: runs
            .iter()
            .map(|r| opt(r.row, "p99_ms").filter(|x| *x > 0.0))
            .collect(),
        p95_per_rep: runs
            .iter()
            .map(|r| opt(r.row, "p95_ms").filter(|x| *x > 0.0))
            .collect(),
        rss_growth_mib: some("rss_growth_bytes").map(|b| b / 1048576.0),
        client_bound_runs: runs
            .iter()
            .filter(|r| num(r.row, "client_bound") != 0.0)
            .count() as u32,
        transactions: crate::transactions::mix(
            runs.iter()
                .filter_map(|r| src.studies[r.study].classes.get(&(num(r.row, "id") as i64))),
        ),
        tps,
    }
}

/// Every curve's peak priced: hourly price / (peak transactions per hour) x 1e6 (for TPC-C
/// New-Orders, which its stored throughput counts: per million New-Orders). The price
/// is the variant's own `price_per_hour` (a managed database's instance type), else its
/// study's price table for the platform the study ran on.
fn costs(src: &Source, cells: &Cells, m: &Model) -> Vec<Cost> {
    let per_million = |hourly: f64, tps: f64| hourly / (tps * 3600.0) * 1e6;
    let mut out = Vec::new();
    for ((_, label), wl) in cells {
        let Some(w) = m.workloads.iter().find(|w| &w.label == label) else {
            continue;
        };
        for v in wl.keys() {
            let spec = src.studies[v.study].spec();
            let Some((platform, od, reserved)) = price_of(&spec, v.index) else {
                continue;
            };
            let Some(c) = w.curves.iter().find(|c| c.variant == v.name) else {
                continue;
            };
            let a = &c.analysis;
            if a.peak_tps > 0.0 {
                out.push(Cost {
                    workload: label.clone(),
                    variant: v.name.clone(),
                    platform,
                    peak_tps: a.peak_tps,
                    peak_nopm: a.peak_nopm,
                    unit: w.unit,
                    peak_threads: a.peak_threads,
                    on_demand_per_million: per_million(od, a.peak_tps),
                    reserved_per_million: reserved.map(|r| per_million(r, a.peak_tps)),
                });
            }
        }
    }
    out
}

/// What variant `index` of a study costs an hour: (what the price is of, on demand,
/// reserved). Its own price first (named after the variant), else the platform's.
fn price_of(spec: &serde_json::Value, index: i64) -> Option<(String, f64, Option<f64>)> {
    let variant = &spec["variants"][index as usize];
    if let Some(own) = variant["price_per_hour"].as_f64() {
        return Some((format!("its price_per_hour, {own}/h"), own, None));
    }
    let platform = spec["platform"].as_str()?;
    let price = spec["prices"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["platform"] == platform))?;
    let od = price["on_demand_per_hour"].as_f64()?;
    Some((
        platform.to_string(),
        od,
        price["reserved_per_hour"].as_f64(),
    ))
}
