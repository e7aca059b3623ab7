//! bakeoff against the real sysbench 1.0.20: the same argv to both, invoked as `sysbench`
//! (a symlink, as users make one), in a scratch directory each; the exit codes and the output
//! (stdout and stderr, as a script or sysbench's own cram tests see them) compared with the
//! varying figures masked. Cases that need no database: grammar, help, errors, host probes.

mod common;

use std::path::Path;

use common::{bakeoff_as_sysbench, masked, real_sysbench};
use std::process::Command;

/// Run `program` with `args` in a fresh scratch directory: (exit code, stdout + stderr).
fn run(program: &Path, args: &[&str], scratch: &str) -> (i32, String) {
    run_with(program, args, scratch, &[])
}

/// [`run`], with `files` (name, text) written into the scratch directory first.
fn run_with(program: &Path, args: &[&str], scratch: &str, files: &[(&str, &str)]) -> (i32, String) {
    let dir = bakeoff_testkit::scratch::dir(&format!("diff-{scratch}"));
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let o = Command::new(program)
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("run");
    let _ = std::fs::remove_dir_all(&dir);
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text += &String::from_utf8_lossy(&o.stderr);
    (o.status.code().unwrap_or(-1), text)
}

/// Both tools on `args`: the same exit code and the same masked output.
fn same(args: &[&str]) {
    same_with(args, &[]);
}

/// [`same`], each tool's scratch directory holding `files`.
fn same_with(args: &[&str], files: &[(&str, &str)]) {
    let scratch = args.join("_").replace(['/', '-', '=', '.'], "");
    let (want_code, want) = run_with(&real_sysbench(), args, &format!("sb{scratch}"), files);
    let (code, got) = run_with(&bakeoff_as_sysbench(), args, &format!("bo{scratch}"), files);
    assert_eq!(
        (code, masked(&got)),
        (want_code, masked(&want)),
        "sysbench {}\n--- bakeoff ---\n{got}\n--- sysbench ---\n{want}",
        args.join(" ")
    );
}

#[test]
fn usage_errors_read_and_exit_as_sysbenchs() {
    for args in [
        &["foo", "bar"][..],
        &["foo", "bar", "baz"],
        &["fileio"],
        &["cpu", "prepare"],
        &["memory", "cleanup"],
        &["cpu", "warmup"],
        &["fileio", "--invalid-option", "prepare"],
        &["--non-existing-option=3", "cpu", "run"],
        &["memory", "--memory-block-size=3", "run"],
        &["memory", "--memory-block-size=-1", "run"],
        &["memory", "--memory-oper=foo", "run"],
        &["--verbosity=9", "cpu", "run"],
    ] {
        same(args);
    }
}

#[test]
fn help_is_sysbenchs_for_every_test_and_workload() {
    for args in [
        &["cpu", "help"][..],
        &["memory", "help"],
        &["fileio", "help"],
        &["threads", "help"],
        &["mutex", "help"],
        &["--cpu-max-prime=1", "cpu", "--threads=2", "help"],
        &["/usr/share/sysbench/oltp_read_write.lua", "help"],
        &["/usr/share/sysbench/oltp_point_select.lua", "help"],
        &["oltp_read_only", "help"],
    ] {
        same(args);
    }
}

#[test]
fn general_help_is_sysbenchs_with_both_drivers() {
    let (code, want) = run(&real_sysbench(), &["--help"], "sbhelp");
    let (got_code, got) = run(&bakeoff_as_sysbench(), &["--help"], "bohelp");
    assert_eq!((got_code, code), (0, 0));
    assert_eq!(
        got.replace("\n\n\n", "\n\n"),
        want.replace("\n\n\n", "\n\n")
    );
    assert!(got.contains("  pgsql - PostgreSQL driver\n") && got.contains("pgsql options:\n"));
}

#[test]
fn the_last_of_a_repeated_option_wins() {
    same(&[
        "cpu",
        "--cpu-max-prime=5000",
        "--events=10",
        "--cpu-max-prime=1000",
        "run",
    ]);
    same(&["--threads=4", "cpu", "--events=8", "--threads=2", "run"]);
}

#[test]
fn verbosity_zero_and_one_print_nothing_for_a_run_that_goes_well() {
    same(&["cpu", "--events=10", "--verbosity=0", "run"]);
    same(&["cpu", "--events=10", "--verbosity=1", "run"]);
}

#[test]
fn host_probes_report_line_for_line() {
    same(&[
        "cpu",
        "--cpu-max-prime=1000",
        "--events=100",
        "--threads=2",
        "run",
    ]);
    same(&[
        "memory",
        "--memory-block-size=4K",
        "--memory-total-size=1M",
        "--events=1",
        "--time=0",
        "run",
    ]);
}

#[test]
fn a_rate_the_threads_cannot_keep_up_with_fails_as_sysbenchs() {
    same(&["--rate=2000000000", "cpu", "run", "--verbosity=1"]);
    // A rate the threads keep up with is said in the header, as sysbench says it.
    same(&[
        "--rate=1000",
        "cpu",
        "--events=5",
        "--cpu-max-prime=100",
        "run",
    ]);
}

#[test]
fn threads_and_mutex_run_as_sysbenchs() {
    same(&["threads", "--events=100", "--threads=2", "run"]);
    same(&[
        "mutex",
        "--events=10",
        "--threads=2",
        "--mutex-locks=1000",
        "run",
    ]);
}

#[test]
fn the_version_line_starts_with_sysbenchs_two_words() {
    let (code, out) = run(&bakeoff_as_sysbench(), &["--version"], "version");
    assert_eq!(code, 0);
    let first_two: Vec<&str> = out.split_whitespace().take(2).collect();
    assert_eq!(first_two, ["sysbench", "1.0.20"], "{out}");
    assert!(out.contains("(bakeoff "), "{out}");
}

const SCRIPT: &str = r#"#!/usr/bin/env sysbench
print("script body")
sysbench.cmdline.options = {
  rows = {"rows to make", 100},
  fast = {"skip the slow part", false},
  names = {"a list", {"a", "b"}},
  label = {"a string", "x", sysbench.cmdline.ARG_STRING},
}
function prepare()
  print("prepare", sysbench.opt.rows, sysbench.opt.fast, sysbench.opt.label, #sysbench.opt.names)
end
function cleanup() print("cleanup") end
sysbench.cmdline.commands = { mine = {function() print("mine", sysbench.opt.rows) end} }
"#;

const BARE: &str = "print('bare body')\n";

#[test]
fn a_scripts_body_and_commands_run_in_lua_as_in_sysbench() {
    let files = [("s.lua", SCRIPT), ("bare.lua", BARE)];
    for args in [
        &["s.lua"][..],
        &["s.lua", "prepare"],
        &[
            "--rows=7",
            "s.lua",
            "--fast",
            "--label=y",
            "--names=p,q,r",
            "prepare",
        ],
        &["s.lua", "cleanup"],
        &["s.lua", "mine", "--rows=3"],
        &["s.lua", "help"],
        &["s"],
        &["bare.lua", "help"],
        &["bare.lua", "prepare"],
        &["bare.lua", "nonsense"],
    ] {
        same_with(args, &files);
    }
}

/// A script whose option table sysbench's module refuses.
const BAD_OPTIONS: &str = "sysbench.cmdline.options = {\n  {},\n}\nfunction help()\nend\n";

#[test]
fn a_bad_option_table_is_refused_in_sysbenchs_words() {
    same_with(&["bad.lua", "help"], &[("bad.lua", BAD_OPTIONS)]);
}

#[test]
fn validation_is_said_in_the_header_as_sysbench_says_it() {
    same(&["cpu", "--validate", "--events=10", "run"]);
    same(&["threads", "--validate=on", "--events=10", "run"]);
}

#[test]
fn a_dry_run_of_sysbenchs_script_reports_checkpoints_as_sysbench() {
    // No server: --mysql-dry-run answers every statement, so only the client runs. sysbench's
    // stock script, as the cram test opt_report_checkpoints runs it.
    same(&[
        "/usr/share/sysbench/oltp_point_select.lua",
        "--mysql-dry-run",
        "--time=2",
        "--events=0",
        "--report-checkpoints=1",
        "run",
    ]);
    // By name, two threads. (No --report-interval: whether sysbench prints the interval that
    // ends with --time is a race in its report thread.)
    same(&[
        "oltp_read_only",
        "--mysql-dry-run",
        "--time=1",
        "--events=0",
        "--threads=2",
        "run",
    ]);
}

/// (Not threads or mutex here: their report starts with the blank line the checkpoint
/// report ends with, and sysbench's logger folds a repeated line into "(last message repeated
/// 1 times)", which bakeoff does for its SQL layer's lines only.)
#[test]
fn host_probes_report_checkpoints_as_sysbenchs() {
    same(&["cpu", "--report-checkpoints=1", "--time=2", "run"]);
    same(&[
        "memory",
        "--report-checkpoints=1",
        "--time=2",
        "--memory-total-size=0",
        "run",
    ]);
}
