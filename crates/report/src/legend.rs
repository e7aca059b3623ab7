//! Legend labels that fit beside a chart and never read alike. A settings study's variants
//! (`innodb_adaptive_hash_index=ON`, `innodb_adaptive_hash_index=OFF`) cut at the same length
//! would show the same words twice; instead what every name shares goes, one axis left
//! becomes the legend's key and its values the labels, and a label still too long keeps both
//! its ends. The full name stays in each label's hover title.

/// Longest label drawn (characters): what the legend's column holds.
pub(crate) const MOST: usize = 28;

/// The key (an axis every label is a value of), and a label per name.
pub(crate) fn labels(names: &[&str]) -> (Option<String>, Vec<String>) {
    if names.iter().all(|n| n.chars().count() <= MOST) {
        return (None, names.iter().map(|n| n.to_string()).collect());
    }
    let tokens: Vec<Vec<&str>> = names
        .iter()
        .map(|n| n.split_whitespace().collect())
        .collect();
    // Tokens every name has say nothing about which line is which.
    let shared: Vec<&str> = tokens[0]
        .iter()
        .copied()
        .filter(|t| tokens.iter().all(|ts| ts.contains(t)))
        .collect();
    let mut left: Vec<Vec<&str>> = tokens
        .iter()
        .map(|ts| ts.iter().copied().filter(|t| !shared.contains(t)).collect())
        .collect();
    // One name (a ratio chart's single line), or names alike: nothing to drop.
    if left.iter().all(Vec::is_empty) {
        left = tokens.clone();
    }
    let key = one_axis(&left);
    let mut out: Vec<String> = left
        .iter()
        .zip(names)
        .map(|(ts, name)| match (&key, ts.as_slice()) {
            (Some(k), [t]) => t.strip_prefix(k.as_str()).unwrap_or(t).to_string(),
            (_, []) => name.to_string(),
            _ => ts.join(" "),
        })
        .map(|l| middle_cut(&l))
        .collect();
    // Still alike (two names that differ only where the cut fell): numbered.
    let alike = |out: &[String], i: usize| out.iter().filter(|o| **o == out[i]).count() > 1;
    if (0..out.len()).any(|i| alike(&out, i)) {
        out = out
            .iter()
            .enumerate()
            .map(|(i, l)| middle_cut(&format!("{} {l}", i + 1)))
            .collect();
    }
    let key = key.map(|k| middle_cut(k.trim_end_matches('=')) + ":");
    (key, out)
}

/// `axis=` when every name left is one `axis=value` token of the same axis.
fn one_axis(left: &[Vec<&str>]) -> Option<String> {
    let axes: Vec<&str> = left
        .iter()
        .map(|ts| match ts.as_slice() {
            [t] => t.split_once('=').map(|(a, _)| a),
            _ => None,
        })
        .collect::<Option<Vec<&str>>>()?;
    let first = axes.first()?;
    axes.iter().all(|a| a == first).then(|| format!("{first}="))
}

/// `s` within [`MOST`] characters, its start and end kept (values differ at the end).
pub(crate) fn middle_cut(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= MOST {
        return s.to_string();
    }
    let half = (MOST - 1) / 2;
    let head: String = chars[..half].iter().collect();
    let tail: String = chars[chars.len() - (MOST - 1 - half)..].iter().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_studys_long_names_become_a_key_and_their_values() {
        let (key, l) = labels(&[
            "innodb_adaptive_hash_index=ON",
            "innodb_adaptive_hash_index=OFF",
        ]);
        assert_eq!(key.as_deref(), Some("innodb_adaptive_hash_index:"));
        assert_eq!(l, ["ON", "OFF"]);
    }

    #[test]
    fn what_every_name_shares_goes_and_the_rest_stays_apart() {
        let (key, l) = labels(&[
            "allocator=jemalloc cpus=0-15 innodb_buffer_pool_size=8G",
            "allocator=glibc cpus=0-15 innodb_buffer_pool_size=8G",
        ]);
        assert_eq!(key.as_deref(), Some("allocator:"));
        assert_eq!(l, ["jemalloc", "glibc"]);
        let (key, l) = labels(&[
            "a_very_long_setting_name_number_one=1 other=2",
            "a_very_long_setting_name_number_one=2 other=3",
        ]);
        assert_eq!(key, None);
        assert_ne!(l[0], l[1]);
        assert!(l.iter().all(|x| x.chars().count() <= MOST), "{l:?}");
    }

    #[test]
    fn a_single_long_name_becomes_its_key_and_value() {
        let (key, l) = labels(&["innodb_adaptive_hash_index=OFF"]);
        assert_eq!(key.as_deref(), Some("innodb_adaptive_hash_index:"));
        assert_eq!(l, ["OFF"]);
    }

    #[test]
    fn short_names_are_kept_and_alike_cuts_are_numbered() {
        assert_eq!(
            labels(&["glibc", "jemalloc"]),
            (None, vec!["glibc".into(), "jemalloc".into()])
        );
        let a = "x".repeat(20) + "AAAA" + &"y".repeat(20);
        let b = "x".repeat(20) + "BBBB" + &"y".repeat(20);
        let (_, l) = labels(&[&a, &b]);
        assert_ne!(l[0], l[1]);
        assert!(l[0].starts_with("1 ") && l[1].starts_with("2 "), "{l:?}");
    }
}
