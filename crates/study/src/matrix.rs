//! The expanded matrix: cells (variant x workload x threads), series (one server lifetime:
//! a variant and a workload, every thread count in turn) in the study's order, and an estimate
//! of how long it all takes.

use std::time::Duration;

use bakeoff_workload::Rng;

use crate::file::{DatasetPolicy, Order, StudySpec};

/// One server lifetime: start the variant, load (or copy) the data, warm up, then one run per
/// thread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Series {
    /// 1-based.
    pub repetition: u32,
    pub variant: usize,
    pub workload: usize,
}

/// Every series of the study in the order they will run.
pub fn series(spec: &StudySpec) -> Vec<Series> {
    let mut out = Vec::new();
    let mut rng = Rng::seeded(spec.seed);
    for repetition in 1..=spec.repetitions {
        let (variants, workloads) = (spec.variants.len(), spec.workloads.len());
        let mut round: Vec<Series> = if spec.order == Order::Interleaved {
            // Variants alternate within each workload: drift over the study lands on all of
            // them alike.
            (0..workloads)
                .flat_map(|workload| (0..variants).map(move |variant| (variant, workload)))
                .map(|(variant, workload)| Series {
                    repetition,
                    variant,
                    workload,
                })
                .collect()
        } else {
            (0..variants)
                .flat_map(|variant| (0..workloads).map(move |workload| (variant, workload)))
                .map(|(variant, workload)| Series {
                    repetition,
                    variant,
                    workload,
                })
                .collect()
        };
        if spec.order == Order::Randomized {
            // Fisher-Yates with the study's seed: the same file gives the same order.
            for i in (1..round.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                round.swap(i, j);
            }
        }
        out.extend(round);
    }
    out
}

/// Rough wall time: measured runs, a warmup per series, data loads and server starts.
pub fn estimate(spec: &StudySpec) -> Duration {
    let all = series(spec);
    let series = all.len() as u64;
    // A timed run lasts its duration; fixed work, about a second per iteration at these sizes.
    let per_series_runs: u64 = all
        .iter()
        .map(|s| match spec.workloads[s.workload].fixed {
            Some((iterations, _)) => u64::from(iterations) * spec.threads.len() as u64,
            None => (spec.duration.as_secs() + 2) * spec.threads.len() as u64,
        })
        .sum();
    let rows = u64::from(spec.tables) * u64::from(spec.table_size);
    // ~350k rows/s on 2 CPUs with LOAD DATA (4x100k in 1.17 s), plus index builds.
    let load = 1 + rows / 250_000;
    let instances = spec
        .variants
        .iter()
        .map(|v| v.instances.len() as u64)
        .max()
        .unwrap_or(1);
    let loads = match spec.dataset_policy {
        DatasetPolicy::Rebuild => series * instances,
        DatasetPolicy::Copy => 1 + series * instances / 10,
    };
    let starts = series * instances * 3; // initialize + start + stop
    Duration::from_secs(per_series_runs + series * spec.warmup.as_secs() + loads * load + starts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::parse;

    fn spec(extra: &str) -> StudySpec {
        let src = format!(
            "threads = [1, 8]\nrepetitions = 2\n{extra}\n[[workload]]\nname = \"oltp_point_select\"\n[[workload]]\nname = \"oltp_read_only\"\n[axes]\nallocator = [\"glibc\", \"jemalloc\", \"tcmalloc\"]\n"
        );
        parse(&src, "t").unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn interleaved_series_alternate_variants_within_each_workload() {
        let s = series(&spec(""));
        assert_eq!(s.len(), 2 * 2 * 3, "repetitions x workloads x variants");
        let first: Vec<(usize, usize)> = s[..6].iter().map(|x| (x.workload, x.variant)).collect();
        assert_eq!(first, [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
        assert!(s[6..].iter().all(|x| x.repetition == 2));
    }

    #[test]
    fn randomized_order_is_a_seeded_shuffle_of_each_repetition() {
        let a = series(&spec("order = \"randomized\"\nseed = 7"));
        let b = series(&spec("order = \"randomized\"\nseed = 7"));
        let c = series(&spec("order = \"randomized\"\nseed = 8"));
        assert_eq!(a, b, "same seed, same order");
        assert_ne!(a, c, "another seed, another order");
        let mut round: Vec<(usize, usize)> =
            a[..6].iter().map(|x| (x.variant, x.workload)).collect();
        round.sort();
        assert_eq!(round.len(), 6);
        round.dedup();
        assert_eq!(round.len(), 6, "each repetition holds every series once");
    }

    #[test]
    fn the_estimate_counts_every_run() {
        let s = spec("duration = 10");
        // 12 series x 2 thread counts x (10 s + 2 s), plus loads and starts.
        assert!(
            estimate(&s) >= Duration::from_secs(12 * 2 * 12),
            "{:?}",
            estimate(&s)
        );
    }
}
