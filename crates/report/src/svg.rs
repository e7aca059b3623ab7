//! Charts as standalone SVG: no scripts, no fonts to fetch; values on hover through SVG
//! `<title>` elements, which every browser shows as a tooltip. One drawing routine
//! ([`line_chart`]) for every chart; [`charts`] lists the charts a model gets, so the HTML page
//! and `bakeoff report --charts` draw the same ones.

use std::fmt::Write;

use crate::model::{Model, WorkloadModel};

const W: f64 = 760.0;
const H: f64 = 440.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 64.0;
/// Colour-blind-safe (Okabe-Ito), then repeated.
const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A chart as the report draws it: `name` is its file stem with `--charts`.
#[derive(Debug, Clone)]
pub struct Chart {
    pub name: String,
    pub title: String,
    pub svg: String,
}

/// A point with what its tooltip says.
struct Mark {
    x: f64,
    y: f64,
    tip: String,
}

struct Line {
    name: String,
    colour: usize,
    dashed: bool,
    /// Shown in the legend (a dashed companion of a solid line is not).
    legend: bool,
    /// Joined by the line, each a hover target.
    points: Vec<Mark>,
    /// Drawn faintly, not joined: the repetitions behind a mean.
    dots: Vec<Mark>,
    /// Vertical interval bars: (x, low, high), e.g. a ratio's 95% interval.
    whiskers: Vec<(f64, f64, f64)>,
}

#[derive(Default)]
struct Axes<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    /// Thread counts: a log2 axis with a tick at each.
    x_ticks: Option<Vec<f64>>,
    /// Points further apart than this on x are not joined (another run, another server).
    gap: Option<f64>,
    /// A log10 y axis (values spanning decades), ticks at every power of ten.
    y_log: bool,
    /// A dashed horizontal line at this value (1.0 on a ratio chart).
    y_ref: Option<f64>,
}

/// A round step for about five axis ticks up to `max`.
fn step(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{}k", format!("{:.1}", v / 1e3).trim_end_matches(".0"))
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        // Ticks are round steps: 2.5, 0.25, 0.1, never 2.50.
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn short(name: &str) -> String {
    if name.chars().count() > 28 {
        format!("{}…", name.chars().take(27).collect::<String>())
    } else {
        name.to_string()
    }
}

fn line_chart(axes: &Axes, lines: &[Line]) -> String {
    let all = || {
        lines
            .iter()
            .flat_map(|l| l.points.iter().chain(l.dots.iter()))
    };
    let log = axes.x_ticks.is_some();
    let fx = |x: f64| if log { x.max(1e-9).log2() } else { x };
    let (xmin, xmax) = match &axes.x_ticks {
        Some(t) => (
            fx(t.first().copied().unwrap_or(1.0)),
            fx(t.last().copied().unwrap_or(1.0)),
        ),
        None => (0.0, all().map(|m| m.x).fold(0.0, f64::max)),
    };
    let ys = || {
        all()
            .map(|m| m.y)
            .chain(
                lines
                    .iter()
                    .flat_map(|l| l.whiskers.iter().flat_map(|w| [w.1, w.2])),
            )
            .chain(axes.y_ref)
    };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |v: f64| {
        if xmax > xmin {
            LEFT + (fx(v) - xmin) / (xmax - xmin) * pw
        } else {
            LEFT + pw / 2.0
        }
    };
    let (y_lo, y_hi, y_ticks) = y_range(ys(), axes.y_log);
    let fy = |v: f64| if axes.y_log { v.max(1e-12).log10() } else { v };
    let y = |v: f64| TOP + ph - (fy(v) - fy(y_lo)) / (fy(y_hi) - fy(y_lo)) * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12"><title>{0}</title><rect x="0" y="0" width="{W}" height="{H}" fill="white"/><text x="{LEFT}" y="24" font-size="15" font-weight="bold">{0}</text>"#,
        escape(axes.title)
    );
    for v in y_ticks {
        let yy = y(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 8.0,
            yy + 4.0,
            si(v)
        );
    }
    if let Some(r) = axes.y_ref {
        let yy = y(r);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#444" stroke-dasharray="4 3"/>"##,
            LEFT + pw
        );
    }
    let xticks: Vec<f64> = axes.x_ticks.clone().unwrap_or_else(|| {
        let st = step(xmax);
        (0..)
            .map(|i| i as f64 * st)
            .take_while(|t| *t <= xmax + st / 2.0)
            .collect()
    });
    for t in xticks {
        let xx = x(t);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#eee"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 18.0,
            si(t)
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        H - 18.0,
        escape(axes.x_label),
        TOP + ph / 2.0,
        escape(axes.y_label)
    );
    let mut legend_row = 0;
    for l in lines {
        let colour = COLOURS[l.colour % COLOURS.len()];
        let dash = if l.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let gap = axes.gap.unwrap_or(f64::INFINITY);
        for segment in l.points.chunk_by(|a, b| b.x - a.x <= gap) {
            let path: Vec<String> = segment
                .iter()
                .map(|m| format!("{:.1},{:.1}", x(m.x), y(m.y)))
                .collect();
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
                path.join(" ")
            );
        }
        for (wx, lo, hi) in &l.whiskers {
            let xx = x(*wx);
            let _ = write!(
                s,
                r#"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="{colour}" stroke-width="1.5"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}"/>"#,
                y(*lo),
                y(*hi),
                xx - 4.0,
                y(*lo),
                xx + 4.0,
                y(*lo),
                xx - 4.0,
                y(*hi),
                xx + 4.0,
                y(*hi)
            );
        }
        for m in &l.dots {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}" fill-opacity="0.45"><title>{}</title></circle>"#,
                x(m.x),
                y(m.y),
                escape(&m.tip)
            );
        }
        // A series over time gets small hover targets; a curve over threads gets markers.
        let r = if log { 4.0 } else { 2.0 };
        for m in &l.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="{r}" fill="{colour}"><title>{}</title></circle>"#,
                x(m.x),
                y(m.y),
                escape(&m.tip)
            );
        }
        if l.legend {
            let ly = TOP + 14.0 + legend_row as f64 * 20.0;
            let lx = LEFT + pw + 16.0;
            legend_row += 1;
            let _ = write!(
                s,
                r#"<rect x="{lx:.1}" y="{:.1}" width="14" height="4" fill="{colour}"/><text x="{:.1}" y="{ly:.1}"><title>{}</title>{}</text>"#,
                ly - 6.0,
                lx + 20.0,
                escape(&l.name),
                escape(&short(&l.name))
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// The y axis: (bottom, top, ticks). Linear from 0 (or below, for negative values) to a
/// round step above the largest value; log from the decade below the smallest positive value
/// to the decade above the largest, a tick at every power of ten.
fn y_range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64, Vec<f64>) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log {
            (1.0, 10.0, vec![1.0, 10.0])
        } else {
            (0.0, 1.0, vec![0.0, 1.0])
        };
    }
    if log {
        let (a, b) = (
            lo.log10().floor() as i32,
            (hi.log10().ceil() as i32).max(lo.log10().floor() as i32 + 1),
        );
        let ticks = (a..=b).map(|e| 10f64.powi(e)).collect();
        return (10f64.powi(a), 10f64.powi(b), ticks);
    }
    let lo = lo.min(0.0);
    let st = step((hi - lo).max(hi.abs()).max(f64::MIN_POSITIVE));
    // A little headroom: a point at the very top would sit on the frame.
    let top = ((hi.max(0.0) * 1.05) / st).ceil().max(1.0) * st;
    let bottom = (lo * 1.05 / st).floor() * st;
    let n = ((top - bottom) / st).round() as i64;
    let ticks = (0..=n).map(|i| bottom + i as f64 * st).collect();
    (bottom, top, ticks)
}

/// Whether values (all positive ones) span more than two decades: then a log axis shows
/// them all, where a linear one flattens the small ones to zero.
fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    lo.is_finite() && hi / lo > 100.0
}

/// A variant's solid line, in the legend, without repetition dots.
fn solid(name: &str, variants: &[String], points: Vec<Mark>) -> Line {
    Line {
        name: name.to_string(),
        colour: colour(variants, name),
        dashed: false,
        legend: true,
        points,
        dots: Vec::new(),
        whiskers: Vec::new(),
    }
}

/// A variant's colour: its place among all the model's variants, the same in every chart.
fn colour(variants: &[String], name: &str) -> usize {
    variants.iter().position(|v| v == name).unwrap_or(0)
}

fn thread_ticks(w: &WorkloadModel) -> Option<Vec<f64>> {
    Some(w.threads().into_iter().map(f64::from).collect())
}

/// Throughput against client threads (log2 axis), one line per variant through the means, every
/// repetition as a dot so the spread shows.
pub fn throughput_chart(w: &WorkloadModel, variants: &[String]) -> String {
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
                        y: *tps,
                        tip: format!(
                            "{}, {} threads, repetition {}: {tps:.1} tps",
                            c.variant,
                            p.threads,
                            rep + 1
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
                        y: p.mean_tps,
                        tip: format!(
                        "{}, {} threads: mean {:.1} tps over {} run(s), cv {:.1}%, p99 {:.2} ms",
                        c.variant,
                        p.threads,
                        p.mean_tps,
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
            y_label: "throughput (transactions/s)",
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
                                "{}, {} threads: {us:.1} us server CPU per transaction",
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
                title: &format!("{}: server CPU per transaction", w.label),
                x_label: "client threads (log2 scale)",
                y_label: "server CPU, user + sys (us per transaction)",
                x_ticks: thread_ticks(w),
                ..Axes::default()
            },
            &lines,
        )
    })
}

/// Throughput or p99 over a run, per variant, at `threads`: the typical repetition's ticks.
fn ticks_chart(w: &WorkloadModel, variants: &[String], threads: u32, p99: bool) -> Option<String> {
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
                        y: if p99 { t.p99_ms } else { t.tps },
                        tip: format!(
                            "{}, repetition {}, {:.0} s: {:.1} tps, p99 {:.2} ms",
                            c.variant, s.repetition, t.t, t.tps, t.p99_ms
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
                y_label: if p99 {
                    "p99 latency (ms)"
                } else {
                    "throughput (transactions/s)"
                },
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
                            "{}, {:.0} s: RSS {:.1} MiB, VSZ {:.1} MiB ({:+.1} MiB since this server's first tick)",
                            s.variant, p.t, p.rss_mib, p.vsz_mib, p.vsz_mib - base.1
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
            title: format!("{}: server CPU per transaction", w.label),
            svg,
        });
    }
    for t in w.threads() {
        for (p99, what) in [(false, "tps"), (true, "p99")] {
            if let Some(svg) = ticks_chart(w, variants, t, p99) {
                out.push(Chart {
                    name: format!("{base}-{t}threads-{what}-over-time"),
                    title: format!("{} at {t} threads: {what} over time", w.label),
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
                        r.ci.map_or(" (1 repetition, no interval)".into(), |(lo, hi)| {
                            format!(" (95% interval {lo:.2}x-{hi:.2}x)")
                        })
                    ),
                };
                match lines.iter_mut().find(|l| l.name == r.variant) {
                    Some(l) => l.points.push(mark),
                    None => lines.push(solid(&r.variant, &m.variants, vec![mark])),
                }
                if let (Some((lo, hi)), Some(l)) =
                    (r.ci, lines.iter_mut().find(|l| l.name == r.variant))
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
                        y_label: "throughput ratio (1.0 = the baseline)",
                        x_ticks: thread_ticks(w),
                        y_ref: Some(1.0),
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
