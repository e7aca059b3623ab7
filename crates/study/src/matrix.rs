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

/// Every series of the study's planned blocks, in the order they will run.
pub fn series(spec: &StudySpec) -> Vec<Series> {
    (1..=spec.repetitions)
        .flat_map(|block| block_series(spec, block))
        .collect()
}

/// Block `block` (a repetition): every variant's series once (and the noise check's second
/// run of the first variant), in an order shuffled per block with the study's seed, so that
/// no variant always runs first, last or after the same one: interleaved shuffles the
/// variants within each workload, randomized the whole block. Sequential keeps each variant's
/// series back to back, in the file's order.
pub fn block_series(spec: &StudySpec, block: u32) -> Vec<Series> {
    let (variants, workloads) = (spec.block_variants(), spec.workloads.len());
    let at = |variant, workload| Series {
        repetition: block,
        variant,
        workload,
    };
    let mut rng = Rng::seeded(spec.seed ^ u64::from(block).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    match spec.order {
        Order::Sequential => (0..variants)
            .flat_map(|v| (0..workloads).map(move |w| (v, w)))
            .map(|(v, w)| at(v, w))
            .collect(),
        Order::Interleaved => (0..workloads)
            .flat_map(|w| {
                let mut order: Vec<usize> = (0..variants).collect();
                shuffle(&mut order, &mut rng);
                order.into_iter().map(move |v| at(v, w)).collect::<Vec<_>>()
            })
            .collect(),
        Order::Randomized => {
            let mut round: Vec<Series> = (0..workloads)
                .flat_map(|w| (0..variants).map(move |v| (v, w)))
                .map(|(v, w)| at(v, w))
                .collect();
            shuffle(&mut round, &mut rng);
            round
        }
    }
}

/// The check block (one server at a time, `[alternation] validate_every`) a study taking turns
/// runs right after its block `block`, if one is due: after every validate_every-th block.
pub fn check_after(spec: &StudySpec, block: u32) -> Option<u32> {
    let every = spec.alternation.validate_every;
    (every > 0 && block % every == 0).then(|| bakeoff_store::check_block(block / every))
}

/// A check block's series: the study's variants in the block's own shuffled order. The hidden
/// A/A twin checks turns' own noise, so it sits these out.
pub fn check_series(spec: &StudySpec, check: u32) -> Vec<Series> {
    block_series(spec, check)
        .into_iter()
        .filter(|s| s.variant < spec.variants.len())
        .collect()
}

/// Fisher-Yates with the study's seed: the same file gives the same order.
fn shuffle<T>(items: &mut [T], rng: &mut Rng) {
    for i in (1..items.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// Rough wall time: measured runs, a warmup per series, data loads and server starts; for
/// blocks whose servers take turns, every server's turns with what each switch costs.
pub fn estimate(spec: &StudySpec) -> Duration {
    if crate::alternate::plan::why_not(spec).is_none() {
        // Check blocks (validate_every) run one server at a time, as blocks would.
        let checks = match spec.alternation.validate_every {
            0 => Duration::ZERO,
            k => estimate_blocks(spec) / spec.repetitions.max(1) * (spec.repetitions / k),
        };
        return estimate_turns(spec) + checks;
    }
    estimate_blocks(spec)
}

/// Rough wall time of blocks run one server at a time.
fn estimate_blocks(spec: &StudySpec) -> Duration {
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

/// A turn-taking study: per block and group of workloads sharing tables, every variant's
/// servers started (and loaded, unless copied), warmed in turns, then each cell measured in
/// turns; a switch costs its settle and ~3 ms of draining and sampling.
fn estimate_turns(spec: &StudySpec) -> Duration {
    let a = &spec.alternation;
    let slice = a.slice.as_secs_f64();
    let stretch = (slice + a.settle.as_secs_f64() + 0.003) / slice;
    let servers = spec.block_variants() as f64;
    let rows = f64::from(spec.tables) * f64::from(spec.table_size);
    let load = 1.0 + rows / 250_000.0;
    let groups = crate::alternate::plan::table_groups(spec);
    let per_group = |workloads: usize| {
        let cells = (workloads * spec.threads.len()) as f64;
        let turns =
            servers * stretch * (spec.warmup.as_secs_f64() + cells * spec.duration.as_secs_f64());
        let starts = servers * 3.0;
        let loads = match spec.dataset_policy {
            DatasetPolicy::Rebuild => servers * load,
            DatasetPolicy::Copy => 0.0,
        };
        turns + starts + loads
    };
    let block: f64 = groups.iter().map(|g| per_group(g.len())).sum();
    let templates = match spec.dataset_policy {
        DatasetPolicy::Copy => groups.len() as f64 * (load + 3.0),
        DatasetPolicy::Rebuild => 0.0,
    };
    Duration::from_secs_f64(block * f64::from(spec.repetitions) + templates)
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
    fn interleaved_blocks_hold_every_variant_per_workload_in_shuffled_orders() {
        let s = series(&spec(""));
        assert_eq!(s.len(), 2 * 2 * 3, "repetitions x workloads x variants");
        for block in s.chunks(6) {
            let workloads: Vec<usize> = block.iter().map(|x| x.workload).collect();
            assert_eq!(
                workloads,
                [0, 0, 0, 1, 1, 1],
                "variants alternate within a workload"
            );
            for w in block.chunks(3) {
                let mut v: Vec<usize> = w.iter().map(|x| x.variant).collect();
                v.sort();
                assert_eq!(v, [0, 1, 2]);
            }
        }
        assert!(s[6..].iter().all(|x| x.repetition == 2));
        // Over many blocks no variant keeps one place.
        let mut many = spec("");
        many.repetitions = 30;
        let firsts: std::collections::BTreeSet<usize> = (1..=30)
            .map(|b| block_series(&many, b)[0].variant)
            .collect();
        assert_eq!(firsts.len(), 3, "each variant runs first in some block");
    }

    #[test]
    fn the_noise_check_runs_the_first_variant_twice_in_every_block() {
        let s = spec("noise_check = true");
        assert_eq!(s.block_variants(), 4);
        for b in 1..=2 {
            let block = block_series(&s, b);
            assert_eq!(block.len(), 2 * 4);
            let twins: Vec<usize> = block
                .iter()
                .filter(|x| x.variant == 3)
                .map(|x| x.workload)
                .collect();
            assert_eq!(twins, [0, 1], "once per workload in each block");
        }
        assert_eq!(s.variant_name(3), format!("{} (A/A)", s.variants[0].name));
        assert_eq!(s.variant(3).name, s.variants[0].name);
    }

    /// An A/A/B lists its own twin of the first: the check reads it, and adds no fourth
    /// server to every block (settings listed in another order are the same set-up); a
    /// variant the same but for one setting is no twin (the check adds its own, as before).
    #[test]
    fn a_listed_variant_the_same_as_the_first_is_the_noise_checks_twin() {
        let aab = |again: &str| {
            let src = format!(
                "threads = [4]\nrepetitions = \"auto\"\n[[workload]]\nname = \"oltp_write_only\"\n[[variant]]\nname = \"a\"\nsettings = {{ innodb_flush_log_at_trx_commit = 1, sync_binlog = 0 }}\n[[variant]]\nname = \"b\"\nsettings = {{ innodb_flush_log_at_trx_commit = 2, sync_binlog = 0 }}\n[[variant]]\nname = \"a-again\"\nsettings = {{ {again} }}\n"
            );
            parse(&src, "t").unwrap_or_else(|e| panic!("{e:?}"))
        };
        let s = aab("innodb_flush_log_at_trx_commit = 1, sync_binlog = 0");
        assert!(s.noise_check);
        assert_eq!(s.noise_twin, Some(2));
        assert_eq!(s.block_variants(), 3, "a, b and a-again: no fourth");
        let block = block_series(&s, 1);
        let mut v: Vec<usize> = block.iter().map(|x| x.variant).collect();
        v.sort();
        assert_eq!(v, [0, 1, 2]);
        let json: serde_json::Value = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["noise_twin"], 2,
            "the report reads it from the stored spec"
        );
        let reordered = aab("sync_binlog = 0, innodb_flush_log_at_trx_commit = 1");
        assert_eq!(reordered.noise_twin, Some(2));
        let other = aab("innodb_flush_log_at_trx_commit = 1, sync_binlog = 1");
        assert_eq!(other.noise_twin, None);
        assert_eq!(other.block_variants(), 4);
        let mut off = aab("innodb_flush_log_at_trx_commit = 1, sync_binlog = 0");
        off.noise_check = false;
        assert_eq!(off.block_variants(), 3);
        // Resumed: a study stored by this build keeps its listed twin; one stored before
        // listed twins goes on adding its own, as its first blocks did.
        let mut again = aab("innodb_flush_log_at_trx_commit = 1, sync_binlog = 0");
        again.keep_layout_of(&serde_json::to_string(&again).unwrap());
        assert_eq!(again.noise_twin, Some(2));
        let mut older = json.clone();
        older.as_object_mut().unwrap().remove("noise_twin");
        again.keep_layout_of(&older.to_string());
        assert_eq!(again.noise_twin, None);
        assert_eq!(again.block_variants(), 4);
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
    fn a_turn_taking_estimate_counts_every_servers_turns_and_what_switches_cost() {
        // 3 allocators, 2 workloads sharing tables, 2 thread counts, 10 s each, 2 blocks.
        let s = spec("duration = 10");
        assert!(crate::alternate::plan::why_not(&s).is_none());
        let turns = 2 * 3 * 2 * 2 * 10;
        let est = estimate(&s).as_secs();
        // 50 ms slices with a 5 ms settle and ~3 ms more per switch: 16% on top.
        assert!(est >= turns * 116 / 100, "{est}");
        assert!(
            est <= turns * 116 / 100 + 2 * 3 * 3 + 10,
            "starts and one load: {est}"
        );
        let blocks = spec("duration = 10\n[alternation]\nenabled = false");
        assert!(estimate(&blocks) >= Duration::from_secs(12 * 2 * 12));
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
