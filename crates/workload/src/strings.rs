//! sysbench's c and pad values: groups of 11 random digits joined by '-' (10 groups for c,
//! 119 chars; 5 for pad, 59 chars), from the templates "###########-...".

use crate::Rng;

pub const C_LEN: usize = 119;
pub const PAD_LEN: usize = 59;

fn fill_groups(rng: &mut Rng, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = if i % 12 == 11 {
            b'-'
        } else {
            b'0' + rng.uniform(0, 9) as u8
        };
    }
}

pub fn fill_c(rng: &mut Rng, out: &mut [u8; C_LEN]) {
    fill_groups(rng, out);
}

pub fn fill_pad(rng: &mut Rng, out: &mut [u8; PAD_LEN]) {
    fill_groups(rng, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_sysbench_templates() {
        let mut rng = Rng::seeded(3);
        let mut c = [0u8; C_LEN];
        fill_c(&mut rng, &mut c);
        let s = std::str::from_utf8(&c).unwrap();
        let groups: Vec<&str> = s.split('-').collect();
        assert_eq!(groups.len(), 10);
        assert!(groups
            .iter()
            .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
        let mut p = [0u8; PAD_LEN];
        fill_pad(&mut rng, &mut p);
        assert_eq!(std::str::from_utf8(&p).unwrap().split('-').count(), 5);
    }
}
