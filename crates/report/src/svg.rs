//! Charts as standalone SVG: no scripts, no fonts to fetch; values on hover through SVG
//! `<title>` elements, which every browser shows as a tooltip.

use std::fmt::Write;

use crate::model::WorkloadModel;

const W: f64 = 760.0;
const H: f64 = 440.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 220.0;
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
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Throughput against client threads (log2 axis), one line per variant through the means, every
/// repetition as a dot so the spread shows.
pub fn throughput_chart(w: &WorkloadModel) -> String {
    let threads = w.threads();
    let (tmin, tmax) = (
        threads.first().copied().unwrap_or(1) as f64,
        threads.last().copied().unwrap_or(1) as f64,
    );
    let ymax = w
        .curves
        .iter()
        .flat_map(|c| c.points.iter().flat_map(|p| p.tps.iter().copied()))
        .fold(0.0, f64::max);
    let ystep = step(ymax);
    // A little headroom: a point at the very top would sit on the frame.
    let ytop = (ymax * 1.05 / ystep).ceil().max(1.0) * ystep;
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |t: f64| {
        if tmax > tmin {
            LEFT + (t.log2() - tmin.log2()) / (tmax.log2() - tmin.log2()) * pw
        } else {
            LEFT + pw / 2.0
        }
    };
    let y = |v: f64| TOP + ph - v / ytop * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r#"<title>{}: throughput vs client threads</title>"#,
        escape(&w.label)
    );
    let _ = write!(
        s,
        r#"<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>"#
    );
    let _ = write!(
        s,
        r#"<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        escape(&w.label)
    );
    // Grid and y ticks.
    let mut v = 0.0;
    while v <= ytop + ystep / 2.0 {
        let yy = y(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/>"##,
            LEFT + pw
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            yy + 4.0,
            si(v)
        );
        v += ystep;
    }
    for t in &threads {
        let xx = x(*t as f64);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#eee"/>"##,
            TOP + ph
        );
        let _ = write!(
            s,
            r#"<text x="{xx:.1}" y="{:.1}" text-anchor="middle">{t}</text>"#,
            TOP + ph + 18.0
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">client threads (log2 scale)</text>"#,
        LEFT + pw / 2.0,
        H - 18.0
    );
    let _ = write!(
        s,
        r#"<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">throughput (transactions/s)</text>"#,
        TOP + ph / 2.0
    );
    for (i, c) in w.curves.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = c
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.threads as f64), y(p.mean_tps)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for p in &c.points {
            for (rep, tps) in p.tps.iter().enumerate() {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}" fill-opacity="0.45"><title>{}, {} threads, repetition {}: {tps:.1} tps</title></circle>"#,
                    x(p.threads as f64),
                    y(*tps),
                    escape(&c.variant),
                    p.threads,
                    rep + 1
                );
            }
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}"><title>{}, {} threads: mean {:.1} tps over {} run(s), cv {:.1}%, p99 {:.2} ms</title></circle>"#,
                x(p.threads as f64),
                y(p.mean_tps),
                escape(&c.variant),
                p.threads,
                p.mean_tps,
                p.tps.len(),
                p.cv * 100.0,
                p.p99_ms
            );
        }
        let ly = TOP + 14.0 + i as f64 * 20.0;
        let lx = LEFT + pw + 16.0;
        let _ = write!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="14" height="4" fill="{colour}"/>"#,
            ly - 6.0
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{ly:.1}">{}</text>"#,
            lx + 20.0,
            escape(&c.variant)
        );
    }
    s.push_str("</svg>");
    s
}
