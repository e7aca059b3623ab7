use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::classes::HDR_MAX_NS;
use crate::classes::{ClassSummary, ClassWire, Classes, TALLIES};
use crate::SbHistogram;

/// Everything recorded over one interval. It crosses a link (a client host's agent to the
/// bakeoff that merges every host's load) as [`WindowWire`], bucket for bucket, so windows
/// merged there are exactly the windows one process would have recorded.
#[derive(Clone, Serialize, Deserialize)]
#[serde(into = "WindowWire", from = "WindowWire")]
pub struct Window {
    pub events: u64,
    pub reads: u64,
    pub writes: u64,
    pub others: u64,
    /// Ignored errors (the event was restarted), by server error code.
    pub errors_by_code: Vec<(u16, u64)>,
    pub reconnects: u64,
    pub latency_sum_ns: u64,
    pub latency_min_ns: u64,
    pub latency_max_ns: u64,
    hdr: Histogram<u64>,
    sb: SbHistogram,
    /// Events by class ([`Window::record_class`]); empty unless some event had one.
    pub(crate) classes: Classes,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            events: 0,
            reads: 0,
            writes: 0,
            others: 0,
            errors_by_code: Vec::new(),
            reconnects: 0,
            latency_sum_ns: 0,
            latency_min_ns: u64::MAX,
            latency_max_ns: 0,
            hdr: Histogram::new_with_bounds(1, HDR_MAX_NS, 3).expect("valid HDR bounds"),
            sb: SbHistogram::default(),
            classes: Classes::default(),
        }
    }
}

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Window({} events)", self.events)
    }
}

/// A [`Window`] as plain data: its counters and the nonempty buckets of both histograms.
#[derive(Serialize, Deserialize)]
pub struct WindowWire {
    events: u64,
    reads: u64,
    writes: u64,
    others: u64,
    errors_by_code: Vec<(u16, u64)>,
    reconnects: u64,
    latency_sum_ns: u64,
    latency_min_ns: u64,
    latency_max_ns: u64,
    /// (a value in the bucket, count): recording it again lands in the same bucket.
    hdr: Vec<(u64, u64)>,
    /// (bucket index, count).
    sb: Vec<(u16, u64)>,
    /// Each class in index order, its histogram's buckets as `hdr`'s; absent from wire data
    /// written before classes were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    classes: Vec<ClassWire>,
}

impl From<Window> for WindowWire {
    fn from(w: Window) -> WindowWire {
        WindowWire {
            events: w.events,
            reads: w.reads,
            writes: w.writes,
            others: w.others,
            errors_by_code: w.errors_by_code,
            reconnects: w.reconnects,
            latency_sum_ns: w.latency_sum_ns,
            latency_min_ns: w.latency_min_ns,
            latency_max_ns: w.latency_max_ns,
            hdr: w
                .hdr
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
            sb: w.sb.sparse(),
            classes: w.classes.wire(),
        }
    }
}

impl From<WindowWire> for Window {
    fn from(w: WindowWire) -> Window {
        let mut out = Window {
            events: w.events,
            reads: w.reads,
            writes: w.writes,
            others: w.others,
            errors_by_code: w.errors_by_code,
            reconnects: w.reconnects,
            latency_sum_ns: w.latency_sum_ns,
            latency_min_ns: w.latency_min_ns,
            latency_max_ns: w.latency_max_ns,
            ..Window::default()
        };
        for (value, count) in w.hdr {
            out.hdr
                .saturating_record_n(value.clamp(1, HDR_MAX_NS), count);
        }
        out.sb = SbHistogram::from_sparse(&w.sb);
        out.classes = Classes::from_wire(w.classes);
        out
    }
}

impl Window {
    pub fn record_event(&mut self, latency_ns: u64) {
        self.events += 1;
        self.latency_sum_ns += latency_ns;
        self.latency_min_ns = self.latency_min_ns.min(latency_ns);
        self.latency_max_ns = self.latency_max_ns.max(latency_ns);
        self.hdr.saturating_record(latency_ns.max(1));
        self.sb.record_ns(latency_ns);
    }

    /// One event of class `class` (an index; classes are few), recorded besides
    /// [`record_event`](Window::record_event) with the same latency: its count, latency and
    /// `tally` summed under the class. The first call allocates the classes.
    pub fn record_class(&mut self, class: usize, latency_ns: u64, tally: &[u32; TALLIES]) {
        self.classes.record(class, latency_ns, tally);
    }

    pub fn record_statements(&mut self, reads: u64, writes: u64, others: u64) {
        self.reads += reads;
        self.writes += writes;
        self.others += others;
    }

    pub fn record_error(&mut self, code: u16) {
        self.record_errors(code, 1);
    }

    /// `n` errors with server code `code` (0: counted by a script, code unknown).
    pub fn record_errors(&mut self, code: u16, n: u64) {
        match self.errors_by_code.iter_mut().find(|(c, _)| *c == code) {
            Some((_, m)) => *m += n,
            None => self.errors_by_code.push((code, n)),
        }
    }

    pub fn errors(&self) -> u64 {
        self.errors_by_code.iter().map(|(_, n)| n).sum()
    }

    pub fn queries(&self) -> u64 {
        self.reads + self.writes + self.others
    }

    pub fn sb_histogram(&self) -> &SbHistogram {
        &self.sb
    }

    pub fn add(&mut self, o: &Window) {
        self.events += o.events;
        self.reads += o.reads;
        self.writes += o.writes;
        self.others += o.others;
        for &(code, n) in &o.errors_by_code {
            match self.errors_by_code.iter_mut().find(|(c, _)| *c == code) {
                Some((_, m)) => *m += n,
                None => self.errors_by_code.push((code, n)),
            }
        }
        self.reconnects += o.reconnects;
        self.latency_sum_ns += o.latency_sum_ns;
        self.latency_min_ns = self.latency_min_ns.min(o.latency_min_ns);
        self.latency_max_ns = self.latency_max_ns.max(o.latency_max_ns);
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.hdr.add(&o.hdr);
        self.sb.add(&o.sb);
        self.classes.add(&o.classes);
    }

    pub fn reset(&mut self) {
        // In place: the HDR counts array is ~270 KB, not worth reallocating every tick.
        self.hdr.reset();
        self.sb.reset();
        self.classes.reset();
        self.events = 0;
        self.reads = 0;
        self.writes = 0;
        self.others = 0;
        self.errors_by_code.clear();
        self.reconnects = 0;
        self.latency_sum_ns = 0;
        self.latency_min_ns = u64::MAX;
        self.latency_max_ns = 0;
    }

    /// Rates over `secs` and latency figures, with sysbench's `percentile` beside the HDR ones.
    pub fn summary(&self, secs: f64, percentile: f64) -> WindowSummary {
        let per = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let mut errors_by_code = self.errors_by_code.clone();
        errors_by_code.sort_unstable();
        WindowSummary {
            seconds: secs,
            events: self.events,
            reads: self.reads,
            writes: self.writes,
            others: self.others,
            queries: self.queries(),
            errors: self.errors(),
            reconnects: self.reconnects,
            tps: per(self.events),
            qps: per(self.queries()),
            reads_per_sec: per(self.reads),
            writes_per_sec: per(self.writes),
            others_per_sec: per(self.others),
            errors_per_sec: per(self.errors()),
            reconnects_per_sec: per(self.reconnects),
            errors_by_code,
            latency: self.latency(percentile),
            classes: self.classes.summary(secs),
        }
    }

    fn latency(&self, percentile: f64) -> LatencySummary {
        let ms = |ns: u64| ns as f64 / 1e6;
        let q = |p: f64| {
            if self.events == 0 {
                0.0
            } else {
                ms(self.hdr.value_at_quantile(p))
            }
        };
        LatencySummary {
            min_ms: if self.events == 0 {
                0.0
            } else {
                ms(self.latency_min_ns)
            },
            avg_ms: if self.events == 0 {
                0.0
            } else {
                ms(self.latency_sum_ns) / self.events as f64
            },
            max_ms: ms(self.latency_max_ns),
            sum_ms: ms(self.latency_sum_ns),
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            percentile,
            sysbench_percentile_ms: self.sb.percentile_ms(percentile),
        }
    }
}

/// Latency figures in milliseconds. `p*_ms` come from the HDR histogram (3 significant
/// digits); `sysbench_percentile_ms` is sysbench's own figure for `percentile`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub sum_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub percentile: f64,
    pub sysbench_percentile_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WindowSummary {
    pub seconds: f64,
    pub events: u64,
    pub reads: u64,
    pub writes: u64,
    pub others: u64,
    pub queries: u64,
    pub errors: u64,
    pub reconnects: u64,
    pub tps: f64,
    pub qps: f64,
    pub reads_per_sec: f64,
    pub writes_per_sec: f64,
    pub others_per_sec: f64,
    pub errors_per_sec: f64,
    pub reconnects_per_sec: f64,
    pub errors_by_code: Vec<(u16, u64)>,
    pub latency: LatencySummary,
    /// Events by class, class i at index i (see [`Window::record_class`]); empty, and left
    /// out of JSON, when no event had a class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassSummary>,
}

impl WindowSummary {
    /// Statements run outside the window's events (a script's `init()`, which sysbench
    /// counts in the run's totals and its first interval): the counts and their rates.
    pub fn add_statements(&mut self, reads: u64, writes: u64, others: u64) {
        self.reads += reads;
        self.writes += writes;
        self.others += others;
        self.queries += reads + writes + others;
        let per_sec = |n: u64| match self.seconds > 0.0 {
            true => n as f64 / self.seconds,
            false => 0.0,
        };
        self.qps = per_sec(self.queries);
        self.reads_per_sec = per_sec(self.reads);
        self.writes_per_sec = per_sec(self.writes);
        self.others_per_sec = per_sec(self.others);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts' windows merged after crossing the wire read exactly as if one process had
    /// recorded every event: same counts, same HDR and sysbench percentiles, same extremes.
    #[test]
    fn windows_merged_after_the_wire_equal_one_window_of_everything() {
        let (mut a, mut b, mut all) = (Window::default(), Window::default(), Window::default());
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ns = 20_000 + x % 80_000_000; // 20 us .. 80 ms, spread
            let w = if i % 3 == 0 { &mut a } else { &mut b };
            w.record_event(ns);
            w.record_statements(1, i % 2, 0);
            all.record_event(ns);
            all.record_statements(1, i % 2, 0);
        }
        a.record_error(1213);
        all.record_error(1213);
        let wire = |w: &Window| -> Window {
            serde_json::from_str(&serde_json::to_string(w).unwrap()).unwrap()
        };
        let mut merged = wire(&a);
        merged.add(&wire(&b));
        let (m, t) = (merged.summary(2.0, 95.0), all.summary(2.0, 95.0));
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::to_value(&t).unwrap()
        );
        assert_eq!(m.events, 20_000);
        assert!(m.latency.p99_ms > m.latency.p50_ms);
    }

    #[test]
    fn hdr_percentiles_are_exact_to_three_digits() {
        let mut w = Window::default();
        for i in 1..=10_000u64 {
            w.record_event(i * 1_000); // 1 us .. 10 ms
        }
        let s = w.summary(1.0, 95.0);
        assert!(
            (s.latency.p99_ms - 9.9).abs() / 9.9 < 0.001,
            "{}",
            s.latency.p99_ms
        );
        assert!((s.latency.p50_ms - 5.0).abs() / 5.0 < 0.001);
        assert_eq!(s.latency.max_ms, 10.0);
        assert_eq!(s.tps, 10_000.0);
    }

    #[test]
    fn merging_windows_adds_errors_per_code() {
        let mut a = Window::default();
        a.record_error(1213);
        let mut b = Window::default();
        b.record_error(1213);
        b.record_error(1205);
        a.add(&b);
        assert_eq!(
            a.summary(1.0, 95.0).errors_by_code,
            vec![(1205, 1), (1213, 2)]
        );
        a.reset();
        assert_eq!(a.errors(), 0);
    }
}
