//! The answer in words: a few sentences per workload, made from the comparisons and curve
//! analyses alone. A difference is stated only where the data carries it: with repetitions,
//! only when its 95% interval excludes 1; with one repetition, with that said beside it.

use std::collections::BTreeMap;

use crate::baseline::Rule;
use crate::model::{Comparison, WorkloadModel};

/// Most differences stated per workload, and most curves described.
const MOST: usize = 3;
/// A curve that ends this far (percent) below its peak has a drop worth a sentence.
const DROP_PCT: f64 = 10.0;

pub fn sentences(
    w: &WorkloadModel,
    comparisons: &[Comparison],
    rule: &Rule,
    axes: &[String],
    coords: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<String> {
    let rows: Vec<&Comparison> = comparisons
        .iter()
        .filter(|c| c.workload == w.label && c.ratio.is_some())
        .collect();
    let mut out = differences(&rows, rule, axes, coords);
    let missing = comparisons
        .iter()
        .filter(|c| c.workload == w.label && c.ratio.is_none())
        .count();
    if missing > 0 {
        out.push(format!(
            "{missing} comparison(s) have no baseline figure (the baseline's run failed or is missing); the table says which."
        ));
    }
    out.extend(shapes(w));
    out
}

/// The largest differences, one per variant at most, largest first.
fn differences(
    rows: &[&Comparison],
    rule: &Rule,
    axes: &[String],
    coords: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<String> {
    if rows.is_empty() {
        return Vec::new();
    }
    let with_intervals = rows.iter().any(|c| c.ci.is_some());
    let mut claims: Vec<&&Comparison> = rows
        .iter()
        .filter(|c| !with_intervals || c.significant)
        .collect();
    if claims.is_empty() {
        return vec![format!(
            "No difference is significant at the 95% level ({} comparison(s)); more repetitions narrow the intervals.",
            rows.len()
        )];
    }
    let size = |c: &Comparison| c.ratio.unwrap_or(1.0).ln().abs();
    claims.sort_by(|a, b| size(b).total_cmp(&size(a)));
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for c in claims {
        if seen.contains(&c.variant) || out.len() == MOST {
            continue;
        }
        seen.push(c.variant.clone());
        let (subject, base, slice) = words(c, rule, axes, coords);
        let why = match c.ci {
            Some((lo, hi)) => format!("95% interval {lo:.2}x-{hi:.2}x"),
            None => "1 repetition, no interval".into(),
        };
        out.push(format!(
            "At {}{slice}, {subject} is {:.2}x {base} ({why}).",
            threads(c.threads),
            c.ratio.unwrap_or(1.0)
        ));
    }
    out
}

/// How a row is said: along an axis, "allocator=tcmalloc" against "allocator=glibc" "with
/// cpus=0-11"; against one variant, the variants' names.
fn words(
    c: &Comparison,
    rule: &Rule,
    axes: &[String],
    coords: &BTreeMap<String, BTreeMap<String, String>>,
) -> (String, String, String) {
    if let (Rule::Along { axis, value }, Some(mine)) = (rule, coords.get(&c.variant)) {
        if let Some(v) = mine.get(axis) {
            let slice: Vec<String> = axes
                .iter()
                .filter(|a| *a != axis)
                .filter_map(|a| Some(format!("{a}={}", mine.get(a)?)))
                .collect();
            let slice = if slice.is_empty() {
                String::new()
            } else {
                format!(" with {}", slice.join(" "))
            };
            return (format!("{axis}={v}"), format!("{axis}={value}"), slice);
        }
    }
    (c.variant.clone(), c.against.clone(), String::new())
}

/// Where curves stop scaling: the ones that fall furthest below their peak.
fn shapes(w: &WorkloadModel) -> Vec<String> {
    let top = w.threads().last().copied().unwrap_or(0);
    let mut dropping: Vec<_> = w
        .curves
        .iter()
        .filter(|c| c.analysis.drop_at_max_pct >= DROP_PCT && c.points.len() > 1)
        .collect();
    dropping.sort_by(|a, b| {
        b.analysis
            .drop_at_max_pct
            .total_cmp(&a.analysis.drop_at_max_pct)
    });
    let mut out: Vec<String> = dropping
        .iter()
        .take(MOST)
        .map(|c| {
            let a = &c.analysis;
            format!(
                "{} peaks at {} ({:.0} tps) and is {:.0}% below that at {}.",
                c.variant,
                threads(a.peak_threads),
                a.peak_tps,
                a.drop_at_max_pct,
                threads(top)
            )
        })
        .collect();
    if out.is_empty() && w.threads().len() > 1 {
        let sat: Vec<u32> = w
            .curves
            .iter()
            .map(|c| c.analysis.saturation_threads)
            .collect();
        let (lo, hi) = (
            sat.iter().min().copied().unwrap_or(0),
            sat.iter().max().copied().unwrap_or(0),
        );
        out.push(if lo == hi {
            format!("No curve falls {DROP_PCT:.0}% below its peak; each reaches 95% of it from {}.", threads(lo))
        } else {
            format!("No curve falls {DROP_PCT:.0}% below its peak; they reach 95% of it from {lo} to {hi} threads.")
        });
    }
    out
}

fn threads(n: u32) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}
