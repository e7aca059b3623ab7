//! Charts as standalone SVG: no scripts, no fonts to fetch; values on hover through SVG
//! `<title>` elements, which every browser shows as a tooltip. One drawing routine
//! (`plot::line_chart`) for every chart; [`charts`] lists the charts a model gets, so the HTML page
//! and `bakeoff report --charts` draw the same ones.

use crate::model::{Model, WorkloadModel};
pub use crate::plot::escape;
use crate::plot::{line_chart, solid, spans_decades, Axes, Line, Mark};

/// A chart as the report draws it: `name` is its file stem with `--charts`.
#[derive(Debug, Clone)]
pub struct Chart {
    pub name: String,
    pub title: String,
    pub svg: String,
}

fn thread_ticks(w: &WorkloadModel) -> Option<Vec<f64>> {
    Some(w.threads().into_iter().map(f64::from).collect())
}

/// Throughput against client threads (log2 axis), one line per variant through the means, every
/// repetition as a dot so the spread shows.
pub fn throughput_chart(w: &WorkloadModel, variants: &[String]) -> String {
    let u = w.unit;
    let lines: Vec<Line> = w
        .curves
        .iter()
        .map(|c| Line {
            whiskers: Vec::new(),
            dots: c
                .points
                .iter()
                .flat_map(|p| {
                    p.tps.iter().enumerate().map(move |(rep, tps)| Mark {
                        x: p.threads.into(),
                        y: u.of(*tps),
                        tip: format!(
                            "{}, {} threads, repetition {}: {}",
                            c.variant,
                            p.threads,
                            rep + 1,
                            u.say(*tps, 1)
                        ),
                    })
                })
                .collect(),
            ..solid(
                &c.variant,
                variants,
                c.points
                    .iter()
                    .map(|p| Mark {
                        x: p.threads.into(),
                        y: u.of(p.mean_tps),
                        tip: format!(
                            "{}, {} threads: mean {} over {} run(s), cv {:.1}%, p99 {:.2} ms",
                            c.variant,
                            p.threads,
                            u.say(p.mean_tps, 1),
                            p.tps.len(),
                            p.cv * 100.0,
                            p.latency.p99_ms
                        ),
                    })
                    .collect(),
            )
        })
        .collect();
    line_chart(
        &Axes {
            title: &format!("{}: throughput", w.label),
            x_label: "client threads (log2 scale)",
            y_label: u.axis(),
            x_ticks: thread_ticks(w),
            ..Axes::default()
        },
        &lines,
    )
}

/// p99 (solid) and p50 (dashed) latency against client threads, per variant.
fn latency_chart(w: &WorkloadModel, variants: &[String]) -> String {
    let mut lines = Vec::new();
    for c in &w.curves {
        for (pct, dashed) in [("p99", false), ("p50", true)] {
            lines.push(Line {
                dashed,
                legend: !dashed,
                ..solid(&c.variant, variants, c
                    .points
                    .iter()
                    .map(|p| {
                        let l = &p.latency;
                        Mark {
                            x: p.threads.into(),
                            y: if dashed { l.p50_ms } else { l.p99_ms },
                            tip: format!(
                                "{}, {} threads, {pct}: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                                c.variant, p.threads, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
                            ),
                        }
                    })
                    .collect())
            });
        }
    }
    // 500 ms at 1024 threads would flatten 0.1 ms at 1 thread to zero on a linear axis.
    let y_log = spans_decades(lines.iter().flat_map(|l| l.points.iter().map(|m| m.y)));
    line_chart(
        &Axes {
            title: &format!("{}: latency (p99 solid, p50 dashed)", w.label),
            x_label: "client threads (log2 scale)",
            y_label: if y_log {
                "latency (ms, log scale)"
            } else {
                "latency (ms)"
            },
            x_ticks: thread_ticks(w),
            y_log,
            ..Axes::default()
        },
        &lines,
    )
}

/// Server CPU (user + sys) per transaction against client threads: what a transaction costs
/// the server as concurrency grows. None when no run has server telemetry.
fn server_cpu_chart(w: &WorkloadModel, variants: &[String]) -> Option<String> {
    let per = w.unit.event();
    let lines: Vec<Line> = w
        .curves
        .iter()
        .map(|c| {
            solid(
                &c.variant,
                variants,
                c.points
                    .iter()
                    .filter_map(|p| {
                        let us = p.server_cpu_us_per_event?;
                        Some(Mark {
                            x: p.threads.into(),
                            y: us,
                            tip: format!(
                                "{}, {} threads: {us:.1} us server CPU per {per}",
                                c.variant, p.threads
                            ),
                        })
                    })
                    .collect(),
            )
        })
        .collect();
    lines.iter().any(|l| !l.points.is_empty()).then(|| {
        line_chart(
            &Axes {
                title: &format!("{}: server CPU per {per}", w.label),
                x_label: "client threads (log2 scale)",
                y_label: &format!("server CPU, user + sys (us per {per})"),
                x_ticks: thread_ticks(w),
                ..Axes::default()
            },
            &lines,
        )
    })
}

/// Throughput or p99 over a run, per variant, at `threads`: the typical repetition's ticks.
fn ticks_chart(w: &WorkloadModel, variants: &[String], threads: u32, p99: bool) -> Option<String> {
    let u = w.unit;
    let lines: Vec<Line> = w
        .curves
        .iter()
        .filter_map(|c| {
            let s = c.series.iter().find(|s| s.threads == threads)?;
            Some(solid(
                &c.variant,
                variants,
                s.ticks
                    .iter()
                    .map(|t| Mark {
                        x: t.t,
                        y: if p99 { t.p99_ms } else { u.of(t.tps) },
                        tip: format!(
                            "{}, repetition {}, {}: {}, p99 {:.2} ms",
                            c.variant,
                            s.repetition,
                            seconds(t.t),
                            u.say(t.tps, 1),
                            t.p99_ms
                        ),
                    })
                    .collect(),
            ))
        })
        .filter(|l| !l.points.is_empty())
        .collect();
    let what = if p99 { "p99" } else { "throughput" };
    (!lines.is_empty()).then(|| {
        line_chart(
            &Axes {
                title: &format!("{} at {threads} threads: {what} over time", w.label),
                x_label: "seconds into the run",
                y_label: if p99 { "p99 latency (ms)" } else { u.axis() },
                ..Axes::default()
            },
            &lines,
        )
    })
}

/// Memory ticks come every second: a longer gap is a pause between runs, often another
/// server (each series starts its own).
const MEMORY_GAP_S: f64 = 3.0;

/// Server RSS or VSZ over the study, per variant.
fn memory_chart(m: &Model, vsz: bool) -> Option<String> {
    let lines: Vec<Line> = m
        .memory
        .iter()
        .map(|s| {
            // VSZ is mostly address space reserved at start (8 TiB for MariaDB): what moves
            // is its growth, drawn from each server's first tick (a gap starts another).
            let mut base = (f64::NEG_INFINITY, 0.0);
            let marks = s
                .points
                .iter()
                .map(|p| {
                    if p.t - base.0 > MEMORY_GAP_S {
                        base.1 = p.vsz_mib;
                    }
                    base.0 = p.t;
                    Mark {
                        x: p.t,
                        y: if vsz { p.vsz_mib - base.1 } else { p.rss_mib },
                        tip: format!(
                            "{}, {}: RSS {}, VSZ {} ({}{} since this server's first tick)",
                            s.variant,
                            seconds(p.t),
                            size(p.rss_mib),
                            size(p.vsz_mib),
                            if p.vsz_mib >= base.1 { "+" } else { "-" },
                            size((p.vsz_mib - base.1).abs())
                        ),
                    }
                })
                .collect();
            solid(&s.variant, &m.variants, marks)
        })
        .filter(|l| !l.points.is_empty())
        .collect();
    let what = if vsz { "VSZ" } else { "RSS" };
    (!lines.is_empty()).then(|| {
        line_chart(
            &Axes {
                title: &if vsz {
                    "server VSZ growth over the study".to_string()
                } else {
                    "server RSS over the study".to_string()
                },
                x_label: "seconds since the variant's first run",
                gap: Some(MEMORY_GAP_S),
                y_label: &if vsz {
                    "VSZ growth since each server's first tick (MiB)".to_string()
                } else {
                    format!("server {what} (MiB)")
                },
                ..Axes::default()
            },
            &lines,
        )
    })
}

/// A file stem from a label: letters and digits kept, the rest '_'.
fn stem(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The charts of one workload, in the order the report shows them; those over time come last.
pub fn workload_charts(w: &WorkloadModel, variants: &[String]) -> Vec<Chart> {
    let base = stem(&w.label);
    let mut out = vec![Chart {
        name: format!("{base}-throughput"),
        title: format!("{}: throughput", w.label),
        svg: throughput_chart(w, variants),
    }];
    for cpus in w.cpu_counts() {
        let sub = w.with_cpus(cpus);
        out.push(Chart {
            name: format!("{base}-throughput-{cpus}cpus"),
            title: format!("{}: throughput", sub.label),
            svg: throughput_chart(&sub, variants),
        });
    }
    out.push(Chart {
        name: format!("{base}-latency"),
        title: format!("{}: latency", w.label),
        svg: latency_chart(w, variants),
    });
    if let Some(svg) = server_cpu_chart(w, variants) {
        out.push(Chart {
            name: format!("{base}-server-cpu"),
            title: format!("{}: server CPU per {}", w.label, w.unit.event()),
            svg,
        });
    }
    for t in w.threads() {
        // The file stem keeps "tps" whatever the unit, so scripts find a study's charts.
        for (p99, what, said) in [(false, "tps", w.unit.name()), (true, "p99", "p99")] {
            if let Some(svg) = ticks_chart(w, variants, t, p99) {
                out.push(Chart {
                    name: format!("{base}-{t}threads-{what}-over-time"),
                    title: format!("{} at {t} threads: {said} over time", w.label),
                    svg,
                });
            }
        }
    }
    out
}

/// Throughput relative to the baseline against threads, one chart per slice of the study
/// (the variants compared with the same baseline: one CPU count, one platform), one line per
/// variant, a dashed line at 1.0 and each ratio's 95% interval where there are repetitions.
pub fn ratio_charts(m: &Model, w: &WorkloadModel) -> Vec<Chart> {
    let rows: Vec<&crate::model::Comparison> = m
        .comparisons
        .iter()
        .filter(|c| c.workload == w.label && c.ratio.is_some())
        .collect();
    let mut slices: Vec<&str> = Vec::new();
    for r in &rows {
        if !slices.contains(&r.against.as_str()) {
            slices.push(&r.against);
        }
    }
    let base = stem(&w.label);
    slices
        .iter()
        .enumerate()
        .map(|(i, against)| {
            let mut lines: Vec<Line> = Vec::new();
            for r in rows.iter().filter(|r| r.against == *against) {
                let ratio = r.ratio.unwrap_or(1.0);
                let mark = Mark {
                    x: r.threads.into(),
                    y: ratio,
                    tip: format!(
                        "{}, {} threads: {ratio:.2}x {against}{}",
                        r.variant,
                        r.threads,
                        r.interval.zip(r.level).map_or(
                            " (1 repetition, no interval)".into(),
                            |((lo, hi), level)| {
                                format!(" ({:.2}% interval {lo:.2}x-{hi:.2}x)", level * 100.0)
                            }
                        )
                    ),
                };
                match lines.iter_mut().find(|l| l.name == r.variant) {
                    Some(l) => l.points.push(mark),
                    None => lines.push(solid(&r.variant, &m.variants, vec![mark])),
                }
                if let (Some((lo, hi)), Some(l)) =
                    (r.interval, lines.iter_mut().find(|l| l.name == r.variant))
                {
                    l.whiskers.push((r.threads.into(), lo, hi));
                }
            }
            let title = format!("{}: throughput relative to {against}", w.label);
            Chart {
                name: format!("{base}-ratio-{}", i + 1),
                svg: line_chart(
                    &Axes {
                        title: &title,
                        x_label: "client threads (log2 scale)",
                        y_label: "throughput ratio (1.0 = the baseline, log scale)",
                        x_ticks: thread_ticks(w),
                        y_ref: Some(1.0),
                        y_ratio: true,
                        ..Axes::default()
                    },
                    &lines,
                ),
                title,
            }
        })
        .collect()
}

/// The study-wide charts: server memory over time.
pub fn memory_charts(m: &Model) -> Vec<Chart> {
    [(false, "rss"), (true, "vsz")]
        .into_iter()
        .filter_map(|(vsz, name)| {
            Some(Chart {
                name: format!("server-{name}"),
                title: format!("server {} over the study", name.to_uppercase()),
                svg: memory_chart(m, vsz)?,
            })
        })
        .collect()
}

/// Every chart of the report.
pub fn charts(m: &Model) -> Vec<Chart> {
    let mut out: Vec<Chart> = m
        .workloads
        .iter()
        .flat_map(|w| {
            let mut charts = workload_charts(w, &m.variants);
            // After the throughput charts, as the report shows them.
            let at = charts
                .iter()
                .position(|c| !c.name.contains("-throughput"))
                .unwrap_or(charts.len());
            charts.splice(at..at, ratio_charts(m, w));
            charts
        })
        .collect();
    out.extend(memory_charts(m));
    out
}

/// A time at the data's own resolution: ticks of 0.25 s read as 0.25 s, not rounded to 1 s.
fn seconds(t: f64) -> String {
    let s = format!("{t:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} s")
}

/// A size given in MiB, in the unit that reads best (8 TiB of reserved address space is not
/// "8389130.6 MiB").
pub(crate) fn size(mib: f64) -> String {
    let units = [("MiB", 1.0), ("GiB", 1024.0), ("TiB", 1024.0 * 1024.0)];
    let (unit, scale) = units
        .iter()
        .rev()
        .find(|(_, scale)| mib.abs() >= *scale)
        .copied()
        .unwrap_or(units[0]);
    format!("{:.1} {unit}", mib / scale)
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn times_keep_their_resolution_and_sizes_their_unit() {
        assert_eq!(seconds(0.25), "0.25 s");
        assert_eq!(seconds(3.0), "3 s");
        assert_eq!(size(8_389_130.6), "8.0 TiB");
        assert_eq!(size(1536.0), "1.5 GiB");
        assert_eq!(size(12.3), "12.3 MiB");
        assert_eq!(size(0.5), "0.5 MiB");
    }
}
