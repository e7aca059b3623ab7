//! Key distributions, as sysbench 1.0.20's sb_rand.c computes them (formulas in
//! shared/reference/sysbench-behaviour.md section 2.2). All return a value in [a, b].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RandType {
    Uniform,
    Gaussian,
    Special,
    Pareto,
    Zipfian,
}

impl RandType {
    pub const NAMES: &'static [&'static str] =
        &["uniform", "gaussian", "special", "pareto", "zipfian"];
}

impl FromStr for RandType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "uniform" => Ok(RandType::Uniform),
            "gaussian" => Ok(RandType::Gaussian),
            "special" => Ok(RandType::Special),
            "pareto" => Ok(RandType::Pareto),
            "zipfian" => Ok(RandType::Zipfian),
            _ => Err(format!(
                "unknown distribution '{s}'; expected one of {}",
                RandType::NAMES.join(", ")
            )),
        }
    }
}

impl fmt::Display for RandType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(RandType::NAMES[*self as usize])
    }
}

/// A distribution with its parameters (sysbench's --rand-spec-*, --rand-pareto-h,
/// --rand-zipfian-exp).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub kind: RandType,
    /// --rand-spec-iter: terms of the Irwin-Hall sum (gaussian and special).
    pub spec_iter: u32,
    /// --rand-spec-pct: width of special's hot window, % of the range.
    pub spec_pct: f64,
    /// --rand-spec-res: % of draws that go to special's hot window.
    pub spec_res: f64,
    /// --rand-pareto-h.
    pub pareto_h: f64,
    /// --rand-zipfian-exp (theta).
    pub zipfian_exp: f64,
}

impl Distribution {
    pub fn new(kind: RandType) -> Distribution {
        Distribution {
            kind,
            spec_iter: 12,
            spec_pct: 1.0,
            spec_res: 75.0,
            pareto_h: 0.2,
            zipfian_exp: 0.8,
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng, a: u32, b: u32) -> u32 {
        match self.kind {
            RandType::Uniform => rng.uniform(a, b),
            RandType::Gaussian => self.gaussian(rng, a, b),
            RandType::Special => self.special(rng, a, b),
            RandType::Pareto => self.pareto(rng, a, b),
            RandType::Zipfian => a + zipf(rng, (b - a) as u64 + 1, self.zipfian_exp) as u32 - 1,
        }
    }

    fn irwin_hall(&self, rng: &mut Rng) -> f64 {
        let iter = self.spec_iter.max(1);
        (0..iter).map(|_| rng.unit()).sum::<f64>() / iter as f64
    }

    fn gaussian(&self, rng: &mut Rng, a: u32, b: u32) -> u32 {
        let t = (b - a) as f64 + 1.0;
        a + (self.irwin_hall(rng) * t) as u32
    }

    /// 1.0.20's "special": with probability (100 - res)% a gaussian over [a, b); otherwise a
    /// value in a window of pct% just right of the centre, computed from the *same* uniform
    /// draw that chose the branch (so only the upper part of the window is reachable).
    fn special(&self, rng: &mut Rng, a: u32, b: u32) -> u32 {
        let t = (b - a) as f64;
        let r = rng.unit();
        if r * t * 100.0 / (100.0 - self.spec_res) < t {
            return a + (t * self.irwin_hall(rng)) as u32;
        }
        let d = t * self.spec_pct / 100.0;
        a + (r * (d + 1.0) + t / 2.0 - t * self.spec_pct / 200.0) as u32
    }

    fn pareto(&self, rng: &mut Rng, a: u32, b: u32) -> u32 {
        let h = self.pareto_h;
        let p = h.ln() / (1.0 - h).ln();
        let v = a + (((b - a) as f64 + 1.0) * rng.unit().powf(p)) as u32;
        v.min(b)
    }
}

/// Zipf over k in [1, n] with P(k) ~ 1/k^s: rejection-inversion (Hoermann & Derflinger 1996,
/// "Rejection-inversion to generate variates from monotone discrete distributions"), the
/// method sysbench's master branch uses.
fn zipf(rng: &mut Rng, n: u64, s: f64) -> u64 {
    let h = |x: f64| (-s * x.ln()).exp();
    let h_integral = |x: f64| {
        let lx = x.ln();
        helper2((1.0 - s) * lx) * lx
    };
    let h_integral_inv = |x: f64| {
        let t = (x * (1.0 - s)).max(-1.0);
        (helper1(t) * x).exp()
    };
    let hx1 = h_integral(1.5) - 1.0;
    let hn = h_integral(n as f64 + 0.5);
    let s_div = 2.0 - h_integral_inv(h_integral(2.5) - h(2.0));
    loop {
        let u = hn + rng.unit() * (hx1 - hn);
        let x = h_integral_inv(u);
        let k = ((x + 0.5) as u64).clamp(1, n);
        if k as f64 - x <= s_div || u >= h_integral(k as f64 + 0.5) - h(k as f64) {
            return k;
        }
    }
}

/// ln(1 + x) / x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(kind: RandType, a: u32, b: u32, n: usize) -> Vec<u32> {
        let d = Distribution::new(kind);
        let mut rng = Rng::seeded(11);
        (0..n).map(|_| d.sample(&mut rng, a, b)).collect()
    }

    #[test]
    fn every_distribution_stays_in_range() {
        for &k in &[
            RandType::Uniform,
            RandType::Gaussian,
            RandType::Special,
            RandType::Pareto,
            RandType::Zipfian,
        ] {
            for v in draws(k, 1, 1000, 50_000) {
                assert!((1..=1000).contains(&v), "{k}: {v}");
            }
        }
    }

    /// Pearson chi-square against the uniform expectation, 100 bins: the 99.9% critical value
    /// for 99 degrees of freedom is 148.2.
    #[test]
    fn uniform_passes_chi_square() {
        let mut bins = [0u64; 100];
        for v in draws(RandType::Uniform, 1, 1000, 200_000) {
            bins[((v - 1) / 10) as usize] += 1;
        }
        let e = 2000.0;
        let chi2: f64 = bins.iter().map(|&o| (o as f64 - e).powi(2) / e).sum();
        assert!(chi2 < 148.2, "chi2 {chi2}");
    }

    #[test]
    fn gaussian_mean_and_sd_match_irwin_hall() {
        let v = draws(RandType::Gaussian, 1, 10_000, 100_000);
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        let sd =
            (v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        assert!((mean - 5000.5).abs() < 20.0, "mean {mean}");
        // sd of the mean of 12 uniforms times t: t / sqrt(144) = t / 12.
        assert!((sd - 10_000.0 / 12.0).abs() < 15.0, "sd {sd}");
    }

    /// The reference's verified example: table_size 1000, 75% of draws on ids 498..506.
    #[test]
    fn special_puts_three_quarters_on_the_hot_window() {
        let v = draws(RandType::Special, 1, 1000, 200_000);
        let hot = v.iter().filter(|&&x| (498..=506).contains(&x)).count() as f64 / v.len() as f64;
        assert!(
            (hot - 0.75).abs() < 0.01 || hot > 0.75 && hot < 0.77,
            "hot share {hot}"
        );
        assert!(!v.contains(&1000), "special never yields b");
    }

    /// P(id = 1) = (1/n)^(1/p): 38% for n = 1000, h = 0.2 (reference, verified).
    #[test]
    fn pareto_hot_end_matches_the_formula() {
        let v = draws(RandType::Pareto, 1, 1000, 200_000);
        let share = v.iter().filter(|&&x| x == 1).count() as f64 / v.len() as f64;
        let p = 0.2f64.ln() / 0.8f64.ln();
        let expected = (1.0f64 / 1000.0).powf(1.0 / p);
        assert!(
            (share - expected).abs() < 0.01,
            "share {share} expected {expected}"
        );
    }

    #[test]
    fn zipfian_frequencies_follow_the_power_law() {
        let v = draws(RandType::Zipfian, 1, 100, 300_000);
        let theta = 0.8;
        let norm: f64 = (1..=100).map(|k| 1.0 / (k as f64).powf(theta)).sum();
        for k in [1u32, 2, 10, 50] {
            let got = v.iter().filter(|&&x| x == k).count() as f64 / v.len() as f64;
            let want = 1.0 / (k as f64).powf(theta) / norm;
            assert!((got - want).abs() / want < 0.05, "k={k}: {got} vs {want}");
        }
    }
}
