//! xoroshiro128+ (Blackman & Vigna), the generator sysbench 1.0 uses per thread, and
//! sysbench's "unique" non-repeating 32-bit sequence.

use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug, Clone)]
pub struct Rng {
    s0: u64,
    s1: u64,
}

impl Rng {
    /// Seed from one number through splitmix64, so nearby seeds give unrelated streams.
    pub fn seeded(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let (s0, s1) = (next(), next());
        Rng {
            s0,
            s1: if s0 == 0 && s1 == 0 { 1 } else { s1 },
        }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let (s0, mut s1) = (self.s0, self.s1);
        let result = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s0 = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s1 = s1.rotate_left(36);
        result
    }

    /// Uniform in [0, 1): the top 52 bits as the mantissa of a double in [1, 2), minus 1
    /// (sysbench's sb_rand_uniform_double).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        f64::from_bits(0x3ff0_0000_0000_0000 | (self.next_u64() >> 12)) - 1.0
    }

    /// unit(), with the state read from memory and written back on every call, as sysbench's
    /// thread-local generator is in its memory test's loops: the host probes' random passes
    /// mirror that loop so their figures mean what sysbench's do.
    #[inline]
    pub fn unit_via_memory(&mut self) -> f64 {
        // SAFETY: reads and writes of this generator's own, valid fields.
        let (s0, s1) = unsafe {
            (
                std::ptr::read_volatile(&self.s0),
                std::ptr::read_volatile(&self.s1),
            )
        };
        let mut r = Rng { s0, s1 };
        let u = r.unit();
        // SAFETY: as above.
        unsafe {
            std::ptr::write_volatile(&mut self.s0, r.s0);
            std::ptr::write_volatile(&mut self.s1, r.s1);
        }
        u
    }

    /// Uniform integer in [a, b].
    #[inline]
    pub fn uniform(&mut self, a: u32, b: u32) -> u32 {
        a + (self.unit() * ((b - a) as f64 + 1.0)) as u32
    }
}

/// sysbench.rand.unique(): a shared index walked through a quadratic-residue permutation of
/// the 32-bit range, so values never repeat (Preshing's construction, as sb_rand.c uses).
#[derive(Debug)]
pub struct Unique {
    index: AtomicU32,
    offset: u32,
    /// Indexes taken at a time: a client host of several walks only its own residue class,
    /// so hosts sharing a seed never hand out the same value.
    step: u32,
}

const PRIME: u32 = 4_294_967_291;

fn permute(x: u32) -> u32 {
    if x >= PRIME {
        return x;
    }
    let r = ((x as u64 * x as u64) % PRIME as u64) as u32;
    if x <= PRIME / 2 {
        r
    } else {
        PRIME - r
    }
}

impl Unique {
    pub fn new(seed: u64) -> Unique {
        Unique::share(seed, 0, 1)
    }

    /// Part `part` of `parts` of the sequence [`new`](Self::new) gives: the parts never
    /// overlap and together are that sequence's values.
    pub fn share(seed: u64, part: u32, parts: u32) -> Unique {
        let mut rng = Rng::seeded(seed ^ 0x5eed);
        let start = rng.next_u64() as u32;
        Unique {
            index: AtomicU32::new(start.wrapping_add(part)),
            offset: rng.next_u64() as u32,
            step: parts.max(1),
        }
    }

    pub fn next(&self) -> u32 {
        let i = self.index.fetch_add(self.step, Ordering::Relaxed);
        permute(permute(i).wrapping_add(self.offset) ^ 0x5bf0_3635)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_of_unique_never_meet_and_make_up_the_whole() {
        let whole: Vec<u32> = {
            let u = Unique::new(7);
            (0..3000).map(|_| u.next()).collect()
        };
        let parts: Vec<Unique> = (0..3).map(|p| Unique::share(7, p, 3)).collect();
        let mut shared: Vec<u32> = (0..1000)
            .flat_map(|_| parts.iter().map(|u| u.next()).collect::<Vec<_>>())
            .collect();
        assert_eq!(shared, whole);
        shared.sort_unstable();
        shared.dedup();
        assert_eq!(shared.len(), 3000);
    }

    #[test]
    fn unit_stays_in_range_and_covers_it() {
        let mut r = Rng::seeded(1);
        let (mut lo, mut hi) = (1.0f64, 0.0f64);
        for _ in 0..100_000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            lo = lo.min(u);
            hi = hi.max(u);
        }
        assert!(lo < 0.001 && hi > 0.999);
    }

    #[test]
    fn the_memory_bound_unit_is_the_same_stream() {
        let (mut a, mut b) = (Rng::seeded(9), Rng::seeded(9));
        assert!((0..100).all(|_| a.unit() == b.unit_via_memory()));
    }

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::seeded(42), Rng::seeded(42));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    }

    #[test]
    fn unique_does_not_repeat() {
        let u = Unique::new(7);
        let mut seen = std::collections::HashSet::new();
        assert!((0..200_000).all(|_| seen.insert(u.next())));
    }
}
