//! PostgreSQL's protocol 3.0 messages, sans-IO: what the client writes into a buffer, and
//! what it reads from a backend message's body. Every frontend message but the startup ones is
//! a type byte, a 4-byte big-endian length that counts itself, and a body.

use bakeoff_proto::command::Param;

/// Protocol 3.0 in the startup message.
pub const PROTOCOL_3: i32 = 196_608;
/// SSLRequest's code in place of a protocol version.
pub const SSL_REQUEST: i32 = 80_877_103;
/// Type oids sysbench's pgsql driver gives a statement's parameters: its Lua layer binds
/// every integer as BIGINT, every float as DOUBLE and every string as VARCHAR
/// (sysbench.sql.lua's bind_create), which its driver's map makes int8, float8, varchar.
pub const OID_INT8: u32 = 20;
pub const OID_FLOAT8: u32 = 701;
pub const OID_VARCHAR: u32 = 1043;
/// The type left for the server to infer.
pub const OID_UNSPECIFIED: u32 = 0;

/// Start a message of type `kind`: its length is filled in by [`finish`].
pub fn begin(out: &mut Vec<u8>, kind: u8) -> usize {
    out.push(kind);
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    at
}

/// Fill in the length of the message begun at `at`.
pub fn finish(out: &mut [u8], at: usize) {
    let len = (out.len() - at) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn cstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    out.push(0);
}

/// The untyped first message: protocol 3.0 and the session's parameters.
pub fn startup(out: &mut Vec<u8>, params: &[(&str, &str)]) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&PROTOCOL_3.to_be_bytes());
    // Each name and value ends at its first NUL, as libpq's C strings do: a NUL inside one
    // (from a service file, say) would otherwise start a parameter of its own, such as a
    // second `user` after the password was chosen for the first.
    let upto_nul = |s: &str| {
        s.as_bytes()
            .split(|&b| b == 0)
            .next()
            .unwrap_or_default()
            .to_vec()
    };
    for (k, v) in params {
        cstr(out, &upto_nul(k));
        cstr(out, &upto_nul(v));
    }
    out.push(0);
    finish(out, at);
}

pub fn ssl_request(out: &mut Vec<u8>) {
    out.extend_from_slice(&8u32.to_be_bytes());
    out.extend_from_slice(&SSL_REQUEST.to_be_bytes());
}

/// A password message: cleartext or md5, NUL-terminated.
pub fn password(out: &mut Vec<u8>, text: &[u8]) {
    let at = begin(out, b'p');
    cstr(out, text);
    finish(out, at);
}

pub fn sasl_initial(out: &mut Vec<u8>, mechanism: &str, data: &[u8]) {
    let at = begin(out, b'p');
    cstr(out, mechanism.as_bytes());
    out.extend_from_slice(&(data.len() as i32).to_be_bytes());
    out.extend_from_slice(data);
    finish(out, at);
}

pub fn sasl_response(out: &mut Vec<u8>, data: &[u8]) {
    let at = begin(out, b'p');
    out.extend_from_slice(data);
    finish(out, at);
}

/// A simple query.
pub fn query(out: &mut Vec<u8>, sql: &[u8]) {
    let at = begin(out, b'Q');
    cstr(out, sql);
    finish(out, at);
}

/// Parse a named statement with these parameter type oids.
pub fn parse(out: &mut Vec<u8>, name: &[u8], sql: &[u8], types: &[u32]) {
    let at = begin(out, b'P');
    cstr(out, name);
    cstr(out, sql);
    out.extend_from_slice(&(types.len() as i16).to_be_bytes());
    for t in types {
        out.extend_from_slice(&t.to_be_bytes());
    }
    finish(out, at);
}

/// Bind the unnamed portal to statement `name`: parameters as text (as libpq's
/// PQexecPrepared sends sysbench's), results in `result_format` (0 text, 1 binary) for all
/// columns.
pub fn bind(out: &mut Vec<u8>, name: &[u8], params: &[Param<'_>], result_format: i16) {
    let at = begin(out, b'B');
    out.push(0); // the unnamed portal
    cstr(out, name);
    out.extend_from_slice(&0i16.to_be_bytes()); // every parameter as text
    out.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            Param::Null => out.extend_from_slice(&(-1i32).to_be_bytes()),
            p => {
                let len_at = out.len();
                out.extend_from_slice(&[0; 4]);
                text_value(out, p);
                let len = (out.len() - len_at - 4) as i32;
                out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
            }
        }
    }
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&result_format.to_be_bytes());
    finish(out, at);
}

/// Bind the unnamed portal to statement `name` with text values (`values[from..to]` for
/// each span; None: NULL), results in text: pgbench's way.
pub fn bind_text(out: &mut Vec<u8>, name: &[u8], values: &[u8], spans: &[Option<(usize, usize)>]) {
    let at = begin(out, b'B');
    out.push(0);
    cstr(out, name);
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&(spans.len() as i16).to_be_bytes());
    for span in spans {
        match *span {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some((from, to)) => {
                out.extend_from_slice(&((to - from) as i32).to_be_bytes());
                out.extend_from_slice(&values[from..to]);
            }
        }
    }
    out.extend_from_slice(&0i16.to_be_bytes());
    finish(out, at);
}

/// A parameter's text form, as sysbench's db_print_value prints it.
fn text_value(out: &mut Vec<u8>, p: &Param<'_>) {
    use std::io::Write;
    match p {
        Param::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Param::Double(v) => {
            let _ = write!(out, "{v}");
        }
        Param::Str(s) => out.extend_from_slice(s),
        Param::Null => {}
    }
}

/// Describe the unnamed portal: its columns (RowDescription) before its rows, as libpq asks
/// for them.
pub fn describe_portal(out: &mut Vec<u8>) {
    let at = begin(out, b'D');
    out.extend_from_slice(b"P\0");
    finish(out, at);
}

/// Execute the unnamed portal, all its rows.
pub fn execute(out: &mut Vec<u8>) {
    let at = begin(out, b'E');
    out.push(0);
    out.extend_from_slice(&0i32.to_be_bytes());
    finish(out, at);
}

pub fn sync(out: &mut Vec<u8>) {
    out.extend_from_slice(&[b'S', 0, 0, 0, 4]);
}

/// Close the named statement.
pub fn close_statement(out: &mut Vec<u8>, name: &[u8]) {
    let at = begin(out, b'C');
    out.push(b'S');
    cstr(out, name);
    finish(out, at);
}

pub fn terminate(out: &mut Vec<u8>) {
    out.extend_from_slice(&[b'X', 0, 0, 0, 4]);
}

/// A backend message's fields read in order; a short body is `None`, never a panic.
pub struct Fields<'a>(pub &'a [u8]);

impl<'a> Fields<'a> {
    pub fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    pub fn i16(&mut self) -> Option<i16> {
        let (b, rest) = self.0.split_first_chunk::<2>()?;
        self.0 = rest;
        Some(i16::from_be_bytes(*b))
    }

    pub fn i32(&mut self) -> Option<i32> {
        let (b, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(i32::from_be_bytes(*b))
    }

    pub fn cstr(&mut self) -> Option<&'a [u8]> {
        let end = self.0.iter().position(|&b| b == 0)?;
        let s = &self.0[..end];
        self.0 = &self.0[end + 1..];
        Some(s)
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(b)
    }
}

/// An ErrorResponse's or NoticeResponse's fields: (code, text) pairs.
pub fn error_fields(body: &[u8]) -> Vec<(u8, String)> {
    let mut f = Fields(body);
    let mut out = Vec::new();
    while let Some(code) = f.u8() {
        if code == 0 {
            break;
        }
        let Some(text) = f.cstr() else { break };
        out.push((code, String::from_utf8_lossy(text).into_owned()));
    }
    out
}

/// The row count a CommandComplete tag carries ("UPDATE 3", "INSERT 0 1", "SELECT 5"), and
/// whether the command was one that returns rows.
pub fn command_tag(tag: &[u8]) -> (bool, u64) {
    // Read as bytes: a tag comes with every statement's reply.
    let verb = tag.split(|&b| b == b' ').next().unwrap_or_default();
    let returns_rows = matches!(verb, b"SELECT" | b"FETCH" | b"SHOW" | b"EXPLAIN");
    let rows = match tag.iter().rposition(|&b| b == b' ') {
        Some(at) => decimal(&tag[at + 1..]).unwrap_or(0),
        None => 0,
    };
    (returns_rows, rows)
}

/// ASCII digits as a number; None for anything else (or none, or too large).
fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_their_own_length() {
        let mut out = Vec::new();
        query(&mut out, b"SELECT 1");
        assert_eq!(out[0], b'Q');
        assert_eq!(
            u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize,
            out.len() - 1
        );
        assert_eq!(&out[5..], b"SELECT 1\0");
        let mut s = Vec::new();
        startup(&mut s, &[("user", "u")]);
        assert_eq!(
            u32::from_be_bytes(s[0..4].try_into().unwrap()) as usize,
            s.len()
        );
        assert!(s.ends_with(b"user\0u\0\0"));
    }

    #[test]
    fn bind_sends_values_as_text_and_null_as_minus_one() {
        let mut out = Vec::new();
        bind(
            &mut out,
            b"s1",
            &[Param::Int(-42), Param::Null, Param::Str(b"ab")],
            1,
        );
        let body = &out[5..];
        let mut f = Fields(body);
        assert_eq!(f.cstr(), Some(&b""[..]));
        assert_eq!(f.cstr(), Some(&b"s1"[..]));
        assert_eq!(f.i16(), Some(0));
        assert_eq!(f.i16(), Some(3));
        assert_eq!(f.i32(), Some(3));
        assert_eq!(f.bytes(3), Some(&b"-42"[..]));
        assert_eq!(f.i32(), Some(-1));
        assert_eq!(f.i32(), Some(2));
        assert_eq!(f.bytes(2), Some(&b"ab"[..]));
        assert_eq!((f.i16(), f.i16()), (Some(1), Some(1)));
        assert!(f.rest().is_empty());
    }

    #[test]
    fn tags_give_rows_and_kind() {
        assert_eq!(command_tag(b"UPDATE 3"), (false, 3));
        assert_eq!(command_tag(b"INSERT 0 1"), (false, 1));
        assert_eq!(command_tag(b"SELECT 5"), (true, 5));
        assert_eq!(command_tag(b"BEGIN"), (false, 0));
        assert_eq!(command_tag(b"CREATE TABLE"), (false, 0));
        assert_eq!(command_tag(b"COPY 18446744073709551615"), (false, u64::MAX));
        assert_eq!(command_tag(b"SELECT 18446744073709551616"), (true, 0));
        assert_eq!(command_tag(b"FETCH 2x"), (true, 0));
    }

    #[test]
    fn error_fields_stop_at_a_truncated_body() {
        let f = error_fields(b"SERROR\0C40P01\0Mdeadlock detected\0\0");
        assert_eq!(f[1], (b'C', "40P01".to_string()));
        assert_eq!(error_fields(b"SERR").len(), 0);
    }

    #[test]
    fn a_nul_inside_a_startup_value_ends_it_as_in_libpq() {
        let mut out = Vec::new();
        startup(
            &mut out,
            &[("user", "u"), ("application_name", "a\0user\0mallory")],
        );
        let body = &out[8..];
        assert_eq!(body, b"user\0u\0application_name\0a\0\0");
    }
}
