//! What a comparison's verdict is made from: the estimate of log(variant / baseline), its
//! standard error and degrees of freedom, from paired blocks (Stein's second stage where an
//! auto study's pilot sized it) or from unpaired repetitions.

use crate::stats::{mean_sd, t_quantile, welch_log_ratio};

/// A comparison's evidence on the log scale: the estimate of log(variant / baseline), its
/// standard error, and the degrees of freedom of the spread behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    pub estimate: f64,
    pub se: f64,
    pub df: f64,
}

impl Evidence {
    /// Paired blocks: the mean of the blocks' log ratios. With `pilot` (an auto study's
    /// first blocks, which chose how many to run), the spread is the pilot's and so are the
    /// degrees of freedom (Stein's second stage), unless all the blocks' spread makes a wider
    /// interval: then that one. Under the model (normal log ratios) the pilot's alone is exact
    /// and the wider choice only more cautious; with heavy tails a quiet pilot followed by
    /// wild blocks would otherwise claim differences the data does not carry.
    pub fn paired(pairs: &[(f64, f64)], pilot: Option<usize>) -> Option<Evidence> {
        if pairs.len() < 2 || pairs.iter().any(|&(b, v)| b <= 0.0 || v <= 0.0) {
            return None;
        }
        let logs: Vec<f64> = pairs.iter().map(|&(b, v)| (v / b).ln()).collect();
        let (mean, all_sd) = mean_sd(&logs);
        let n = logs.len() as f64;
        let all = Evidence {
            estimate: mean,
            se: all_sd / n.sqrt(),
            df: n - 1.0,
        };
        let n0 = match pilot {
            Some(n0) if n0 >= 2 && n0 < logs.len() => n0,
            _ => return Some(all),
        };
        let stein = Evidence {
            se: mean_sd(&logs[..n0]).1 / n.sqrt(),
            df: (n0 - 1) as f64,
            ..all
        };
        // Which is wider, judged where decisions are made (a two-sided 1% point).
        let width = |e: &Evidence| e.se * t_quantile(e.df, 0.995);
        Some(if width(&all) > width(&stein) {
            all
        } else {
            stein
        })
    }

    /// Unpaired repetitions (studies before blocks, merged machines): the log of the ratio
    /// of means, its standard error by the delta method, Welch's degrees of freedom.
    pub fn unpaired(a: &[f64], b: &[f64]) -> Option<Evidence> {
        let (estimate, se, df) = welch_log_ratio(a, b)?;
        Some(Evidence { estimate, se, df })
    }
}
