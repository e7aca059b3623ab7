//! The report as one self-contained HTML file: inline CSS, inline SVG charts, no scripts or
//! fonts from anywhere, so it opens offline and can be mailed as one file.

use std::fmt::Write;

use crate::model::Model;
use crate::svg::{escape, throughput_chart};

const STYLE: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left}.sig{font-weight:bold}.bad{color:#b00}";

pub fn html(m: &Model) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>bakeoff: {}</title><style>{STYLE}</style></head><body>",
        escape(&m.study)
    );
    let _ = write!(s, "<h1>Study {}</h1><p>Every variant against <b>{}</b>; ratios of mean throughput with 95% intervals from the repetitions (bold: the interval excludes 1).</p>", escape(&m.study), escape(&m.baseline));
    for w in &m.workloads {
        let _ = write!(s, "<h2>{}</h2>", escape(&w.label));
        s.push_str(&throughput_chart(w));
        s.push_str("<table><tr><th>threads</th><th class=\"l\">variant</th><th>tps (mean)</th><th>cv</th><th>p99 ms</th><th>ratio</th><th>95% interval</th></tr>");
        for r in m.table(w) {
            let (ratio, ci, class) = match r.comparison {
                None => ("baseline".to_string(), String::new(), ""),
                Some(x) => (
                    format!("{:.2}x", x.ratio),
                    x.ci.map_or("n/a".into(), |(lo, hi)| format!("{lo:.2}x – {hi:.2}x")),
                    if x.significant { " class=\"sig\"" } else { "" },
                ),
            };
            let p = r.point;
            let _ = write!(
                s,
                "<tr><td>{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{:.1}%</td><td>{:.2}</td><td{class}>{ratio}</td><td>{ci}</td></tr>",
                r.threads,
                escape(r.variant),
                p.mean_tps,
                p.cv * 100.0,
                p.p99_ms
            );
        }
        s.push_str("</table><table><tr><th class=\"l\">variant</th><th>peak tps</th><th>at threads</th><th>95% of peak from</th><th>drop at top</th></tr>");
        for c in &w.curves {
            let a = &c.analysis;
            let _ = write!(
                s,
                "<tr><td class=\"l\">{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.1}%</td></tr>",
                escape(&c.variant),
                a.peak_tps,
                a.peak_threads,
                a.saturation_threads,
                a.drop_at_max_pct
            );
        }
        s.push_str("</table>");
    }
    if !m.costs.is_empty() {
        let _ = write!(s, "<h2>Cost per million transactions ({})</h2><table><tr><th class=\"l\">workload</th><th class=\"l\">variant</th><th>peak tps</th><th>at threads</th><th>on demand</th><th>reserved</th></tr>", escape(&m.costs[0].platform));
        for c in &m.costs {
            let _ = write!(
                s,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{}</td><td>{:.4}</td><td>{}</td></tr>",
                escape(&c.workload),
                escape(&c.variant),
                c.peak_tps,
                c.peak_threads,
                c.on_demand_per_million,
                c.reserved_per_million.map_or("-".into(), |r| format!("{r:.4}"))
            );
        }
        s.push_str("</table>");
    }
    if !m.problems.is_empty() {
        s.push_str("<h2>Runs without a figure</h2><table><tr><th class=\"l\">variant</th><th class=\"l\">workload</th><th>threads</th><th class=\"l\">status</th><th class=\"l\">reason</th></tr>");
        for p in &m.problems {
            let _ = write!(
                s,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l bad\">{}</td><td class=\"l\">{}</td></tr>",
                escape(&p.variant),
                escape(&p.workload),
                p.threads,
                escape(&p.status),
                escape(p.reason.lines().next().unwrap_or(""))
            );
        }
        s.push_str("</table>");
    }
    let _ = write!(
        s,
        "<p><small>bakeoff {}</small></p></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    s
}
