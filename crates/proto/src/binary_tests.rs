use super::types::*;
use super::*;

fn col(kind: u8) -> ColumnType {
    ColumnType {
        kind,
        flags: 0,
        decimals: 0,
    }
}

fn unsigned(kind: u8) -> ColumnType {
    ColumnType {
        flags: UNSIGNED_FLAG,
        ..col(kind)
    }
}

fn with_decimals(kind: u8, decimals: u8) -> ColumnType {
    ColumnType {
        decimals,
        ..col(kind)
    }
}

/// A row of `values` (None: NULL) in the binary protocol, values already encoded.
fn row(values: &[Option<&[u8]>]) -> Vec<u8> {
    let mut p = vec![0x00];
    let mut bitmap = vec![0u8; (values.len() + 9) / 8];
    for (i, v) in values.iter().enumerate() {
        if v.is_none() {
            bitmap[(i + 2) / 8] |= 1 << ((i + 2) % 8);
        }
    }
    p.extend_from_slice(&bitmap);
    for v in values.iter().flatten() {
        p.extend_from_slice(v);
    }
    p
}

/// A case: column type, encoded value, text it reads as.
fn cases() -> Vec<(ColumnType, Vec<u8>, &'static str)> {
    let mut datetime = vec![11];
    datetime.extend_from_slice(&2024u16.to_le_bytes());
    datetime.extend_from_slice(&[2, 29, 13, 5, 9]);
    datetime.extend_from_slice(&123_456u32.to_le_bytes());
    let mut time = vec![12, 1];
    time.extend_from_slice(&2u32.to_le_bytes());
    time.extend_from_slice(&[3, 4, 5]);
    time.extend_from_slice(&500_000u32.to_le_bytes());
    let mut date = vec![4];
    date.extend_from_slice(&1999u16.to_le_bytes());
    date.extend_from_slice(&[12, 31]);
    let mut seven = vec![7];
    seven.extend_from_slice(&2001u16.to_le_bytes());
    seven.extend_from_slice(&[1, 2, 3, 4, 5]);
    vec![
        (col(TINY), vec![0x80], "-128"),
        (col(TINY), vec![0], "0"),
        (col(TINY), vec![0xff], "-1"),
        (unsigned(TINY), vec![0xff], "255"),
        (col(SHORT), (-2i16).to_le_bytes().to_vec(), "-2"),
        (col(YEAR), 2024u16.to_le_bytes().to_vec(), "2024"),
        (col(LONG), (-3i32).to_le_bytes().to_vec(), "-3"),
        (
            unsigned(LONG),
            u32::MAX.to_le_bytes().to_vec(),
            "4294967295",
        ),
        (col(INT24), 8_388_607i32.to_le_bytes().to_vec(), "8388607"),
        (
            col(LONGLONG),
            i64::MIN.to_le_bytes().to_vec(),
            "-9223372036854775808",
        ),
        (
            unsigned(LONGLONG),
            u64::MAX.to_le_bytes().to_vec(),
            "18446744073709551615",
        ),
        (col(FLOAT), 1.1f32.to_le_bytes().to_vec(), "1.1"),
        (col(DOUBLE), 2.5f64.to_le_bytes().to_vec(), "2.5"),
        (col(DOUBLE), 1e300f64.to_le_bytes().to_vec(), "1e300"),
        (col(NEWDECIMAL), b"\x0512.00".to_vec(), "12.00"),
        (col(VARCHAR), b"\x03abc".to_vec(), "abc"),
        (col(STRING), b"\x00".to_vec(), ""),
        (col(DATE), date, "1999-12-31"),
        (col(DATETIME), seven, "2001-01-02 03:04:05"),
        (
            with_decimals(DATETIME, 3),
            datetime,
            "2024-02-29 13:05:09.123",
        ),
        (col(TIMESTAMP), vec![0], "0000-00-00 00:00:00"),
        (with_decimals(TIME, 6), time, "-51:04:05.500000"),
        (col(TIME), vec![0], "00:00:00"),
    ]
}

#[test]
fn every_encoding_reads_as_its_text() {
    let cases = cases();
    let types: Vec<ColumnType> = cases.iter().map(|c| c.0).collect();
    let values: Vec<Option<&[u8]>> = cases.iter().map(|c| Some(&c.1[..])).collect();
    let mut out = RowBuf::new();
    out.begin(types.len());
    binary_row(&row(&values), &types, &mut out).unwrap();
    assert_eq!(out.rows(), 1);
    for (i, (_, _, text)) in cases.iter().enumerate() {
        let got = String::from_utf8_lossy(out.bytes(0, i).unwrap()).into_owned();
        assert_eq!(got, *text, "column {i}");
    }
    let at = |text: &str| cases.iter().position(|c| c.2 == text).unwrap();
    assert_eq!(out.int(0, at("-128")), Some(-128));
    assert_eq!(out.int(0, at("-9223372036854775808")), Some(i64::MIN));
    let past = at("18446744073709551615");
    assert_eq!(out.int(0, past), None, "past i64");
    assert_eq!(out.float(0, past), Some(u64::MAX as f64));
    assert_eq!(out.float(0, at("1.1")), Some(1.1));
    assert_eq!(out.float(0, at("1e300")), Some(1e300));
    let decimal = at("12.00");
    assert_eq!(
        (out.int(0, decimal), out.float(0, decimal)),
        (Some(12), Some(12.0))
    );
}

#[test]
fn the_null_bitmap_starts_at_bit_two() {
    // Nine columns: the bitmap takes two bytes, column 6's bit is the second byte's first.
    let types = vec![col(LONG); 9];
    let one = 1i32.to_le_bytes();
    let mut values: Vec<Option<&[u8]>> = vec![Some(&one[..]); 9];
    values[0] = None;
    values[6] = None;
    values[8] = None;
    let p = row(&values);
    assert_eq!(&p[1..3], &[0b0000_0100, 0b0000_0101]);
    let mut out = RowBuf::new();
    out.begin(9);
    binary_row(&p, &types, &mut out).unwrap();
    let nulls: Vec<bool> = (0..9).map(|c| out.is_null(0, c)).collect();
    let want = [true, false, false, false, false, false, true, false, true];
    assert_eq!(nulls, want);
    assert_eq!(out.int(0, 7), Some(1));
}

#[test]
fn a_column_of_type_null_has_no_bytes() {
    let mut out = RowBuf::new();
    out.begin(2);
    let p = row(&[Some(&[]), Some(&[7])]);
    binary_row(&p, &[col(NULL), col(TINY)], &mut out).unwrap();
    assert!(out.is_null(0, 0));
    assert_eq!(out.int(0, 1), Some(7));
}

#[test]
fn every_truncation_is_an_error_and_leaves_no_half_row() {
    let cases = cases();
    let types: Vec<ColumnType> = cases.iter().map(|c| c.0).collect();
    let values: Vec<Option<&[u8]>> = cases.iter().map(|c| Some(&c.1[..])).collect();
    let p = row(&values);
    let mut out = RowBuf::new();
    out.begin(types.len());
    binary_row(&p, &types, &mut out).unwrap();
    for cut in 0..p.len() {
        assert!(
            binary_row(&p[..cut], &types, &mut out).is_err(),
            "cut at {cut}"
        );
        assert_eq!((out.values(), out.rows()), (types.len(), 1), "cut at {cut}");
    }
}

#[test]
fn hostile_rows_are_errors_not_panics() {
    let mut out = RowBuf::new();
    out.begin(1);
    let bad: Vec<(ColumnType, Vec<u8>)> = vec![
        // Not a row's header.
        (col(TINY), vec![0x01, 0, 1]),
        // A string that says it is 2^64-1 bytes long.
        (col(VARCHAR), [&[0, 0, 0xfe][..], &[0xff; 8]].concat()),
        // The NULL marker and 0xff where a string's length goes.
        (col(VARCHAR), vec![0, 0, 0xfb]),
        (col(VARCHAR), vec![0, 0, 0xff]),
        // A date and a time of lengths no date or time has, or longer than the packet.
        (col(DATETIME), vec![0, 0, 5, 1, 2, 3, 4, 5]),
        (col(DATETIME), vec![0, 0, 200, 1]),
        (col(TIME), vec![0, 0, 3, 1, 2, 3]),
        // Bytes left over, or too few: the types do not match the row.
        (col(TINY), vec![0, 0, 1, 2]),
        (col(LONG), vec![0, 0, 1, 0]),
    ];
    for (i, (t, p)) in bad.iter().enumerate() {
        let r = binary_row(p, &[*t], &mut out);
        assert!(
            matches!(r, Err(ProtoError::Malformed { .. })),
            "case {i}: {r:?}"
        );
        assert_eq!(out.values(), 0, "case {i}");
    }
    // Fields past their ranges are written out as numbers, not trusted as indexes.
    let mut odd = vec![0, 0, 11];
    odd.extend_from_slice(&[0xff; 11]);
    binary_row(&odd, &[with_decimals(DATETIME, 200)], &mut out).unwrap();
    assert_eq!(
        out.bytes(0, 0),
        Some(&b"65535-255-255 255:255:255.4294967295"[..])
    );
}

fn definition(kind: u8, flags: u16, decimals: u8) -> Vec<u8> {
    let mut p = Vec::new();
    for s in ["def", "db", "t", "t", "c", "c"] {
        p.push(s.len() as u8);
        p.extend_from_slice(s.as_bytes());
    }
    p.push(0x0c);
    p.extend_from_slice(&33u16.to_le_bytes());
    p.extend_from_slice(&11u32.to_le_bytes());
    p.push(kind);
    p.extend_from_slice(&flags.to_le_bytes());
    p.push(decimals);
    p.extend_from_slice(&[0, 0]);
    p
}

#[test]
fn column_definitions_give_type_flags_and_decimals() {
    let p = definition(LONGLONG, UNSIGNED_FLAG | 1, 0);
    assert_eq!(
        column_type(&p).unwrap(),
        ColumnType {
            kind: LONGLONG,
            flags: UNSIGNED_FLAG | 1,
            decimals: 0
        }
    );
    assert_eq!(
        column_type(&definition(NEWDECIMAL, 0, 2)).unwrap().decimals,
        2
    );
    // Cut anywhere before its decimals: an error, never a panic.
    for cut in 0..p.len() - 2 {
        assert!(column_type(&p[..cut]).is_err(), "cut at {cut}");
    }
}
