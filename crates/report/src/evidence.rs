//! What a comparison's verdict is made from: the estimate of log(variant / baseline), its
//! standard error and degrees of freedom, from paired blocks (with the spread of an auto
//! study's pilot, Stein's second stage, where the pilot sized it) or from unpaired repetitions.

use crate::stats::{mean_sd, t_quantile, welch_log_ratio};

/// A comparison's evidence on the log scale: the estimate of log(variant / baseline), the
/// standard error and degrees of freedom of all its blocks, and its pilot's spread where an
/// auto study's pilot chose how many blocks to run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    pub estimate: f64,
    pub se: f64,
    pub df: f64,
    /// The blocks (or, unpaired, the smaller side's repetitions) behind it.
    pub n: u32,
    pub pilot: Option<Pilot>,
}

/// The spread of an auto study's pilot blocks: one block's log ratio's standard deviation and
/// its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pilot {
    pub sd: f64,
    pub df: f64,
    /// The pilot's own mean log ratio (whether the pilot settled the comparison alone).
    pub mean: f64,
}

impl Evidence {
    /// Paired blocks `(block, baseline, variant)`: the mean of the blocks' log ratios. With
    /// `pilot` (an auto study's first blocks by number, which chose how many to run) the
    /// pilot's spread is kept beside all the blocks' (see [`Evidence::spread_at`]).
    pub fn paired(pairs: &[(u32, f64, f64)], pilot: Option<u32>) -> Option<Evidence> {
        if pairs.len() < 2 || pairs.iter().any(|&(_, b, v)| b <= 0.0 || v <= 0.0) {
            return None;
        }
        let log = |&(_, b, v): &(u32, f64, f64)| (v / b).ln();
        let logs: Vec<f64> = pairs.iter().map(log).collect();
        let (mean, sd) = mean_sd(&logs);
        let n = logs.len();
        // The pilot is the blocks numbered within it, whatever ran or failed after: a failed
        // pilot run makes a smaller pilot, never one that reaches into later blocks.
        let first: Vec<f64> = pairs
            .iter()
            .filter(|p| pilot.is_some_and(|k| p.0 <= k))
            .map(log)
            .collect();
        Some(Evidence {
            estimate: mean,
            se: sd / (n as f64).sqrt(),
            df: (n - 1) as f64,
            n: n as u32,
            pilot: (first.len() >= 2 && first.len() < n).then(|| {
                let (mean, sd) = mean_sd(&first);
                Pilot {
                    sd,
                    df: (first.len() - 1) as f64,
                    mean,
                }
            }),
        })
    }

    /// Paired blocks of a figure the pilot did not size (cost), in a study whose pilot sized
    /// the blocks by another (throughput). The number of blocks then depends on the pilot's
    /// throughput spread, which moves with this figure's pilot spread (a slow spell slows
    /// both), so all the blocks' spread is not exact; the pilot's blocks and the blocks after
    /// it each give an exact one (the blocks after it are independent of the number chosen).
    /// Of the two, the one with more degrees of freedom, chosen by the counts alone; all the
    /// blocks' stays beside it for the wider-of choice, which only adds caution.
    pub fn paired_beside(pairs: &[(u32, f64, f64)], pilot: Option<u32>) -> Option<Evidence> {
        let mut e = Evidence::paired(pairs, pilot)?;
        let (Some(k), Some(p)) = (pilot, e.pilot) else {
            return Some(e);
        };
        let after: Vec<f64> = pairs
            .iter()
            .filter(|x| x.0 > k)
            .map(|&(_, b, v)| (v / b).ln())
            .collect();
        if after.len() >= 2 && (after.len() - 1) as f64 > p.df {
            let (mean, sd) = mean_sd(&after);
            e.pilot = Some(Pilot {
                sd,
                df: (after.len() - 1) as f64,
                mean,
            });
        }
        Some(e)
    }

    /// Unpaired repetitions (studies before blocks, merged machines): the log of the ratio
    /// of means, its standard error by the delta method, Welch's degrees of freedom.
    pub fn unpaired(a: &[f64], b: &[f64]) -> Option<Evidence> {
        let (estimate, se, df) = welch_log_ratio(a, b)?;
        Some(Evidence {
            estimate,
            se,
            df,
            n: a.len().min(b.len()) as u32,
            pilot: None,
        })
    }

    /// The standard error and degrees of freedom an interval at quantile `p` is made with:
    /// the pilot's spread over all the blocks (Stein's second stage, exact under the model
    /// whatever number the pilot chose), unless all the blocks' spread makes the wider
    /// interval at that same quantile: then that one. The wider choice only costs caution
    /// under the model; with heavy tails a quiet pilot followed by wild blocks would otherwise
    /// claim differences the data does not carry.
    pub fn spread_at(&self, p: f64) -> (f64, f64) {
        let all = (self.se, self.df);
        let Some(pilot) = self.pilot else {
            return all;
        };
        let stein = (pilot.sd / f64::from(self.n).sqrt(), pilot.df);
        let width = |(se, df): (f64, f64)| se * t_quantile(df, p);
        if width(all) > width(stein) {
            all
        } else {
            stein
        }
    }

    /// What sizes a study: the pilot's spread and degrees of freedom where there was one, else
    /// all the blocks' (a block's log ratio's sd, df).
    pub fn sizing(&self) -> Pilot {
        self.pilot.unwrap_or(Pilot {
            sd: self.se * f64::from(self.n).sqrt(),
            df: self.df,
            mean: self.estimate,
        })
    }
}
