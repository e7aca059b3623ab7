//! How steady this machine's CPUs are: the same small piece of work (the cpu probe's primes)
//! timed in short slices on every CPU at once, each thread pinned to its CPU by the caller. On a machine
//! of its own a CPU's slices agree within a percent or two. On a shared virtual machine the
//! host may move, share or throttle a vCPU, and its slices can differ by half, with no steal
//! time shown. A study there cannot resolve differences much smaller than that spread in a
//! few blocks, whatever the tool: `study plan` says so beside the blocks it asks for.

use std::time::{Duration, Instant};

/// The work timed in a slice: primes below this, many times over (about 30 us a time on a
/// current core), so that a slice holds hundreds of them and the clock's cost is nothing.
const MAX_PRIME: u64 = 2_000;

/// One CPU's slices, summarised robustly.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CpuSteadiness {
    pub cpu: usize,
    /// Work done per second, median over the slices.
    pub median: f64,
    /// How much the slices vary: the median absolute deviation over the median, times
    /// 1.4826 (a standard deviation's scale where the slices are normal).
    pub spread: f64,
    /// The slowest and fastest slice over the median.
    pub slowest: f64,
    pub fastest: f64,
    pub slices: usize,
    /// How long the speed stays on one side of its median, on average (ms): a spell's
    /// length. Slices that vary independently give about two slices; a VM whose CPUs change
    /// speed in spells of seconds, seconds.
    pub spell_ms: f64,
}

/// Time `slice`-long pieces of work on each CPU in `cpus`, all at once, for `length`. Each
/// thread first calls `pin` with its CPU (the server lab's pinning: where it fails, the
/// thread stays where it was, which only blurs that CPU's figure).
pub fn measure(
    cpus: &[usize],
    length: Duration,
    slice: Duration,
    pin: fn(usize),
) -> Vec<CpuSteadiness> {
    let handles: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            std::thread::spawn(move || {
                pin(cpu);
                (cpu, slices_on(length, slice))
            })
        })
        .collect();
    handles
        .into_iter()
        .filter_map(|h| h.join().ok())
        .filter_map(|(cpu, rates)| summarise(cpu, rates, slice))
        .collect()
}

/// The rates of work in each slice, on this thread.
fn slices_on(length: Duration, slice: Duration) -> Vec<f64> {
    let end = Instant::now() + length;
    let mut rates = Vec::new();
    while Instant::now() < end {
        let start = Instant::now();
        let mut done = 0u64;
        while start.elapsed() < slice {
            std::hint::black_box(crate::cpu::primes_below(std::hint::black_box(MAX_PRIME)));
            done += 1;
        }
        rates.push(done as f64 / start.elapsed().as_secs_f64());
    }
    rates
}

fn summarise(cpu: usize, mut rates: Vec<f64>, slice: Duration) -> Option<CpuSteadiness> {
    let in_order = rates.clone();
    let median = median_of(&mut rates)?;
    if median <= 0.0 {
        return None;
    }
    let mut deviations: Vec<f64> = rates.iter().map(|r| (r - median).abs()).collect();
    let mad = median_of(&mut deviations)?;
    let (lo, hi) = rates
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    Some(CpuSteadiness {
        cpu,
        median,
        spread: 1.4826 * mad / median,
        slowest: lo / median,
        fastest: hi / median,
        slices: rates.len(),
        spell_ms: spell_slices(&in_order, median) * slice.as_secs_f64() * 1000.0,
    })
}

/// The mean length, in slices, of the runs of consecutive slices on one side of `median`
/// (slices at the median continue the run they are in).
fn spell_slices(rates: &[f64], median: f64) -> f64 {
    let mut runs = 0usize;
    let mut side = 0i8;
    for &r in rates {
        let s = match r.total_cmp(&median) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Greater => 1,
            std::cmp::Ordering::Equal => side,
        };
        if s != side || runs == 0 {
            runs += 1;
        }
        side = s;
    }
    rates.len() as f64 / runs.max(1) as f64
}

fn median_of(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(match n % 2 {
        1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_summarised_robustly() {
        // Five steady slices and one at half speed: the spread stays small, the slowest says it.
        let slice = Duration::from_millis(100);
        let s = summarise(3, vec![100.0, 101.0, 99.0, 100.0, 50.0, 100.0], slice).unwrap();
        assert_eq!((s.cpu, s.slices), (3, 6));
        assert_eq!(s.median, 100.0);
        assert!(s.spread < 0.02, "{s:?}");
        assert_eq!(s.slowest, 0.5);
        assert_eq!(s.fastest, 1.01);
        assert_eq!(summarise(0, Vec::new(), slice), None);
    }

    #[test]
    fn spells_are_runs_on_one_side_of_the_median() {
        let slice = Duration::from_millis(100);
        // Alternating slices: spells of one slice. Two halves: spells of half the slices.
        let flip: Vec<f64> = (0..10)
            .map(|i| if i % 2 == 0 { 90.0 } else { 110.0 })
            .collect();
        assert_eq!(summarise(0, flip, slice).unwrap().spell_ms, 100.0);
        let halves: Vec<f64> = (0..10).map(|i| if i < 5 { 90.0 } else { 110.0 }).collect();
        assert_eq!(summarise(0, halves, slice).unwrap().spell_ms, 500.0);
    }

    #[test]
    fn every_cpu_asked_for_is_measured() {
        let got = measure(
            &[0],
            Duration::from_millis(200),
            Duration::from_millis(20),
            |_| {},
        );
        assert_eq!(got.len(), 1);
        assert!(got[0].slices >= 5 && got[0].median > 0.0, "{got:?}");
        assert!(got[0].slowest <= 1.0 && got[0].fastest >= 1.0);
    }
}
