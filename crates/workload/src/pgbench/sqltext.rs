//! The text of a pgbench script as its scanner sees it: where quotes, comments, dollar
//! quotes and meta-commands end, and the `:variables` in an SQL command.

use super::expr::is_name_byte;

/// Where a meta-command ends (the newline, not included; a backslash before a newline
/// continues it) and how many lines it spans beyond its first.
pub(super) fn meta_end(text: &str, from: usize) -> (usize, usize) {
    let b = text.as_bytes();
    let mut i = from + 1;
    let mut lines = 0;
    while i < b.len() && b[i] != b'\n' {
        if b[i] == b'\\' && (b.get(i + 1) == Some(&b'\n') || text[i + 1..].starts_with("\r\n")) {
            lines += 1;
            i = text[i..].find('\n').map_or(b.len(), |n| i + n + 1);
            continue;
        }
        // `\gset` after SQL on the same line: the SQL ended at the backslash already.
        i += 1;
    }
    (i, lines)
}

pub(super) fn block_comment_end(b: &[u8], from: usize) -> usize {
    let (mut i, mut depth) = (from + 2, 1);
    while i < b.len() && depth > 0 {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    i
}

pub(super) fn quoted_end(b: &[u8], from: usize, q: u8) -> usize {
    let mut i = from + 1;
    while i < b.len() {
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// `$$` or `$tag$` at `i`: its length.
pub(super) fn dollar_tag(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i + 1;
    while j < b.len()
        && (b[j].is_ascii_alphabetic() || b[j] == b'_' || (j > i + 1 && b[j].is_ascii_digit()))
    {
        j += 1;
    }
    (j < b.len() && b[j] == b'$').then_some(j + 1 - i)
}

/// Each `:name` becomes `$n` (every occurrence its own parameter, as pgbench numbers
/// them); `::` is a cast, left as it is. Quotes are not looked into, as pgbench does not.
pub fn number_variables(sql: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(sql.len());
    let mut params = Vec::new();
    each_variable(sql, |piece| match piece {
        Piece::Text(t) => out.push_str(t),
        Piece::Var(v) => {
            params.push(v.to_string());
            out.push_str(&format!("${}", params.len()));
        }
    });
    (out, params)
}

pub enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// An SQL command's text cut once, when the script is read, as [`each_variable`] cuts it:
/// the simple protocol then puts the values in without scanning the text in every
/// transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Var(String),
}

pub fn parts(sql: &str) -> Vec<Part> {
    let mut out = Vec::new();
    each_variable(sql, |p| match p {
        Piece::Text("") => {}
        Piece::Text(t) => out.push(Part::Text(t.to_string())),
        Piece::Var(v) => out.push(Part::Var(v.to_string())),
    });
    out
}

/// The SQL text cut into literal text and `:variable` references.
pub fn each_variable<'a>(sql: &'a str, mut f: impl FnMut(Piece<'a>)) {
    let b = sql.as_bytes();
    let (mut i, mut from) = (0, 0);
    while i < b.len() {
        if b[i] != b':' {
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&b':') {
            i += 2;
            while i < b.len() && b[i] == b':' {
                i += 1;
            }
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while end < b.len() && is_name_byte(b[end]) {
            end += 1;
        }
        if end == start {
            i += 1;
            continue;
        }
        f(Piece::Text(&sql[from..i]));
        f(Piece::Var(&sql[start..end]));
        i = end;
        from = end;
    }
    f(Piece::Text(&sql[from..]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_become_numbered_parameters() {
        let (n, p) = number_variables("SELECT :a, :b::int, ':a', x::text FROM t WHERE c = :a");
        assert_eq!(n, "SELECT $1, $2::int, '$3', x::text FROM t WHERE c = $4");
        assert_eq!(p, ["a", "b", "a", "a"]);
    }
}

/// A meta-command's whitespace-separated words, each with the byte it starts at.
pub(super) fn word_columns(s: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    s.split(|c: char| c.is_ascii_whitespace())
        .filter_map(move |w| {
            let start = at;
            at += w.len() + 1;
            (!w.is_empty()).then_some((start, w))
        })
}
