//! What a curve says: its peak, where it saturates, how far it falls at the top, and the best
//! throughput a latency limit allows.

use crate::model::{Analysis, Best, Point};

pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `points` ascending by threads.
pub fn analyse(points: &[Point], p99_limit_ms: f64) -> Analysis {
    let peak = points
        .iter()
        .max_by(|a, b| a.mean_tps.total_cmp(&b.mean_tps));
    let (peak_tps, peak_threads) = peak.map_or((0.0, 0), |p| (p.mean_tps, p.threads));
    let saturation_threads = points
        .iter()
        .find(|p| p.mean_tps >= 0.95 * peak_tps)
        .map_or(0, |p| p.threads);
    let last = points.last().map_or(0.0, |p| p.mean_tps);
    let best_within_p99 = points
        .iter()
        .filter(|p| p.latency.p99_ms <= p99_limit_ms)
        .max_by(|a, b| a.mean_tps.total_cmp(&b.mean_tps))
        .map(|p| Best {
            tps: p.mean_tps,
            nopm: None,
            threads: p.threads,
        });
    Analysis {
        peak_tps,
        peak_nopm: None,
        peak_threads,
        saturation_threads,
        drop_at_max_pct: if peak_tps > 0.0 {
            (peak_tps - last) / peak_tps * 100.0
        } else {
            0.0
        },
        best_within_p99,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Latency;

    fn point(threads: u32, tps: f64, p99_ms: f64) -> Point {
        Point {
            threads,
            tps: vec![tps],
            repetitions: vec![1],
            mean_tps: tps,
            mean_nopm: None,
            cv: 0.0,
            latency: Latency {
                p99_ms,
                ..Latency::default()
            },
            server_cpu_us_per_event: None,
            cpu_per_event: vec![None],
            p99_per_rep: vec![None],
            p95_per_rep: vec![None],
            rss_growth_mib: None,
            client_bound_runs: 0,
            transactions: Vec::new(),
        }
    }

    #[test]
    fn peak_saturation_drop_and_the_latency_limited_best() {
        // Rises to 64, falls after; p99 passes 10 ms from 64 threads on.
        let pts = [
            point(1, 1000.0, 1.0),
            point(8, 7000.0, 4.0),
            point(16, 9600.0, 8.0),
            point(64, 10000.0, 30.0),
            point(256, 6000.0, 120.0),
        ];
        let a = analyse(&pts, 10.0);
        assert_eq!((a.peak_tps, a.peak_threads), (10000.0, 64));
        assert_eq!(a.saturation_threads, 16, "9600 is within 5% of the peak");
        assert!((a.drop_at_max_pct - 40.0).abs() < 1e-9);
        assert_eq!(
            a.best_within_p99,
            Some(Best {
                tps: 9600.0,
                nopm: None,
                threads: 16
            })
        );
        assert_eq!(analyse(&pts, 0.5).best_within_p99, None);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
