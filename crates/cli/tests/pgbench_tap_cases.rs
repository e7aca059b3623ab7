//! What pgbench's own TAP suites (15.18's, run whole by `scripts/pgbench-tap`) found
//! bakeoff doing otherwise, each as a case of our own run by both tools: the exit code and
//! every line compared but for the figures (`common::pgbench::comparable`).

mod common;

use common::pgbench::{bakeoff, comparable, Target};

/// Run `args` (with `vars` in the environment) by both tools: the differences, said.
fn differ(t: &Target, what: &str, args: &[&str], vars: &[(&str, &str)]) -> Option<String> {
    let ((theirs, rc0), (ours, rc1)) = t.both_with(args, vars);
    (rc1 != rc0 || comparable(&ours) != comparable(&theirs)).then(|| {
        format!("{what}: exit {rc1} where pgbench's is {rc0}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}")
    })
}

/// Scripts of our own, each in both query modes, with -d where a value is the point.
#[test]
fn scripts_the_tap_suites_found_wanting_run_as_pgbench_runs_them() {
    let t = Target::new("pgb_tap_cases");
    let cases: &[(&str, &[&str])] = &[
        // Boolean words pgbench reads: "of" is off.
        ("\\set b debug(:f)\n\\if :f\n\\set x debug(1)\n\\endif\n", &["-Df=of"]),
        ("\\set b debug(:f)\n", &["-Df=o"]),
        // A NULL variable goes into SQL as the word.
        (
            "\\set v0 NULL\nSELECT :v0 IS NULL AS isnull \\gset\n\\set r debug(:isnull)\n",
            &[],
        ),
        // \aset keeps the last row; a NULL field is an empty string.
        (
            "SELECT i AS a FROM generate_series(1, 3) i \\aset\n\\set x debug(:a)\n",
            &[],
        ),
        ("SELECT NULL AS n \\gset\n\\set x debug(:n)\n", &[]),
        // A unit in the sleep's number.
        ("\\sleep 2ms\n\\sleep 0US\n", &[]),
        ("\\sleep 2ms s\n", &[]),
        // Meta-commands in upper case, as published scripts write them.
        (
            "\\SET x 1\n\\IF :x = 1\nSELECT 7 AS y \\GSET\n\\ELSE\n\\SET y 0\n\\ENDIF\n\\SET z debug(:y)\n\\SLEEP 1 MS\n",
            &[],
        ),
        // An error's DETAIL, HINT and CONTEXT, each on its own line.
        (
            "DO $$BEGIN RAISE EXCEPTION 'boom' USING DETAIL = 'the detail', HINT = 'a hint'; END$$;\n",
            &[],
        ),
        // A notice's DETAIL and HINT, each on its own line, as libpq's notice processor.
        (
            "DO $$BEGIN RAISE NOTICE 'n' USING DETAIL = 'd', HINT = 'h'; END$$;\n",
            &[],
        ),
        // COPY in a script.
        ("COPY (SELECT 1) TO STDOUT;\n", &[]),
    ];
    let mut found = Vec::new();
    for (i, (script, extra)) in cases.iter().enumerate() {
        let file = format!("case{i}.sql");
        t.write(&file, script);
        for mode in ["simple", "prepared"] {
            let mut args = vec!["-n", "-t", "2", "-M", mode, "-f", &file];
            args.extend(extra.iter().copied());
            found.extend(differ(&t, &format!("{script:?} -M {mode}"), &args, &[]));
        }
    }
    assert!(
        found.is_empty(),
        "{}\n\n{}",
        found.len(),
        found.join("\n\n")
    );
}

/// COPY FROM STDIN in a script: refused and the client aborted, in the simple protocol as
/// pgbench does; in the extended one, where pgbench 15 waits on the server for ever, bakeoff
/// refuses it alike (compared with pgbench only where pgbench ends).
#[test]
fn copy_from_stdin_in_a_script_aborts_the_client() {
    let t = Target::new("pgb_tap_copy");
    t.write(
        "copy.sql",
        "CREATE TEMP TABLE c(i int);\nCOPY c FROM STDIN;\n",
    );
    let simple = ["-n", "-t", "2", "-M", "simple", "-f", "copy.sql"];
    assert_eq!(differ(&t, "COPY FROM STDIN", &simple, &[]), None);
    let o = t.run(
        &bakeoff(),
        &["-n", "-t", "2", "-M", "prepared", "-f", "copy.sql"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("COPY is not supported in pgbench, aborting"),
        "{err}"
    );
}

/// A transaction block the script leaves open: the transaction counts, then the client stops.
#[test]
fn a_script_that_ends_inside_a_transaction_aborts_its_client() {
    let t = Target::new("pgb_tap_open_tx");
    t.write("open.sql", "BEGIN;\nSELECT 1;\n");
    let args = ["-n", "-t", "10", "-f", "open.sql"];
    let ((_, rc0), (ours, rc1)) = t.both(&args);
    assert_eq!((rc0, rc1), (2, 2), "{ours}");
    assert!(
        ours.contains("processed: 1/10")
            && ours.contains("end of script reached without completing the last transaction"),
        "{ours}"
    );
    assert_eq!(differ(&t, "open transaction", &args, &[]), None);
}

/// PGOPTIONS and PGAPPNAME reach the server; without PGAPPNAME the session is "pgbench".
#[test]
fn pgoptions_and_pgappname_reach_the_server() {
    let t = Target::new("pgb_tap_env");
    t.write(
        "env.sql",
        "SELECT current_setting('application_name') = 'pgbench' AS fallback, current_setting('application_name') = 'mine' AS mine, current_setting('transaction_isolation') = 'serializable' AS ser \\gset\n\\set a debug(:fallback)\n\\set b debug(:mine)\n\\set c debug(:ser)\n",
    );
    let args = ["-n", "-t", "1", "-f", "env.sql"];
    let serializable = ("PGOPTIONS", "-c default_transaction_isolation=serializable");
    let mut found = Vec::new();
    for vars in [vec![], vec![("PGAPPNAME", "mine"), serializable]] {
        found.extend(differ(&t, &format!("{vars:?}"), &args, &vars));
        let o = t.run_with(&bakeoff(), &args, &vars);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let want = if vars.is_empty() {
            [
                "debug(script=0,command=2): boolean true",
                "debug(script=0,command=3): boolean false",
                "debug(script=0,command=4): boolean false",
            ]
        } else {
            [
                "debug(script=0,command=2): boolean false",
                "debug(script=0,command=3): boolean true",
                "debug(script=0,command=4): boolean true",
            ]
        };
        assert!(want.iter().all(|w| err.contains(w)), "{vars:?}: {err}");
    }
    assert!(found.is_empty(), "{}", found.join("\n\n"));
}

/// A database that is not there: libpq's words, after where it connected.
#[test]
fn a_refused_connection_is_said_in_libpqs_words() {
    let t = Target::new("pgb_tap_refused");
    let args = ["-n", "-t", "1", "no_such_database_here"];
    assert_eq!(differ(&t, "refused", &args, &[]), None);
    let o = t.run(&bakeoff(), &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("failed: FATAL:  database \"no_such_database_here\" does not exist"),
        "{err}"
    );
}

/// -i with partitions says so, as pgbench does.
#[test]
fn initialising_partitions_says_how_many() {
    let t = Target::new("pgb_tap_parts");
    let args = ["-i", "-s", "1", "--partitions=3"];
    let ((theirs, _), (ours, rc)) = t.both(&args);
    assert_eq!(rc, 0, "{ours}");
    let line = "creating 3 partitions...";
    assert!(
        theirs.contains(line) && ours.contains(line),
        "{ours}\n---\n{theirs}"
    );
}

/// pgbench is in bakeoff's own help, and `bakeoff help pgbench` is pgbench's, ending as
/// pgbench's does with where to report bugs.
#[test]
fn pgbench_is_in_bakeoffs_help_and_has_its_own() {
    let run = |args: &[&str]| {
        let o = std::process::Command::new(bakeoff())
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let top = run(&["--help"]);
    assert_eq!(
        top.lines()
            .filter(|l| l.trim_start().starts_with("pgbench "))
            .count(),
        1,
        "{top}"
    );
    let help = run(&["help", "pgbench"]);
    assert!(
        help.starts_with("pgbench is a benchmarking tool for PostgreSQL"),
        "{help}"
    );
    assert_eq!(help, run(&["pgbench", "--help"]));
    let last: Vec<&str> = help.lines().rev().take(2).collect();
    assert!(
        last[1].starts_with("Report bugs to <") && last[0].contains("home page: <"),
        "{help}"
    );
}
