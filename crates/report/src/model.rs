//! The report's data: the stored runs of a study arranged as curves (throughput against
//! threads, one per variant, per workload), compared against a baseline variant, and analysed.

use std::collections::BTreeMap;

use bakeoff_store::Row;
use serde::Serialize;

use crate::stats::{mean_sd, ratio_ci};

/// One thread count of one variant's curve: every repetition's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Point {
    pub threads: u32,
    pub tps: Vec<f64>,
    pub mean_tps: f64,
    /// Run-to-run variation: standard deviation over mean (0 with one repetition).
    pub cv: f64,
    /// Median over repetitions of each run's p99.
    pub p99_ms: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Curve {
    pub variant: String,
    pub points: Vec<Point>,
    pub analysis: Analysis,
}

/// What a performance engineer reads off a throughput curve.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Analysis {
    pub peak_tps: f64,
    pub peak_threads: u32,
    /// The fewest threads reaching 95% of the peak: past it, more clients buy little.
    pub saturation_threads: u32,
    /// How far the highest thread count falls below the peak, in percent.
    pub drop_at_max_pct: f64,
}

/// One variant against the baseline at one thread count.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub workload: String,
    pub variant: String,
    pub threads: u32,
    pub ratio: f64,
    /// 95% interval of the ratio; None with fewer than two repetitions on either side.
    pub ci: Option<(f64, f64)>,
    /// The interval excludes 1.
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkloadModel {
    pub label: String,
    pub curves: Vec<Curve>,
}

impl WorkloadModel {
    /// Every thread count any variant ran, ascending.
    pub fn threads(&self) -> Vec<u32> {
        let mut t: Vec<u32> = self
            .curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.threads))
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }
}

/// One line of a comparison table: a variant at a thread count, and how it compares with the
/// baseline (None for the baseline itself).
pub struct TableRow<'m> {
    pub threads: u32,
    pub variant: &'m str,
    pub point: &'m Point,
    pub comparison: Option<&'m Comparison>,
}

impl Model {
    /// The comparison table of workload `w`, by thread count then variant.
    pub fn table<'m>(&'m self, w: &'m WorkloadModel) -> Vec<TableRow<'m>> {
        let mut rows = Vec::new();
        for t in w.threads() {
            for c in &w.curves {
                let Some(point) = c.points.iter().find(|p| p.threads == t) else {
                    continue;
                };
                let comparison = self
                    .comparisons
                    .iter()
                    .find(|x| x.workload == w.label && x.variant == c.variant && x.threads == t);
                rows.push(TableRow {
                    threads: t,
                    variant: &c.variant,
                    point,
                    comparison,
                });
            }
        }
        rows
    }
}

/// A run that did not give a figure, with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    pub variant: String,
    pub workload: String,
    pub threads: u32,
    pub status: String,
    pub reason: String,
}

/// What a million transactions cost on this machine at a curve's peak.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cost {
    pub workload: String,
    pub variant: String,
    pub platform: String,
    pub peak_tps: f64,
    pub peak_threads: u32,
    pub on_demand_per_million: f64,
    pub reserved_per_million: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Model {
    pub study: String,
    pub baseline: String,
    pub workloads: Vec<WorkloadModel>,
    pub comparisons: Vec<Comparison>,
    pub problems: Vec<Problem>,
    /// Empty unless the study has a price table and says which platform this machine is.
    pub costs: Vec<Cost>,
}

impl Model {
    /// Price every curve's peak from the study's spec (its `prices` and `platform`, as the
    /// study runner stored them): hourly price / (peak transactions per hour) x 1e6.
    pub fn with_costs(mut self, spec_json: &str) -> Model {
        let Ok(spec) = serde_json::from_str::<serde_json::Value>(spec_json) else {
            return self;
        };
        let Some(platform) = spec["platform"].as_str() else {
            return self;
        };
        let Some(price) = spec["prices"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["platform"] == platform))
        else {
            return self;
        };
        let Some(od) = price["on_demand_per_hour"].as_f64() else {
            return self;
        };
        let rs = price["reserved_per_hour"].as_f64();
        let per_million = |hourly: f64, tps: f64| hourly / (tps * 3600.0) * 1e6;
        for w in &self.workloads {
            for c in &w.curves {
                let a = &c.analysis;
                if a.peak_tps > 0.0 {
                    self.costs.push(Cost {
                        workload: w.label.clone(),
                        variant: c.variant.clone(),
                        platform: platform.to_string(),
                        peak_tps: a.peak_tps,
                        peak_threads: a.peak_threads,
                        on_demand_per_million: per_million(od, a.peak_tps),
                        reserved_per_million: rs.map(|r| per_million(r, a.peak_tps)),
                    });
                }
            }
        }
        self
    }
}

fn text(r: &Row, k: &str) -> String {
    r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string()
}

fn num(r: &Row, k: &str) -> f64 {
    r.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0)
}

/// Build the model from a study's run rows (as `Store::runs` gives them). Only runs with
/// status ok enter a curve; the rest are listed as problems. `baseline`: a variant name, or
/// the first variant.
pub fn build(study: &str, rows: &[Row], baseline: Option<&str>) -> Result<Model, String> {
    // workload -> variant -> threads -> (tps per repetition, p99s); BTreeMaps keyed by the
    // study's own indexes keep the file's order.
    type Cell = (Vec<f64>, Vec<f64>);
    let mut data: BTreeMap<(i64, String), BTreeMap<(i64, String), BTreeMap<u32, Cell>>> =
        BTreeMap::new();
    let mut problems = Vec::new();
    for r in rows {
        let (w, v, t) = (
            text(r, "workload_label"),
            text(r, "variant_name"),
            num(r, "threads") as u32,
        );
        if text(r, "status") != "ok" {
            problems.push(Problem {
                variant: v,
                workload: w,
                threads: t,
                status: text(r, "status"),
                reason: text(r, "reason"),
            });
            continue;
        }
        let cell = data
            .entry((num(r, "workload") as i64, w))
            .or_default()
            .entry((num(r, "variant") as i64, v))
            .or_default()
            .entry(t)
            .or_default();
        cell.0.push(num(r, "tps"));
        cell.1.push(num(r, "p99_ms"));
    }
    let variants: Vec<String> = {
        let mut all: BTreeMap<i64, String> = BTreeMap::new();
        for wl in data.values() {
            for (i, v) in wl.keys() {
                all.insert(*i, v.clone());
            }
        }
        all.into_values().collect()
    };
    let baseline = match baseline {
        Some(b) if variants.iter().any(|v| v == b) => b.to_string(),
        Some(b) => {
            return Err(format!(
                "no variant named '{b}' in study {study}; variants: {}",
                variants.join(", ")
            ))
        }
        None => variants.first().cloned().unwrap_or_default(),
    };
    let mut workloads = Vec::new();
    let mut comparisons = Vec::new();
    for ((_, label), wl) in &data {
        let curves: Vec<Curve> = wl
            .iter()
            .map(|((_, variant), pts)| {
                let points: Vec<Point> = pts
                    .iter()
                    .map(|(threads, (tps, p99))| {
                        let (mean, sd) = mean_sd(tps);
                        Point {
                            threads: *threads,
                            tps: tps.clone(),
                            mean_tps: mean,
                            cv: if mean > 0.0 { sd / mean } else { 0.0 },
                            p99_ms: median(p99),
                        }
                    })
                    .collect();
                Curve {
                    variant: variant.clone(),
                    analysis: analyse(&points),
                    points,
                }
            })
            .collect();
        if let Some(base) = curves.iter().find(|c| c.variant == baseline) {
            for c in curves.iter().filter(|c| c.variant != baseline) {
                for p in &c.points {
                    let Some(b) = base.points.iter().find(|b| b.threads == p.threads) else {
                        continue;
                    };
                    let (ratio, ci) = match ratio_ci(&b.tps, &p.tps) {
                        Some((r, lo, hi)) => (r, Some((lo, hi))),
                        None => (p.mean_tps / b.mean_tps.max(f64::MIN_POSITIVE), None),
                    };
                    comparisons.push(Comparison {
                        workload: label.clone(),
                        variant: c.variant.clone(),
                        threads: p.threads,
                        ratio,
                        significant: ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0),
                        ci,
                    });
                }
            }
        }
        workloads.push(WorkloadModel {
            label: label.clone(),
            curves,
        });
    }
    Ok(Model {
        study: study.to_string(),
        baseline,
        workloads,
        comparisons,
        problems,
        costs: Vec::new(),
    })
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub fn analyse(points: &[Point]) -> Analysis {
    let peak = points
        .iter()
        .max_by(|a, b| a.mean_tps.total_cmp(&b.mean_tps));
    let (peak_tps, peak_threads) = peak.map_or((0.0, 0), |p| (p.mean_tps, p.threads));
    let saturation_threads = points
        .iter()
        .find(|p| p.mean_tps >= 0.95 * peak_tps)
        .map_or(0, |p| p.threads);
    let last = points.last().map_or(0.0, |p| p.mean_tps);
    Analysis {
        peak_tps,
        peak_threads,
        saturation_threads,
        drop_at_max_pct: if peak_tps > 0.0 {
            (peak_tps - last) / peak_tps * 100.0
        } else {
            0.0
        },
    }
}
