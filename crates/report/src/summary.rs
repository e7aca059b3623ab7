//! The answer in words: a few sentences per workload, made from the comparisons and curve
//! analyses alone. A difference is stated only where the data carries it: with repetitions,
//! only when its 95% interval excludes 1; with one repetition, with that said beside it.
//! Where none is significant, the bound on any difference is stated instead, so every
//! workload's sentences decide something.

use std::collections::BTreeMap;

use crate::baseline::Rule;
use crate::model::Verdict;
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
    let mut out = answer(w, comparisons, rule, axes, coords);
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

/// The workload's answer: its significant differences with their intervals, or the bound on
/// any difference (what a quickstart ends with).
pub fn answer(
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
    differences(&rows, rule, axes, coords)
}

/// The largest significant differences, one per variant at most, largest first; where none
/// is significant, the bound on any difference (the noise floor's, where the intervals lie
/// inside it).
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
        return bounds(rows, rule, axes, coords);
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
            Some((lo, hi)) => format!("{lo:.2}x - {hi:.2}x, {}", method(c)),
            None => "1 repetition, no interval".into(),
        };
        // Significant, yet inside what identical runs differ by here: worth confirming.
        let caution = match (c.ci, c.noise_floor) {
            (Some((lo, hi)), Some(f)) if lo >= 1.0 - f && hi <= 1.0 + f => format!(
                " It lies inside this machine's noise floor here ({:.1}%): more blocks would confirm it.",
                f * 100.0
            ),
            _ => String::new(),
        };
        out.push(format!(
            "At {}{slice}, {subject} is {:.2}x {base} ({why}).{caution}",
            threads(c.threads),
            c.ratio.unwrap_or(1.0)
        ));
    }
    out
}

/// No difference is significant: how large one could be, at the comparison that allows the
/// most; indistinguishable where every interval lies inside the noise floor.
fn bounds(
    rows: &[&Comparison],
    rule: &Rule,
    axes: &[String],
    coords: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<String> {
    let bounded: Vec<&&Comparison> = rows.iter().filter(|c| c.bound.is_some()).collect();
    let Some(widest) = bounded
        .iter()
        .max_by(|a, b| a.bound.unwrap_or(0.0).total_cmp(&b.bound.unwrap_or(0.0)))
    else {
        return vec![format!(
            "No difference is significant at the 95% level ({} comparison(s)); more repetitions narrow the intervals.",
            rows.len()
        )];
    };
    let (subject, base, slice) = words(widest, rule, axes, coords);
    let pct = widest.bound.unwrap_or(0.0) * 100.0;
    let (lo, hi) = widest.ci.unwrap_or((1.0, 1.0));
    if bounded.iter().all(|c| c.verdict == Verdict::WithinNoise) {
        return vec![format!(
            "Every variant is indistinguishable from its baseline here: no difference larger than {pct:.1}%, inside this machine's noise floor of {:.1}% (the widest: {subject} against {base} at {}{slice}, {lo:.2}x - {hi:.2}x, {}).",
            widest.noise_floor.unwrap_or(0.0) * 100.0,
            threads(widest.threads),
            method(widest)
        )];
    }
    if widest.bound.unwrap_or(0.0) > USEFUL {
        return vec![format!(
            "No difference is significant, and the intervals are too wide to bound one usefully (the widest: {subject} against {base} at {}{slice}, {lo:.2}x - {hi:.2}x, {}); more repetitions, or repetitions = \"auto\", narrow them.",
            threads(widest.threads),
            method(widest)
        )];
    }
    vec![format!(
        "No difference is significant; none is larger than {pct:.1}% (the widest: {subject} against {base} at {}{slice}, {lo:.2}x - {hi:.2}x, {}).",
        threads(widest.threads),
        method(widest)
    )]
}

/// A bound beyond this (50%) decides nothing worth a sentence of its own.
const USEFUL: f64 = 0.5;

/// How an interval was made, in a few words.
fn method(c: &Comparison) -> String {
    match c.method {
        "paired" => format!("paired over {} blocks", c.blocks),
        _ => format!("{} repetitions, unpaired", c.blocks),
    }
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
            // Listed variants' one axis is their name: said as the name alone.
            if axis == "variant" {
                return (v.clone(), value.clone(), slice);
            }
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
