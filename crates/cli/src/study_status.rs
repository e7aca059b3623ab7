//! A study's progress as it runs: one status line, rewritten in place on a terminal, a line
//! per finished run in a log; and, with `--metrics-addr`, each tick published for a scraper.

use std::io::IsTerminal;
use std::time::Duration;

use bakeoff_report::Unit;
use bakeoff_store::RunRecord;
use bakeoff_study::{StudyObserver, StudySpec};

/// A finished run in one line: what ran, how it ended, the first line of why. A run that
/// measured nothing says why alone, not "0 tps".
pub(crate) fn run_line(r: &RunRecord) -> String {
    run_line_in(r, Unit::Tps)
}

/// The same, its throughput in its workload's unit (NOPM for TPC-C, whose `tps` counts
/// New-Orders).
fn run_line_in(r: &RunRecord, unit: Unit) -> String {
    let threads = r.key.map_or(0, |k| k.threads);
    let what = format!(
        "{} | {} | {threads} thread{}",
        r.variant_name,
        r.workload_label,
        if threads == 1 { "" } else { "s" }
    );
    let why = r.reason.as_deref().map(|w| w.lines().next().unwrap_or(""));
    if r.status != "ok" && r.events == 0 {
        return format!(
            "{what}: {}: {}",
            r.status,
            why.unwrap_or("no reason recorded")
        );
    }
    let mut line = format!(
        "{what}: {} {} p99 {:.2} ms",
        r.status,
        unit.say(r.tps, 0),
        r.p99_ms
    );
    if let Some(why) = why {
        line.push_str(&format!(" ({why})"));
    }
    line
}

/// One status line: rewritten in place on a terminal, a line per finished run otherwise.
pub(crate) struct Progress {
    tty: bool,
    line: String,
    /// Runs done before this invocation (a resumed study's), the study's total, and when
    /// this invocation's first run began: set by the first run's start.
    at: Option<(usize, usize, std::time::Instant)>,
    /// Runs told done in this invocation (a block taking turns tells its runs at its end).
    finished: usize,
    /// Loading's rows and rate, on the status line or a line in the log now and then.
    load: Box<dyn Fn(u64, u64) + Send + Sync>,
    /// Each workload's throughput unit, by label (`counting`); tps where not set.
    units: Vec<(String, Unit)>,
    /// `--metrics-addr`: each run's ticks published, labelled with the study and the run.
    live: Option<(bakeoff_telemetry::live::Live, String)>,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        let line = crate::progress::LoadLine::logged();
        Progress {
            tty: std::io::stderr().is_terminal(),
            line: String::new(),
            at: None,
            finished: 0,
            load: Box::new(move |done, total| line.rows(done, total)),
            units: Vec::new(),
            live: None,
        }
    }

    /// Says each finished run's throughput in its workload's unit, as `compare` does. (A
    /// tick on the status line stays tps: the engine's, every transaction's, not converted.)
    pub(crate) fn counting(mut self, s: &StudySpec) -> Progress {
        let unit = |w: &bakeoff_study::Workload| Unit::of_kind(w.spec.kind.name());
        self.units = s
            .workloads
            .iter()
            .map(|w| (w.label.clone(), unit(w)))
            .collect();
        self
    }

    /// Publish each tick to `live`, its runs labelled with study `name`.
    pub(crate) fn publishing(
        mut self,
        live: bakeoff_telemetry::live::Live,
        name: &str,
    ) -> Progress {
        self.live = Some((live, name.to_string()));
        self
    }

    fn unit_of(&self, workload: &str) -> Unit {
        let unit = self.units.iter().find(|(label, _)| label == workload);
        unit.map_or(Unit::Tps, |(_, u)| *u)
    }

    /// Where the study stands after the runs finished so far: "[n/total, about T left]".
    fn counted(&self) -> Option<String> {
        let (before, total, began) = self.at?;
        let n = (before + self.finished).min(total);
        // From the runs so far in this invocation.
        let left = began.elapsed() / self.finished.max(1) as u32 * (total - n) as u32;
        Some(match n >= total {
            true => format!("[{n}/{total}]"),
            false => format!("[{n}/{total}, about {} left]", hours_minutes(left)),
        })
    }

    fn show(&mut self, s: String) {
        if self.tty {
            eprint!("\r\x1b[K{s}");
        }
        self.line = s;
    }

    pub(crate) fn clear(&mut self) {
        if self.tty && !self.line.is_empty() {
            eprintln!();
        }
    }
}

impl StudyObserver for Progress {
    fn on_run_start(&mut self, done: usize, total: usize, what: &str, left: Duration) {
        if let Some((live, study)) = &self.live {
            live.begin_run(&[("study", study.clone()), ("run", what.to_string())]);
        }
        match &mut self.at {
            None => self.at = Some((done, total, std::time::Instant::now())),
            // An auto study's pilot changes the total: the counts follow it.
            Some((_, t, _)) => *t = total,
        }
        self.show(format!(
            "[{}/{total}] {what} | about {} left",
            done + 1,
            hours_minutes(left)
        ));
    }

    fn on_window(
        &mut self,
        window: &bakeoff_telemetry::WindowSummary,
        telemetry: Option<&bakeoff_telemetry::Telemetry>,
    ) {
        if let Some((live, _)) = &self.live {
            live.tick(window, telemetry);
        }
    }

    fn on_tick(&mut self, tps: f64) {
        if self.tty {
            let base = self
                .line
                .split(" | last tick")
                .next()
                .unwrap_or("")
                .to_string();
            self.show(format!("{base} | last tick {tps:.0} tps"));
        }
    }

    fn on_run_done(&mut self, r: &RunRecord) {
        let mut line = run_line_in(r, self.unit_of(&r.workload_label));
        // In a log (no status line), each finished run says where the study stands: runs
        // done so far (a block taking turns ends several at once).
        self.finished += 1;
        if let (false, Some(counted)) = (self.tty, self.counted()) {
            line = format!("{counted} {line}");
        }
        if self.tty {
            eprint!("\r\x1b[K");
        }
        eprintln!("{line}");
    }

    fn on_note(&mut self, note: &str) {
        self.clear();
        eprintln!("note: {note}");
    }

    fn loading(&self) -> Option<&(dyn Fn(u64, u64) + Sync)> {
        Some(&*self.load)
    }
}

/// A duration to come as hours and minutes, rounded up: an estimate never says 0h 00m for
/// work that takes seconds.
pub(crate) fn hours_minutes(d: Duration) -> String {
    let minutes = d.as_secs().div_ceil(60).max(1);
    format!("{}h {:02}m", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_store::RunKey;
    use bakeoff_study::parse;

    #[test]
    fn the_counts_follow_a_total_the_pilot_changed() {
        let mut p = Progress::new();
        p.on_run_start(0, 60, "first", Duration::ZERO);
        p.finished = 60;
        assert_eq!(p.counted().as_deref(), Some("[60/60]"));
        // The pilot asked for more blocks: the next run starts with the new total.
        p.on_run_start(60, 96, "block 6", Duration::ZERO);
        p.finished = 61;
        assert!(
            p.counted().unwrap().starts_with("[61/96, about "),
            "{:?}",
            p.counted()
        );
    }

    #[test]
    fn estimates_round_up_and_never_say_zero() {
        assert_eq!(hours_minutes(Duration::from_secs(34)), "0h 01m");
        assert_eq!(hours_minutes(Duration::from_secs(0)), "0h 01m");
        assert_eq!(hours_minutes(Duration::from_secs(61)), "0h 02m");
        assert_eq!(hours_minutes(Duration::from_secs(3600)), "1h 00m");
    }

    #[test]
    fn a_run_that_measured_nothing_says_why_not_zero_tps() {
        let failed = RunRecord {
            key: Some(RunKey {
                repetition: 1,
                variant: 0,
                workload: 0,
                threads: 4,
            }),
            variant_name: "jemalloc".into(),
            workload_label: "oltp_point_select".into(),
            status: "failed".into(),
            reason: Some("server exited with signal 9\nlog tail...".into()),
            ..RunRecord::default()
        };
        assert_eq!(
            run_line(&failed),
            "jemalloc | oltp_point_select | 4 threads: failed: server exited with signal 9"
        );
        let ok = RunRecord {
            status: "ok".into(),
            reason: None,
            events: 1000,
            tps: 500.0,
            p99_ms: 1.5,
            ..failed
        };
        assert_eq!(
            run_line(&ok),
            "jemalloc | oltp_point_select | 4 threads: ok 500 tps p99 1.50 ms"
        );
    }

    #[test]
    fn a_tpcc_run_says_new_orders_per_minute_and_a_sysbench_one_tps() {
        let file = "threads = [2]\n[[workload]]\nname = \"tpcc\"\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nallocator = [\"glibc\"]\n";
        let p = Progress::new().counting(&parse(file, "s").unwrap_or_else(|p| panic!("{p:?}")));
        // A study stores TPC-C's throughput as New-Orders per second.
        for (w, said) in [("tpcc", "5280 NOPM"), ("oltp_point_select", "88 tps")] {
            let (status, events, tps) = ("ok".into(), 1000, 88.0);
            let r = RunRecord {
                workload_label: w.into(),
                status,
                events,
                tps,
                ..RunRecord::default()
            };
            let want = format!(" | {w} | 0 threads: ok {said} p99 0.00 ms");
            assert_eq!(run_line_in(&r, p.unit_of(w)), want);
        }
    }
}
