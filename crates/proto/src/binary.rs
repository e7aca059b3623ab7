//! The binary protocol's rows (the answer to COM_STMT_EXECUTE) and the column types that
//! say how each value is encoded, for a workload that reads what it selects.
//!
//! A row (protocol page "Binary Protocol Resultset Row") is a 0x00 header, a NULL bitmap
//! whose first bit is column 0's at offset 2, then each non-NULL value in an encoding its
//! column's type decides: TINY 1 byte, SHORT/YEAR 2, LONG/INT24/FLOAT 4, LONGLONG/DOUBLE 8,
//! DATE/DATETIME/TIMESTAMP/TIME a length byte and that many bytes, everything else a
//! length-encoded string. Values are written into a [`RowBuf`] as the text protocol would
//! show them. Every read is bounds-checked: a short or hostile packet is an error, never a
//! panic, and a row longer than its columns is an error too (column types that do not match
//! the row, which would otherwise read as wrong values).

use crate::codec::Reader;
use crate::{ProtoError, RowBuf};

/// Column types (protocol page "Column Types", `enum_field_types`).
pub mod types {
    pub const TINY: u8 = 1;
    pub const SHORT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const NULL: u8 = 6;
    pub const TIMESTAMP: u8 = 7;
    pub const LONGLONG: u8 = 8;
    pub const INT24: u8 = 9;
    pub const DATE: u8 = 10;
    pub const TIME: u8 = 11;
    pub const DATETIME: u8 = 12;
    pub const YEAR: u8 = 13;
    pub const VARCHAR: u8 = 15;
    pub const NEWDECIMAL: u8 = 246;
    pub const STRING: u8 = 254;
}

/// Column flag: an integer column is unsigned.
pub const UNSIGNED_FLAG: u16 = 0x20;

/// What a binary row needs of a column's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnType {
    /// One of [`types`].
    pub kind: u8,
    pub flags: u16,
    /// Fractional digits (of a DATETIME(3), a DECIMAL(12,2)); 31 or more: not fixed.
    pub decimals: u8,
}

/// A column definition packet's type (Protocol::ColumnDefinition41: catalog, schema, table,
/// org_table, name, org_name, a length-encoded 0x0c, charset u16, column length u32, type
/// u8, flags u16, decimals u8).
pub fn column_type(p: &[u8]) -> Result<ColumnType, ProtoError> {
    let mut r = Reader::new(p, "column definition");
    for _ in 0..6 {
        r.lenenc_bytes()?;
    }
    r.lenenc_int()?; // the fixed fields' length, 0x0c
    r.u16()?; // charset
    r.u32()?; // column length
    let kind = r.u8()?;
    let flags = r.u16()?;
    let decimals = r.u8()?;
    Ok(ColumnType {
        kind,
        flags,
        decimals,
    })
}

/// Decode one binary row of `columns` into `out` as one row of text values. On an error,
/// `out` is left as it was (no half row).
pub fn binary_row(p: &[u8], columns: &[ColumnType], out: &mut RowBuf) -> Result<(), ProtoError> {
    let mark = out.values();
    let r = row_values(p, columns, out);
    if r.is_err() {
        out.truncate(mark);
    }
    r
}

fn row_values(p: &[u8], columns: &[ColumnType], out: &mut RowBuf) -> Result<(), ProtoError> {
    let mut r = Reader::new(p, "binary row");
    if r.u8()? != 0x00 {
        return Err(malformed("does not start with 0x00"));
    }
    // The bitmap's bits start at offset 2 (the text protocol's two reserved bits).
    let nulls = r.bytes((columns.len() + 9) / 8)?;
    for (i, col) in columns.iter().enumerate() {
        let bit = i + 2;
        if nulls[bit / 8] & (1 << (bit % 8)) != 0 || col.kind == types::NULL {
            out.push(None);
            continue;
        }
        value(&mut r, col, out)?;
    }
    if !r.is_empty() {
        return Err(malformed(format!(
            "{} bytes left after its {} values: its columns' types do not match it",
            r.remaining().len(),
            columns.len()
        )));
    }
    Ok(())
}

fn value(r: &mut Reader<'_>, col: &ColumnType, out: &mut RowBuf) -> Result<(), ProtoError> {
    use types::*;
    let unsigned = col.flags & UNSIGNED_FLAG != 0;
    match col.kind {
        TINY => {
            let b = r.u8()?;
            match unsigned {
                true => integer(out, u64::from(b)),
                false => signed(out, i64::from(b as i8)),
            }
        }
        SHORT | YEAR => {
            let v = r.u16()?;
            match unsigned || col.kind == YEAR {
                true => integer(out, u64::from(v)),
                false => signed(out, i64::from(v as i16)),
            }
        }
        LONG | INT24 => {
            let v = r.u32()?;
            match unsigned {
                true => integer(out, u64::from(v)),
                false => signed(out, i64::from(v as i32)),
            }
        }
        LONGLONG => {
            let v = u64::from_le_bytes(array(r)?);
            match unsigned {
                true => integer(out, v),
                false => signed(out, v as i64),
            }
        }
        FLOAT => {
            let v = f32::from_le_bytes(array(r)?);
            float_text(out, v, f64::from(v))
        }
        DOUBLE => {
            let v = f64::from_le_bytes(array(r)?);
            float_text(out, v, v)
        }
        DATE | DATETIME | TIMESTAMP => {
            let len = r.u8()?;
            let b = r.bytes(usize::from(len))?;
            date_text(out, col, b)?
        }
        TIME => {
            let len = r.u8()?;
            let b = r.bytes(usize::from(len))?;
            time_text(out, col, b)?
        }
        // DECIMAL, NEWDECIMAL, strings, BLOBs, ENUM, SET, BIT, JSON, GEOMETRY: as sent.
        _ => match r.lenenc_bytes()? {
            Some(v) => out.push(Some(v)),
            None => return Err(malformed("a string's length is the NULL marker")),
        },
    }
    Ok(())
}

/// An integer as text, written digit by digit: `write!` through the formatting machinery
/// took some 200 instructions a value, most of what a row of integers cost to decode.
fn signed(out: &mut RowBuf, v: i64) {
    digits(out, v < 0, v.unsigned_abs())
}

fn integer(out: &mut RowBuf, v: u64) {
    digits(out, false, v)
}

fn digits(out: &mut RowBuf, negative: bool, mut v: u64) {
    // u64::MAX has 20 digits, and a sign.
    let mut text = [0u8; 21];
    let mut at = text.len();
    loop {
        at -= 1;
        text[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        text[at] = b'-';
    }
    out.push(Some(&text[at..]));
}

fn array<const N: usize>(r: &mut Reader<'_>) -> Result<[u8; N], ProtoError> {
    let mut a = [0u8; N];
    a.copy_from_slice(r.bytes(N)?);
    Ok(a)
}

/// A float as its shortest text that reads back the same; very large and very small ones
/// in exponent form (`1e300`), as MySQL shows them, not three hundred digits.
fn float_text<F: std::fmt::Display + std::fmt::LowerExp>(out: &mut RowBuf, v: F, wide: f64) {
    let plain = wide == 0.0 || !wide.is_finite() || (1e-5..1e16).contains(&wide.abs());
    match plain {
        true => out.push_fmt(format_args!("{v}")),
        false => out.push_fmt(format_args!("{v:e}")),
    }
}

/// DATE `YYYY-MM-DD`; DATETIME and TIMESTAMP `YYYY-MM-DD hh:mm:ss[.ffffff]`. The value's
/// length says what it has (0: all zero, 4: the date, 7: and the time, 11: and microseconds).
fn date_text(out: &mut RowBuf, col: &ColumnType, b: &[u8]) -> Result<(), ProtoError> {
    if !matches!(b.len(), 0 | 4 | 7 | 11) {
        return Err(malformed(format!("a date of {} bytes", b.len())));
    }
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let year = u16::from_le_bytes([at(0), at(1)]);
    let (month, day, hour, minute, second) = (at(2), at(3), at(4), at(5), at(6));
    let micros = u32::from_le_bytes([at(7), at(8), at(9), at(10)]);
    out.push_with(|w| {
        use std::io::Write;
        let _ = write!(w, "{year:04}-{month:02}-{day:02}");
        if col.kind != types::DATE {
            let _ = write!(w, " {hour:02}:{minute:02}:{second:02}");
            fraction(w, col.decimals, micros);
        }
    });
    Ok(())
}

/// TIME `[-]hhh:mm:ss[.ffffff]`, its days folded into the hours as the text protocol shows
/// them (0: zero, 8: sign, days and time, 12: and microseconds).
fn time_text(out: &mut RowBuf, col: &ColumnType, b: &[u8]) -> Result<(), ProtoError> {
    if !matches!(b.len(), 0 | 8 | 12) {
        return Err(malformed(format!("a time of {} bytes", b.len())));
    }
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    let sign = if at(0) == 1 { "-" } else { "" };
    let days = u32::from_le_bytes([at(1), at(2), at(3), at(4)]);
    let hours = u64::from(days) * 24 + u64::from(at(5));
    let (minute, second) = (at(6), at(7));
    let micros = u32::from_le_bytes([at(8), at(9), at(10), at(11)]);
    out.push_with(|w| {
        use std::io::Write;
        let _ = write!(w, "{sign}{hours:02}:{minute:02}:{second:02}");
        fraction(w, col.decimals, micros);
    });
    Ok(())
}

/// A time's fraction as its column shows it: as many digits as its decimals (DATETIME(3):
/// `.123`), or all six when they are not fixed and there is a fraction.
fn fraction(w: &mut Vec<u8>, decimals: u8, micros: u32) {
    use std::io::Write;
    match decimals {
        0 => {}
        1..=6 => {
            let digits = usize::from(decimals);
            let v = micros / 10u32.pow(6 - u32::from(decimals));
            let _ = write!(w, ".{v:0digits$}");
        }
        _ if micros != 0 => {
            let _ = write!(w, ".{micros:06}");
        }
        _ => {}
    }
}

fn malformed(detail: impl Into<String>) -> ProtoError {
    ProtoError::malformed("binary row", detail)
}

#[cfg(test)]
#[path = "binary_tests.rs"]
mod tests;
