//! The statistics a comparison needs, small enough to check by hand.

/// Mean and sample standard deviation (0 for fewer than two values).
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Student's t quantile: the value below which a fraction `p` of the distribution with `df`
/// degrees of freedom lies (exact, from statrs; the normal's beyond a million df).
pub fn t_quantile(df: f64, p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    if df.is_nan() || df < 1.0 {
        return f64::INFINITY;
    }
    // A report asks for the same few (df, p) pairs over and over (a simulation, millions of
    // times): statrs inverts the CDF iteratively, so each pair is computed once per thread.
    thread_local! {
        static SEEN: std::cell::RefCell<std::collections::HashMap<(u64, u64), f64>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    let key = (df.to_bits(), p.to_bits());
    if let Some(q) = SEEN.with_borrow(|m| m.get(&key).copied()) {
        return q;
    }
    let q = if df > 1e6 {
        Normal::new(0.0, 1.0).map_or(f64::NAN, |n| n.inverse_cdf(p))
    } else {
        StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p))
    };
    SEEN.with_borrow_mut(|m| {
        if m.len() < 4096 {
            m.insert(key, q);
        }
    });
    q
}

/// Two-sided 95% quantile of Student's t for `df` degrees of freedom.
pub fn t975(df: f64) -> f64 {
    t_quantile(df, 0.975)
}

/// The log of the ratio of means b/a, its standard error by the delta method and Welch's
/// degrees of freedom. None when either side has fewer than two repetitions (no spread to
/// judge by) or a mean of zero.
pub fn welch_log_ratio(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let ((ma, sa), (mb, sb)) = (mean_sd(a), mean_sd(b));
    if a.len() < 2 || b.len() < 2 || ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    // Relative variances of the means.
    let (va, vb) = ((sa / ma).powi(2) / na, (sb / mb).powi(2) / nb);
    let se = (va + vb).sqrt();
    let df = if se == 0.0 {
        1e9
    } else {
        (va + vb).powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0))
    };
    Some(((mb / ma).ln(), se, df))
}

/// The ratio of means b/a with a 95% confidence interval, from the repetitions of each (see
/// [`welch_log_ratio`]).
pub fn ratio_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let (log, se, df) = welch_log_ratio(a, b)?;
    let half = t975(df) * se;
    Some((log.exp(), (log - half).exp(), (log + half).exp()))
}

/// The ratio v/b from paired blocks: each block's `(baseline, variant)` throughput gives one
/// log ratio; the interval is Student's t on their mean (n - 1 degrees of freedom), back on
/// the ratio scale. Drift between blocks cancels inside each pair instead of widening the
/// interval. The ratio is the geometric mean of the blocks' ratios. None with fewer than two
/// blocks or a throughput of zero. `level` is the interval's two-sided confidence. The
/// plain t interval, kept as the reference the tests below hold to its rates; verdicts and
/// the A/A checks make theirs from `Evidence`, which adds an auto study's pilot.
#[cfg(test)]
pub fn paired_ratio_at(pairs: &[(f64, f64)], level: f64) -> Option<(f64, f64, f64)> {
    if pairs.len() < 2 || pairs.iter().any(|&(b, v)| b <= 0.0 || v <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = pairs.iter().map(|&(b, v)| (v / b).ln()).collect();
    let (m, sd) = mean_sd(&logs);
    let t = t_quantile((logs.len() - 1) as f64, 1.0 - (1.0 - level) / 2.0);
    let half = t * sd / (logs.len() as f64).sqrt();
    Some((m.exp(), (m - half).exp(), (m + half).exp()))
}

/// How far from 1 an interval reaches, as a fraction: the largest difference it allows.
pub fn reach(lo: f64, hi: f64) -> f64 {
    (hi - 1.0).max(1.0 - lo).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded::Lcg;

    #[test]
    fn t_quantiles_are_exact_where_tables_round_and_stop() {
        // Published values: t(0.975; 1, 4, 30, 60) and t(0.995; 4), as tables give them.
        for (df, p, want) in [
            (1.0, 0.975, 12.7062),
            (4.0, 0.975, 2.7764),
            (30.0, 0.975, 2.0423),
            (60.0, 0.975, 2.0003),
            (4.0, 0.995, 4.6041),
        ] {
            let got = t_quantile(df, p);
            assert!(
                (got - want).abs() < 5e-4,
                "t({p}; {df}) = {got}, not {want}"
            );
        }
        assert!(t_quantile(0.0, 0.975).is_infinite());
    }

    #[test]
    fn mean_and_sd_by_hand() {
        let (m, s) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((s - 2.138).abs() < 1e-3, "{s}");
    }

    #[test]
    fn a_clear_difference_excludes_one_and_noise_includes_it() {
        let (r, lo, hi) = ratio_ci(&[100.0, 101.0, 99.0], &[200.0, 202.0, 198.0]).unwrap();
        assert!(
            (r - 2.0).abs() < 1e-9 && lo > 1.9 && hi < 2.1,
            "{r} {lo} {hi}"
        );
        let (r, lo, hi) = ratio_ci(&[100.0, 120.0, 80.0], &[105.0, 85.0, 125.0]).unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{r} {lo} {hi}");
        assert!(
            ratio_ci(&[100.0], &[200.0, 210.0]).is_none(),
            "one repetition: no interval"
        );
    }

    /// A seeded study simulated under a stated noise model with a known truth: per block a
    /// drift shared by every variant (log-normal, sd 8%: the machine's throughput moving
    /// between blocks), per run an independent noise (sd 3%). Paired blocks must cover the
    /// true ratio at least 93% of the time, and an A/A pair (truth 1) must be called
    /// different at most 5% of the time per comparison: the t interval's nominal rate, so the
    /// simulated rate is held to 5% plus three standard errors of its own estimate (10 000
    /// trials: 0.65 points), which a method that over-calls differences would not pass.
    #[test]
    fn paired_intervals_cover_the_truth_and_aa_pairs_rarely_differ() {
        let mut rng = Lcg(0x5eed_1234_abcd);
        let trials = 10_000;
        let slack = 3.0 * (0.05 * 0.95 / trials as f64).sqrt();
        for (blocks, truth) in [(2usize, 1.12), (3, 1.0), (5, 1.05), (8, 0.97)] {
            let (mut covered, mut aa_false) = (0, 0);
            for _ in 0..trials {
                let mut pairs = Vec::new();
                let mut aa = Vec::new();
                for _ in 0..blocks {
                    let drift = (0.08 * rng.normal()).exp();
                    let run = |rng: &mut Lcg| 10_000.0 * drift * (0.03 * rng.normal()).exp();
                    let base = run(&mut rng);
                    pairs.push((base, truth * run(&mut rng)));
                    aa.push((base, run(&mut rng)));
                }
                let (_, lo, hi) = paired_ratio_at(&pairs, 0.95).unwrap();
                covered += usize::from(lo <= truth && truth <= hi);
                let (_, lo, hi) = paired_ratio_at(&aa, 0.95).unwrap();
                aa_false += usize::from(lo > 1.0 || hi < 1.0);
            }
            let coverage = covered as f64 / trials as f64;
            let false_positive = aa_false as f64 / trials as f64;
            eprintln!("{blocks} blocks, truth {truth}: coverage {coverage:.4}, A/A false positives {false_positive:.4}");
            assert!(coverage >= 0.93, "{blocks} blocks: coverage {coverage}");
            assert!(
                false_positive <= 0.05 + slack,
                "{blocks} blocks: A/A {false_positive}"
            );
        }
    }

    #[test]
    fn drift_between_blocks_cancels_in_pairs_and_not_without_them() {
        // Block 2 runs 30% faster for everyone; the variant is 10% faster in both blocks.
        let base = [1000.0, 1300.0, 1000.0];
        let var = [1100.0, 1430.0, 1100.0];
        let pairs: Vec<(f64, f64)> = base.iter().copied().zip(var.iter().copied()).collect();
        let (r, lo, hi) = paired_ratio_at(&pairs, 0.95).unwrap();
        assert!(
            (r - 1.1).abs() < 1e-9 && lo > 1.0999 && hi < 1.1001,
            "{lo} {hi}"
        );
        let (_, lo, hi) = ratio_ci(&base, &var).unwrap();
        assert!(lo < 1.0 && hi > 1.2, "unpaired: {lo} {hi}");
        assert!((reach(0.97, 1.02) - 0.03).abs() < 1e-12);
    }
}
