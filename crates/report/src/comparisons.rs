//! A workload's curves paired into comparisons: each variant against its baseline at each
//! thread count, its throughput, cost and latency evidence gathered per block, before any of
//! it is judged (`decide.rs`).

use crate::baseline::{Axes, Rule};
use crate::decide::Evidence;
use crate::design::Design;
use crate::model::*;
use crate::pairing::{pairs, pairs_cpu, pairs_latency, FIXED_ORDER};

/// Each variant against its own baseline (see `baseline.rs`) at each of its thread counts.
/// Where the baseline has no figure, the row says why, from the baseline run's problem.
/// Within a study run in blocks the ratio is taken in each block (paired); otherwise the
/// means are compared (unpaired).
pub(crate) fn compare(
    label: &str,
    curves: &[Curve],
    problems: &[Problem],
    axes: &Axes,
    rule: &Rule,
    designs: &[Design],
    cut: Option<(f64, f64)>,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    for c in curves {
        let against = match rule.baseline_of(axes, &c.variant) {
            Ok(None) => continue,
            Ok(Some(b)) => Ok(b),
            Err(why) => Err(why),
        };
        let base = against
            .as_ref()
            .ok()
            .and_then(|b| curves.iter().find(|x| &x.variant == b));
        let design = &designs[c.study];
        let paired = base.is_some_and(|b| b.study == c.study && design.paired);
        for p in &c.points {
            let row = |ratio, evidence: Option<Evidence>, note, blocks| Comparison {
                workload: label.to_string(),
                variant: c.variant.clone(),
                threads: p.threads,
                against: against.clone().unwrap_or_else(|_| "-".into()),
                ratio,
                significant: false,
                ci: None,
                note,
                method: if paired { "paired" } else { "unpaired" },
                blocks,
                margin: design.margin,
                evidence,
                ..Comparison::default()
            };
            let bp = base.and_then(|b| b.points.iter().find(|b| b.threads == p.threads));
            out.push(match (&against, bp) {
                (Err(why), _) => row(None, None, Some(format!("no baseline: {why}")), 0),
                (Ok(b), None) => row(None, None, Some(missing(problems, label, b, p.threads)), 0),
                (Ok(_), Some(b)) => {
                    let mean_ratio = Some(p.mean_tps / b.mean_tps.max(f64::MIN_POSITIVE));
                    if design.fixed_order {
                        row(mean_ratio, None, Some(FIXED_ORDER.into()), 0)
                    } else if paired {
                        let pairs = pairs(b, p, |p, i| Some(p.tps[i]));
                        let e = Evidence::paired(&pairs, design.pilot);
                        let cpu = pairs_cpu(b, p, pairs.len());
                        let p99 = pairs_latency(b, p, pairs.len(), |p| &p.p99_per_rep);
                        let p95 = pairs_latency(b, p, pairs.len(), |p| &p.p95_per_rep);
                        let asked = design
                            .auto
                            .zip(design.pilot)
                            // One study's comparisons only: merged studies' families
                            // mix pilots the runner never sized together.
                            .filter(|_| designs.len() == 1)
                            .map(|((precision, cap), pilot)| crate::model::Asked {
                                precision,
                                cap,
                                pilot,
                                settled: false,
                                pairs: pairs.clone(),
                                cpu: cpu.clone(),
                                p99: p99.clone(),
                                p95: p95.clone(),
                            });
                        Comparison {
                            cost_evidence: Evidence::paired_beside(&cpu, design.pilot),
                            // Where turns cut p99's tail, p95 (nearer the cut) gets no
                            // verdict either.
                            latency_evidence: match cut {
                                None => Evidence::paired_beside(&p99, design.pilot),
                                Some(_) => None,
                            },
                            latency_p95_evidence: match cut {
                                None => Evidence::paired_beside(&p95, design.pilot),
                                Some(_) => None,
                            },
                            latency_note: cut.map(|(p99, slice)| format!("no latency verdict: its servers took turns of {slice:.0} ms and a run's p99 reached {p99:.1} ms; a turn measures only the events that end within it, so events over about a tenth of a turn are cut short of their share (run it with [alternation] enabled = false for latency)")),
                            asked,
                            ..row(mean_ratio, e, None, pairs.len() as u32)
                        }
                    } else {
                        let n = p.tps.len().min(b.tps.len()) as u32;
                        row(mean_ratio, Evidence::unpaired(&b.tps, &p.tps), None, n)
                    }
                }
            });
        }
    }
    out
}

/// Why baseline `b` has no figure at `threads`: its run's status and reason, when stored.
fn missing(problems: &[Problem], workload: &str, b: &str, threads: u32) -> String {
    match problems
        .iter()
        .find(|p| p.variant == b && p.workload == workload && p.threads == threads)
    {
        Some(p) => format!(
            "no baseline: {b} {}: {}",
            p.status,
            p.reason.lines().next().unwrap_or("")
        ),
        None => format!("no baseline: {b} has no result at {threads} threads"),
    }
}
