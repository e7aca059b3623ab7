//! The server's error and notice fields as bakeoff shows them: each field bounded and its
//! control characters written out (a server's words reach terminals and reports), the
//! notice's lines as libpq's default notice processor prints them.

use bakeoff_proto::ServerError;

use super::message::error_fields;

/// A notice as libpq's default notice processor prints it: DETAIL and HINT, no CONTEXT
/// (shown for errors), each field written out on its own (the line breaks between them are
/// ours).
pub(super) fn notice(body: &[u8]) -> String {
    let fields = error_fields(body);
    let get = |code: u8| field(&fields, code);
    let mut text = format!(
        "{}:  {}",
        crate::printable(bounded(get(b'S').unwrap_or("NOTICE"))),
        shown(get(b'M').unwrap_or(""))
    );
    for (label, code) in [("DETAIL", b'D'), ("HINT", b'H')] {
        if let Some(t) = get(code) {
            text.push_str(&format!("\n{label}:  {}", shown(t)));
        }
    }
    text
}

/// An error or notice field by its code (`M` message, `S` severity, ...).
fn field(fields: &[(u8, String)], code: u8) -> Option<&str> {
    fields
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, t)| t.as_str())
}

/// The most of one error or notice field kept: the first 8 KiB (at a character boundary).
const FIELD_SHOWN: usize = 8 << 10;

fn bounded(s: &str) -> &str {
    if s.len() <= FIELD_SHOWN {
        return s;
    }
    let mut end = FIELD_SHOWN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A field of several lines (CONTEXT, a DETAIL), bounded and written out line by line.
fn shown(s: &str) -> String {
    bakeoff_proto::printable_lines(bounded(s))
}

/// An ErrorResponse as the driver family's error: no number (code 0), the SQLSTATE, and the
/// primary message with its detail.
pub(super) fn server_error(body: &[u8]) -> ServerError {
    let fields = error_fields(body);
    let get = |code: u8| field(&fields, code);
    let primary = bounded(get(b'M').unwrap_or("(no message)"));
    let mut message = primary.to_string();
    if let Some(d) = get(b'D') {
        message = format!("{message} ({})", bounded(d));
    }
    // The server's words reach terminals and reports: no escape sequences from it, and no
    // more of each field than a reader can use (a field may be as long as --max-packet).
    let text = |code: u8| get(code).map(shown);
    ServerError {
        code: 0,
        sql_state: crate::printable(bounded(get(b'C').unwrap_or("XX000"))),
        message: crate::printable(&message),
        position: get(b'P').and_then(|p| p.parse().ok()).unwrap_or(0),
        pg: Some(Box::new(bakeoff_proto::PgFields {
            // One line: a severity is a word, and line breaks in it could forge lines.
            severity: get(b'S').map_or_else(|| "ERROR".into(), |s| crate::printable(bounded(s))),
            primary: crate::printable(primary),
            detail: text(b'D'),
            hint: text(b'H'),
            context: text(b'W'),
        })),
    }
}
