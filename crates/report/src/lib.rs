//! Reports: a study's stored results as a performance engineer reads them.
//!
//! - [`build`] turns the stored runs (of one study, or of the same study on several machines
//!   after `bakeoff merge`) into a [`Model`]: per workload, one throughput curve per
//!   variant (every repetition kept), each curve's peak, saturation point and drop at the top;
//!   every variant against a baseline at every thread count, the ratio with a 95% confidence
//!   interval from the repetitions and whether it is significant; the runs that failed, with why.
//!   Each curve also keeps its latency percentiles, server CPU per transaction and a typical
//!   run's ticks; the model adds server memory over time, costs, host probes and manifests.
//! - [`compare_table`] renders the comparison as text for the terminal; [`html`] as one
//!   self-contained page; [`charts`] every chart as SVG.
//!
//! What it must not do: open files, print or exit; the CLI does.

mod analysis;
mod asked;
pub mod baseline;
mod build;
mod comparisons;
pub mod decide;
mod design;
mod engines;
mod environment;
mod evidence;
mod html;
mod legend;
mod machine;
mod markup;
mod model;
pub mod opening;
mod pairing;
mod plot;
mod png;
#[cfg(test)]
mod seeded;
mod source;
mod stats;
mod summary;
pub mod suspect;
mod svg;
mod transactions;
mod turns;
mod unit;
#[cfg(test)]
mod unit_tests;
mod validate;
mod verdicts;

pub use analysis::analyse;
pub use build::{build, Options};
pub use html::html;
pub use model::*;
pub use png::Rasterizer;
pub use source::{Source, StudySource};
pub use stats::{mean_sd, ratio_ci};
pub use svg::{charts, Chart};
pub use unit::Unit;
pub use validate::resolves;

use std::fmt::Write;

/// The comparison table: per workload and thread count, each variant's mean throughput and
/// its ratio to the baseline with the 95% interval; then each curve's analysis and the
/// problems.
pub fn compare_table(m: &Model) -> String {
    let mut s = String::new();
    for line in opening::text_lines(&m.opening) {
        let _ = writeln!(s, "{line}");
    }
    for line in environment::lab_lines(&m.environments) {
        let _ = writeln!(s, "{line}");
    }
    let paired = m.comparisons.iter().any(|c| c.method == "paired");
    let _ = writeln!(
        s,
        "\n{} ({})",
        m.baseline,
        if paired {
            "intervals paired within blocks: each block's ratio, their geometric mean, Student's t on the log scale; 5% shared by the study's comparisons (Bonferroni)"
        } else {
            "intervals from the repetitions; 5% shared by the study's comparisons (Bonferroni)"
        }
    );
    for w in &m.workloads {
        let u = w.unit;
        let _ = writeln!(s, "\n{}", w.label);
        for line in &w.summary {
            let _ = writeln!(s, "  {line}");
        }
        let _ = writeln!(
            s,
            "  {:>7}  {:<36} {:>12} {:>6} {:>9} {:>9}  {:>8}  {:<19} {:<9} {:<9} {:<9} against",
            "threads",
            "variant",
            u.name(),
            "cv",
            "p99 ms",
            "p99.9 ms",
            "ratio",
            "interval",
            format!("cpu/{}", u.per()),
            "p95",
            "p99"
        );
        for r in m.table(w) {
            let p = r.point;
            let cost = r
                .comparison
                .and_then(|x| x.cost.as_ref())
                .map_or(String::new(), |c| {
                    format!("{:.2}x{}", c.ratio, mark(c.verdict))
                });
            let latency = |v: Option<&CostVerdict>| {
                v.map_or(String::new(), |c| {
                    format!("{:.2}x{}", c.ratio, mark(c.verdict))
                })
            };
            let p99 = latency(r.comparison.and_then(|x| x.latency.as_ref()));
            let p95 = latency(r.comparison.and_then(|x| x.latency_p95.as_ref()));
            let (ratio, ci, against) = match r.comparison {
                None => ("baseline".to_string(), String::new(), String::new()),
                Some(x) => match (x.ratio, &x.note) {
                    (Some(ratio), _) => (
                        format!("{ratio:.2}x"),
                        x.interval
                            .map_or("-".into(), |(lo, hi)| format!("{lo:.2}x - {hi:.2}x"))
                            + mark(x.verdict)
                            + if paired && x.method == "unpaired" {
                                " u"
                            } else {
                                ""
                            },
                        x.against.clone(),
                    ),
                    (None, note) => ("-".into(), "-".into(), note.clone().unwrap_or_default()),
                },
            };
            let line = format!(
                "  {:>7}  {:<36} {:>12.1} {:>6} {:>9.2} {:>9}  {:>8}  {:<19} {:<9} {:<9} {:<9} {against}",
                r.threads,
                r.variant,
                u.of(p.mean_tps),
                spread(p),
                p.latency.p99_ms,
                p.latency
                    .p999_ms
                    .map_or("-".to_string(), |v| format!("{v:.2}")),
                ratio,
                ci,
                cost,
                p95,
                p99
            );
            // No trailing blanks where a row has no interval or baseline (diffs and pastes).
            let _ = writeln!(s, "{}", line.trim_end());
        }
        if w.curves
            .iter()
            .any(|c| c.points.iter().any(|p| p.tps.len() < 2))
        {
            let _ = match m.opening.completeness.complete {
                true => writeln!(
                    s,
                    "  -: one repetition, so no spread and no interval; repetitions = 2 or more give them"
                ),
                false => writeln!(
                    s,
                    "  -: one repetition stored so far, so no spread and no interval yet: the study is incomplete (resume it for the rest)"
                ),
            };
        }
        if paired
            && m.comparisons
                .iter()
                .any(|c| c.workload == w.label && c.method == "unpaired" && c.interval.is_some())
        {
            let _ = writeln!(
                s,
                "  u: unpaired (ratio of means, Welch): the two did not run in the same blocks (other machines, merged)"
            );
        }
        if let Some(c) = m
            .comparisons
            .iter()
            .find(|c| c.workload == w.label && c.verdict != Verdict::Open)
        {
            let (alpha, pilot) = decide::looks(c);
            let any_settled = m
                .comparisons
                .iter()
                .any(|c| c.asked.as_ref().is_some_and(|a| a.settled));
            let settled = pilot.filter(|_| any_settled).map_or(String::new(), |p| {
                format!(
                    "; a comparison the pilot settled was judged on the pilot's blocks alone, at {} (a tenth of its share of the 5%), and that interval lay beyond +-{:.1}%: its ratio is those blocks' estimate",
                    decide::percent(100.0 - p),
                    c.margin * 100.0
                )
            });
            let margin = decide::margin_text(c.margin);
            let _ = writeln!(
                s,
                "  the study's {} comparisons share 5%: *: different (its {:.2}% interval excludes 1); none: undecided (the same interval); ~: different, but within {margin}, and =: equivalent within {margin} (each shown with the {:.2}% interval of its equivalence test){settled}",
                c.family,
                100.0 - alpha,
                100.0 - 2.0 * alpha
            );
            if let Some(k) = m.comparisons.iter().find_map(|c| c.cost.as_ref()) {
                let _ = writeln!(
                    s,
                    "  cpu/{}: the server's CPU per {} over the baseline's, paired on the same blocks and judged the same way in a family of its own ({} comparisons share 5%; the marks as above, each at its own level: {})",
                    u.per(),
                    u.event(),
                    k.family,
                    decide::percent(100.0 * k.level)
                );
            }
            if let Some(k) = m
                .comparisons
                .iter()
                .filter(|c| c.workload == w.label)
                .find_map(|c| c.latency.as_ref())
            {
                let _ = writeln!(
                    s,
                    "  p95, p99: the 95th and 99th percentile latency over the baseline's (below 1: shorter), each block's ratio on the log scale, judged the same way in a family of their own ({} comparisons share 5%; each at its own level: {})",
                    k.family,
                    decide::percent(100.0 * k.level)
                );
            }
            if let Some(note) = m
                .comparisons
                .iter()
                .filter(|c| c.workload == w.label)
                .find_map(|c| c.latency_note.as_deref())
            {
                let _ = writeln!(s, "  p99: {note}");
            }
        }
        if m.comparisons
            .iter()
            .any(|c| c.workload == w.label && c.note.as_deref() == Some(pairing::FIXED_ORDER))
        {
            let _ = writeln!(s, "  no verdicts: {}", pairing::FIXED_ORDER);
        }
        let _ = writeln!(s, "  curves:");
        for c in &w.curves {
            let a = &c.analysis;
            let within = a.best_within_p99.as_ref().map_or(
                format!("no thread count keeps p99 within {} ms", m.p99_limit_ms),
                |b| {
                    format!(
                        "best with p99 within {} ms: {} at {} threads",
                        m.p99_limit_ms,
                        u.say(b.tps, 1),
                        b.threads
                    )
                },
            );
            let _ = writeln!(
                s,
                "    {:<36} peak {} at {} threads; 95% of it from {} threads; {:.1}% below peak at the highest count; {within}",
                c.variant,
                u.say(a.peak_tps, 1),
                a.peak_threads,
                a.saturation_threads,
                a.drop_at_max_pct
            );
        }
    }
    if let Some(a) = &m.auto {
        let _ = writeln!(s, "\n{}", decide::auto_line(a));
    }
    if !m.costs.is_empty() {
        let _ = writeln!(
            s,
            "\ncost per million {} at each curve's peak:",
            unit::priced(m.costs.iter().map(|c| c.unit))
        );
        for c in &m.costs {
            let reserved = c
                .reserved_per_million
                .map_or(String::new(), |r| format!(", reserved {r:.4}"));
            let _ = writeln!(
                s,
                "  {} | {} ({}): on demand {:.4}{reserved} ({} at {} threads)",
                c.workload,
                c.variant,
                c.platform,
                c.on_demand_per_million,
                c.unit.say(c.peak_tps, 1),
                c.peak_threads
            );
        }
    }
    if !m.problems.is_empty() {
        let _ = writeln!(s, "\nruns without a figure:");
        for p in &m.problems {
            let why = format!("{} ({})", p.status, p.reason.lines().next().unwrap_or(""));
            run_line(
                &mut s,
                (&p.variant, &p.workload, p.threads, p.repetition),
                &why,
            );
        }
    }
    if !m.warnings.is_empty() {
        let _ = writeln!(s, "\nto read with care:");
        for w in &m.warnings {
            run_line(
                &mut s,
                (&w.variant, &w.workload, w.threads, w.repetition),
                &w.text,
            );
        }
    }
    if let Some(steal) = m.usual_steal {
        let _ = writeln!(s, "\n{}", suspect::usual_steal_sentence(steal));
    }
    if !m.suspects.is_empty() {
        let excluded = m.suspects.iter().any(|x| x.excluded);
        let _ = writeln!(
            s,
            "\nsuspect runs ({}):",
            if excluded {
                "left out of the comparisons (--exclude-suspect)"
            } else {
                "kept in the comparisons; --exclude-suspect leaves them out"
            }
        );
        for x in &m.suspects {
            let why = x.reasons.join("; ");
            run_line(
                &mut s,
                (&x.variant, &x.workload, x.threads, x.repetition),
                &why,
            );
        }
    }
    if let Some(c) = &m.cross_engine {
        s.push_str(&engines::text(c));
    }
    // What decides was said first (`opening`), and each workload's sentences under its name:
    // no closing repeat of them.
    s
}

/// How many blocks an auto study's pilot says it needs (Stein's first stage: the largest over
/// its comparisons the pilot did not settle alone, at their family's adjusted level; `needed`
/// and `settled` of the status), judged from its runs so far
/// (`Store::runs` rows, or `RunRecord::row`) with exactly the comparisons the report makes.
/// None when the study is not auto or no comparison has an interval yet.
pub fn blocks_needed(
    spec_json: &str,
    runs: Vec<bakeoff_store::Row>,
) -> Result<Option<AutoStatus>, String> {
    let m = judge_runs(spec_json, runs)?;
    let any = m.comparisons.iter().any(|c| c.evidence.is_some());
    Ok(m.auto.filter(|_| any))
}

/// What a study needs, from a pilot's runs (`bakeoff study plan`): per comparison (workload,
/// variant, threads), the blocks that make its family-adjusted interval within +-`precision`
/// with the pilot's spread (Stein's first stage, the sizing Kalibera and Jones' "Rigorous
/// benchmarking in reasonable time" calls dimensioning), and the family's size. The need is
/// sized for the intervals the study will make: with the pilot's spread, at the degrees of
/// freedom of the study's own pilot (`study_pilot` blocks), not the planning pilot's.
pub fn plan(
    spec_json: &str,
    runs: Vec<bakeoff_store::Row>,
    precision: f64,
    study_pilot: u32,
) -> Result<Vec<Planned>, String> {
    let m = judge_runs(spec_json, runs)?;
    Ok(m.comparisons
        .iter()
        .filter_map(|c| {
            let e = c.evidence?;
            let spread = e.sizing().sd;
            let sized = decide::Evidence {
                pilot: Some(evidence::Pilot {
                    sd: spread,
                    df: f64::from(study_pilot.max(2) - 1),
                    mean: e.estimate,
                }),
                ..e
            };
            let settled = decide::settled_by_pilot(&sized, c.family as usize, c.margin);
            Some(Planned {
                checked: c.checked,
                workload: c.workload.clone(),
                variant: c.variant.clone(),
                threads: c.threads,
                family: c.family,
                spread,
                estimate: e.estimate.exp(),
                settled,
                blocks: if settled {
                    study_pilot
                } else {
                    decide::blocks_for(&sized, c.family as usize, precision)
                },
            })
        })
        .collect())
}

/// The model of one study's runs so far, as the report makes it: what the runner, `study
/// plan` and the decision simulations judge by.
pub fn judge_runs(spec_json: &str, runs: Vec<bakeoff_store::Row>) -> Result<Model, String> {
    let src = Source {
        name: String::new(),
        set_aside: Vec::new(),
        studies: vec![StudySource {
            spec_json: spec_json.to_string(),
            runs,
            ..StudySource::default()
        }],
    };
    build(&src, &Options::default())
}

/// One comparison's need, from a pilot (see [`plan`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub workload: String,
    pub variant: String,
    pub threads: u32,
    pub family: u32,
    /// The spread of the pilot's block log ratios (a fraction).
    pub spread: f64,
    /// The pilot's ratio (variant / baseline).
    pub estimate: f64,
    /// The pilot's blocks already decide it (far outside the margin): the study's own
    /// pilot does, whatever its spread.
    pub settled: bool,
    pub blocks: u32,
    /// The pilot's check blocks (`[alternation] validate_every`): turns set beside one server
    /// at a time.
    pub checked: Option<TurnsCheck>,
}

/// One run (variant, workload, threads, repetition) and what is said of it, a line.
fn run_line(s: &mut String, (variant, workload, threads, rep): (&str, &str, u32, u32), text: &str) {
    let _ = writeln!(
        s,
        "  {variant} | {workload} | {threads} thread{} | repetition {rep}: {text}",
        if threads == 1 { "" } else { "s" }
    );
}

/// A verdict's mark in the table (see the legend under it).
fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Different => " *",
        Verdict::DifferentWithin => " ~",
        Verdict::Equivalent => " =",
        Verdict::Undecided | Verdict::Open => "",
    }
}

/// Run-to-run variation as a percentage, or "-" with one repetition (there is none to see).
pub fn spread(p: &Point) -> String {
    if p.tps.len() < 2 {
        "-".into()
    } else {
        format!("{:.1}%", p.cv * 100.0)
    }
}
