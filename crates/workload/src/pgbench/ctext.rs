//! C's readings of text that pgbench's results depend on: strtol where only blanks may
//! follow (`\setshell`'s result), atoi (`\sleep`'s variable).

/// C's `(int) strtol(s, &end, 10)` where only blanks may follow: None where anything else
/// does. Blanks alone read as 0, as pgbench accepts them.
pub(super) fn c_integer(s: &str) -> Option<i64> {
    let (v, end) = strtol(s);
    s.as_bytes()[end..].iter().all(|&c| blank(c)).then_some(v)
}

/// C's `atoi`: the number the text starts with (after blanks), 0 where none.
pub(super) fn atoi(s: &str) -> i64 {
    strtol(s).0
}

/// C's `sscanf(s, "%lu%c", ...) == 1`, pgbench's reading of `--random-seed`: blanks, a sign
/// and decimal digits, with nothing at all after them. As strtoul has it, a value past a
/// u64 reads as u64::MAX and a negative one wraps (`-1` is u64::MAX).
pub fn c_ulong(s: &str) -> Option<u64> {
    let (negative, digits, end) = leading_number(s);
    if digits.is_empty() || end != s.len() {
        return None;
    }
    let v = digits.iter().try_fold(0u64, |v, &c| {
        v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    });
    Some(match v {
        None => u64::MAX,
        Some(v) if negative => v.wrapping_neg(),
        Some(v) => v,
    })
}

fn blank(c: u8) -> bool {
    c == b' ' || (b'\t'..=b'\r').contains(&c)
}

/// `(int) strtol(s, &end, 10)`: the value, and where the number ended (0 where there was
/// none, as strtol leaves `end` at the start). strtol saturates at a long's bounds; pgbench
/// then keeps an int's low bits.
fn strtol(s: &str) -> (i64, usize) {
    let (negative, digits, end) = leading_number(s);
    if digits.is_empty() {
        return (0, 0);
    }
    let v = digits.iter().fold(0i64, |v, &c| {
        v.saturating_mul(10).saturating_add((c - b'0') as i64)
    });
    let v = if negative { v.saturating_neg() } else { v };
    (v as i32 as i64, end)
}

/// What C's number readers take from the start of `s`: blanks, a sign, then decimal digits.
/// Whether it was negative, the digits (maybe none), and where they end.
fn leading_number(s: &str) -> (bool, &[u8], usize) {
    let b = s.as_bytes();
    let mut i = b.iter().position(|&c| !blank(c)).unwrap_or(b.len());
    let negative = b.get(i) == Some(&b'-');
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let n = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    (negative, &b[i..i + n], i + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_as_c_reads_it() {
        assert_eq!(c_integer("7\n"), Some(7));
        assert_eq!(c_integer("  -12 \n"), Some(-12));
        assert_eq!(c_integer("\n"), Some(0));
        assert_eq!(c_integer("1 2\n"), None);
        assert_eq!(c_integer("x\n"), None);
        // An int's low 32 bits, as pgbench's (int) cast keeps them.
        assert_eq!(c_integer("5000000000\n"), Some(705032704));
        assert_eq!(
            (atoi("12abc"), atoi(" 7"), atoi("abc"), atoi("-3")),
            (12, 7, 0, -3)
        );
        // --random-seed, as pgbench 15 read each of these here.
        assert_eq!(c_ulong(" 5"), Some(5));
        assert_eq!(c_ulong("+5"), Some(5));
        assert_eq!(c_ulong("-1"), Some(u64::MAX));
        assert_eq!(c_ulong("99999999999999999999"), Some(u64::MAX));
        assert_eq!(c_ulong("-99999999999999999999"), Some(u64::MAX));
        assert_eq!(
            (c_ulong("5 "), c_ulong(""), c_ulong("0x10")),
            (None, None, None)
        );
    }
}
