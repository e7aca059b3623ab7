//! Text a server sends that bakeoff shows: its error messages and version. Control
//! characters in it are written out (`\x1b`), so a server cannot clear a terminal, retitle
//! it or fake a line of bakeoff's output through them.

/// `s` with every control character (C0, DEL, C1) but tab written as `\xNN`.
pub fn printable(s: &str) -> String {
    if !s.chars().any(is_control) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match is_control(c) {
            true => out.push_str(&format!("\\x{:02x}", c as u32)),
            false => out.push(c),
        }
    }
    out
}

/// [`printable`], keeping line breaks: for text the server sends as several lines (an
/// error's CONTEXT, one line per level), each line then shown as is.
pub fn printable_lines(s: &str) -> String {
    s.split('\n').map(printable).collect::<Vec<_>>().join("\n")
}

fn is_control(c: char) -> bool {
    c != '\t' && c.is_control()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_line_breaks_are_written_out_and_the_rest_kept() {
        assert_eq!(
            printable("boom\x1b[2J\x1b]0;pwned\x07\nFATAL\u{9b}x"),
            "boom\\x1b[2J\\x1b]0;pwned\\x07\\x0aFATAL\\x9bx"
        );
        assert_eq!(
            printable("Table 'sbtest1' doesn't exist\tä"),
            "Table 'sbtest1' doesn't exist\tä"
        );
    }
}
