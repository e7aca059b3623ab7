//! The answer in words: a few sentences per workload, made from the comparisons and curve
//! analyses alone. A difference is stated only where its family-adjusted interval excludes 1
//! (with one repetition, with that said beside it), after how many of the family differ and
//! what chance alone would give; the rest are counted as equivalent or undecided, with the
//! smallest difference the study could detect, so every workload's sentences decide something.

use std::collections::BTreeMap;

use crate::baseline::Rule;
use crate::model::Verdict;
use crate::model::{Comparison, Model, WorkloadModel};

/// Most differences stated per workload, and most curves described.
const MOST: usize = 3;
/// A curve that ends this far (percent) below its peak has a drop worth a sentence.
const DROP_PCT: f64 = 10.0;

/// The workload's sentences: its answer (see [`answer`]), then what is missing and the
/// curves' shapes.
fn sentences(w: &WorkloadModel, comparisons: &[Comparison], answer: &[String]) -> Vec<String> {
    let mut out = answer.to_vec();
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

/// Every workload's sentences and answer, with `closing(label)` (its A/A check, the caveat
/// of a workload that wrote in turns) after its sentences.
pub(crate) fn fill(model: &mut Model, closing: impl Fn(&str) -> Vec<String>) {
    for i in 0..model.workloads.len() {
        let w = &model.workloads[i];
        let (rule, axes, coords) = (&model.baseline_rule, &model.axes, &model.coordinates);
        let answer = answer(w, &model.comparisons, rule, axes, coords);
        let mut summary = sentences(w, &model.comparisons, &answer);
        summary.extend(closing(&w.label));
        model.workloads[i].summary = summary;
        model.workloads[i].answer = answer;
    }
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

/// How many of the family differ and what chance alone would give; then the largest
/// differences, one per variant at most, largest first, each with its adjusted interval; where
/// none differs, how many are equivalent within the margin, how many undecided, and the
/// smallest difference the study could detect.
fn differences(
    rows: &[&Comparison],
    rule: &Rule,
    axes: &[String],
    coords: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<String> {
    if rows.is_empty() {
        return Vec::new();
    }
    let size = |c: &Comparison| c.ratio.unwrap_or(1.0).ln().abs();
    let judged: Vec<&&Comparison> = rows.iter().filter(|c| c.verdict != Verdict::Open).collect();
    if judged.is_empty() {
        // One repetition: no interval, so the largest ratios are said as what they are, one
        // per variant.
        let mut largest: Vec<&&Comparison> = rows.iter().collect();
        largest.sort_by(|a, b| size(b).total_cmp(&size(a)));
        let mut seen = Vec::new();
        largest.retain(|c| {
            let first = !seen.contains(&c.variant);
            seen.push(c.variant.clone());
            first
        });
        return largest
            .iter()
            .take(MOST)
            .map(|c| {
                let (subject, base, slice) = words(c, rule, axes, coords);
                format!(
                    "At {}{slice}, {subject} is {:.2}x {base} (1 repetition, no interval).",
                    threads(c.threads),
                    c.ratio.unwrap_or(1.0)
                )
            })
            .collect();
    }
    let m = judged.len();
    let count = |v: &[Verdict]| judged.iter().filter(|c| v.contains(&c.verdict)).count();
    let differ = count(&[Verdict::Different, Verdict::DifferentWithin]);
    let margin = crate::decide::margin_text(judged[0].margin);
    let f = judged[0].family.max(1);
    let looks = match crate::decide::looks(judged[0]) {
        (_, None) => String::new(),
        (end, Some(pilot)) => format!(
            " ({} at the pilot, for settling what lies beyond the margin; {} at the end)",
            crate::decide::percent(pilot),
            crate::decide::percent(end)
        ),
    };
    let family = format!(
        "each of the study's {f} tested at {:.2}%{looks} so that chance alone makes any claim among them at most 5% of the time",
        5.0 / f64::from(f)
    );
    let mut out = vec![format!("{differ} of {m} comparison(s) differ ({family}).")];
    let mut claims: Vec<&&&Comparison> = judged.iter().filter(|c| c.significant).collect();
    claims.sort_by(|a, b| size(b).total_cmp(&size(a)));
    let mut seen = Vec::new();
    for c in claims {
        if seen.contains(&c.variant) || seen.len() == MOST {
            continue;
        }
        seen.push(c.variant.clone());
        let (subject, base, slice) = words(c, rule, axes, coords);
        let (lo, hi) = c.interval.unwrap_or((1.0, 1.0));
        let small = match c.verdict {
            Verdict::DifferentWithin => format!(" A real difference, but within {}.", margin),
            _ => String::new(),
        };
        out.push(format!(
            "At {}{slice}, {subject} is {:.2}x {base} ({lo:.2}x - {hi:.2}x{}, {}).{small}{}",
            threads(c.threads),
            c.ratio.unwrap_or(1.0),
            level(c),
            method(c),
            carry_over_sentence(c).unwrap_or_default()
        ));
    }
    let equivalent = count(&[Verdict::Equivalent]);
    let undecided = count(&[Verdict::Undecided]);
    if differ < m {
        let mut rest = Vec::new();
        if equivalent > 0 {
            rest.push(format!("{equivalent} equivalent within {}", margin));
        }
        if undecided > 0 {
            rest.push(format!("{undecided} undecided"));
        }
        let detectable = judged
            .iter()
            .filter(|c| !c.significant)
            .filter_map(|c| c.detectable)
            .fold(0.0f64, f64::max);
        let detects = match detectable > USEFUL {
            true => format!("more than {:.0}%", USEFUL * 100.0),
            false => format!("{:.1}%", detectable * 100.0),
        };
        out.push(format!(
            "Of the rest, {}; the smallest difference this study detects at 80% power is {detects} (from its spread, at the adjusted level).",
            rest.join(", "),
        ));
        if undecided > 0 {
            out.extend(widest(&judged, rule, axes, coords));
        }
    }
    out
}

/// The undecided comparison whose interval allows the largest difference, in a sentence.
fn widest(
    judged: &[&&Comparison],
    rule: &Rule,
    axes: &[String],
    coords: &BTreeMap<String, BTreeMap<String, String>>,
) -> Option<String> {
    let c = judged
        .iter()
        .filter(|c| c.verdict == Verdict::Undecided)
        .max_by(|a, b| a.bound.unwrap_or(0.0).total_cmp(&b.bound.unwrap_or(0.0)))?;
    let (subject, base, slice) = words(c, rule, axes, coords);
    let (lo, hi) = c.interval?;
    Some(match c.bound.unwrap_or(0.0) > USEFUL {
        true => format!(
            "The undecided intervals are too wide to bound a difference usefully (the widest: {subject} against {base} at {}{slice}, {lo:.2}x - {hi:.2}x, {}); a new study with the blocks a pilot asks for (bakeoff study plan) would narrow them.",
            threads(c.threads),
            method(c)
        ),
        false => format!(
            "No undecided difference is larger than {:.1}% (the widest: {subject} against {base} at {}{slice}, {lo:.2}x - {hi:.2}x, {}).",
            c.bound.unwrap_or(0.0) * 100.0,
            threads(c.threads),
            method(c)
        ),
    })
}

/// An interval's level in words, where the verdict says it (" at 97.50%").
fn level(c: &Comparison) -> String {
    c.level
        .map_or(String::new(), |l| format!(" at {:.2}%", l * 100.0))
}

/// A bound beyond this (50%) decides nothing worth a sentence of its own.
const USEFUL: f64 = 0.5;

/// How an interval was made, in a few words.
pub(crate) fn method(c: &Comparison) -> String {
    let how = match c.method {
        "paired" => format!("paired over {} blocks", c.blocks),
        _ => format!("{} repetitions, unpaired", c.blocks),
    };
    match c.by_turns {
        true => format!("{how}, by turns"),
        false => how,
    }
}

/// After a verdict by turns that the servers' switch penalties could move: what one server at
/// a time would read, as they estimate it, and what to do.
pub(crate) fn carry_over_sentence(c: &Comparison) -> Option<String> {
    let k = c.carry_over?;
    let check = match c.checked {
        None => "check it with [alternation] enabled = false".to_string(),
        Some(m) => format!(
            "the study's check blocks, which measure it, read {:.2}x one server at a time{}",
            m.ratio,
            match crate::validate::outcome(&m) {
                "" => " and agree with turns within the margin",
                said => said,
            }
        ),
    };
    Some(format!(
        " Taking turns may have moved it: the servers' switch penalties differ by a factor of {:.3} (+-{:.1}%), so one server at a time would read about {:.2}x, {}; {check}.",
        k.shift,
        k.se * 100.0,
        k.ratio,
        k.verdict.word()
    ))
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
                "{} peaks at {} ({}) and is {:.0}% below that at {}.",
                c.variant,
                threads(a.peak_threads),
                w.unit.say(a.peak_tps, 0),
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

pub(crate) fn threads(n: u32) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}
