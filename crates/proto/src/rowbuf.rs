//! A result set's values as text, for a workload that reads what it selects (TPC-C's
//! d_next_o_id, i_price, the customers by last name). Engine neutral: MySQL's binary rows
//! ([`binary_row`](crate::binary_row)) and PostgreSQL's text DataRows fill the same buffer.

use std::io::Write;

/// A result set's values, kept in one reusable buffer (no allocation per row once grown).
///
/// Every value is kept as text: strings as the server sent them, MySQL's binary integers,
/// floats and times written out as its text protocol would show them. The readers parse on
/// demand, so a value nobody reads costs a copy and nothing more.
#[derive(Debug, Clone, Default)]
pub struct RowBuf {
    /// The values' bytes, one after another.
    data: Vec<u8>,
    /// Row after row, each value's end in `data` (its start is the previous one's end).
    cells: Vec<Cell>,
    columns: usize,
}

#[derive(Debug, Clone, Copy)]
struct Cell {
    end: usize,
    null: bool,
}

impl RowBuf {
    pub fn new() -> RowBuf {
        RowBuf::default()
    }

    /// Rows kept.
    pub fn rows(&self) -> usize {
        self.cells.len().checked_div(self.columns).unwrap_or(0)
    }

    /// Columns of the result set kept (0 when the statement returned none).
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Whether the value is SQL NULL; a place outside the result is NULL too.
    pub fn is_null(&self, row: usize, col: usize) -> bool {
        self.cell(row, col).is_none()
    }

    /// The value as text bytes: strings as sent, MySQL's binary numbers and times written out
    /// as text. None for NULL or a place outside the result.
    pub fn bytes(&self, row: usize, col: usize) -> Option<&[u8]> {
        self.cell(row, col)
    }

    /// The value as an integer: its text is one (`-12`), or a decimal whose fraction is all
    /// zeros (`12.00`, as DECIMAL(12,2) and NUMERIC send whole numbers). None for NULL, a
    /// place outside the result, anything else, or a number past i64.
    pub fn int(&self, row: usize, col: usize) -> Option<i64> {
        parse_int(self.cell(row, col)?)
    }

    /// The value as a float: integers, DOUBLE/FLOAT, DECIMAL/NUMERIC text. None for NULL, a
    /// place outside the result or text that is not a number.
    pub fn float(&self, row: usize, col: usize) -> Option<f64> {
        let text = std::str::from_utf8(self.cell(row, col)?).ok()?;
        text.trim_ascii().parse().ok()
    }

    fn cell(&self, row: usize, col: usize) -> Option<&[u8]> {
        if col >= self.columns {
            return None;
        }
        let at = row.checked_mul(self.columns)?.checked_add(col)?;
        let cell = self.cells.get(at)?;
        if cell.null {
            return None;
        }
        let start = match at {
            0 => 0,
            _ => self.cells[at - 1].end,
        };
        self.data.get(start..cell.end)
    }

    // Filling, for the drivers.

    /// Forget every value and the column count; the memory stays for the next result.
    pub fn clear(&mut self) {
        self.begin(0);
    }

    /// Start a new result set of `columns` columns (what was kept is dropped). Nothing is
    /// allocated from the count: a server's word for it costs it nothing.
    pub fn begin(&mut self, columns: usize) {
        self.data.clear();
        self.cells.clear();
        self.columns = columns;
    }

    /// The next value of the row being filled; None: NULL.
    pub fn push(&mut self, value: Option<&[u8]>) {
        match value {
            Some(v) => self.push_with(|out| out.extend_from_slice(v)),
            None => self.cells.push(Cell {
                end: self.data.len(),
                null: true,
            }),
        }
    }

    /// The next value of the row being filled, written by `write` into the buffer.
    pub fn push_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.data);
        self.cells.push(Cell {
            end: self.data.len(),
            null: false,
        });
    }

    /// The next value, formatted (`format_args!`): numbers written as text, in place.
    pub fn push_fmt(&mut self, args: std::fmt::Arguments<'_>) {
        // Writing into a Vec cannot fail.
        self.push_with(|out| {
            let _ = out.write_fmt(args);
        });
    }

    /// Values pushed so far, whole rows and a row being filled alike: a mark for
    /// [`RowBuf::truncate`].
    pub fn values(&self) -> usize {
        self.cells.len()
    }

    /// Drop the values pushed after `values` (a row that turned out malformed halfway).
    pub fn truncate(&mut self, values: usize) {
        if values < self.cells.len() {
            self.cells.truncate(values);
            let end = self.cells.last().map_or(0, |c| c.end);
            self.data.truncate(end);
        }
    }
}

/// An integer, or a decimal with an all-zero fraction, as i64.
fn parse_int(text: &[u8]) -> Option<i64> {
    let text = text.trim_ascii();
    let (whole, fraction) = match text.iter().position(|&b| b == b'.') {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, &b""[..]),
    };
    if !fraction.iter().all(|&b| b == b'0') {
        return None;
    }
    let digits = whole.strip_prefix(b"-").or(whole.strip_prefix(b"+"));
    if digits.unwrap_or(whole).is_empty() {
        return None;
    }
    std::str::from_utf8(whole).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled() -> RowBuf {
        let mut b = RowBuf::new();
        b.begin(3);
        for v in [&b"12.00"[..], b"-7", b"abc"] {
            b.push(Some(v));
        }
        b.push(None);
        b.push_fmt(format_args!("{}", 2.5f64));
        b.push(Some(b""));
        b
    }

    #[test]
    fn values_read_back_by_row_and_column() {
        let b = filled();
        assert_eq!((b.rows(), b.columns()), (2, 3));
        assert_eq!(b.int(0, 0), Some(12));
        assert_eq!(b.float(0, 0), Some(12.0));
        assert_eq!(b.int(0, 1), Some(-7));
        assert_eq!(b.bytes(0, 2), Some(&b"abc"[..]));
        assert_eq!(b.int(0, 2), None);
        assert!(b.is_null(1, 0) && b.bytes(1, 0).is_none() && b.int(1, 0).is_none());
        assert_eq!((b.int(1, 1), b.float(1, 1)), (None, Some(2.5)));
        assert_eq!(b.bytes(1, 2), Some(&b""[..]));
        assert!(!b.is_null(1, 2));
    }

    #[test]
    fn outside_the_result_is_null() {
        let b = filled();
        assert!(b.is_null(2, 0) && b.is_null(0, 3) && b.is_null(usize::MAX, usize::MAX));
        assert_eq!(b.int(usize::MAX, 0), None);
        assert_eq!(RowBuf::new().rows(), 0);
        assert!(RowBuf::new().is_null(0, 0));
    }

    #[test]
    fn integers_are_whole_numbers_only() {
        let int = |s: &str| parse_int(s.as_bytes());
        assert_eq!(int("9223372036854775807"), Some(i64::MAX));
        assert_eq!(int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(int("9223372036854775808"), None);
        assert_eq!(
            (int("-0.000"), int("5."), int(" 42 ")),
            (Some(0), Some(5), Some(42))
        );
        for bad in [
            "12.50", "1e3", "", "-", ".00", "-.0", "1-2", "0x10", "12.0.0",
        ] {
            assert_eq!(int(bad), None, "{bad}");
        }
    }

    #[test]
    fn truncate_drops_a_half_filled_row() {
        let mut b = filled();
        let mark = b.values();
        b.push(Some(b"x"));
        b.truncate(mark);
        assert_eq!((b.rows(), b.values()), (2, 6));
        assert_eq!(b.bytes(1, 2), Some(&b""[..]));
        b.push(Some(b"yz"));
        b.truncate(mark);
        b.push(Some(b"w"));
        assert_eq!(b.bytes(2, 0), Some(&b"w"[..]));
    }
}
