//! Events by class: a source whose events are of several kinds (TPC-C's five transactions)
//! reports each kind apart. What a class is, and what its tallies count, is the source's; here
//! a class is an index and its tallies are numbers summed.
//!
//! A window holds no class until an event with one is recorded, so a run whose events have
//! none (every sysbench run) allocates nothing here and summarises to an empty list.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the HDR histogram resolves: one hour, in ns. Longer values are clamped
/// (and still counted exactly in max and sum).
pub(crate) const HDR_MAX_NS: u64 = 3_600_000_000_000;

/// Tallies an event carries for its class, summed per class.
pub const TALLIES: usize = 4;

/// Significant digits of a class's HDR histogram: 1% is plenty to compare transaction types,
/// and keeps a class's histogram at ~37 KB where the window's own (3 digits) is ~270 KB.
const CLASS_HDR_DIGITS: u8 = 2;

/// One class's events over an interval.
#[derive(Clone)]
struct Class {
    events: u64,
    latency_sum_ns: u64,
    latency_max_ns: u64,
    tally: [u64; TALLIES],
    hdr: Histogram<u64>,
}

impl Class {
    fn new() -> Class {
        Class {
            events: 0,
            latency_sum_ns: 0,
            latency_max_ns: 0,
            tally: [0; TALLIES],
            hdr: Histogram::new_with_bounds(1, HDR_MAX_NS, CLASS_HDR_DIGITS)
                .expect("valid HDR bounds"),
        }
    }

    fn reset(&mut self) {
        self.hdr.reset();
        self.events = 0;
        self.latency_sum_ns = 0;
        self.latency_max_ns = 0;
        self.tally = [0; TALLIES];
    }

    fn summary(&self, secs: f64) -> ClassSummary {
        let ms = |ns: u64| ns as f64 / 1e6;
        // A bucket reads as its highest value, which may pass the highest recorded: no
        // percentile is reported above the exact maximum.
        let q = |p: f64| match self.events {
            0 => 0.0,
            _ => ms(self.hdr.value_at_quantile(p).min(self.latency_max_ns)),
        };
        ClassSummary {
            events: self.events,
            events_per_sec: if secs > 0.0 {
                self.events as f64 / secs
            } else {
                0.0
            },
            tally: self.tally,
            mean_ms: match self.events {
                0 => 0.0,
                n => ms(self.latency_sum_ns) / n as f64,
            },
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: ms(self.latency_max_ns),
        }
    }
}

/// A window's classes, by index; empty (and unallocated) until an event with a class is
/// recorded. A class once seen keeps its place (and its histogram) through resets, as the
/// window's own histogram does, so a window reused every tick allocates once.
#[derive(Clone, Default)]
pub(crate) struct Classes(Vec<Class>);

impl Classes {
    /// One event of class `class` (an index: classes are few, a `u8`'s worth at most).
    pub fn record(&mut self, class: usize, latency_ns: u64, tally: &[u32; TALLIES]) {
        let c = self.slot(class);
        c.events += 1;
        c.latency_sum_ns += latency_ns;
        c.latency_max_ns = c.latency_max_ns.max(latency_ns);
        c.hdr.saturating_record(latency_ns.clamp(1, HDR_MAX_NS));
        for (t, &n) in c.tally.iter_mut().zip(tally) {
            *t += u64::from(n);
        }
    }

    fn slot(&mut self, class: usize) -> &mut Class {
        if self.0.len() <= class {
            self.0.resize_with(class + 1, Class::new);
        }
        &mut self.0[class]
    }

    pub fn add(&mut self, o: &Classes) {
        for (i, oc) in o.0.iter().enumerate() {
            let c = self.slot(i);
            c.events += oc.events;
            c.latency_sum_ns += oc.latency_sum_ns;
            c.latency_max_ns = c.latency_max_ns.max(oc.latency_max_ns);
            for (t, n) in c.tally.iter_mut().zip(oc.tally) {
                *t += n;
            }
            // Same bounds and precision on both sides, so adding cannot fail.
            let _ = c.hdr.add(&oc.hdr);
        }
    }

    pub fn reset(&mut self) {
        self.0.iter_mut().for_each(Class::reset);
    }

    /// Every class the window holds, in index order (one with no events in the interval
    /// reads zero): the class of index i is `summary[i]`.
    pub fn summary(&self, secs: f64) -> Vec<ClassSummary> {
        self.0.iter().map(|c| c.summary(secs)).collect()
    }

    pub fn wire(&self) -> Vec<ClassWire> {
        self.0
            .iter()
            .map(|c| ClassWire {
                events: c.events,
                latency_sum_ns: c.latency_sum_ns,
                latency_max_ns: c.latency_max_ns,
                tally: c.tally,
                hdr: c
                    .hdr
                    .iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect(),
            })
            .collect()
    }

    pub fn from_wire(wire: Vec<ClassWire>) -> Classes {
        let classes = wire
            .into_iter()
            .map(|w| {
                let mut c = Class::new();
                c.events = w.events;
                c.latency_sum_ns = w.latency_sum_ns;
                c.latency_max_ns = w.latency_max_ns;
                c.tally = w.tally;
                for (value, count) in w.hdr {
                    c.hdr.saturating_record_n(value.clamp(1, HDR_MAX_NS), count);
                }
                c
            })
            .collect();
        Classes(classes)
    }

    #[cfg(test)]
    pub fn allocated(&self) -> usize {
        self.0.capacity()
    }
}

/// A class as plain data: its counters and the nonempty buckets of its histogram, each as
/// (a value in the bucket, count), so recording it again lands in the same bucket.
#[derive(Serialize, Deserialize)]
pub(crate) struct ClassWire {
    events: u64,
    latency_sum_ns: u64,
    latency_max_ns: u64,
    tally: [u64; TALLIES],
    hdr: Vec<(u64, u64)>,
}

/// One class over an interval: its events, their rate, its tallies summed, and its latency in
/// milliseconds (mean and max exact; percentiles from its HDR histogram, 2 significant digits,
/// never above the max).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub events: u64,
    pub events_per_sec: f64,
    pub tally: [u64; TALLIES],
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

#[cfg(test)]
mod tests {
    use crate::Window;

    /// Class 0: 1..=1000 us, class 2: 10..=20 ms; class 1 never recorded.
    fn two_classes() -> Window {
        let mut w = Window::default();
        for i in 1..=1_000u64 {
            w.record_event(i * 1_000);
            w.record_class(0, i * 1_000, &[1, 0, 2, 0]);
        }
        for i in 0..=100u64 {
            w.record_event(10_000_000 + i * 100_000);
            w.record_class(2, 10_000_000 + i * 100_000, &[0, 1, 0, 3]);
        }
        w
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() / want < 0.01
    }

    #[test]
    fn each_class_reads_its_own_events_tallies_and_percentiles() {
        let s = two_classes().summary(2.0, 95.0);
        assert_eq!(s.classes.len(), 3);
        let (a, none, c) = (&s.classes[0], &s.classes[1], &s.classes[2]);
        assert_eq!((a.events, a.events_per_sec), (1_000, 500.0));
        assert_eq!(a.tally, [1_000, 0, 2_000, 0]);
        assert!(close(a.p50_ms, 0.5) && close(a.p99_ms, 0.99), "{a:?}");
        assert!(close(a.p90_ms, 0.9) && close(a.p95_ms, 0.95), "{a:?}");
        assert!(close(a.mean_ms, 0.5005) && a.max_ms == 1.0, "{a:?}");
        assert_eq!((none.events, none.p99_ms, none.tally), (0, 0.0, [0; 4]));
        assert_eq!(c.tally, [0, 101, 0, 303]);
        assert!(close(c.p50_ms, 15.0) && close(c.p999_ms, 20.0), "{c:?}");
        assert!(close(c.mean_ms, 15.0) && c.max_ms == 20.0, "{c:?}");
        assert_eq!(s.events, 1_101);
    }

    #[test]
    fn merged_classes_equal_one_window_of_everything() {
        let (mut a, mut b, mut all) = (Window::default(), Window::default(), Window::default());
        for i in 0..3_000u64 {
            let (class, ns) = ((i % 5) as usize, 50_000 + i * 7_919 % 30_000_000);
            let w = if i % 4 == 0 { &mut a } else { &mut b };
            w.record_event(ns);
            w.record_class(class, ns, &[1, (i % 2) as u32, 0, 7]);
            all.record_event(ns);
            all.record_class(class, ns, &[1, (i % 2) as u32, 0, 7]);
        }
        // A window with no classes merged in changes nothing; one merged into it brings them.
        let mut merged = Window::default();
        merged.add(&a);
        merged.add(&b);
        merged.add(&Window::default());
        assert_eq!(merged.summary(1.0, 95.0), all.summary(1.0, 95.0));
        assert_eq!(merged.summary(1.0, 95.0).classes[4].tally[3], 600 * 7);
    }

    #[test]
    fn classes_cross_the_wire_bucket_for_bucket() {
        let w = two_classes();
        let json = serde_json::to_string(&w).unwrap();
        let back: Window = serde_json::from_str(&json).unwrap();
        assert_eq!(back.summary(1.0, 95.0), w.summary(1.0, 95.0));
        // Wire data from before classes existed still reads: no classes.
        let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
        old.as_object_mut().unwrap().remove("classes");
        let old: Window = serde_json::from_value(old).unwrap();
        assert!(old.summary(1.0, 95.0).classes.is_empty());
        assert_eq!(old.summary(1.0, 95.0).events, 1_101);
    }

    #[test]
    fn reset_zeroes_classes_and_keeps_their_places() {
        let mut w = two_classes();
        w.reset();
        let s = w.summary(1.0, 95.0);
        assert_eq!(s.classes.len(), 3);
        assert!(s.classes.iter().all(|c| c.events == 0 && c.tally == [0; 4]));
        assert!(s.classes.iter().all(|c| c.max_ms == 0.0 && c.p50_ms == 0.0));
        w.record_class(1, 2_000_000, &[1, 1, 1, 1]);
        let s = w.summary(1.0, 95.0);
        assert_eq!((s.classes[1].events, s.classes[1].max_ms), (1, 2.0));
        assert_eq!(s.classes[0].events, 0);
    }

    #[test]
    fn events_without_classes_allocate_none_and_summarise_to_nothing() {
        let mut w = Window::default();
        for i in 1..=100u64 {
            w.record_event(i * 10_000);
        }
        let mut merged = Window::default();
        merged.add(&w);
        merged.reset();
        merged.add(&w);
        let back: Window = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
        for x in [&w, &merged, &back] {
            assert_eq!(x.classes.allocated(), 0);
        }
        let s = merged.summary(1.0, 95.0);
        assert!(s.classes.is_empty());
        let json = serde_json::to_value(&s).unwrap();
        assert!(json.get("classes").is_none(), "{json}");
    }

    /// Latencies past the histogram's hour land in its last bucket; max and mean stay exact.
    #[test]
    fn latencies_beyond_an_hour_are_clamped_in_the_histogram_only() {
        let mut w = Window::default();
        w.record_class(0, 0, &[0; 4]);
        w.record_class(0, 2 * crate::classes::HDR_MAX_NS, &[0; 4]);
        let c = &w.summary(1.0, 95.0).classes[0];
        assert_eq!(c.max_ms, 2.0 * 3_600_000.0);
        assert!(c.p999_ms <= 3_600_000.0 * 1.01, "{c:?}");
    }
}
