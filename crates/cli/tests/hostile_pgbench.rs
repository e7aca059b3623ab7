//! `bakeoff pgbench` against the test kit's hostile PostgreSQL, where a script carries the
//! server's words or a server holds a client in a COPY: what reaches the terminal is written
//! out, and a client that must stop stops.

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use bakeoff_testkit::hostile_pg::{Answer, Hostile, Login, Script};
use common::text;

/// `bakeoff pgbench` over plain TCP to `h` running `script` (written to a file) with `more`.
fn pgbench(h: &Hostile, name: &str, script: &str, more: &[&str]) -> Output {
    let file = bakeoff_testkit::scratch::path(name);
    std::fs::write(&file, script).unwrap();
    let port = h.port.to_string();
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "pgbench",
            "-n",
            "-t",
            "1",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "u",
        ])
        .args(["-f", file.to_str().unwrap()])
        .args(more)
        .arg("db")
        .env("PGSSLMODE", "disable")
        .output()
        .expect("run bakeoff pgbench")
}

/// A value a script took from the server (`\gset`) goes into the client's messages, its
/// debug lines and the SQL an error quotes: its escape sequences are written out in all.
#[test]
fn a_servers_escapes_in_a_scripts_variables_are_written_out() {
    let script = Script {
        login: Login::Trust,
        tls: false,
        answers: vec![("AS v", Answer::Value("\x1b]0;owned\x07\x1b[2J"))],
    };
    let h = Hostile::start(script);
    let cases: [(&str, &[&str]); 3] = [
        // An expression over it: "malformed variable" quotes the value.
        ("SELECT 1 AS v \\gset\n\\set y :v + 1\n", &[]),
        // A sleep of it: "invalid sleep time" quotes it.
        ("SELECT 1 AS v \\gset\n\\sleep :v\n", &[]),
        // Debug prints each statement sent, the value in it.
        ("SELECT 1 AS v \\gset\nSELECT :v AS w;\n", &["-d"]),
    ];
    for (i, (s, more)) in cases.iter().enumerate() {
        let o = pgbench(&h, &format!("escapes{i}.sql"), s, more);
        let (_, err) = text(&o);
        assert!(
            !o.stderr.contains(&0x1b) && !o.stderr.contains(&0x07),
            "{s:?}: {err:?}"
        );
        assert!(
            err.contains("\\x1b]0;owned\\x07"),
            "{s:?}: the value, written out: {err}"
        );
    }
}

/// A COPY OUT inside a transaction block: pgbench's client aborts and drops the connection.
/// A ROLLBACK sent first would wait behind the COPY's data, which this server never ends.
#[test]
fn a_copy_out_in_a_transaction_ends_the_client_without_waiting_behind_it() {
    let script = Script {
        login: Login::Trust,
        tls: false,
        answers: vec![("BEGIN", Answer::InTransaction), ("COPY", Answer::CopyOut)],
    };
    let h = Hostile::start(script);
    let started = Instant::now();
    let o = pgbench(
        &h,
        "copy-out.sql",
        "BEGIN;\nCOPY t TO STDOUT;\n",
        &["--stall-timeout=5"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("COPY is not supported in pgbench, aborting"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}
