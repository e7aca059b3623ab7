//! TPC-C's random inputs (clause 2.1 and 4.3.2): NURand with its run-time constants, the
//! last-name syllables, and the a-strings, n-strings and zip codes of the population.

use crate::Rng;

/// The last-name syllables of clause 4.3.2.3.
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The run-time constants C of NURand (2.1.6), one per field, shared by every terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constants {
    /// C for C_LAST, NURand(255, 0, 999).
    pub c_last: u32,
    /// C for C_ID, NURand(1023, 1, 3000).
    pub c_id: u32,
    /// C for OL_I_ID, NURand(8191, 1, 100000).
    pub ol_i_id: u32,
}

impl Constants {
    /// Constants for loading: each drawn at random.
    pub fn for_load(rng: &mut Rng) -> Constants {
        Constants {
            c_last: rng.uniform(0, 255),
            c_id: rng.uniform(0, 1023),
            ol_i_id: rng.uniform(0, 8191),
        }
    }

    /// Constants for a run against tables loaded with `load`: C_LAST by the delta rule of
    /// 2.1.6.1 (|C_Run - C_Load| in [65, 119], never 96 or 112); C_ID and OL_I_ID drawn anew.
    /// With the load's constant unknown (tables another tool loaded), C_LAST is drawn freely.
    pub fn for_run(load: Option<u32>, rng: &mut Rng) -> Constants {
        let c_last = match load {
            Some(l) => {
                let ok: Vec<u32> = (0..=255u32).filter(|r| valid_delta(l, *r)).collect();
                // Every load constant in 0..=255 has a run constant 65 away on one side.
                ok[rng.uniform(0, ok.len() as u32 - 1) as usize]
            }
            None => rng.uniform(0, 255),
        };
        Constants {
            c_last,
            c_id: rng.uniform(0, 1023),
            ol_i_id: rng.uniform(0, 8191),
        }
    }
}

/// Clause 2.1.6.1's rule between C_LAST's load and run constants.
pub fn valid_delta(load: u32, run: u32) -> bool {
    let d = load.abs_diff(run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut Rng, a: u32, x: u32, y: u32, c: u32) -> u32 {
    (((rng.uniform(0, a) | rng.uniform(x, y)) + c) % (y - x + 1)) + x
}

/// The last name of number `n` (0..=999): three syllables, its digits'.
pub fn last_name(n: u32, out: &mut Vec<u8>) {
    out.clear();
    for digit in [n / 100, (n / 10) % 10, n % 10] {
        out.extend_from_slice(SYLLABLES[digit as usize % 10].as_bytes());
    }
}

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A random a-string of length [lo, hi] appended to `out`.
pub fn astring(rng: &mut Rng, lo: u32, hi: u32, out: &mut Vec<u8>) {
    let n = rng.uniform(lo, hi);
    for _ in 0..n {
        out.push(ALNUM[rng.uniform(0, ALNUM.len() as u32 - 1) as usize]);
    }
}

/// A random n-string (digits) of length `n` appended to `out`.
pub fn nstring(rng: &mut Rng, n: u32, out: &mut Vec<u8>) {
    for _ in 0..n {
        out.push(b'0' + rng.uniform(0, 9) as u8);
    }
}

/// I_DATA and S_DATA: an a-string of [26, 50], one in ten holding "ORIGINAL" somewhere.
pub fn data_field(rng: &mut Rng, out: &mut Vec<u8>) {
    let start = out.len();
    astring(rng, 26, 50, out);
    if rng.uniform(1, 10) == 1 {
        let len = (out.len() - start) as u32;
        let at = start + rng.uniform(0, len - 8) as usize;
        out[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// A zip code: four random digits, then "11111".
pub fn zip(rng: &mut Rng, out: &mut Vec<u8>) {
    nstring(rng, 4, out);
    out.extend_from_slice(b"11111");
}

/// A fixed-point value in [lo, hi] (in hundredths or ten-thousandths) as decimal text.
pub fn fixed(rng: &mut Rng, lo: u32, hi: u32, scale: u32, out: &mut Vec<u8>) {
    use std::io::Write;
    let v = rng.uniform(lo, hi);
    let div = 10u32.pow(scale);
    let _ = write!(out, "{}.{:0w$}", v / div, v % div, w = scale as usize);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_constant_has_a_valid_run_constant_and_the_rule_holds() {
        let mut rng = Rng::seeded(7);
        for load in 0..=255 {
            for _ in 0..20 {
                let run = Constants::for_run(Some(load), &mut rng).c_last;
                assert!(valid_delta(load, run), "load {load} run {run}");
            }
        }
        assert!(!valid_delta(0, 96) && !valid_delta(200, 88) && valid_delta(10, 75));
    }

    #[test]
    fn nurand_stays_in_range_and_is_not_uniform() {
        let mut rng = Rng::seeded(1);
        let mut hits = vec![0u32; 1000];
        for _ in 0..200_000 {
            let v = nurand(&mut rng, 255, 0, 999, 123);
            assert!(v <= 999);
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits.iter().min().unwrap();
        assert!(
            max > 4 * min.max(1),
            "NURand is skewed: max {max} min {min}"
        );
    }

    #[test]
    fn last_names_are_the_syllables_of_the_digits() {
        let mut v = Vec::new();
        last_name(371, &mut v);
        assert_eq!(v, b"PRICALLYOUGHT");
        last_name(0, &mut v);
        assert_eq!(v, b"BARBARBAR");
    }

    #[test]
    fn fields_have_their_lengths_and_forms() {
        let mut rng = Rng::seeded(3);
        let mut originals = 0;
        for _ in 0..2000 {
            let mut v = Vec::new();
            data_field(&mut rng, &mut v);
            assert!((26..=50).contains(&v.len()));
            originals += v.windows(8).any(|w| w == b"ORIGINAL") as u32;
        }
        assert!(
            (120..=280).contains(&originals),
            "about one in ten: {originals}"
        );
        let mut z = Vec::new();
        zip(&mut rng, &mut z);
        assert!(z.len() == 9 && z.ends_with(b"11111"));
        let mut f = Vec::new();
        fixed(&mut rng, 5, 5, 4, &mut f);
        assert_eq!(f, b"0.0005");
    }
}
