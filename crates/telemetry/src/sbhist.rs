//! sysbench 1.0's latency histogram (src/sb_histogram.c), reproduced from its documented
//! behaviour: 1024 logarithmic buckets between 0.001 ms and 100000 ms; bucket of v (ms) is
//! round((ln v - ln 0.001) * M) with M = 1023 / (ln 1e5 - ln 1e-3); a bucket stands for
//! 0.001 * e^(i/M) ms. Reported values are within about 0.9% of the truth, values of 100 s or
//! more all land in the top bucket (sysbench prints 100000.00 for them) and values under 1 us
//! in the bottom one.

const BUCKETS: usize = 1024;
const LOW_MS: f64 = 0.001;
const HIGH_MS: f64 = 100_000.0;

fn multiplier() -> f64 {
    (BUCKETS as f64 - 1.0) / (HIGH_MS.ln() - LOW_MS.ln())
}

#[derive(Clone)]
pub struct SbHistogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
}

impl Default for SbHistogram {
    fn default() -> Self {
        SbHistogram {
            counts: Box::new([0; BUCKETS]),
            total: 0,
        }
    }
}

impl std::fmt::Debug for SbHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SbHistogram({} samples)", self.total)
    }
}

impl SbHistogram {
    pub fn record_ns(&mut self, ns: u64) {
        let ms = ns as f64 / 1e6;
        let i = if ms <= 0.0 {
            0.0
        } else {
            ((ms.ln() - LOW_MS.ln()) * multiplier() + 0.5).floor()
        };
        let i = i.clamp(0.0, (BUCKETS - 1) as f64) as usize;
        self.counts[i] += 1;
        self.total += 1;
    }

    pub fn add(&mut self, other: &SbHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
    }

    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.total = 0;
    }

    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The `percentile` (0-100) in ms the way sysbench reports it; 0 when empty.
    pub fn percentile_ms(&self, percentile: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let target = (self.total as f64 * percentile / 100.0 + 0.5).floor() as u64;
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                return LOW_MS * (i as f64 / multiplier()).exp();
            }
        }
        HIGH_MS
    }

    /// Non-empty buckets as (index, count): the exact contents, for carrying it elsewhere.
    pub fn sparse(&self) -> Vec<(u16, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (i as u16, c))
            .collect()
    }

    /// The histogram [`sparse`](Self::sparse) describes; indexes out of range are clamped.
    pub fn from_sparse(buckets: &[(u16, u64)]) -> SbHistogram {
        let mut h = SbHistogram::default();
        for &(i, c) in buckets {
            h.counts[usize::from(i).min(BUCKETS - 1)] += c;
            h.total += c;
        }
        h
    }

    /// Non-empty buckets as (representative ms, count), for `--histogram`.
    pub fn buckets(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let m = multiplier();
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(move |(i, &c)| (LOW_MS * (i as f64 / m).exp(), c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_within_a_bucket_of_the_truth() {
        let mut h = SbHistogram::default();
        for us in 1..=1000u64 {
            h.record_ns(us * 1000);
        }
        let p95 = h.percentile_ms(95.0);
        assert!((p95 - 0.95).abs() / 0.95 < 0.01, "p95 {p95}");
    }

    #[test]
    fn saturates_at_both_ends_like_sysbench() {
        let mut h = SbHistogram::default();
        h.record_ns(200_000_000_000); // 200 s
        assert!((h.percentile_ms(100.0) - HIGH_MS).abs() < 1e-6);
        let mut h = SbHistogram::default();
        h.record_ns(10);
        assert_eq!(format!("{:.2}", h.percentile_ms(50.0)), "0.00");
    }

    #[test]
    fn empty_histogram_reports_zero() {
        assert_eq!(SbHistogram::default().percentile_ms(95.0), 0.0);
    }
}
