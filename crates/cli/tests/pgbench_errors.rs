//! A script's errors beside pgbench's, case by case: the kinds of failure pgbench's own TAP
//! tests check (SQL, \shell, \set and its arithmetic, \setshell, \sleep, \gset and \aset,
//! pipelines, what a parser refuses), each written here as a small script of our own and run
//! by both tools with the same options. The exit code and every line both print are compared,
//! but for the figures and the version line (`common::pgbench::comparable`).

mod common;

use common::pgbench::{comparable, Target};

/// The variables pgbench's TAP tests define for their error cases.
const DEFINES: [&str; 9] = [
    "-Dfoo=bla",
    "-Dnull=null",
    "-Dtrue=true",
    "-Done=1",
    "-Dzero=0.0",
    "-Dbadtrue=trueXXX",
    "-Dmaxint=9223372036854775807",
    "-Dminint=-9223372036854775808",
    "-Dword=abc",
];

fn cases() -> Vec<String> {
    let many_params = format!(
        "\\set i 0\nSELECT GREATEST({});\n",
        vec![":i"; 256].join(", ")
    );
    let many_words = format!("\\shell echo {}\n", vec!["w"; 255].join(" "));
    let long_line = format!("\\shell echo {}\n", "x".repeat(300));
    let mut v: Vec<String> = [
        // SQL
        "SELECT 2 * ;\n",
        // \shell
        "\\shell no-such-command-here\n",
        "\\shell echo ::lit :nosuchvar\n",
        "\\shell\n",
        // \set: the parser's refusals
        "\\set i 2 *\n",
        "\\set i notAFunction(1)\n",
        "\\set i ;\n",
        "\\set i\n",
        "\\set i CASE FALSE THEN 1 END\n",
        "\\set d ln(2.0, 3.0))\n",
        "\\set i least())\n",
        "\\set i greatest(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)\n",
        // \set: failures at run time
        "\\set . 1\n",
        "\\set i 5 / 0\n",
        "\\set i 5 % 0\n",
        "\\set i :nosuchvar\n",
        "\\set i random(9, 2)\n",
        "\\set i random(:minint, :maxint)\n",
        "\\set i random_gaussian(0, 10, 1.5)\n",
        "\\set i random_exponential(0, 10, 0.0)\n",
        "\\set i random_zipfian(0, 10, 1)\n",
        "\\set i random_zipfian(0, 10, 2000)\n",
        "\\set i :foo + 1\n",
        "\\set b NOT 0.5\n",
        "\\set i TRUE + 1\n",
        "\\set d sqrt(FALSE)\n",
        "\\set b random(TRUE, FALSE)\n",
        "\\set b :badtrue or true\n",
        "\\set i permute(1, 0)\n",
        // \set: arithmetic overflow
        "\\set i int(1E40)\n",
        "\\set i (1 << 62) + (1 << 62)\n",
        "\\set i 0 - (1 << 62) - (1 << 62) - (1 << 62)\n",
        "\\set i 3 * (1 << 62)\n",
        "\\set i :minint / -1\n",
        "\\set i :minint % -1\n\\set j debug(:i)\n",
        // \setshell
        "\\setshell i echo -n two\n",
        "\\setshell var\n",
        "\\setshell var no-such-command-here\n",
        // \sleep
        "\\sleep :nosuchvar\n",
        "\\sleep 1 2 3\n",
        "\\sleep\n",
        "\\sleep 1 day\n",
        "\\sleep :word\n",
        // A meta-command in capitals: pgbench says some as the script writes them and
        // others in lower case.
        "\\SET i 5 / 0\n",
        "\\SET . 1\n",
        "\\Sleep :nosuchvar\n",
        "\\SHELL no-such-command-here\n",
        "\\EndPipeline\n",
        "\\SETSHELL var no-such-command-here\n",
        "\\IF :nosuchvar\n\\endif\n",
        "\\if false\n\\ELIF :nosuchvar\n\\endif\n",
        // misc
        "\\notacommand\n",
        "",
        // \gset and \aset
        "SELECT WHERE FALSE \\gset\n",
        "\\gset\n",
        "\\set i +1\n\\gset\n",
        "SELECT 1 \\gset a b\n",
        "SELECT 1 AS i \\gset\n\\gset\n",
        "DROP TABLE IF EXISTS no_such_table_here \\gset\n",
        "SELECT 1 \\gset\n",
        "SELECT 1 AS \"bad name!\" \\gset\n",
        "SELECT 1 AS a UNION SELECT 2 ORDER BY 1 \\gset\n",
        "\\; SELECT 1 AS i8 WHERE FALSE \\; \\aset\n\\set i debug(:i8)\n",
        // What works, with the values it sets (debug() prints them)
        "\\; \\; SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\n\\set i debug(:i5)\n",
        "\\; SELECT 6 AS i6 \\; SELECT 7 AS i7 \\; \\aset\n\\set a debug(:i6)\n\\set b debug(:i7)\n",
        "SELECT 3 AS i3 \\gset x_\n\\set i debug(:x_i3)\n",
        "\\set one 1.0\n\\sleep :one ms\n\\setshell two\\\n  echo \\\n    2\n\\set n debug(:two)\n",
        // pipelines
        "\\startpipeline\n\\startpipeline\n",
        "\\endpipeline\n",
        "\\startpipeline\nSELECT 1 \\gset f\n\\endpipeline\n",
        "\\startpipeline\nSELECT 1;\n",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend([many_params, many_words, long_line]);
    v
}

#[test]
fn each_kind_of_script_error_is_said_as_pgbench_says_it() {
    let t = Target::new("pgb_errors");
    let mut differ = Vec::new();
    let mut errors = 0;
    for (i, script) in cases().iter().enumerate() {
        let file = format!("case{i}.sql");
        t.write(&file, script);
        for mode in ["prepared", "simple"] {
            let mut args = vec!["-n", "-t", "1", "-M", mode, "-f", &file];
            args.extend(DEFINES);
            let ((theirs, rc0), (ours, rc1)) = t.both(&args);
            errors += (rc0 != 0) as usize;
            if rc1 != rc0 || comparable(&ours) != comparable(&theirs) {
                differ.push(format!(
                    "{script:?} -M {mode}: exit {rc1} where pgbench's is {rc0}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
                ));
            }
        }
    }
    // Most cases are errors; a sweep where pgbench refused nothing would prove nothing.
    assert!(errors > 100, "pgbench failed only {errors} runs");
    assert!(
        differ.is_empty(),
        "{}\n\n{}",
        differ.len(),
        differ.join("\n\n")
    );
}

/// Expressions at the edges of pgbench's types: NULL through every function, booleans where
/// numbers go, doubles' infinities and NaN, integer overflow, the argument limit.
const EXPRESSIONS: &[&str] = &[
    ":null + 1",
    "-(:maxint + 0) - 2",
    "- :minint",
    "-0.0",
    ":null = 1",
    "TRUE = 1",
    "TRUE < FALSE",
    "1 = 1.0",
    "abs(:minint)",
    ":null IS NULL",
    "debug(:null)",
    "int(:null)",
    "NULL AND TRUE",
    "0.0 / 0",
    "1 / 0.0",
    "TRUE * 2.0",
    "1 << 64",
    "1 << -1",
    "pow(2, 0.5)",
    "least(1, 2.5)",
    "greatest(TRUE, 1)",
    "5 % 2.0",
    "NOT 1",
    "1 AND TRUE",
    "TRUE OR 0",
    "NOT :null",
    "CASE WHEN 1 THEN 2 END",
    "CASE WHEN :null THEN 2 ELSE 3 END",
    "TRUE + 1",
    "(1 << 62) + (1 << 62)",
    "3 * (1 << 62)",
    ":minint / -1",
    ":minint % -1",
    "greatest(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)",
    "least(debug(1),2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)",
    "exp(1000)",
    "ln(0)",
    "sqrt(-1)",
    "int(1E40)",
    "int(-0.5)",
    "int(2.5)",
    "double(TRUE)",
    "hash(:null)",
    "random(:null, 5)",
    "5 <> 5.0",
    "2 != 3",
    "~ 5",
    "~ 1.5",
    "5 & 1.0",
    "1 # 3",
    "abs(-2.5)",
    "1.0 / 3",
    "1e308 * 10",
    "random(1, 2.5)",
];

#[test]
fn expressions_at_the_edges_of_their_types_give_pgbenchs_values_and_errors() {
    let t = Target::new("pgb_exprs");
    let mut differ = Vec::new();
    for (i, e) in EXPRESSIONS.iter().enumerate() {
        let file = format!("expr{i}.sql");
        t.write(&file, &format!("\\set b {e}\n\\set c debug(:b)\n"));
        let mut args = vec!["-n", "-t", "1", "--random-seed=5", "-f", &file];
        args.extend(DEFINES);
        let ((theirs, rc0), (ours, rc1)) = t.both(&args);
        if rc1 != rc0 || comparable(&ours) != comparable(&theirs) {
            differ.push(format!(
                "{e}: exit {rc1}/{rc0}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n\n"));
}

/// Command lines pgbench refuses (the kinds its no-server TAP test checks), and its listings.
const COMMAND_LINES: &[&str] = &[
    "--no-such-option",
    "-f nope.sql",
    "-b nope",
    "-b select-only@two",
    "-b select-only@-2",
    "-c four",
    "-j five",
    "-i -s three",
    "-t many",
    "-T long",
    "-N -l --aggregate-interval=5 -t 9 -T 2",
    "-P 1 --progress-timestamp -T 5 -t 9",
    "--define abc",
    "-D 1x=5",
    "-D a-b=2 -t 1",
    "-F 5",
    "-M fast",
    "--progress=0",
    "--rate=0.0",
    "--latency-limit=0.0",
    "--sampling-rate=0",
    "--aggregate-interval=-2",
    "-b se@0 -b si@0 -b tpcb@0",
    "-i -S",
    "-S -F 80",
    "-b s",
    "--progress-timestamp",
    "-I dt",
    "-i -I dtx",
    "--random-seed=two",
    "-i --partition-method=NOPE",
    "-i --partitions -2",
    "-i --partition-method=range",
    "--max-tries -3",
    "--max-tries 0",
    "--sampling-rate=0.5",
    "-l --sampling-rate=0.5 --aggregate-interval=2",
    "--aggregate-interval=2",
    "--log-prefix=y",
    "-l -T 1 --aggregate-interval=4",
    "-l -T 7 --aggregate-interval=2",
    "-b list",
    "--show-script si",
    // No server there (a socket directory, then a port on this machine); a seed is said
    // before -i refuses it.
    "-h /nonexistent-bakeoff-dir -t 1",
    "-h 127.0.0.1 -p 1 -t 1",
    "-i --random-seed=1 -h /nonexistent-bakeoff-dir",
    // What pgbench refuses while it reads its options comes before any connection; -i's
    // connection failure names initialization; a seed reads as sscanf's %lu.
    "-b tpcb-like@0 -h /nonexistent-bakeoff-dir",
    "-f /dev/null -h /nonexistent-bakeoff-dir",
    "-I x",
    "-i -I d,t -h /nonexistent-bakeoff-dir",
    "-i -h /nonexistent-bakeoff-dir",
    "--show-script=nope",
    "--random-seed=-1 -h /nonexistent-bakeoff-dir -t 1",
    "--random-seed=+7 -h /nonexistent-bakeoff-dir -t 1",
    "--random-seed=7x -t 1",
    // A port libpq refuses fails the connection (no address is looked up for these).
    "-p 0 -t 1",
    "-p abc -t 1",
    "-i -p 99999",
];

/// Scripts refused before anything runs (the kinds of the same test).
const UNPARSABLE: &[&str] = &[
    "\\if 2\n",
    "\\elif 2\n",
    "\\else\n",
    "\\endif\n",
    "\\if 1\n\\else\n\\elif 0\n\\endif\n",
    "\\if\n\\endif\n",
    "\\if 0\n\\elif -\n\\endif\n",
    "\\if 0\n\\else X\n\\endif\n",
    "\\if 0\n\\endif X\n",
    "\\set i greatest()\n",
    "\\set i hash()\n",
    "\\set i hash(1, 2, 3)\n",
    "\\set i 200000000000000000000\n",
    "\\set d 2.0E309\n",
    "\\set d .2E310\n",
    "\\set i 2 -\n",
    "\\set i permute(2)\n",
    "\\set i permute(1, 2, 3, 4)\n",
];

#[test]
fn command_lines_and_scripts_pgbench_refuses_are_refused_alike() {
    let t = Target::new("pgb_refused");
    let mut differ = Vec::new();
    let mut refused = 0;
    let mut check = |args: &[&str], what: &str| {
        let ((theirs, rc0), (ours, rc1)) = t.both(args);
        refused += (rc0 == 1) as usize;
        // getopt names the program by its path: the rest of its line is compared.
        let tail = |s: &str| {
            s.replace("/usr/lib/postgresql/15/bin/pgbench:", "pgbench:")
                .replace(
                    &format!("{}:", common::pgbench::bakeoff().display()),
                    "pgbench:",
                )
        };
        if rc1 != rc0 || comparable(&tail(&ours)) != comparable(&tail(&theirs)) {
            differ.push(format!(
                "{what}: exit {rc1}/{rc0}\n--- bakeoff\n{ours}\n--- pgbench\n{theirs}"
            ));
        }
    };
    for line in COMMAND_LINES {
        let args: Vec<&str> = line.split(' ').collect();
        check(&args, line);
    }
    let many = vec!["-S"; 129];
    check(&many, "-S x 129");
    for (i, script) in UNPARSABLE.iter().enumerate() {
        let file = format!("bad{i}.sql");
        t.write(&file, script);
        check(&["-n", "-t", "1", "-f", &file], script);
    }
    assert!(refused > 50, "pgbench refused only {refused}");
    // -V: pgbench's first words, which wrappers read for the major version.
    let ((theirs, _), (ours, rc)) = t.both(&["-V"]);
    let major = |s: &str| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    assert_eq!(rc, 0);
    assert_eq!(
        major(&ours).split('.').next(),
        major(&theirs).split('.').next()
    );
    assert!(
        differ.is_empty(),
        "{}\n\n{}",
        differ.len(),
        differ.join("\n\n")
    );
}
