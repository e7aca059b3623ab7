//! The pieces every part of the HTML page is made of: tables and figures that may be missing.

use std::fmt::Write;

/// A table from a header row and body rows; cells are HTML already; a header starting with
/// '<' is left-aligned (its column holds text).
pub(crate) fn table(s: &mut String, head: &[&str], rows: impl IntoIterator<Item = Vec<String>>) {
    s.push_str("<table><tr>");
    for h in head {
        match h.strip_prefix('<') {
            Some(h) => {
                let _ = write!(s, "<th class=\"l\">{h}</th>");
            }
            None => {
                let _ = write!(s, "<th>{h}</th>");
            }
        }
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for (h, cell) in head.iter().zip(r) {
            let class = if h.starts_with('<') {
                " class=\"l\""
            } else {
                ""
            };
            let _ = write!(s, "<td{class}>{cell}</td>");
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
}

/// A figure, or "-" where there is none.
pub(crate) fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.digits$}"))
}
