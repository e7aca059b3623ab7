//! `-d` traces pgbench's and bakeoff's runs alike, and meta-commands fail in pgbench's words.
//!
//! What the comparison masks, and why:
//! - "client N receiving" lines are dropped from both: pgbench says one each time it looks for
//!   a reply, so how many follow a statement depends on whether the reply had arrived at its
//!   first look (timing, not logic). Both say at least one per statement; that is checked.
//! - With several clients, lines are compared as sorted multisets: their order follows
//!   when replies arrive.
//!
//! Nothing else is masked: the seed line, where the run connects, each script, meta-command,
//! statement text or prepared name, and every error line are compared as printed.

mod common;

use common::pgbench::{bakeoff, real_pgbench, Target};

/// pgbench's `-d` and info lines from a run's stderr, "receiving" lines dropped.
fn trace(stderr: &[u8]) -> (Vec<String>, usize) {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("pgbench:"))
        .map(str::to_string)
        .collect();
    let receiving = lines.iter().filter(|l| l.ends_with(" receiving")).count();
    let kept = lines
        .into_iter()
        .filter(|l| !l.ends_with(" receiving"))
        .collect();
    (kept, receiving)
}

const SCRIPT: &str = r"\set a random(1, 10)
\if :a > 7
SELECT :a AS x \gset
\elif :a > 3
SELECT 2 AS x \gset
\else
SELECT 3 AS x \gset
\endif
\setshell s echo 7
\shell true
\sleep 1 us
\sleep :s us
\startpipeline
SELECT 1;
SELECT :x, :s;
SELECT 2
  + 3;
\endpipeline
";

#[test]
fn a_trace_says_what_pgbenchs_says_in_every_protocol() {
    let t = Target::initialized("pgb_debug");
    t.write("all.sql", SCRIPT);
    t.write("two.sql", "SELECT 9;\nSELECT 10;\n");
    for mode in ["extended", "prepared"] {
        let args = [
            "-d",
            "-n",
            "-c",
            "1",
            "-t",
            "6",
            "--random-seed=3",
            "-M",
            mode,
            "-f",
            "two.sql@1",
            "-f",
            "all.sql@3",
        ];
        let theirs = t.run(&real_pgbench(), &args);
        let ours = t.run(&bakeoff(), &args);
        assert_eq!(ours.status.code(), theirs.status.code(), "-M {mode}");
        let ((a, a_rx), (b, b_rx)) = (trace(&theirs.stderr), trace(&ours.stderr));
        let sent = a.iter().filter(|l| l.contains(" sending ")).count();
        assert!(
            sent >= 6 && a.len() > 30,
            "-M {mode}: pgbench traced {a:#?}"
        );
        assert_eq!(b, a, "-M {mode}");
        assert!(a_rx >= sent && b_rx >= sent, "{a_rx} {b_rx} {sent}");
    }
    // The simple protocol sends each statement's text with its values in place, and refuses a
    // pipeline.
    let args = ["-d", "-n", "-t", "2", "--random-seed=3", "-f", "all.sql"];
    let theirs = t.run(&real_pgbench(), &args);
    let ours = t.run(&bakeoff(), &args);
    assert_eq!(ours.status.code(), Some(2));
    assert_eq!(trace(&ours.stderr).0, trace(&theirs.stderr).0);
    // Several clients: the same lines, in an order timing decides. On one thread, because
    // pgbench's threads write a line's prefix and its text apart, and interleave them.
    let args = [
        "-d",
        "-n",
        "-S",
        "-c",
        "4",
        "-j",
        "1",
        "-t",
        "3",
        "--random-seed=1",
    ];
    let sorted = |o: &std::process::Output| {
        let mut v = trace(&o.stderr).0;
        v.sort();
        v
    };
    let theirs = sorted(&t.run(&real_pgbench(), &args));
    assert_eq!(sorted(&t.run(&bakeoff(), &args)), theirs);
    assert!(theirs
        .iter()
        .any(|l| l.contains("executing script \"<builtin: select only>\"")));
}

#[test]
fn meta_commands_fail_in_pgbenchs_words() {
    let t = Target::initialized("pgb_meta_fail");
    let cases: [(&str, &[&str]); 9] = [
        ("\\shell false", &[]),
        ("\\setshell x true", &[]),
        ("\\setshell x echo ::y 5", &[]),
        ("\\setshell x echo :nope", &[]),
        // Blanks read as 0; an exit status is not looked at; an int keeps its low bits.
        ("\\setshell x echo", &[]),
        ("\\setshell x sh -c \"echo 5; exit 3\"", &[]),
        ("\\setshell x echo 5000000000\nSELECT :x;", &[]),
        ("\\sleep :nope", &[]),
        ("\\sleep :v us", &["-D", "v=abc"]),
    ];
    for (i, (body, extra)) in cases.iter().enumerate() {
        let file = format!("case{i}.sql");
        t.write(&file, &format!("{body}\nSELECT 1;\n"));
        let mut args = vec!["-d", "-n", "-t", "1", "-f", &file];
        args.extend_from_slice(extra);
        let theirs = t.run(&real_pgbench(), &args);
        let ours = t.run(&bakeoff(), &args);
        let said = trace(&theirs.stderr).0;
        assert!(
            said.iter()
                .any(|l| l.contains("error:") || l.contains("shell parameter")),
            "{body}: pgbench said {said:#?}"
        );
        assert_eq!(ours.status.code(), theirs.status.code(), "{body}");
        assert_eq!(trace(&ours.stderr).0, said, "{body}");
    }
}
