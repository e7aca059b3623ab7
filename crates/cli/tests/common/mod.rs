//! What the CLI's end-to-end tests share: the bakeoff binary against the suite's own MariaDB.

#![allow(dead_code)] // each test binary uses its own part of this

pub mod pgbench;

use std::process::{Command, Output};

use bakeoff_driver::Endpoint;
use bakeoff_testkit::{schema, server};

pub fn bakeoff(args: &[&str], db: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    cmd.args(args);
    if let Some(db) = db {
        let s = server();
        let Endpoint::Unix(sock) = &s.connect_options().endpoint else {
            unreachable!()
        };
        cmd.arg(format!("--mysql-socket={}", sock.display()))
            .arg(format!("--mysql-user={}", s.user()))
            .arg(format!("--mysql-db={db}"))
            .env("BAKEOFF_MYSQL_PASSWORD", s.password().expose());
    }
    cmd.output().expect("run bakeoff")
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

pub fn db(name: &str) -> String {
    schema(name).database.expect("schema")
}

/// Values sysbench parsers read from the final report: "read:", "write:", "transactions:", ...
pub fn parse_report(out: &str) -> std::collections::HashMap<String, f64> {
    let mut m = std::collections::HashMap::new();
    for line in out.lines() {
        let Some((key, rest)) = line.trim().split_once(':') else {
            continue;
        };
        if let Some(v) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.trim_end_matches('s').parse::<f64>().ok())
        {
            m.entry(key.to_string()).or_insert(v);
        }
    }
    m
}

/// The counts sysbench's parsers read, the same in two reports (bakeoff's, sysbench's).
pub fn same_counts(ours: &str, theirs: &str) {
    let (a, b) = (parse_report(ours), parse_report(theirs));
    for key in [
        "read",
        "write",
        "other",
        "total",
        "transactions",
        "ignored errors",
    ] {
        assert_eq!(
            a[key], b[key],
            "{key}\n--- bakeoff\n{ours}\n--- sysbench\n{theirs}"
        );
    }
}

/// The banner's own words after the version, and every number, masked: what a parser of
/// sysbench's output may rely on is the rest.
pub fn masked(text: &str) -> String {
    text.lines()
        .map(|l| match l.strip_prefix("sysbench 1.0.20 (") {
            Some(_) => "sysbench 1.0.20 (...)".to_string(),
            None => mask_numbers(l),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each number as `#`, with the padding on either side of it as one space: `%8.2f` pads
/// before by the value's width, `%-6` after it (a count of 5 digits against one of 6).
fn mask_numbers(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    let mut after_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() || (in_number && c == '.') {
            if !in_number {
                let padded = out.ends_with(' ');
                out.truncate(out.trim_end_matches(' ').len());
                out.push_str(if padded { " #" } else { "#" });
            }
            in_number = true;
            after_number = false;
        } else {
            after_number = in_number || (after_number && c == ' ');
            in_number = false;
            if !(after_number && c == ' ' && out.ends_with(' ')) {
                out.push(c);
            }
        }
    }
    out
}

/// The real sysbench 1.0.20, which the differential tests run beside bakeoff; the suite fails
/// (never skips) without it.
pub fn real_sysbench() -> std::path::PathBuf {
    let p = std::path::PathBuf::from("/usr/bin/sysbench");
    assert!(
        p.is_file(),
        "these tests need the real sysbench 1.0.20: install it with `sudo apt-get install sysbench` (scripts/setup does)"
    );
    p
}

/// bakeoff under the name `sysbench` (a symlink, as users make one), made once per test
/// binary in its scratch directory.
pub fn bakeoff_as_sysbench() -> std::path::PathBuf {
    static LINK: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    LINK.get_or_init(|| {
        let link = bakeoff_testkit::scratch::dir("as-sysbench").join("sysbench");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bakeoff"), &link).unwrap();
        link
    })
    .clone()
}
