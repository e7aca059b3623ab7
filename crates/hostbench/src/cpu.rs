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
///
/// On x86-64 the loop executes what Debian's gcc build of sysbench executes per trial (read
/// with objdump): the trial by 2 is a parity test (gcc peels it), every later trial converts
/// the divisor with `cvtsi2sd`, compares it with the square root as a double, and divides with
/// a 64-bit `div`. LLVM would guard the division with a 32-bit fast path, which on Intel cores
/// made the probe read 27% above sysbench on one thread; the division is therefore written in
/// assembly so no compiler can narrow it. Elsewhere the plain loop stands.
pub fn primes_below(max: u64) -> u64 {
    let mut n = 0;
    let mut c: u64 = 3;
    while c < max {
        let t = (c as i64 as f64).sqrt();
        if is_prime_trial(c, t) {
            n += 1;
        }
        c += 1;
    }
    n
}

/// Trial division of `c` by 2, 3, ... while the divisor is at most `t` (= sqrt(c)).
#[inline(always)]
fn is_prime_trial(c: u64, t: f64) -> bool {
    if t < 2.0 {
        return true;
    }
    if c & 1 == 0 {
        return false;
    }
    let mut l: u64 = 3;
    // The divisor stays far below 2^63, so the signed conversion is exact (as gcc's is).
    while (l as i64 as f64) <= t {
        if rem(c, l) == 0 {
            return false;
        }
        l += 1;
    }
    true
}

/// `c % l` with a 64-bit `div`, whatever the operands' size (see [`primes_below`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rem(c: u64, l: u64) -> u64 {
    let r: u64;
    // SAFETY: `div` divides rdx:rax = 0:c by l; l >= 3, so it is never zero and the quotient
    // fits in 64 bits (no #DE). It touches only the named registers and the flags.
    unsafe {
        std::arch::asm!(
            "div {l}",
            l = in(reg) l,
            inout("rax") c => _,
            inout("rdx") 0u64 => r,
            options(pure, nomem, nostack),
        );
    }
    r
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rem(c: u64, l: u64) -> u64 {
    c % l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_odd_primes_below_the_limit() {
        // Primes below 30 but from 3: 3 5 7 11 13 17 19 23 29 (2 is not counted).
        assert_eq!(primes_below(30), 9);
        assert_eq!(primes_below(10_000), 1228);
        // Against plain arithmetic over a range with squares and even numbers.
        let plain = (3..5000u64)
            .filter(|&c| (2..c).take_while(|l| l * l <= c).all(|l| c % l != 0))
            .count() as u64;
        assert_eq!(primes_below(5000), plain);
    }
}
