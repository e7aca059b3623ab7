//! An array or inline table left open: the TOML parser reads on into the lines after it and
//! reports what it then finds there, never the line that opened it. Found here by scanning
//! the source, so that the first problem named is the `[` or `{` a user has to close.

/// The byte offset of the outermost `[` or `{` of a value that is never closed, if any.
/// Strings (basic, literal, multi-line) and comments are skipped; a table header (`[x]`,
/// `[[x]]`, first on its line outside any value) is not a value.
pub fn unclosed(src: &str) -> Option<usize> {
    let b = src.as_bytes();
    let mut open: Vec<usize> = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => i = skip_string(b, i),
            b'[' if line_start && open.is_empty() => {
                // A table header: it ends on its own line (the parser says where if not).
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'[' | b'{' => {
                open.push(i);
                i += 1;
            }
            b']' | b'}' => {
                open.pop();
                i += 1;
            }
            _ => i += 1,
        }
        line_start = false;
    }
    open.first().copied()
}

/// Past the string that starts at `at` (its quote), multi-line or not.
fn skip_string(b: &[u8], at: usize) -> usize {
    let q = b[at];
    let triple = b.len() >= at + 3 && b[at + 1] == q && b[at + 2] == q;
    let mut i = at + if triple { 3 } else { 1 };
    while i < b.len() {
        if q == b'"' && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if !triple && b[i] == b'\n' {
            return i;
        }
        if b[i] == q && (!triple || (b.len() >= i + 3 && b[i + 1] == q && b[i + 2] == q)) {
            return i + if triple { 3 } else { 1 };
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::unclosed;

    #[test]
    fn the_bracket_left_open_is_found_and_closed_ones_and_headers_are_not() {
        assert_eq!(unclosed("threads = [1, 4\nduration = 2\n"), Some(10));
        assert_eq!(unclosed("a = { x = [1, 2]\nb = 1\n"), Some(4));
        assert_eq!(
            unclosed("t = [\n  1,\n  2,\n]\n[dataset]\n[[workload]]\n"),
            None
        );
        assert_eq!(
            unclosed("s = \"[\" # [ in a comment\nl = '[{'\nm = \"\"\"\n[\n\"\"\"\n"),
            None
        );
    }
}
