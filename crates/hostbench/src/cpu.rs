//! sysbench's cpu test: one event = count the primes below `max_prime` by trial division, with
//! exactly sysbench's loop (64-bit division, the bound compared as a double), so that the
//! events per second mean the same thing.

use crate::runner::Worker;

pub struct Cpu {
    pub max_prime: u64,
}

impl Worker for Cpu {
    fn event(&mut self) -> Result<bool, String> {
        std::hint::black_box(primes_below(std::hint::black_box(self.max_prime)));
        Ok(true)
    }
}

/// The number of primes in [3, max) found sysbench's way (sb_cpu.c: the count is discarded
/// there; returned here so the work cannot be optimised away).
pub fn primes_below(max: u64) -> u64 {
    let mut n = 0;
    let mut c: u64 = 3;
    while c < max {
        let t = (c as f64).sqrt();
        let mut l: u64 = 2;
        while (l as f64) <= t {
            if c % l == 0 {
                break;
            }
            l += 1;
        }
        if (l as f64) > t {
            n += 1;
        }
        c += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_odd_primes_below_the_limit() {
        // Primes below 30 but from 3: 3 5 7 11 13 17 19 23 29 (2 is not counted).
        assert_eq!(primes_below(30), 9);
        assert_eq!(primes_below(10_000), 1228);
    }
}
