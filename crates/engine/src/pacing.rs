//! Open-loop pacing: Poisson arrivals (exponential gaps, mean 1/rate), scheduled cumulatively
//! so that a late generator catches up with a burst instead of lowering the offered rate.

use std::time::{Duration, Instant};

use bakeoff_workload::Rng;

pub struct Arrivals {
    rng: Rng,
    mean_gap_s: f64,
    next: Instant,
}

impl Arrivals {
    pub fn new(rate: f64, start: Instant, seed: u64) -> Arrivals {
        Arrivals {
            rng: Rng::seeded(seed),
            mean_gap_s: 1.0 / rate,
            next: start,
        }
    }

    /// The next intended start.
    pub fn next(&mut self) -> Instant {
        // 1 - u is in (0, 1], so the logarithm is finite.
        let gap = -(1.0 - self.rng.unit()).ln() * self.mean_gap_s;
        self.next += Duration::from_secs_f64(gap);
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_rate_matches_and_gaps_are_exponential() {
        let start = Instant::now();
        let mut a = Arrivals::new(1000.0, start, 5);
        let mut last = start;
        let mut gaps = Vec::new();
        for _ in 0..100_000 {
            let t = a.next();
            gaps.push((t - last).as_secs_f64());
            last = t;
        }
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00002, "mean gap {mean}");
        // Exponential: P(gap > mean) = 1/e.
        let over = gaps.iter().filter(|&&g| g > 0.001).count() as f64 / gaps.len() as f64;
        assert!(
            (over - (-1.0f64).exp()).abs() < 0.01,
            "P(gap > mean) = {over}"
        );
    }
}
