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

/// Two-sided 97.5% quantile of Student's t for `df` degrees of freedom (table for small df,
/// the normal's 1.96 beyond).
pub fn t975(df: f64) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df < 1.0 {
        return f64::INFINITY;
    }
    let i = df.floor() as usize;
    if i <= 30 {
        T[i - 1]
    } else {
        1.96
    }
}

/// The ratio of means b/a with a 95% confidence interval, from the repetitions of each: the
/// delta method on log(ratio) with Welch's degrees of freedom. None when either side has
/// fewer than two repetitions (no spread to judge by) or a mean of zero.
pub fn ratio_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let ((ma, sa), (mb, sb)) = (mean_sd(a), mean_sd(b));
    if a.len() < 2 || b.len() < 2 || ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    // Relative variances of the means.
    let (va, vb) = ((sa / ma).powi(2) / na, (sb / mb).powi(2) / nb);
    let se = (va + vb).sqrt();
    let df = if se == 0.0 {
        f64::INFINITY
    } else {
        (va + vb).powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0))
    };
    let ratio = mb / ma;
    let half = t975(df.min(1e9)) * se;
    Some((ratio, ratio * (-half).exp(), ratio * half.exp()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
