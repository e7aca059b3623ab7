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
/// On x86-64 the loop executes what Debian's gcc build of sysbench executes (read with
/// objdump): the trial by 2 is a parity test (gcc peels it), and every later trial is
/// sysbench's own instruction sequence with a 64-bit `div`, written in assembly
/// ([`trials_from_3`]) because LLVM guards the division with a 32-bit fast path, which on
/// Intel cores made the probe read 27% above sysbench on one thread. Elsewhere the plain loop
/// stands.
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
    trials_from_3(c, t)
}

/// The trials by 3, 4, ...: on x86-64 the very instructions of sysbench's loop, in its order
/// (Debian's build, 1.0.20): convert the divisor (`pxor`, `cvtsi2sd`), compare it with the
/// root (`comisd`, `jb`), divide (`mov`, `xor`, 64-bit `div`), test the remainder (`test`,
/// `je`), next divisor (`add`, `jns`: gcc's check before its unsigned-conversion path, never
/// taken here). Eleven instructions and three branches per trial, as there; a compiler left
/// to itself drops the `jns` (4% faster on AMD) or narrows the `div` (27% faster on Intel).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn trials_from_3(c: u64, t: f64) -> bool {
    let prime: u64;
    // SAFETY: registers only (rax and rdx clobbered, declared); `div` divides 0:c by a divisor
    // of at least 3, so it never faults; the loop ends when the divisor passes `t` (finite,
    // at most sqrt(2^64)), long before the divisor could overflow.
    unsafe {
        std::arch::asm!(
            "mov {l}, 2",
            "jmp 3f",
            "2:",
            "pxor {x}, {x}",
            "cvtsi2sd {x}, {l}",
            "comisd {t}, {x}",
            "jb 5f",
            "mov rax, {c}",
            "xor edx, edx",
            "div {l}",
            "test rdx, rdx",
            "je 4f",
            "3:",
            "add {l}, 1",
            "jns 2b",
            "5:",
            "mov {p}, 1",
            "jmp 6f",
            "4:",
            "xor {p:e}, {p:e}",
            "6:",
            c = in(reg) c,
            t = in(xmm_reg) t,
            l = out(reg) _,
            p = out(reg) prime,
            x = out(xmm_reg) _,
            out("rax") _,
            out("rdx") _,
            options(pure, nomem, nostack),
        );
    }
    prime == 1
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn trials_from_3(c: u64, t: f64) -> bool {
    let mut l: u64 = 3;
    while (l as f64) <= t {
        if c % l == 0 {
            return false;
        }
        l += 1;
    }
    true
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
