//! `bakeoff pgbench` beside the real pgbench 15 on the suite's PostgreSQL: the same tables
//! from -i, the same report lines and counts from a built-in script, the same output from a
//! script covering the expression language, `\if` and `\gset`, the same messages for bad
//! scripts and options, and log lines of the same shape. Every masked field is a figure
//! (times, rates, latencies, epoch stamps, process ids).

mod common;

use std::path::Path;
use std::process::Command;

use common::pgbench::{bakeoff, comparable, real_pgbench, Target};

#[test]
fn init_makes_the_same_tables_and_says_the_same() {
    let t = Target::new("pgb_init");
    let mut said = Vec::new();
    let mut tables = Vec::new();
    let shape = "select table_name, column_name, data_type, is_nullable from information_schema.columns where table_name like 'pgbench%' order by 1, 2";
    let data = "select (select count(*) from pgbench_accounts), (select sum(bid) from pgbench_accounts), (select count(*) from pgbench_tellers), (select sum(bid) from pgbench_tellers), (select count(*) from pgbench_branches), (select count(*) from pgbench_history), (select string_agg(conname, ',' order by conname) from pg_constraint where conrelid::regclass::text like 'pgbench%')";
    for program in [real_pgbench(), bakeoff()] {
        // Each tool finds no tables, and says so as the server notices it.
        t.query("drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers");
        let o = t.run(&program, &["-i", "-s", "2", "--foreign-keys"]);
        let text = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{}: {text}", program.display());
        said.push(comparable(&text));
        tables.push((t.query(shape), t.query(data)));
    }
    assert_eq!(said[1], said[0], "--- bakeoff then pgbench");
    assert_eq!(tables[1], tables[0]);
    assert!(
        tables[0].1.starts_with("200000|300000|20|30|2|0|"),
        "{}",
        tables[0].1
    );
}

#[test]
fn a_builtin_run_reports_the_same_lines_and_counts() {
    let t = Target::new("pgb_builtin");
    let o = t.run(&bakeoff(), &["-i", "-s", "2", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for mode in ["prepared", "simple", "extended"] {
        for builtin in [&["-S"][..], &["-b", "tpcb-like"], &["-N"]] {
            let mut args = vec!["-c", "4", "-j", "2", "-t", "50", "-M", mode, "-r"];
            args.extend_from_slice(builtin);
            let ((theirs, rc0), (ours, rc1)) = t.both(&args);
            assert_eq!(
                (rc1, rc0),
                (0, 0),
                "--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
            );
            assert_eq!(
                comparable(&ours),
                comparable(&theirs),
                "-M {mode} {builtin:?}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
            );
            assert!(
                ours.contains("number of transactions actually processed: 200/200"),
                "{ours}"
            );
        }
    }
    // Each run starts from an empty history (its vacuum step truncates it): the last run,
    // bakeoff's -N, wrote one row per transaction.
    assert_eq!(
        t.query("select count(*) from pgbench_history").trim(),
        "200"
    );
}

const LANGUAGE: &str = r#"\set a 7 / 2
\set b -7 / 2
\set c 7 / 2.0
\set d -7 % 3
\set e 5 # 3 << 1
\set f debug(:a + :b * :c - :d + :e)
\set g debug(hash(10, 5432))
\set h debug(hash_fnv1a(10, 5432))
\set i debug(hash_murmur2(-3, 0))
\set j debug(abs(-5) + abs(-2.5))
\set k debug(greatest(1, 2.5, 2))
\set l debug(least(3, 1, 2))
\set m debug(int(2.5) + int(3.5) + int(-2.5))
\set n debug(double(3) / 4)
\set o debug(CASE WHEN :a > 3 THEN 1 = 1 ELSE false END)
\set p debug(1 < 2 AND NOT (2 <= 1) OR false)
\set q debug(NULL IS NULL)
\set r debug(2 IS TRUE)
\set s debug(:a <> 3)
\set t debug(~5 & 12 | 3)
\set u debug(pi() * 2)
\set v debug(sqrt(2) + ln(10) + exp(1) + pow(2, 10))
\set w debug(1.0 / 3)
\set x debug(2.5e20)
\set y debug(1e-5)
\set z debug(9223372036854775807)
\set aa debug(-9223372036854775808)
\set bb debug(mod(-7, 3))
\set cc debug(permute(0, 1))
\set dd debug(NULL AND true)
\set ee debug(true OR NULL)
\set ff debug(5 / -1)
\set gg debug(1 = 1.0)
\set hh debug(:from_d * 2)
\set r1 random(1, 10)
\set r2 debug(:r1 >= 1 AND :r1 <= 10)
\if :a = 3
SELECT :a + 1 AS plus, 'v' || :b AS word \gset out_
\elif :a = 4
SELECT 0 AS never \gset out_
\else
SELECT 1/0;
\endif
\set ii debug(:out_plus * 10)
\sleep 1 ms
\setshell sh echo 41
\set jj debug(:sh + 1)
\setshell endless yes 6
\set kk debug(:endless)
SELECT 'done' AS word \gset
"#;

#[test]
fn a_script_of_the_expression_language_says_the_same() {
    let t = Target::new("pgb_language");
    t.write("lang.sql", LANGUAGE);
    for mode in ["simple", "prepared"] {
        let ((theirs, rc0), (ours, rc1)) = t.both(&[
            "-n",
            "-f",
            "lang.sql",
            "-t",
            "2",
            "-M",
            mode,
            "-D",
            "from_d=21",
        ]);
        assert_eq!(
            (rc1, rc0),
            (0, 0),
            "--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
        );
        assert_eq!(
            comparable(&ours),
            comparable(&theirs),
            "--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
        );
        assert!(
            ours.matches("debug(script=0,command=").count() >= 2 * 30,
            "{ours}"
        );
        assert!(ours.contains("): int 42"), "{ours}");
    }
}

/// `\set`, `\if` and `\gset` deciding what a transaction writes: both tools end with the
/// same rows and counts.
#[test]
fn a_script_with_set_if_and_gset_counts_the_same() {
    let t = Target::new("pgb_counts");
    t.query("create table tally (k int primary key, n int not null)");
    t.query("insert into tally select k, 0 from generate_series(0, 3) k");
    t.write(
        "tally.sql",
        "\\set k :client_id % 4\nSELECT n AS before FROM tally WHERE k = :k \\gset\n\\if :before < 1000000\nUPDATE tally SET n = n + 1 WHERE k = :k;\n\\else\nSELECT 1;\n\\endif\n",
    );
    let mut after = Vec::new();
    for program in [real_pgbench(), bakeoff()] {
        t.query("update tally set n = 0");
        let o = t.run(
            &program,
            &["-n", "-f", "tally.sql", "-c", "4", "-j", "2", "-t", "25"],
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            out.contains("number of transactions actually processed: 100/100"),
            "{out}"
        );
        after.push(t.query("select string_agg(k || ':' || n, ' ' order by k) from tally"));
    }
    assert_eq!(after[1], after[0]);
    assert_eq!(after[0].trim(), "0:25 1:25 2:25 3:25");
}

#[test]
fn bad_scripts_and_options_are_refused_in_pgbenchs_words() {
    let t = Target::new("pgb_refusals");
    let scripts = [
        "\\set x\n",
        "\\set\n",
        "\\sleep 1 hours\n",
        "\\sleep abc\n",
        "\\if 1\nSELECT 1;\n",
        "\\endif\n",
        "\\if 1\n\\else\n\\else\n\\endif\n",
        "\\gset\n",
        "SELECT 1 \\gset a b\n",
        "\\set x 99999999999999999999\n",
        "\\set x foo(1)\n",
        "\\set x 1 $ 2\n",
        "SELECT 1;\n\\set x 1 +\n",
        "\\set x random(1)\n",
        "\\frob 1\n",
        "\n",
        // Failures at run time: the client aborts, the run says so and exits 2.
        "\\set x 1 / 0\n",
        "SELECT * FROM nonexist;\n",
        "\\set 1x 5\n",
        "SELECT 1 \\gset\n",
        "\\startpipeline\nSELECT 1;\n\\endpipeline\n",
    ];
    for s in scripts {
        t.write("bad.sql", s);
        let ((theirs, rc0), (ours, rc1)) = t.both(&["-n", "-f", "bad.sql", "-t", "1"]);
        assert_eq!(
            rc1, rc0,
            "{s:?}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
        );
        assert_eq!(comparable(&ours), comparable(&theirs), "{s:?}");
    }
    for args in [
        &["-c", "abc"][..],
        &["-c", "0"],
        &["-M", "foo"],
        &["-t", "5", "-T", "5"],
        &["a", "b"],
        &["-D", "x"],
        &["-F", "5"],
        &["-R", "0"],
        &["--max-tries=-1"],
        &["-f", "missing.sql"],
        &["-b", "nosuch"],
    ] {
        let ((theirs, rc0), (ours, rc1)) = t.both(args);
        assert_eq!(
            rc1, rc0,
            "{args:?}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
        );
        assert_eq!(comparable(&ours), comparable(&theirs), "{args:?}");
    }
    let ((theirs, _), (ours, rc)) = t.both(&["-x"]);
    assert_eq!(rc, 1);
    // getopt names the program by its path: compare from the message on.
    let tail = |s: &str| {
        s.split_once(": ")
            .map(|x| x.1.to_string())
            .unwrap_or_default()
    };
    assert_eq!(tail(&ours), tail(&theirs));
}

#[test]
fn transaction_logs_have_pgbenchs_fields() {
    let t = Target::initialized("pgb_logs");
    let fields = |program: &Path, args: &[&str]| -> Vec<Vec<String>> {
        for e in std::fs::read_dir(&t.dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pgbench_log")
            {
                std::fs::remove_file(p).unwrap();
            }
        }
        let o = t.run(program, args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut lines = Vec::new();
        for e in std::fs::read_dir(&t.dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pgbench_log")
            {
                for l in std::fs::read_to_string(&p).unwrap().lines() {
                    lines.push(l.split(' ').map(String::from).collect());
                }
            }
        }
        lines.sort();
        lines
    };
    let per_tx = [
        "-n",
        "-S",
        "-c",
        "2",
        "-j",
        "2",
        "-t",
        "3",
        "-l",
        "--max-tries=2",
    ];
    let (theirs, ours) = (
        fields(&real_pgbench(), &per_tx),
        fields(&bakeoff(), &per_tx),
    );
    assert_eq!(ours.len(), 6);
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        // client, transaction number, script and retries as pgbench's; the rest figures.
        assert_eq!((&a[0], &a[1], &a[3], &a[6]), (&b[0], &b[1], &b[3], &b[6]));
        assert_eq!(a.len(), b.len());
    }
    let agg = [
        "-n",
        "-S",
        "-c",
        "2",
        "-T",
        "2",
        "-l",
        "--aggregate-interval=1",
    ];
    let (theirs, ours) = (fields(&real_pgbench(), &agg), fields(&bakeoff(), &agg));
    assert!(!ours.is_empty());
    assert!(
        ours.iter().chain(&theirs).all(|l| l.len() == 15),
        "{ours:?} {theirs:?}"
    );
}

#[test]
fn pipelines_run_and_refuse_as_pgbenchs() {
    let t = Target::initialized("pgb_pipeline");
    t.write(
        "pipe.sql",
        "\\set aid random(1, 100000 * :scale)\n\\startpipeline\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\nUPDATE pgbench_accounts SET abalance = abalance WHERE aid = :aid;\n\\endpipeline\n\\set y debug(:aid >= 1)\n",
    );
    t.write(
        "gset.sql",
        "\\startpipeline\nSELECT 1 AS x \\gset\n\\endpipeline\n",
    );
    for (script, mode) in [
        ("pipe.sql", "extended"),
        ("pipe.sql", "prepared"),
        ("gset.sql", "prepared"),
    ] {
        let ((theirs, rc0), (ours, rc1)) = t.both(&["-n", "-f", script, "-t", "3", "-M", mode]);
        assert_eq!(
            rc1, rc0,
            "{script} {mode}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
        );
        assert_eq!(comparable(&ours), comparable(&theirs), "{script} {mode}");
    }
}

/// No PGPASSWORD: the password comes from the password file, as libpq finds it (the line for
/// this socket directory, port, database and user); a file others can read is not used.
#[test]
fn the_password_comes_from_the_password_file() {
    use std::os::unix::fs::PermissionsExt;
    let t = Target::new("pgb_pgpass");
    let [dir, port, db, user, password] = t.login();
    let password = password.replace('\\', "\\\\").replace(':', "\\:");
    let file = t.dir.join("pgpass");
    let line = format!("{dir}:{port}:{db}:{user}:{password}");
    std::fs::write(&file, format!("otherhost:*:*:*:wrong\n{line}\n")).unwrap();
    let run = |mode: u32| {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let mut c = Command::new(bakeoff());
        c.args(["pgbench", "-i", "-s", "1", "-I", "dt"]);
        t.env(&mut c);
        c.env_remove("PGPASSWORD").env("PGPASSFILE", &file);
        c.output().unwrap()
    };
    let o = run(0o600);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(0o644);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success());
    assert!(
        err.contains("has group or world access; permissions should be u=rw (0600) or less"),
        "{err}"
    );
}

/// --rate and --latency-limit: the same report lines (skipped, late, stddev, schedule lag)
/// and log fields, the lag measured from each transaction's schedule.
#[test]
fn a_paced_run_reports_its_schedule_lag_as_pgbench() {
    let t = Target::initialized("pgb_rate");
    let args = [
        "-n", "-S", "-c", "2", "-T", "2", "-R", "200", "-L", "50", "-P", "1",
    ];
    let ((theirs, rc0), (ours, rc1)) = t.both(&args);
    assert_eq!(
        (rc1, rc0),
        (0, 0),
        "--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
    );
    let report = |s: &str| {
        comparable(s)
            .lines()
            .filter(|l| !l.starts_with("progress:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        report(&ours),
        report(&theirs),
        "--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
    );
    let lag_ms = |s: &str| -> f64 {
        let l = s
            .lines()
            .find(|l| l.starts_with("rate limit schedule lag: avg "))
            .unwrap();
        l["rate limit schedule lag: avg ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    // A 200 tps schedule on an idle server: starting within a few milliseconds of it.
    assert!(lag_ms(&ours) < 5.0, "{ours}");
}

/// A partitioned pgbench_accounts: -i makes the same partitions, and a built-in's report
/// names them as pgbench's does.
#[test]
fn partitions_are_made_and_named_as_pgbench() {
    let t = Target::new("pgb_partitions");
    let parts = "select c.relname, pg_get_expr(c.relpartbound, c.oid) from pg_class c join pg_inherits i on i.inhrelid = c.oid where i.inhparent = 'pgbench_accounts'::regclass order by 1";
    let mut made = Vec::new();
    for program in [real_pgbench(), bakeoff()] {
        for method in ["range", "hash"] {
            let o = t.run(
                &program,
                &[
                    "-i",
                    "-s",
                    "1",
                    "-q",
                    "--partitions=3",
                    &format!("--partition-method={method}"),
                ],
            );
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            made.push(t.query(parts));
        }
    }
    assert_eq!(made[2..], made[..2]);
    let ((theirs, _), (ours, rc)) = t.both(&["-n", "-S", "-t", "5"]);
    assert_eq!(rc, 0);
    assert_eq!(comparable(&ours), comparable(&theirs));
    assert!(
        ours.contains("partition method: hash\npartitions: 3"),
        "{ours}"
    );
}

/// PGSERVICE: host, port, database, user and password from a service file, as libpq reads
/// them; a service it does not define is refused by name.
#[test]
fn a_service_file_names_where_to_connect() {
    let t = Target::new("pgb_service");
    let [dir, port, db, user, password] = t.login();
    let file = t.dir.join("pg_service.conf");
    let bench = format!("host={dir}\nport={port}\ndbname={db}\nuser={user}\npassword={password}");
    std::fs::write(
        &file,
        format!("[other]\nhost=nowhere\n\n[bench]\n{bench}\n"),
    )
    .unwrap();
    let run = |service: &str| {
        let mut c = Command::new(bakeoff());
        c.args(["pgbench", "-i", "-s", "1", "-I", "dt"])
            .current_dir(&t.dir);
        for v in [
            "PGHOST",
            "PGPORT",
            "PGUSER",
            "PGPASSWORD",
            "PGDATABASE",
            "PGPASSFILE",
        ] {
            c.env_remove(v);
        }
        c.env("PGSERVICEFILE", &file).env("PGSERVICE", service);
        c.output().unwrap()
    };
    let o = run("bench");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(t.query("select count(*) from pgbench_branches").trim(), "0");
    let o = run("missing");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains("definition of service \"missing\" not found"),
        "{err}"
    );
}

/// --verbose-errors: each serialization failure and what the client does next, in pgbench's
/// info lines (masked: client ids, command numbers and tries vary with timing).
#[test]
fn verbose_errors_say_each_retry_as_pgbench() {
    let t = Target::new("pgb_verbose");
    t.query("CREATE TABLE ser (id int PRIMARY KEY, v int); INSERT INTO ser VALUES (1, 0)");
    t.write(
        "ser.sql",
        "BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT v FROM ser WHERE id = 1;\n\\sleep 5 ms\nUPDATE ser SET v = v + 1 WHERE id = 1;\nEND;\n",
    );
    let args = [
        "-n",
        "-f",
        "ser.sql",
        "-c",
        "4",
        "-t",
        "10",
        "--max-tries=2",
        "--verbose-errors",
    ];
    let shapes = |program: &Path| -> std::collections::BTreeSet<String> {
        let o = t.run(program, &args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        err.lines()
            .filter(|l| l.contains("client "))
            .map(|l| {
                l.chars()
                    .map(|c| if c.is_ascii_digit() { 'N' } else { c })
                    .collect()
            })
            .map(|mut l: String| {
                while l.contains("NN") {
                    l = l.replace("NN", "N");
                }
                l
            })
            .collect()
    };
    let theirs = shapes(&real_pgbench());
    let ours = shapes(&bakeoff());
    assert!(
        ours.iter()
            .any(|l| l.contains("repeats the transaction after the error (try N/N)")),
        "{ours:#?}"
    );
    assert!(
        ours.is_subset(&theirs) || theirs.is_subset(&ours),
        "--- bakeoff\n{ours:#?}\n--- pgbench\n{theirs:#?}"
    );
    let error = "pgbench: client N got an error in command N (SQL) of script N; ERROR:  could not serialize access due to concurrent update";
    assert!(
        ours.contains(error) && theirs.contains(error),
        "--- bakeoff\n{ours:#?}\n--- pgbench\n{theirs:#?}"
    );
}

/// A built-in script beside one's own: pgbench takes the scale from pgbench_branches whenever
/// any built-in runs (so the built-in picks from every account), and `:scale` in the other
/// script is that scale too. bakeoff took it only when every script was built in.
#[test]
fn a_builtin_beside_a_file_script_reads_the_scale_from_the_tables() {
    let t = Target::new("pgb_mixed_scale");
    let o = t.run(&bakeoff(), &["-i", "-s", "3", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    t.write("scale.sql", "\\set s debug(:scale)\nSELECT 1;\n");
    for program in [real_pgbench(), bakeoff()] {
        let o = t.run(
            &program,
            &["-n", "-f", "scale.sql@1", "-b", "select-only@1", "-t", "20"],
        );
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{}: {err}", program.display());
        assert!(
            out.contains("scaling factor: 3"),
            "{}: {out}",
            program.display()
        );
        assert!(
            !err.contains("): int ") || err.contains("): int 3"),
            "{}: {err}",
            program.display()
        );
    }
}
