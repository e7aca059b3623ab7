//! The report as one self-contained HTML file: inline CSS, inline SVG charts, no scripts or
//! fonts from anywhere, so it opens offline and can be mailed as one file.

use std::fmt::Write;

use crate::markup::{opt, table};
use crate::model::{Model, WorkloadModel};
use crate::svg::{escape, memory_charts, ratio_charts, workload_charts, Chart};

const STYLE: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}\
table{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto;max-width:100%}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}\
th{background:#f4f4f4}td.l,th.l{text-align:left}.sig{font-weight:bold}.bad{color:#b00}.warn{color:#a60}\
details{margin:1em 0}summary{cursor:pointer;font-weight:bold}figure{margin:1em 0}\
.opening{border-left:4px solid #468;padding:.2em 1em;margin:1em 0}.opening ul{padding-left:1.2em}\
.banner{background:#fff3f0;border:1px solid #e0a090;padding:.6em 1em;margin:1em 0}";

fn figure(s: &mut String, c: &Chart) {
    let _ = write!(s, "<figure id=\"{}\">{}</figure>", escape(&c.name), c.svg);
}

fn workload(s: &mut String, m: &Model, w: &WorkloadModel) {
    let u = w.unit;
    let _ = write!(s, "<h2>{}</h2>", escape(&w.label));
    if !w.summary.is_empty() {
        s.push_str("<ul class=\"summary\">");
        for line in &w.summary {
            let _ = write!(s, "<li>{}</li>", escape(line));
        }
        s.push_str("</ul>");
    }
    let charts = workload_charts(w, &m.variants);
    let (over_time, at_threads): (Vec<&Chart>, Vec<&Chart>) =
        charts.iter().partition(|c| c.name.ends_with("-over-time"));
    // Throughput first, then the table it summarises, then latency and CPU.
    let mut rest = at_threads.into_iter().peekable();
    while let Some(c) = rest.next_if(|c| c.name.contains("-throughput")) {
        figure(s, c);
    }
    for c in ratio_charts(m, w) {
        figure(s, &c);
    }
    let rows = m.table(w).into_iter().map(|r| {
        let (ratio, ci, against) = match r.comparison {
            None => ("baseline".to_string(), String::new(), String::new()),
            Some(x) => match x.ratio {
                Some(ratio) => {
                    let ratio = format!("{ratio:.2}x");
                    (
                        if x.significant {
                            format!("<span class=\"sig\">{ratio}</span>")
                        } else {
                            ratio
                        },
                        x.interval
                            .map_or("-".into(), |(lo, hi)| format!("{lo:.2}x – {hi:.2}x"))
                            + &verdict_word(x.verdict)
                            + &carried(x),
                        escape(&x.against),
                    )
                }
                None => (
                    "-".into(),
                    "-".into(),
                    format!(
                        "<span class=\"bad\">{}</span>",
                        escape(x.note.as_deref().unwrap_or(""))
                    ),
                ),
            },
        };
        let p = r.point;
        let judged = |v: Option<&crate::model::CostVerdict>| {
            v.map_or(String::new(), |c| {
                format!(
                    "{:.2}x ({:.2}x – {:.2}x){}",
                    c.ratio,
                    c.interval.0,
                    c.interval.1,
                    verdict_word(c.verdict)
                )
            })
        };
        let cost = judged(r.comparison.and_then(|x| x.cost.as_ref()));
        let p95 = judged(r.comparison.and_then(|x| x.latency_p95.as_ref()));
        let p99 = judged(r.comparison.and_then(|x| x.latency.as_ref()));
        vec![
            r.threads.to_string(),
            escape(r.variant),
            format!("{:.1}", u.of(p.mean_tps)),
            crate::spread(p),
            format!("{:.2}", p.latency.p50_ms),
            format!("{:.2}", p.latency.p99_ms),
            opt(p.server_cpu_us_per_event, 1),
            ratio,
            ci,
            cost,
            p95,
            p99,
            against,
        ]
    });
    let mean = format!("{} (mean)", u.name());
    let cpu = format!("server CPU us/{}", u.abbrev());
    let cpu_ratio = format!("CPU/{} ratio (interval), verdict", u.abbrev());
    table(
        s,
        &[
            "threads",
            "<variant",
            &mean,
            "cv",
            "p50 ms",
            "p99 ms",
            &cpu,
            "ratio",
            "interval (family-adjusted), verdict",
            &cpu_ratio,
            "p95 ratio (interval), verdict",
            "p99 ratio (interval), verdict",
            "<against",
        ],
        rows,
    );
    if w.curves
        .iter()
        .any(|c| c.points.iter().any(|p| p.tps.len() < 2))
    {
        s.push_str(match m.opening.completeness.complete {
            true => "<p><small>-: one repetition, so no spread and no interval; <code>repetitions = 2</code> or more in the study file give them.</small></p>",
            false => "<p><small>-: one repetition stored so far, so no spread and no interval yet: the study is incomplete (resume it for the rest).</small></p>",
        });
    }
    let limit = m.p99_limit_ms;
    let within = format!("best with p99 ≤ {limit} ms");
    let peak = format!("peak {}", u.name());
    table(
        s,
        &[
            "<variant",
            &peak,
            "at threads",
            "95% of peak from",
            "drop at top",
            &within,
        ],
        w.curves.iter().map(|c| {
            let a = &c.analysis;
            vec![
                escape(&c.variant),
                format!("{:.1}", u.of(a.peak_tps)),
                a.peak_threads.to_string(),
                a.saturation_threads.to_string(),
                format!("{:.1}%", a.drop_at_max_pct),
                a.best_within_p99.as_ref().map_or("none".into(), |b| {
                    format!("{} at {} threads", u.say(b.tps, 1), b.threads)
                }),
            ]
        }),
    );
    crate::transactions::html(s, w);
    for c in rest {
        figure(s, c);
    }
    if !over_time.is_empty() {
        s.push_str("<details><summary>Over time: each cell's typical run (the repetition with the median throughput), to spot stalls and warmup</summary>");
        for c in over_time {
            figure(s, c);
        }
        s.push_str("</details>");
    }
}

fn costs(s: &mut String, m: &Model) {
    if m.costs.is_empty() {
        return;
    }
    let units = m.costs.iter().map(|c| c.unit);
    let what = crate::unit::priced(units.clone());
    let _ = write!(s, "<h2>Cost per million {what}</h2><p>At each curve's peak: hourly price / {what} per hour x 1,000,000, with the variant's own price_per_hour where it has one, else the study's price table for the platform each result ran on.</p>");
    // One unit: said in the head, as every other table; several: beside each figure.
    let one = crate::unit::one_of(units);
    let peak = one.map_or("peak".into(), |u| format!("peak {}", u.name()));
    table(
        s,
        &[
            "<workload",
            "<variant",
            "<platform",
            &peak,
            "at threads",
            "on demand",
            "reserved",
        ],
        m.costs.iter().map(|c| {
            vec![
                escape(&c.workload),
                escape(&c.variant),
                escape(&c.platform),
                match one {
                    Some(u) => format!("{:.1}", u.of(c.peak_tps)),
                    None => c.unit.say(c.peak_tps, 1),
                },
                c.peak_threads.to_string(),
                format!("{:.4}", c.on_demand_per_million),
                opt(c.reserved_per_million, 4),
            ]
        }),
    );
}

fn runs_to_read_with_care(s: &mut String, m: &Model) {
    if !m.problems.is_empty() {
        s.push_str("<h2>Runs without a figure</h2>");
        table(
            s,
            &[
                "<variant",
                "<workload",
                "threads",
                "repetition",
                "<status",
                "<reason",
            ],
            m.problems.iter().map(|p| {
                vec![
                    escape(&p.variant),
                    escape(&p.workload),
                    p.threads.to_string(),
                    p.repetition.to_string(),
                    format!("<span class=\"bad\">{}</span>", escape(&p.status)),
                    escape(p.reason.lines().next().unwrap_or("")),
                ]
            }),
        );
    }
    if !m.warnings.is_empty() {
        s.push_str("<h2>Warnings</h2>");
        table(
            s,
            &["<variant", "<workload", "threads", "repetition", "<warning"],
            m.warnings.iter().map(|w| {
                vec![
                    escape(&w.variant),
                    escape(&w.workload),
                    w.threads.to_string(),
                    w.repetition.to_string(),
                    format!("<span class=\"warn\">{}</span>", escape(&w.text)),
                ]
            }),
        );
    }
}

fn probes(s: &mut String, m: &Model) {
    if m.probes.is_empty() {
        return;
    }
    s.push_str(
        "<h2>The machine</h2><p>Host probes run with the study: cpu, memory and fileio as sysbench measures them; steadiness, how much a fixed loop's speed varied between 100 ms slices on the least steady CPU (an auto study's check before its pilot; a machine of its own stays under 2%).</p>",
    );
    table(
        s,
        &["<origin", "<probe", "threads", "figure", "<unit", "<status"],
        m.probes.iter().map(|p| {
            vec![
                escape(&p.origin),
                escape(&p.probe),
                p.threads.to_string(),
                format!("{:.2}", p.figure),
                escape(&p.unit),
                escape(&p.status),
            ]
        }),
    );
}

/// What is known of a server the user runs, a line each: where, which, how it was reached,
/// that its CPU is not measured, and whose tables were used.
fn given_lines(g: &serde_json::Value) -> Vec<String> {
    if g.is_null() {
        return Vec::new();
    }
    let s = |k: &str| g[k].as_str().unwrap_or("-").to_string();
    vec![
        format!(
            "given server {} (@@hostname {})",
            escape(&s("url")),
            escape(&s("hostname"))
        ),
        format!(
            "TLS: {}",
            escape(g["tls"].as_str().unwrap_or("none (plain connection)"))
        ),
        format!("server CPU: {}", escape(&s("server_cpu"))),
        format!("tables: {}", escape(&s("dataset"))),
    ]
}

fn environment(s: &mut String, m: &Model) {
    if m.environments.is_empty() {
        return;
    }
    s.push_str("<h2>Environment</h2><p>From each variant's first run: where it ran and what the server lab verified on the running server.</p>");
    for line in crate::environment::lab_lines(&m.environments) {
        let _ = write!(s, "<p>{}</p>", escape(&line));
    }
    table(
        s,
        &["<variant", "<host", "<server", "<verified", "<bakeoff"],
        m.environments.iter().map(|e| {
            let h = &e.host;
            let host = format!(
                "{} ({}, {} CPUs, NUMA nodes {}, kernel {}, THP {})",
                h["hostname"].as_str().unwrap_or("?"),
                h["cpu_model"].as_str().unwrap_or("?"),
                h["cpus"],
                h["numa_nodes"].as_str().unwrap_or("?"),
                h["kernel"].as_str().unwrap_or("?"),
                h["transparent_hugepages"].as_str().unwrap_or("-"),
            );
            let checks: Vec<String> = e
                .checks
                .iter()
                .map(|c| {
                    let ok = c["ok"].as_bool().unwrap_or(false);
                    format!(
                        "<span class=\"{}\">{} {}: {}</span>",
                        if ok { "" } else { "bad" },
                        if ok { "✓" } else { "✗" },
                        escape(c["axis"].as_str().unwrap_or("")),
                        escape(c["seen"].as_str().unwrap_or(""))
                    )
                })
                .collect();
            vec![
                escape(&e.variant),
                escape(&host),
                format!(
                    "{}<br><small>{}</small>",
                    escape(&e.server()),
                    escape(&e.server_binary)
                ),
                checks
                    .into_iter()
                    .chain(given_lines(&e.given))
                    .chain(client_line(&e.client))
                    .collect::<Vec<_>>()
                    .join("<br>"),
                escape(&e.bakeoff_version),
            ]
        }),
    );
    if !m.variable_diffs.is_empty() {
        s.push_str("<h3>Server variables that differ between variants</h3>");
        let rows = m
            .variable_diffs
            .iter()
            .map(|d| (escape(&d.name), &d.values[..]));
        by_variant(s, "variable", rows);
    }
}

pub fn html(m: &Model) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>bakeoff: {}</title><style>{STYLE}</style></head><body>",
        escape(&m.study)
    );
    let _ = write!(s, "<h1>Study {}</h1>", escape(&m.study));
    crate::opening::html(&mut s, &m.opening);
    let _ = write!(s, "<p>Comparisons: <b>{}</b>; {}; bold: the interval excludes 1. Hover a point for its values.</p>", escape(&m.baseline), if m.comparisons.iter().any(|c| c.method == "paired") {
        "ratios taken within each block (every variant once per block, in a shuffled order), their geometric mean with an interval from Student's t on the log scale at the study's family level"
    } else {
        "ratios of mean throughput with intervals from the repetitions at the study's family level"
    });
    if let Some(c) = &m.cross_engine {
        cross_engine(&mut s, c);
    }
    for w in &m.workloads {
        workload(&mut s, m, w);
    }
    let memory = memory_charts(m);
    if !memory.is_empty() {
        s.push_str("<h2>Server memory</h2>");
        for c in &memory {
            figure(&mut s, c);
        }
    }
    precision(&mut s, m);
    costs(&mut s, m);
    probes(&mut s, m);
    runs_to_read_with_care(&mut s, m);
    environment(&mut s, m);
    let _ = write!(
        s,
        "<p><small>bakeoff {}</small></p></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    s
}

/// A table of one row per item (its first cell HTML already), a column per variant, the
/// variants named by the first row's values.
fn by_variant<'a>(
    s: &mut String,
    first: &str,
    rows: impl Iterator<Item = (String, &'a [(String, String)])>,
) {
    let rows: Vec<(String, &[(String, String)])> = rows.collect();
    let Some((_, values)) = rows.first() else {
        return;
    };
    let names: Vec<String> = std::iter::once(format!("<{first}"))
        .chain(values.iter().map(|(v, _)| format!("<{}", escape(v))))
        .collect();
    let head: Vec<&str> = names.iter().map(String::as_str).collect();
    table(
        s,
        &head,
        rows.iter().map(|(label, values)| {
            std::iter::once(label.clone())
                .chain(values.iter().map(|(_, v)| escape(v)))
                .collect()
        }),
    );
}

/// What a comparison across engines can mean, and their deciding settings side by side.
fn cross_engine(s: &mut String, c: &crate::engines::CrossEngine) {
    s.push_str("<h2>Across engines</h2>");
    for line in &c.meaning {
        let _ = write!(s, "<p>{}</p>", escape(line));
    }
    s.push_str("<p>The settings that decide such a comparison, as each server reported them when its runs began:</p>");
    let rows = c.aspects.iter().map(|a| {
        let judged = match a.same {
            Some(true) => " <small>(the same on every server)</small>",
            Some(false) => " <small class=\"bad\">(differs)</small>",
            None => "",
        };
        (format!("{}{judged}", escape(a.aspect)), &a.values[..])
    });
    by_variant(s, "aspect", rows);
}

/// Where the load ran, under the server's verified axes.
fn client_line(client: &serde_json::Value) -> Option<String> {
    let cpus = client["cpus"].as_str()?;
    let how = match client["chosen"].as_str() {
        Some("given") => "as given",
        Some("outside_servers") => "outside the server's",
        _ => "shared with the server",
    };
    let shared = client["shared"]
        .as_str()
        .map(|s| {
            format!(
                " <span class=\"bad\">shares CPUs {} with the server</span>",
                escape(s)
            )
        })
        .unwrap_or_default();
    Some(format!("client CPUs {} ({how}){shared}", escape(cpus)))
}

/// A verdict in a word, after its interval.
fn verdict_word(v: crate::model::Verdict) -> String {
    match v {
        crate::model::Verdict::Open => String::new(),
        _ => format!(" {}", v.word()),
    }
}

/// After a verdict by turns whose servers' switch penalties could move it: what one server
/// at a time would read, as they estimate it.
/// Where the study's check blocks ran it one server at a time: what they read, and a warning
/// where the two ways disagree.
fn carried(c: &crate::model::Comparison) -> String {
    let estimated = c.carry_over.map_or(String::new(), |k| {
        format!(
            " <span class=\"bad\">(by turns; one at a time about {:.2}x, {}: check it)</span>",
            k.ratio,
            k.verdict.word()
        )
    });
    let checked = c.checked.map_or(String::new(), |k| {
        let class = if k.agree && k.within { "" } else { " class=\"bad\"" };
        format!(
            " <span{class}>(one at a time {:.2}x, {}; turns over it {:.3}x ({:.3}x-{:.3}x){})</span>",
            k.ratio,
            k.verdict.word(),
            k.ratio_of_ratios,
            k.agreement.0,
            k.agreement.1,
            crate::validate::outcome(&k)
        )
    });
    estimated + &checked
}

/// How sure the answers are: where an auto study stopped, the A/A checks per workload and
/// thread count, and the suspect runs with why.
fn precision(s: &mut String, m: &Model) {
    if m.auto.is_none() && m.aa.is_empty() && m.suspects.is_empty() {
        return;
    }
    s.push_str("<h2>How sure</h2>");
    if let Some(c) = m.comparisons.iter().find(|c| c.family > 0) {
        let _ = write!(
            s,
            "<p>The study's {} throughput comparisons are one family: 5% is shared by them (Bonferroni), so chance alone makes any throughput claim in the study at most 5% of the time. Different and undecided are shown with the {:.2}% interval they were judged on; equivalent and different-but-within with the equivalence test's (two one-sided tests), the {:.2}% interval, which puts the difference within ±{:.1}%. CPU per {} is judged the same way in a family of its own, with its own 5%.</p>",
            c.family,
            100.0 - 5.0 / f64::from(c.family.max(1)),
            100.0 - 10.0 / f64::from(c.family.max(1)),
            c.margin * 100.0,
            crate::unit::one_of(m.workloads.iter().map(|w| w.unit))
                .map_or("transaction (New-Order for TPC-C)", |u| u.event())
        );
    }
    if let Some(a) = &m.auto {
        let _ = write!(s, "<p>{}</p>", escape(&crate::decide::auto_line(a)));
    }
    if !m.aa.is_empty() {
        let how = match m.aa.iter().find_map(|a| a.twin.as_deref()) {
            Some(twin) => format!("read '{}', listed the same as the first variant, in every block (its comparison reads the same runs)", escape(twin)),
            None => "ran the first variant a second time in every block".to_string(),
        };
        let _ = write!(s, "<p>The A/A check {how}: its interval should hold 1 (one that does not is a fault of the set-up; the study's checks share 5%, so chance alone warns in 1 study in 20); its spread measures the noise between runs and between blocks.</p>");
        table(
            s,
            &[
                "<workload",
                "threads",
                "blocks",
                "A/A ratio",
                "interval (the checks share 5%)",
                "run-to-run",
                "block-to-block",
            ],
            m.aa.iter().map(|n| {
                vec![
                    escape(&n.workload),
                    n.threads.to_string(),
                    n.blocks.to_string(),
                    format!("{:.3}x", n.ratio),
                    format!(
                        "{:.3}x – {:.3}x{}",
                        n.ci.0,
                        n.ci.1,
                        if n.holds_one { "" } else { " (excludes 1)" }
                    ),
                    format!("{:.1}%", n.run_noise * 100.0),
                    format!("{:.1}%", n.block_noise * 100.0),
                ]
            }),
        );
    }
    if let Some(steal) = m.usual_steal {
        let _ = write!(
            s,
            "<p>{}.</p>",
            escape(&crate::suspect::usual_steal_sentence(steal))
        );
    }
    if !m.suspects.is_empty() {
        let _ = write!(
            s,
            "<p>Suspect runs: {}. {}</p>",
            crate::suspect::criteria(),
            if m.suspects.iter().any(|x| x.excluded) {
                "They are left out of the comparisons (--exclude-suspect)."
            } else {
                "They are kept in the comparisons; bakeoff compare --exclude-suspect leaves them out."
            }
        );
        table(
            s,
            &["<variant", "<workload", "threads", "repetition", "<why"],
            m.suspects.iter().map(|x| {
                vec![
                    escape(&x.variant),
                    escape(&x.workload),
                    x.threads.to_string(),
                    x.repetition.to_string(),
                    escape(&x.reasons.join("; ")),
                ]
            }),
        );
    }
}
