//! Command encoders. Each writes one complete frame (header + payload) with sequence id 0,
//! since every command starts a new exchange.

use std::io::Write;

use crate::codec::put_lenenc_bytes;
use crate::packet;

pub const COM_QUIT: u8 = 0x01;
pub const COM_QUERY: u8 = 0x03;
pub const COM_PING: u8 = 0x0e;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;
pub const COM_STMT_CLOSE: u8 = 0x19;

const TYPE_LONG: u8 = 0x03;
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_STRING: u8 = 0xfe;
const TYPE_NULL: u8 = 0x06;
const TYPE_DOUBLE: u8 = 0x05;

/// A statement parameter, bound the way sysbench binds them (INT as MYSQL_TYPE_LONG,
/// CHAR as MYSQL_TYPE_STRING, a Lua script's FLOAT and DOUBLE as MYSQL_TYPE_DOUBLE).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    Int(i64),
    Str(&'a [u8]),
    Double(f64),
    Null,
}

fn simple(out: &mut Vec<u8>, cmd: u8, body: &[u8]) {
    let at = packet::begin(out);
    out.push(cmd);
    out.extend_from_slice(body);
    packet::finish(out, at, 0);
}

pub fn query(out: &mut Vec<u8>, sql: &[u8]) {
    simple(out, COM_QUERY, sql);
}

pub fn prepare(out: &mut Vec<u8>, sql: &[u8]) {
    simple(out, COM_STMT_PREPARE, sql);
}

pub fn ping(out: &mut Vec<u8>) {
    simple(out, COM_PING, &[]);
}

pub fn quit(out: &mut Vec<u8>) {
    simple(out, COM_QUIT, &[]);
}

/// COM_STMT_CLOSE has no response.
pub fn close(out: &mut Vec<u8>, stmt_id: u32) {
    simple(out, COM_STMT_CLOSE, &stmt_id.to_le_bytes());
}

/// The parameters' wire types as one number, for a connection to tell whether the server
/// already holds them for a statement; 0 when there are too many to say (send them always).
#[inline]
pub fn param_types(params: &[Param<'_>]) -> u64 {
    if params.len() > 21 {
        return 0;
    }
    params.iter().fold(1u64, |sig, p| {
        let kind = match p {
            Param::Int(v) if i32::try_from(*v).is_ok() => 1,
            Param::Int(_) => 2,
            Param::Str(_) => 3,
            Param::Double(_) => 4,
            Param::Null => 5,
        };
        sig << 3 | kind
    })
}

/// COM_STMT_EXECUTE without a cursor. `send_types`: the parameters' types go with it (the
/// new-params-bound flag); without, the server applies those of the statement's previous
/// execution, as libmysqlclient leaves them after the first (measured on MariaDB 10.11: the
/// server reads and sets up the types again each time they come, a cost per execute).
pub fn execute(out: &mut Vec<u8>, stmt_id: u32, params: &[Param<'_>], send_types: bool) {
    let at = packet::begin(out);
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&stmt_id.to_le_bytes());
    out.push(0); // flags: CURSOR_TYPE_NO_CURSOR
    out.extend_from_slice(&1u32.to_le_bytes()); // iteration count
    if !params.is_empty() {
        let bitmap_at = out.len();
        out.resize(bitmap_at + params.len().div_ceil(8), 0);
        for (i, p) in params.iter().enumerate() {
            if matches!(p, Param::Null) {
                out[bitmap_at + i / 8] |= 1 << (i % 8);
            }
        }
        out.push(u8::from(send_types)); // new-params-bound flag: types follow
        for p in params.iter().filter(|_| send_types) {
            let t = match p {
                Param::Int(v) if i32::try_from(*v).is_ok() => TYPE_LONG,
                Param::Int(_) => TYPE_LONGLONG,
                Param::Str(_) => TYPE_STRING,
                Param::Double(_) => TYPE_DOUBLE,
                Param::Null => TYPE_NULL,
            };
            out.extend_from_slice(&[t, 0]);
        }
        for p in params {
            match p {
                Param::Int(v) => match i32::try_from(*v) {
                    Ok(v) => out.extend_from_slice(&v.to_le_bytes()),
                    Err(_) => out.extend_from_slice(&v.to_le_bytes()),
                },
                Param::Str(s) => put_lenenc_bytes(out, s),
                Param::Double(v) => out.extend_from_slice(&v.to_le_bytes()),
                Param::Null => {}
            }
        }
    }
    packet::finish(out, at, 0);
}

/// Client-side substitution for `--db-ps-mode=disable`: each `?` in `sql` takes the next
/// parameter, INT as decimal and CHAR quoted (as sysbench does; quotes and backslashes are
/// escaped here, which sysbench's digit-only strings never need).
pub fn interpolate(out: &mut Vec<u8>, sql: &[u8], params: &[Param<'_>]) {
    let mut next = params.iter();
    for &b in sql {
        if b != b'?' {
            out.push(b);
            continue;
        }
        match next.next() {
            Some(Param::Int(v)) => {
                // Writing into a Vec cannot fail.
                let _ = write!(out, "{v}");
            }
            Some(Param::Str(s)) => {
                out.push(b'\'');
                for &c in *s {
                    if c == b'\'' || c == b'\\' {
                        out.push(b'\\');
                    }
                    out.push(c);
                }
                out.push(b'\'');
            }
            Some(Param::Double(v)) => {
                let _ = write!(out, "{v:e}");
            }
            Some(Param::Null) => out.extend_from_slice(b"NULL"),
            None => out.push(b'?'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_encodes_bitmap_types_and_values() {
        let mut out = Vec::new();
        execute(
            &mut out,
            7,
            &[Param::Int(5), Param::Str(b"ab"), Param::Null],
            true,
        );
        let payload = &out[4..];
        assert_eq!(payload[0], COM_STMT_EXECUTE);
        assert_eq!(&payload[1..5], &7u32.to_le_bytes());
        assert_eq!(payload[10], 0b100, "null bitmap marks the third parameter");
        assert_eq!(payload[11], 1);
        assert_eq!(
            &payload[12..18],
            &[TYPE_LONG, 0, TYPE_STRING, 0, TYPE_NULL, 0]
        );
        assert_eq!(&payload[18..22], &5i32.to_le_bytes());
        assert_eq!(&payload[22..], &[2, b'a', b'b']);
    }

    #[test]
    fn an_execute_without_types_has_the_flag_off_and_the_values_only() {
        let mut out = Vec::new();
        execute(&mut out, 7, &[Param::Int(5), Param::Int(1 << 40)], false);
        let payload = &out[4..];
        assert_eq!(payload[10], 0, "no nulls");
        assert_eq!(payload[11], 0, "new-params-bound off");
        assert_eq!(&payload[12..16], &5i32.to_le_bytes());
        assert_eq!(&payload[16..], &(1i64 << 40).to_le_bytes());
    }

    #[test]
    fn param_types_differ_when_a_wire_type_does() {
        let small = param_types(&[Param::Int(5), Param::Str(b"x")]);
        assert_eq!(small, param_types(&[Param::Int(-9), Param::Str(b"yz")]));
        assert_ne!(small, param_types(&[Param::Int(1 << 40), Param::Str(b"x")]));
        assert_ne!(small, param_types(&[Param::Null, Param::Str(b"x")]));
        assert_ne!(param_types(&[]), param_types(&[Param::Int(1)]));
        assert_eq!(
            param_types(&[Param::Int(1); 22]),
            0,
            "too many: always sent"
        );
    }

    #[test]
    fn interpolation_matches_sysbench_text_mode() {
        let mut out = Vec::new();
        interpolate(
            &mut out,
            b"UPDATE sbtest3 SET c=? WHERE id=?",
            &[Param::Str(b"1-2"), Param::Int(4999)],
        );
        assert_eq!(out, b"UPDATE sbtest3 SET c='1-2' WHERE id=4999");
    }
}
