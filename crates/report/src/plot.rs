//! Drawing a line chart in SVG: the canvas, the axes (linear, log2 thread counts, log10
//! decades), the lines with their hover marks, dots and interval whiskers, the legend.

use std::fmt::Write;

pub(crate) const W: f64 = 760.0;
pub(crate) const H: f64 = 440.0;
pub(crate) const LEFT: f64 = 84.0;
pub(crate) const RIGHT: f64 = 230.0;
pub(crate) const TOP: f64 = 44.0;
pub(crate) const BOTTOM: f64 = 64.0;
/// Colour-blind-safe (Okabe-Ito), then repeated.
pub(crate) const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A point with what its tooltip says.
pub(crate) struct Mark {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) tip: String,
}

pub(crate) struct Line {
    pub(crate) name: String,
    pub(crate) colour: usize,
    pub(crate) dashed: bool,
    /// Shown in the legend (a dashed companion of a solid line is not).
    pub(crate) legend: bool,
    /// Joined by the line, each a hover target.
    pub(crate) points: Vec<Mark>,
    /// Drawn faintly, not joined: the repetitions behind a mean.
    pub(crate) dots: Vec<Mark>,
    /// Vertical interval bars: (x, low, high), e.g. a ratio's 95% interval.
    pub(crate) whiskers: Vec<(f64, f64, f64)>,
}

#[derive(Default)]
pub(crate) struct Axes<'a> {
    pub(crate) title: &'a str,
    pub(crate) x_label: &'a str,
    pub(crate) y_label: &'a str,
    /// Thread counts: a log2 axis with a tick at each.
    pub(crate) x_ticks: Option<Vec<f64>>,
    /// Points further apart than this on x are not joined (another run, another server).
    pub(crate) gap: Option<f64>,
    /// A log10 y axis (values spanning decades), ticks at every power of ten.
    pub(crate) y_log: bool,
    /// A dashed horizontal line at this value (1.0 on a ratio chart).
    pub(crate) y_ref: Option<f64>,
    /// Ratios: a log y axis around 1.0 sized by the ratios themselves (0.8 as far below as
    /// 1.25 is above), an interval reaching past it clipped at the frame and marked there.
    pub(crate) y_ratio: bool,
}

/// A round step for about five axis ticks up to `max`.
pub(crate) fn step(max: f64) -> f64 {
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

pub(crate) fn si(v: f64) -> String {
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

pub(crate) fn line_chart(axes: &Axes, lines: &[Line]) -> String {
    let all = || {
        lines
            .iter()
            .flat_map(|l| l.points.iter().chain(l.dots.iter()))
    };
    let log = axes.x_ticks.is_some();
    let fx = |x: f64| if log { x.max(1e-9).log2() } else { x };
    let (xmin, xmax) = match &axes.x_ticks {
        // Padded: a point (and its interval) at the first or last thread count would sit on
        // the frame.
        Some(t) => {
            let (a, b) = (
                fx(t.first().copied().unwrap_or(1.0)),
                fx(t.last().copied().unwrap_or(1.0)),
            );
            let pad = if b > a { (b - a) * 0.05 } else { 0.5 };
            (a - pad, b + pad)
        }
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
    let (y_lo, y_hi, y_ticks) = match axes.y_ratio {
        true => ratio_range(
            all().map(|m| m.y),
            lines
                .iter()
                .flat_map(|l| l.whiskers.iter().flat_map(|w| [w.1, w.2])),
        ),
        false => y_range(ys(), axes.y_log),
    };
    let fy = |v: f64| match (axes.y_ratio, axes.y_log) {
        (true, _) => v.max(1e-12).ln(),
        (_, true) => v.max(1e-12).log10(),
        _ => v,
    };
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
    // Labels that fit and stay apart (see `legend.rs`); a key above them when they are an
    // axis's values.
    let named: Vec<&str> = lines
        .iter()
        .filter(|l| l.legend)
        .map(|l| l.name.as_str())
        .collect();
    let (key, mut labels) = crate::legend::labels(&named);
    labels.reverse();
    let mut legend_row = 0;
    if let Some(k) = &key {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-weight="bold">{}</text>"#,
            LEFT + pw + 16.0,
            TOP + 14.0,
            escape(k)
        );
        legend_row += 1;
    }
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
            // Clipped at the frame: an arrowhead there says the interval goes on.
            let (clo, chi) = (lo.max(y_lo), hi.min(y_hi));
            let _ = write!(
                s,
                r#"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="{colour}" stroke-width="1.5"/>"#,
                y(clo),
                y(chi)
            );
            for (end, clipped, dir) in [(clo, *lo < y_lo, 1.0), (chi, *hi > y_hi, -1.0)] {
                let yy = y(end);
                let beyond = if dir > 0.0 { *lo } else { *hi };
                let _ = match clipped {
                    true => write!(
                        s,
                        r#"<path d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}"><title>the interval goes on to {beyond:.2}x</title></path><text x="{:.1}" y="{:.1}" font-size="10" fill="{colour}">{beyond:.2}x</text>"#,
                        xx - 5.0,
                        yy + dir * 8.0,
                        xx + 5.0,
                        yy + dir * 8.0,
                        xx,
                        yy,
                        xx + 7.0,
                        // Inside the frame, beside the arrowhead.
                        yy - dir * if dir > 0.0 { 10.0 } else { 18.0 },
                    ),
                    false => write!(
                        s,
                        r#"<line x1="{:.1}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{colour}"/>"#,
                        xx - 4.0,
                        xx + 4.0
                    ),
                };
            }
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
                escape(&labels.pop().unwrap_or_default())
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// The y axis: (bottom, top, ticks). Linear from 0 (or below, for negative values) to a
/// round step above the largest value; log from the decade below the smallest positive value
/// to the decade above the largest, a tick at every power of ten.
pub(crate) fn y_range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64, Vec<f64>) {
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

/// A ratio axis: log, symmetric around 1.0 (0.8 as far below as 1.25 is above), reaching
/// past the furthest ratio and interval end with room to spare, at least to +-10%; ticks at
/// round ratios. Intervals size it only up to 0.5x-2x: a wider one would squash every ratio
/// onto the 1.0 line, so it is clipped at the frame instead (and said there).
pub(crate) fn ratio_range(
    ratios: impl Iterator<Item = f64>,
    interval_ends: impl Iterator<Item = f64>,
) -> (f64, f64, Vec<f64>) {
    let reach_of = |v: f64| (v > 0.0 && v.is_finite()).then(|| v.ln().abs());
    let points = ratios.filter_map(reach_of).fold(0.1f64.ln_1p(), f64::max);
    let ends = interval_ends
        .filter_map(reach_of)
        .fold(0.0f64, f64::max)
        .min(2f64.ln());
    let reach = points.max(ends) * 1.1;
    let (lo, hi) = ((-reach).exp(), reach.exp());
    const ROUND: [f64; 21] = [
        0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0,
        5.0, 10.0, 20.0, 50.0,
    ];
    // From 1.0 outward on each side, each tick at least a ninth of the axis from the last
    // one kept: labels never crowd around 1.0 on a wide axis.
    let gap = 2.0 * reach / 9.0;
    let inside = |t: &f64| (lo..=hi).contains(t);
    let mut ticks = vec![1.0];
    let mut last = 0.0f64;
    for t in ROUND.iter().copied().filter(inside).filter(|t| *t > 1.0) {
        if t.ln() - last >= gap {
            ticks.push(t);
            last = t.ln();
        }
    }
    let mut last = 0.0f64;
    for t in ROUND
        .iter()
        .rev()
        .copied()
        .filter(inside)
        .filter(|t| *t < 1.0)
    {
        if last - t.ln() >= gap {
            ticks.push(t);
            last = t.ln();
        }
    }
    ticks.sort_by(f64::total_cmp);
    (lo, hi, ticks)
}

/// Whether values (all positive ones) span more than two decades: then a log axis shows
/// them all, where a linear one flattens the small ones to zero.
pub(crate) fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    lo.is_finite() && hi / lo > 100.0
}

/// A variant's solid line, in the legend, without repetition dots.
pub(crate) fn solid(name: &str, variants: &[String], points: Vec<Mark>) -> Line {
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
pub(crate) fn colour(variants: &[String], name: &str) -> usize {
    variants.iter().position(|v| v == name).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_axis_is_centred_on_one_sized_by_ratios_and_intervals_up_to_2x() {
        // Ratios near 1 with a 0.2x-3.6x interval: the axis reaches 0.5x-2x (times room), not
        // 0.2x-3.6x, and its ticks keep apart.
        let (lo, hi, ticks) = ratio_range([1.22, 0.91].into_iter(), [0.22, 3.63].into_iter());
        assert!((lo * hi - 1.0).abs() < 1e-9, "symmetric: {lo} {hi}");
        assert!(hi > 2.0 && hi < 2.5, "{hi}");
        assert!(
            ticks.contains(&1.0) && ticks.contains(&2.0) && ticks.contains(&0.5),
            "{ticks:?}"
        );
        let gaps: Vec<f64> = ticks.windows(2).map(|w| (w[1] / w[0]).ln()).collect();
        assert!(
            gaps.iter().all(|g| *g >= 2.0 * hi.ln() / 9.0 - 1e-9),
            "{ticks:?}"
        );
        // Without intervals, at least +-10%.
        let (lo, hi, _) = ratio_range([1.0].into_iter(), std::iter::empty());
        assert!(lo < 0.91 && hi > 1.1, "{lo} {hi}");
    }
}
