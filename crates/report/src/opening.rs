//! The answer first: what the study is, whether it is whole, what it decided per workload and
//! how sure, and whether the machine disturbed its runs. `compare` and the page open with
//! these lines, and `compare --format json` carries them as facts; the details follow.

use std::fmt::Write;

use crate::model::{Comparison, Completeness, Disturbance, Model, Opening, Verdict, WorkloadModel};
use crate::source::{num, text, Source};
use crate::summary::{method, threads};

/// A share of runs flagged beyond which the machine, not a run, is the story.
const DISTURBED_SHARE: f64 = 0.25;

pub(crate) fn opening(src: &Source, m: &Model) -> Opening {
    let study = src.studies.first();
    let spec: serde_json::Value = study
        .and_then(|s| serde_json::from_str(&s.spec_json).ok())
        .unwrap_or_default();
    let runs: Vec<&bakeoff_store::Row> = src.studies.iter().flat_map(|s| &s.runs).collect();
    let kept = |r: &&&bakeoff_store::Row| text(r, "status") != "interrupted";
    let first = runs
        .iter()
        .map(|r| num(r, "started_at"))
        .filter(|t| *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    // The last start, and what ran from it: a block taking turns stores its runs under the
    // block's start, and they ran one after another's slices, so their seconds add up.
    let last_start = runs
        .iter()
        .map(|r| num(r, "started_at"))
        .fold(0.0f64, f64::max);
    let last = last_start
        + runs
            .iter()
            .filter(|r| num(r, "started_at") == last_start)
            .map(|r| num(r, "seconds"))
            .sum::<f64>();
    let stored = runs.iter().filter(kept).count();
    let planned = planned_runs(&spec, src.studies.len());
    let complete = match (planned, &m.auto) {
        (Some(p), _) => stored >= p,
        (None, Some(a)) => a.blocks >= a.needed.min(a.max_repetitions),
        (None, None) => true,
    } && !runs.iter().any(|r| text(r, "status") == "interrupted");
    let with_figure = runs.iter().filter(|r| text(r, "status") == "ok").count();
    Opening {
        study: m.study.clone(),
        description: spec["description"].as_str().map(str::to_string),
        began: first.is_finite().then(|| utc(first as i64)),
        hosts: hosts(m),
        span_s: (first.is_finite() && last > first).then_some(last - first),
        completeness: Completeness {
            runs: stored,
            planned,
            complete,
        },
        verdicts: m
            .workloads
            .iter()
            .map(|w| {
                let excluded = m
                    .suspects
                    .iter()
                    .any(|s| s.excluded && s.workload == w.label);
                labelled(
                    verdict_line(w, &m.comparisons, complete),
                    complete,
                    excluded,
                )
            })
            .collect(),
        disturbed: disturbance(m, with_figure, &others_by_run(src)),
    }
}

/// Runs a fixed study asks for: every variant (and the noise check's twin) at every workload
/// and thread count, once per repetition. None for auto studies and merged ones.
fn planned_runs(spec: &serde_json::Value, studies: usize) -> Option<usize> {
    if studies != 1 || !spec["auto"].is_null() {
        return None;
    }
    let len = |k: &str| spec[k].as_array().map(Vec::len);
    let twin = usize::from(spec["noise_check"] == true && !spec["noise_twin"].is_i64());
    let reps = spec["repetitions"].as_u64()? as usize;
    Some((len("variants")? + twin) * len("workloads")? * len("threads")? * reps)
}

fn hosts(m: &Model) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in &m.environments {
        let name = e.host["hostname"].as_str().unwrap_or("this machine");
        let line = match e.host["cpus"].as_u64() {
            Some(n) => format!("{name} ({n} CPUs)"),
            None => name.to_string(),
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// A verdict line said for what it is: interim while the study is unfinished (the rest of its
/// runs, or an auto study's next blocks, may change it), nominal where suspect runs were left
/// out after the data were seen (the choice then depends on the data, so the family's level
/// is no longer exact).
fn labelled(line: String, complete: bool, excluded: bool) -> String {
    if line.contains(": no verdict") || line.contains(": nothing to compare") {
        return line;
    }
    let mut line = line;
    if !complete {
        line.push_str("; interim: the study is unfinished, and resuming it may change these");
    }
    if excluded {
        line.push_str("; nominal: suspect runs were left out after the data were seen (--exclude-suspect), so the level is no longer exact");
    }
    line
}

/// A workload's verdicts in a line: how many comparisons differ, are equivalent or undecided
/// at the study's family level, the largest difference with its interval; cost the same.
fn verdict_line(w: &WorkloadModel, all: &[Comparison], complete: bool) -> String {
    let workload = w.label.as_str();
    let rows: Vec<&Comparison> = all
        .iter()
        .filter(|c| c.workload == workload && c.ratio.is_some())
        .collect();
    if rows.is_empty() {
        return format!("{workload}: nothing to compare (one variant, or no baseline figure)");
    }
    let judged: Vec<&&Comparison> = rows.iter().filter(|c| c.verdict != Verdict::Open).collect();
    if judged.is_empty() {
        let why = match rows
            .iter()
            .any(|c| c.note.as_deref() == Some(crate::pairing::FIXED_ORDER))
        {
            true => "order = \"sequential\"",
            false if complete => "one repetition, so no interval",
            false => "one repetition stored so far, so no interval yet",
        };
        // Ratios from one run a side are no evidence: their range, said as such.
        let (lo, hi) = rows
            .iter()
            .filter_map(|c| c.ratio)
            .fold((f64::INFINITY, 0.0f64), |(a, b), r| (a.min(r), b.max(r)));
        return format!(
            "{workload}: no verdict: {why}; ratios {lo:.2}x to {hi:.2}x, not evidence yet"
        );
    }
    let mut line = format!(
        "{workload}: {} (comparisons: each variant at each thread count)",
        counts(judged.iter().map(|c| (c.verdict, c.margin)))
    );
    // How sure: where nothing differs, the narrowest and the widest interval it was judged
    // on, with their level and blocks; "0 of 3 differ" alone reads as "the same".
    let open: Vec<&&&Comparison> = judged.iter().filter(|c| !c.significant).collect();
    let width = |c: &&&&Comparison| c.interval.map_or(f64::INFINITY, |(lo, hi)| (hi / lo).ln());
    if let (Some(n), Some(w)) = (
        open.iter().min_by(|a, b| width(a).total_cmp(&width(b))),
        open.iter().max_by(|a, b| width(a).total_cmp(&width(b))),
    ) {
        let at = |c: &Comparison| {
            let (lo, hi) = c.interval.unwrap_or((1.0, 1.0));
            let level = c
                .level
                .map_or(String::new(), |l| format!(", {:.2}%", l * 100.0));
            match lo < 0.1 || hi > 10.0 {
                // Two runs a side can give 0.00x - 1e22x: no figure a reader can use.
                true => format!("wider than 0.1x - 10x ({}{level})", threads(c.threads)),
                false => format!("{lo:.2}x - {hi:.2}x ({}{level})", threads(c.threads)),
            }
        };
        let span = match std::ptr::eq(**n, **w) {
            true => at(n),
            false => format!("from {} to {}", at(n), at(w)),
        };
        line.push_str(&format!(
            "; the undecided and equivalent: intervals {span}, {}",
            method(n)
        ));
    }
    if let Some(c) = judged
        .iter()
        .filter(|c| c.significant)
        .max_by(|a, b| dist(a).total_cmp(&dist(b)))
    {
        let (lo, hi) = c.interval.unwrap_or((1.0, 1.0));
        line.push_str(&format!(
            "; largest: {} {:.2}x ({lo:.2}x - {hi:.2}x{}) at {}{}",
            c.variant,
            c.ratio.unwrap_or(1.0),
            c.level
                .map_or(String::new(), |l| format!(", {:.2}%", l * 100.0)),
            threads(c.threads),
            if c.by_turns { ", by turns" } else { "" }
        ));
    }
    // The switch penalties' estimate, where no check blocks measured what turns carry.
    let moved: Vec<&&&Comparison> = judged
        .iter()
        .filter(|c| c.carry_over.is_some() && !c.checked.is_some_and(|k| k.within))
        .collect();
    if let Some(c) = moved.first() {
        let k = c.carry_over.expect("filtered");
        line.push_str(&format!(
            "; taking turns may have moved {} of them (the servers' switch penalties differ: {} at {} would read about {:.2}x one server at a time, {}): check with [alternation] enabled = false",
            moved.len(),
            c.variant,
            threads(c.threads),
            k.ratio,
            k.verdict.word()
        ));
    }
    if let Some(said) = crate::validate::opening(&judged.iter().map(|c| **c).collect::<Vec<_>>()) {
        line.push_str(&said);
    }
    let cost: Vec<(Verdict, f64)> = judged
        .iter()
        .filter_map(|c| Some((c.cost.as_ref()?.verdict, c.margin)))
        .filter(|(v, _)| *v != Verdict::Open)
        .collect();
    if !cost.is_empty() {
        line.push_str(&format!(
            "; CPU per {}: {}",
            w.unit.event(),
            counts(cost.into_iter())
        ));
    }
    line
}

/// "1 of 4 differ, 2 equivalent within 0.952x-1.050x (+-5.0%), 1 undecided".
fn counts(verdicts: impl Iterator<Item = (Verdict, f64)>) -> String {
    let all: Vec<(Verdict, f64)> = verdicts.collect();
    let n = |v: &[Verdict]| all.iter().filter(|(x, _)| v.contains(x)).count();
    let margin = crate::decide::margin_text(all.first().map_or(0.05, |(_, m)| *m));
    let mut parts = vec![format!(
        "{} of {} differ",
        n(&[Verdict::Different, Verdict::DifferentWithin]),
        all.len()
    )];
    if n(&[Verdict::Equivalent]) > 0 {
        parts.push(format!(
            "{} equivalent within {margin}",
            n(&[Verdict::Equivalent])
        ));
    }
    if n(&[Verdict::Undecided]) > 0 {
        parts.push(format!("{} undecided", n(&[Verdict::Undecided])));
    }
    parts.join(", ")
}

/// Escaped for HTML, a `command` in backticks set as code.
fn code(s: &str) -> String {
    crate::plot::escape(s)
        .split('`')
        .enumerate()
        .map(|(i, part)| match i % 2 {
            1 => format!("<code>{part}</code>"),
            _ => part.to_string(),
        })
        .collect()
}

fn dist(c: &Comparison) -> f64 {
    c.ratio.unwrap_or(1.0).ln().abs()
}

/// The banner: many runs flagged, or a machine that loses time to its host in every run.
fn disturbance(m: &Model, with_figure: usize, others: &[f64]) -> Option<Disturbance> {
    let suspect = m.suspects.len();
    let many = with_figure > 0 && suspect as f64 >= DISTURBED_SHARE * with_figure as f64;
    if !many && m.usual_steal.is_none() {
        return None;
    }
    // Whether the disturbance left anything to decide: where every comparison is decided
    // (different, or equivalent) on intervals that carry the noise it made, it changed no
    // verdict, and the banner says so rather than alarm (a decided 5x is not at risk from
    // 20% noise).
    let at_risk = at_risk(m.comparisons.iter().map(|c| c.verdict));
    let mut said = match (many, at_risk) {
        (true, true) => format!("The machine disturbed this study: {suspect} of its {with_figure} runs are suspect (listed below with why)."),
        (true, false) => format!("The machine disturbed {suspect} of this study's {with_figure} runs (listed below with why), but every comparison was decided on intervals that carry that noise: the verdicts stand; the figures themselves (throughput, latency, curves) describe a busy machine."),
        (false, _) => "The machine lost time to its host in every run.".to_string(),
    };
    // How much: the share of the machine other processes took, over the runs.
    let busy = others.len() >= 2 && median(others) > crate::suspect::OTHERS / 2.0;
    if busy && at_risk {
        let lo = others.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = others.iter().copied().fold(0.0f64, f64::max);
        said.push_str(&format!(
            " Other processes used {:.0}% to {:.0}% of the machine's CPU (median {:.0}%) during its runs, the kernel's own work counted with them (its interrupts, and the I/O threads a workload's fsyncs wake: if nothing else ran, this is the kernel working for the server). On a machine you share, the servers taking turns (the default) share its spells and more blocks narrow what they leave; where you control the machine, stopping the other load and running the study again gives figures of a quiet one.",
            lo * 100.0,
            hi * 100.0,
            median(others) * 100.0
        ));
    }
    if let Some(steal) = m.usual_steal {
        said.push_str(&format!(
            " Its usual run lost {:.1}% of the CPU to the hypervisor (steal).",
            steal * 100.0
        ));
    }
    // Among the comparisons left open or equivalent: one already found different caught its
    // change, however few blocks it took.
    let detects = m
        .comparisons
        .iter()
        .filter(|c| !c.significant)
        .filter_map(|c| c.detectable)
        .fold(None, |a: Option<f64>, d| Some(a.map_or(d, |a| a.max(d))));
    if let (Some(d), true) = (detects, at_risk) {
        said.push_str(&format!(
            " As run, its least certain comparison would catch only a change of {}.",
            match d > 0.5 {
                true => format!("about {:.1}x", 1.0 + d),
                false => format!("{:.1}% or more", d * 100.0),
            }
        ));
    }
    if at_risk {
        said.push_str(" `bakeoff study plan` on the study file measures how steady this machine is and says how many blocks a decision needs here, or that none will do.");
    }
    Some(Disturbance {
        suspect,
        of: with_figure,
        usual_steal: m.usual_steal,
        others: busy.then(|| median(others)),
        detects,
        said,
    })
}

/// Whether a disturbance can still move a verdict: some comparison is undecided, or none was
/// judged at all.
fn at_risk(verdicts: impl Iterator<Item = Verdict>) -> bool {
    let judged: Vec<Verdict> = verdicts.filter(|v| *v != Verdict::Open).collect();
    judged.is_empty() || judged.contains(&Verdict::Undecided)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The share of the machine other processes took in each run with a figure (see
/// `suspect::Health::others`).
fn others_by_run(src: &Source) -> Vec<f64> {
    src.studies
        .iter()
        .flat_map(|s| {
            let health = crate::design::health_by_run(s);
            let cpus = crate::design::Design::of(s).cpus;
            s.runs
                .iter()
                .filter(|r| text(r, "status") == "ok")
                .filter_map(move |r| health.get(&(num(r, "id") as i64))?.others(cpus?))
                .collect::<Vec<f64>>()
        })
        .collect()
}

/// The text lines `compare` opens with.
pub fn text_lines(o: &Opening) -> Vec<String> {
    let mut out = vec![format!(
        "study {}{}",
        o.study,
        o.description
            .as_deref()
            .map_or(String::new(), |d| format!(": {d}"))
    )];
    let mut facts = facts(o);
    facts.push(completeness(&o.completeness));
    out.push(facts.join("; "));
    out.extend(o.verdicts.iter().cloned());
    if let Some(d) = &o.disturbed {
        out.push(format!("!! {}", d.said));
    }
    out
}

/// When, where and how long, each a phrase.
fn facts(o: &Opening) -> Vec<String> {
    let mut facts = Vec::new();
    if let Some(b) = &o.began {
        facts.push(format!("began {b}"));
    }
    if !o.hosts.is_empty() {
        facts.push(format!("host {}", o.hosts.join(", ")));
    }
    if let Some(s) = o.span_s {
        facts.push(format!("runs spanned about {}", duration(s)));
    }
    facts
}

/// "all 24 runs", "12 of 24 runs: incomplete; resume with `bakeoff study run` on its file".
pub fn completeness(c: &Completeness) -> String {
    match (c.complete, c.planned) {
        (true, Some(p)) => format!("complete: all {p} runs"),
        (true, None) => format!("complete: {} runs", c.runs),
        (false, Some(p)) => format!(
            "incomplete: {} of {p} runs; resume with `bakeoff study run` and its study file",
            c.runs
        ),
        (false, None) => format!(
            "incomplete: {} runs, not yet sure; resume with `bakeoff study run` and its study file",
            c.runs
        ),
    }
}

fn duration(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// Seconds since the epoch as a UTC date and time (civil from days, Howard Hinnant's).
pub fn utc(t: i64) -> String {
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        (secs % 3600) / 60
    )
}

/// The answer first: what the study is and whether it is whole, a line per workload with its
/// verdicts, and the machine's banner.
pub(crate) fn html(s: &mut String, o: &Opening) {
    s.push_str("<section class=\"opening\">");
    if let Some(d) = &o.description {
        let _ = write!(s, "<p><b>{}</b></p>", crate::plot::escape(d));
    }
    let facts = facts(o);
    let whole = crate::opening::completeness(&o.completeness);
    let class = if o.completeness.complete {
        ""
    } else {
        " class=\"bad\""
    };
    let _ = write!(
        s,
        "<p>{}; <span{class}>{}</span></p><ul>",
        crate::plot::escape(&facts.join("; ")),
        code(&whole)
    );
    for v in &o.verdicts {
        let _ = write!(s, "<li>{}</li>", crate::plot::escape(v));
    }
    s.push_str("</ul></section>");
    if let Some(d) = &o.disturbed {
        let _ = write!(s, "<p class=\"banner\">{}</p>", code(&d.said));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_durations_read_as_people_write_them() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_795_781_460), "2026-11-27 12:11 UTC");
        assert_eq!(duration(42.4), "42 s");
        assert_eq!(duration(125.0), "2 min 5 s");
        assert_eq!(duration(7_380.0), "2 h 03 min");
    }

    #[test]
    fn a_study_missing_runs_says_how_many_and_how_to_resume() {
        let c = Completeness {
            runs: 12,
            planned: Some(24),
            complete: false,
        };
        assert_eq!(
            completeness(&c),
            "incomplete: 12 of 24 runs; resume with `bakeoff study run` and its study file"
        );
        let spec = serde_json::json!({"variants": [1, 2], "workloads": [1], "threads": [1, 2, 4], "repetitions": 2, "noise_check": true});
        assert_eq!(planned_runs(&spec, 1), Some(18));
        assert_eq!(planned_runs(&spec, 2), None);
    }

    /// A verdict on an unfinished study is interim; one on a study whose suspect runs were
    /// left out is nominal; a line with no verdict is left as it is.
    #[test]
    fn verdicts_say_interim_and_nominal() {
        let line = "oltp_read_only: 1 of 2 differ".to_string();
        assert_eq!(labelled(line.clone(), true, false), line);
        let interim = labelled(line.clone(), false, false);
        assert!(
            interim
                .ends_with("; interim: the study is unfinished, and resuming it may change these"),
            "{interim}"
        );
        let both = labelled(line.clone(), false, true);
        assert!(
            both.contains("interim") && both.contains("; nominal: suspect runs were left out"),
            "{both}"
        );
        let none = "oltp_read_only: no verdict: one repetition stored so far".to_string();
        assert_eq!(labelled(none.clone(), false, true), none);
    }

    #[test]
    fn a_margin_is_printed_as_the_interval_it_is() {
        assert_eq!(crate::decide::margin_text(0.05), "0.952x-1.050x (+-5.0%)");
        assert!(counts([(Verdict::Equivalent, 0.05)].into_iter())
            .contains("1 equivalent within 0.952x-1.050x (+-5.0%)"));
    }

    /// The banner is loud only where the disturbance can still change a verdict.
    #[test]
    fn a_disturbance_is_at_risk_only_where_something_is_undecided() {
        use Verdict::*;
        assert!(!at_risk([Different, Equivalent, Open].into_iter()));
        assert!(at_risk([Different, Undecided].into_iter()));
        assert!(at_risk([Open].into_iter()));
        assert!(at_risk(std::iter::empty()));
    }
}
