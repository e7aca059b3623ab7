//! pgbench's own TAP suites (PostgreSQL 15's `t/001_pgbench_with_server.pl` and
//! `t/002_pgbench_no_server.pl`, with the Perl framework they use, from `../shared/pgbench-tests`
//! or, without it, from Debian's source package of the installed pgbench) run unmodified by
//! `scripts/pgbench-tap`, once with the real pgbench and once with bakeoff
//! standing in for it, in one run. bakeoff must get every assertion as the real pgbench gets it,
//! by number and by name; the real one may fail only the one assertion 15.20 changed on purpose
//! (`-c/--clients` became `-c/--client`), which bakeoff then fails the same way.
//!
//! The suites are the yardstick, not code of ours: `scripts/pgbench-tests` says where they are
//! (PGBENCH_TAP_SUITES, `../shared/pgbench-tests`, or its cache of Debian's, under
//! `target/pgbench-tests/<version>/`, which `scripts/test` fetches first). Where none is, this
//! fails with what it said, never passes by skipping.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The assertion 15.18's suite states and 15.20 changed: its name as Test::More prints it.
const CHANGED_IN_15_20: &str =
    "bad \\#clients stderr /(?^:invalid value \"three\" for option -c/--clients)/";

/// One `ok N - name` or `not ok N - name` line: its number, name and whether it held. An
/// assertion marked TODO (the suite's known server race) holds either way.
#[derive(Debug, PartialEq)]
struct Assertion {
    number: u32,
    name: String,
    held: bool,
}

fn parse_tap(tap: &str) -> (Vec<Assertion>, Option<u32>) {
    let mut found = Vec::new();
    let mut plan = None;
    for line in tap.lines() {
        if let Some(n) = line.strip_prefix("1..") {
            plan = n.trim().parse().ok();
            continue;
        }
        let (held, rest) = match (line.strip_prefix("ok "), line.strip_prefix("not ok ")) {
            (Some(rest), _) => (true, rest),
            (_, Some(rest)) => (false, rest),
            _ => continue,
        };
        let (number, name) = rest.split_once(" - ").unwrap_or((rest, ""));
        let todo = name.contains("# TODO");
        found.push(Assertion {
            number: number.trim().parse().unwrap_or(0),
            name: name.to_string(),
            held: held || todo,
        });
    }
    (found, plan)
}

/// A name with what differs between two runs masked: each run's directory (log files are
/// named by path) and every figure (a log's line count is in its assertion's name).
fn comparable(name: &str, dir: &Path) -> String {
    let without_dir = name.replace(&dir.display().to_string(), "<dir>");
    let mut out = String::with_capacity(without_dir.len());
    let mut in_number = false;
    for c in without_dir.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

/// Where the suites are, as `scripts/pgbench-tests --offline` finds them (never fetching);
/// else what it said.
fn suites() -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pgbench-tests");
    let o = Command::new(&script)
        .arg("--offline")
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    match o.status.success() {
        true => Ok(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())),
        false => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
    }
}

/// The assertions of `suite` as `tool` ran it, with the run's directory.
fn assertions(out: &Path, tool: &str, suite: &str) -> (Vec<Assertion>, PathBuf) {
    let dir = out.join(format!("{tool}-{}", &suite[..3]));
    let tap = std::fs::read_to_string(dir.join("tap.out"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("tap.out").display()));
    let (found, plan) = parse_tap(&tap);
    let stderr = std::fs::read_to_string(dir.join("tap.err")).unwrap_or_default();
    assert_eq!(
        plan,
        Some(found.len() as u32),
        "{tool} {suite}: the suite did not run to its end\n{stderr}"
    );
    (found, dir)
}

#[test]
fn pgbench_tap_suites_hold_for_bakeoff_as_for_the_real_pgbench() {
    let suites = suites().unwrap_or_else(|why| panic!("{why}"));
    assert!(
        suites.join("t/001_pgbench_with_server.pl").is_file(),
        "pgbench's TAP suites are not at {} (PGBENCH_TAP_SUITES names where they are)",
        suites.display()
    );
    let out = bakeoff_testkit::scratch::dir("pgbench-tap");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pgbench-tap");
    let run = Command::new(script)
        .arg("--out")
        .arg(&out)
        .arg(env!("CARGO_BIN_EXE_bakeoff"))
        .env("PGBENCH_TAP_SUITES", &suites)
        .output()
        .expect("run scripts/pgbench-tap");
    let said = String::from_utf8_lossy(&run.stdout);
    // The counts and times, in the test's output (cargo test -- --nocapture shows them).
    println!("{said}");
    assert!(
        run.status.success(),
        "scripts/pgbench-tap: {}\n{said}{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    for suite in ["001_pgbench_with_server", "002_pgbench_no_server"] {
        let (theirs, their_dir) = assertions(&out, "pgbench", suite);
        let (ours, our_dir) = assertions(&out, "bakeoff", suite);
        let failed: Vec<&str> = theirs
            .iter()
            .filter(|a| !a.held)
            .map(|a| a.name.as_str())
            .collect();
        assert!(
            failed.iter().all(|name| name.ends_with(CHANGED_IN_15_20)),
            "the real pgbench fails {suite}'s {failed:?}: only the assertion 15.20 changed may fail"
        );
        assert_eq!(ours.len(), theirs.len(), "{suite}: assertions run");
        // The assertion 15.20 changed holds for pgbench 15.18 and fails for 15.20 (apt's
        // mirrors serve either); bakeoff prints 15.20's message, so it fails there whichever
        // pgbench is installed.
        let changed = |a: &Assertion| a.name.ends_with(CHANGED_IN_15_20);
        if let Some(o) = ours.iter().find(|o| changed(o)) {
            assert!(
                !o.held,
                "{suite}: bakeoff prints 15.18's message, not 15.20's: {o:?}"
            );
        }
        let differ: Vec<String> = ours
            .iter()
            .zip(&theirs)
            .filter(|(o, t)| {
                o.number != t.number
                    || (o.held != t.held && !changed(o))
                    || comparable(&o.name, &our_dir) != comparable(&t.name, &their_dir)
            })
            .map(|(o, t)| format!("bakeoff {o:?}\npgbench {t:?}"))
            .collect();
        assert!(
            differ.is_empty(),
            "{suite}: bakeoff's assertions differ from pgbench's (logs in {}):\n{}",
            our_dir.display(),
            differ.join("\n")
        );
    }
}

#[test]
fn tap_lines_are_read_with_todo_as_held_and_figures_masked() {
    let (found, plan) = parse_tap(
        "ok 1 - a (got 0 vs expected 0)\nnot ok 2 - b # TODO race\nnot ok 3 - c\n# note\n1..3\n",
    );
    assert_eq!(plan, Some(3));
    let held: Vec<bool> = found.iter().map(|a| a.held).collect();
    assert_eq!(held, [true, true, false]);
    assert_eq!(
        found[2],
        Assertion {
            number: 3,
            name: "c".into(),
            held: false
        }
    );
    assert_eq!(
        comparable("count for /x/y/log.12 (97)", Path::new("/x/y")),
        "count for <dir>/log.N (N)"
    );
}
