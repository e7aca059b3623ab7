//! pgbench's pseudo-random numbers, value for value: PostgreSQL's generator (xoroshiro128**
//! seeded through splitmix64, as `pg_prng` is) and what pgbench draws from it, so that
//! `--random-seed=N` gives the values pgbench gives: each client's `\set` functions from its
//! own stream, `permute` from a stream of its seed argument, a script chosen from its thread's.
//!
//! The streams are dealt from one base stream in pgbench's order: one per client (by client
//! id), then `:default_seed`, then three per thread (choosing scripts, throttling, sampling).

/// One stream of PostgreSQL's generator.
#[derive(Debug, Clone)]
pub struct PgPrng {
    s0: u64,
    s1: u64,
}

/// splitmix64's step: the seed's successive values fill the state.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl PgPrng {
    pub fn seeded(seed: u64) -> PgPrng {
        let mut x = seed;
        let (s0, s1) = (splitmix(&mut x), splitmix(&mut x));
        match (s0, s1) {
            // An all-zero state is a fixed point; PostgreSQL puts Knuth's LCG constants there.
            (0, 0) => PgPrng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            },
            _ => PgPrng { s0, s1 },
        }
    }

    /// xoroshiro128** 1.0.
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let out = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        out
    }

    /// Uniform in [lo, hi]: the top bits of a draw, as many as the range needs, drawn again
    /// while beyond it.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo;
        let shift = span.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= span {
                return lo + v;
            }
        }
    }

    /// Uniform in [0, 1), from the top 52 bits.
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * (-52f64).exp2()
    }

    /// Standard normal, by Box-Muller on two draws in (0, 1].
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }
}

/// pgbench's streams for a run of `clients` clients on `threads` threads from `seed`.
#[derive(Debug, Clone)]
pub struct Streams {
    /// Each client's `\set` stream, by client id.
    pub clients: Vec<u64>,
    /// `:default_seed` (when -D does not set it).
    pub default_seed: u64,
    /// Each thread's script-choosing stream.
    pub choose: Vec<u64>,
}

impl Streams {
    /// The stream client `tid` chooses its scripts from: its thread's, as pgbench's, when
    /// each thread has one client (-j equal to -c); pgbench's threads of several clients
    /// share one in an order their timing decides, so then each client gets its own.
    pub fn choose_seed(&self, tid: u32) -> u64 {
        let tid = tid as usize;
        match self.choose.len() == self.clients.len() {
            true => self.choose[tid],
            false => {
                let mut x = self.clients[tid] ^ 0x6A09_E667_F3BC_C908;
                splitmix(&mut x)
            }
        }
    }

    pub fn deal(seed: u64, clients: u32, threads: u32) -> Streams {
        let mut base = PgPrng::seeded(seed);
        let clients = (0..clients).map(|_| base.next_u64()).collect();
        let default_seed = base.next_u64();
        let choose = (0..threads)
            .map(|_| {
                let choose = base.next_u64();
                // The thread's throttling and sampling streams: drawn, not used here.
                base.next_u64();
                base.next_u64();
                choose
            })
            .collect();
        Streams {
            clients,
            default_seed,
            choose,
        }
    }
}

/// pgbench's `permute(i, size, seed)`: six rounds of odd multiplications, xors and
/// rotations on the lower and upper halves (modulo the largest power of 2 within the size),
/// each followed by a random offset, drawn from a stream of `seed`.
pub fn permute(i: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let size = size as u64;
    let mut rng = PgPrng::seeded(seed as u64);
    let mut v = (i as u64) % size;
    let bits = 63 - size.leading_zeros();
    let mask = (1u64 << bits) - 1;
    // Rotate left by one within `bits` bits (the top bit comes round to the bottom).
    let rotate = |x: u64| ((x << 1) & mask) | (x >> (bits - 1));
    for _ in 0..6 {
        let (m, r) = ((rng.next_u64() & mask) | 1, rng.next_u64() & mask);
        if v <= mask {
            v = rotate((v.wrapping_mul(m) ^ r) & mask);
        }
        let (m, r) = ((rng.next_u64() & mask) | 1, rng.next_u64() & mask);
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - rotate((t.wrapping_mul(m) ^ r) & mask);
        }
        v = (v + rng.range(0, size - 1)) % size;
    }
    v as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_is_a_permutation_of_every_size() {
        for size in [2i64, 3, 7, 8, 100, 1000] {
            let mut seen: Vec<i64> = (0..size).map(|i| permute(i, size, 42)).collect();
            seen.sort();
            assert_eq!(seen, (0..size).collect::<Vec<_>>());
        }
        assert_eq!(permute(5, 1, 42), 0);
    }

    #[test]
    fn ranges_and_doubles_stay_inside() {
        let mut r = PgPrng::seeded(7);
        for _ in 0..10_000 {
            assert!((3..=9).contains(&r.range(3, 9)));
            let d = r.double();
            assert!((0.0..1.0).contains(&d));
        }
        assert_eq!(r.range(5, 5), 5);
    }
}
