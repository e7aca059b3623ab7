//! Scripts written for sysbench 0.5's API and sysbench's error paths, run by the real sysbench
//! 1.0.20 and by bakeoff (invoked as `sysbench`) on the suite's MariaDB, each in a database
//! and a directory of its own: the exit codes and the output compared.
//!
//! What the comparisons mask (`common::masked`): the banner's words after `sysbench 1.0.20`,
//! every number (times, rates, latencies), and the name of each tool's database. Where a count is the point (init's statements)
//! it is compared unmasked from the report. FATAL lines from several threads are compared as
//! multisets, a "(last message repeated N times)" counting as the N lines it stands for: their
//! order, and so which of them sysbench's logger folds, is the threads' race.

mod common;

use std::path::Path;
use std::process::Command;

use bakeoff_testkit::server;
use common::{bakeoff_as_sysbench, db, masked, parse_report, real_sysbench};

/// `program` on the suite's server, database `db`, in `dir`: (exit code, stdout + stderr).
fn on_db(program: &Path, dir: &Path, db: &str, args: &[&str]) -> (i32, String) {
    let s = server();
    let o = Command::new(program)
        .args(args)
        .arg(format!("--mysql-socket={}", s.socket().display()))
        .arg(format!("--mysql-user={}", s.user()))
        .arg(format!("--mysql-password={}", s.password().expose()))
        .arg(format!("--mysql-db={db}"))
        .current_dir(dir)
        .output()
        .expect("run");
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code().unwrap_or(-1), text)
}

/// Each tool's run of `script` (as `s.lua`) with `args`: [sysbench's, bakeoff's], each in a
/// database and a directory of its own, named after `case` (made on the case's first run).
fn both(case: &str, script: &str, args: &[&str]) -> [(i32, String); 2] {
    static DATABASES: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    [("sb", real_sysbench()), ("bo", bakeoff_as_sysbench())].map(|(who, program)| {
        let dir = bakeoff_testkit::scratch::dir(&format!("compat-{case}-{who}"));
        std::fs::write(dir.join("s.lua"), script).unwrap();
        let name = format!("compat_{case}_{who}");
        let database = {
            let mut made = DATABASES.lock().unwrap();
            match made.iter().find(|(n, _)| *n == name) {
                Some((_, d)) => d.clone(),
                None => {
                    let d = db(&name);
                    made.push((name, d.clone()));
                    d
                }
            }
        };
        let mut all = vec!["s.lua"];
        all.extend_from_slice(args);
        // Each tool has a database of its own: its name, in a server's message, is masked.
        let (code, text) = on_db(&program, &dir, &database, &all);
        (code, text.replace(&database, "<db>"))
    })
}

/// Both tools end alike and print the same, numbers masked.
fn same(case: &str, script: &str, args: &[&str]) {
    let [(want_code, want), (code, got)] = both(case, script, args);
    assert_eq!(
        (code, masked(&got)),
        (want_code, masked(&want)),
        "{case}\n--- bakeoff ---\n{got}\n--- sysbench ---\n{want}"
    );
}

#[test]
fn the_0_5_api_connects_by_itself() {
    // sysbench 1.0 opens the 0.5 connection at the first call that needs one.
    same(
        "implicit",
        "function event() db_query(\"SELECT 1\") end\n",
        &["--events=3", "run"],
    );
}

#[test]
fn a_script_without_options_sees_every_option_as_a_global() {
    let script = r#"
function event()
  print(db_driver, num_threads, threads, my_opt, oltp_tables_count, flag == "")
  print(type(mysql_host), mysql_host[1], mysql_ssl, thread_stack_size, mysql_ignore_errors[1])
  print(max_requests, events, rand_type, pgsql_port, type(help))
end
function help() end
"#;
    same(
        "globals",
        script,
        &[
            "--my-opt=5",
            "--oltp-tables-count=3",
            "--flag",
            "--events=1",
            "run",
        ],
    );
}

/// A script as people wrote them for 0.5: prepare and cleanup over db_connect, statements
/// bound from a table, a thread's statement prepared in thread_init. Its end state, read back
/// through the 1.0 API, is the same under both tools.
#[test]
fn a_0_5_script_prepares_runs_and_cleans_up() {
    let script = r#"
function prepare()
  db_connect()
  db_query("CREATE TABLE t05 (id INT PRIMARY KEY, v INT NOT NULL)")
  db_bulk_insert_init("INSERT INTO t05 VALUES")
  for i = 1, 10 do db_bulk_insert_next("(" .. i .. ", 0)") end
  db_bulk_insert_done()
end
function thread_init(thread_id)
  stmt = db_prepare("UPDATE t05 SET v = v + 1 WHERE id = ?")
  params = {1}
  db_bind_param(stmt, params)
end
function event(thread_id)
  params[1] = sb_rand(1, 10)
  db_execute(stmt)
  db_query("SELECT SUM(v) FROM t05")
end
function cleanup()
  local con = sysbench.sql.driver():connect()
  print("sum", con:query_row("SELECT SUM(v) FROM t05"))
  db_query("DROP TABLE t05")
end
"#;
    for (name, args) in [
        ("prepare", &["prepare"][..]),
        ("run", &["--events=20", "--threads=2", "run"]),
        ("cleanup", &["cleanup"]),
    ] {
        let [(want_code, want), (code, got)] = both("old_api", script, args);
        assert_eq!(
            (code, masked(&got)),
            (want_code, masked(&want)),
            "{name}\n--- bakeoff ---\n{got}\n--- sysbench ---\n{want}"
        );
        if name == "cleanup" {
            assert!(got.contains("sum\t20"), "{got}");
        }
    }
}

#[test]
fn the_0_5_options_are_warned_about_before_the_banner() {
    same(
        "warned",
        "function event() end\n",
        &[
            "--num-threads=2",
            "--max-requests=5",
            "--tx-rate=1000",
            "run",
        ],
    );
}

#[test]
fn sysbenchs_module_paths_are_bakeoffs() {
    same("paths", "print(package.path)\nprint(package.cpath)\n", &[]);
}

/// sysbench counts the statements of init() in the run's totals.
#[test]
fn inits_statements_count_in_the_report() {
    let script = r#"
function init()
  local con = sysbench.sql.driver():connect()
  for i = 1, 5 do con:query("SELECT 1") end
  con:query("DO 1")
end
function event() db_query("SELECT 1") end
"#;
    let [(_, want), (code, got)] = both("init_counts", script, &["--events=3", "run"]);
    assert_eq!(code, 0, "{got}");
    let (w, g) = (parse_report(&want), parse_report(&got));
    for key in ["read", "other", "total", "queries", "transactions"] {
        assert_eq!(
            g.get(key),
            w.get(key),
            "{key}\n{got}\n--- sysbench ---\n{want}"
        );
    }
    assert_eq!(g["read"], 8.0, "{got}");
}

/// A parallel command with one thread runs in the main state: no "Initializing worker
/// threads" line. A command that returns false exits 1, saying nothing.
#[test]
fn commands_run_and_fail_as_sysbenchs() {
    let script = r#"
sysbench.cmdline.commands = {
  hello = {function() print("hello " .. sysbench.tid) end, sysbench.cmdline.PARALLEL_COMMAND},
  nope = {function() return false end},
}
function event() end
"#;
    same("parallel_one", script, &["hello"]);
    // Two threads print at once: sysbench's print writes the text and its newline apart, so
    // its lines interleave at random ("hello 1hello 0" then an empty line, seen on this
    // machine). Compared: the exit, each thread's greeting, and everything else.
    let [(want_code, want), (code, got)] = both("parallel_two", script, &["--threads=2", "hello"]);
    let apart = |t: &str| -> (Vec<String>, String) {
        let mut hellos: Vec<String> = t
            .match_indices("hello ")
            .map(|(i, _)| t[i..i + 7].to_string())
            .collect();
        hellos.sort();
        let rest: String = masked(&t.replace("hello 0", "").replace("hello 1", ""))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        (hellos, rest)
    };
    assert_eq!(
        (code, apart(&got)),
        (want_code, apart(&want)),
        "parallel_two\n--- bakeoff ---\n{got}\n--- sysbench ---\n{want}"
    );
    same("returns_false", script, &["nope"]);
}

/// The FATAL lines of a run: the distinct ones, sorted, and how many lines they are in all,
/// sysbench's "(last message repeated N times)" counted as the N lines it stands for; then
/// the rest of the output, masked. Which message a repeat count belongs to is the threads'
/// race in sysbench's logger: its count and the next message are written apart, so with
/// three threads failing alike it once printed two counts after the first line and the
/// lines they counted after them. Only the distinct lines and the total are its to keep.
fn fatal_lines(text: &str) -> (Vec<String>, usize, String) {
    let (mut fatal, mut total, mut rest) = (Vec::<String>::new(), 0, Vec::new());
    for line in text.lines() {
        let repeated = line
            .strip_prefix("(last message repeated ")
            .and_then(|r| r.strip_suffix(" times)"))
            .and_then(|n| n.parse::<usize>().ok());
        match repeated {
            Some(n) if total > 0 => total += n,
            _ if line.starts_with("FATAL: ") => {
                fatal.push(line.to_string());
                total += 1;
            }
            _ => rest.push(line),
        }
    }
    fatal.sort();
    fatal.dedup();
    (fatal, total, masked(&rest.join("\n")))
}

/// A worker's error: each failed thread's FATAL line, no report, exit 1. Each thread sleeps
/// first so that all three are in their event when the first fails, as in sysbench.
#[test]
fn each_failed_thread_says_so_and_no_report_follows() {
    for (case, script) in [
        (
            "thread_run",
            "function event() os.execute('sleep 0.3') error('boom ' .. sysbench.tid) end\n",
        ),
        (
            "thread_init",
            "function thread_init() if sysbench.tid == 1 then error('no') end end\nfunction event() end\n",
        ),
        ("init", "function init() error('no init') end\nfunction event() end\n"),
        // Every thread fails alike: sysbench's logger says the repeats once, as a count.
        (
            "all_thread_init",
            "function thread_init() db_prepare('SELECT * FROM nowhere') end\nfunction event() end\n",
        ),
        // 0.5's calls without a connection, and a refused statement, in their own words.
        (
            "uninitialized",
            "function event() db_bulk_insert_next('(1)') end\n",
        ),
        // Each thread fails on a line of its own: sysbench's logger never says a count for
        // the repeats of its last line, so alike last lines could not be counted.
        (
            "query_failed",
            "function event()\n  os.execute('sleep 0.3')\n  if sysbench.tid == 0 then db_query('SELEC 0')\n  elseif sysbench.tid == 1 then\n    db_query('SELEC 1')\n  else\n    db_query('SELEC 2')\n  end\nend\n",
        ),
    ] {
        let [(want_code, want), (code, got)] = both(case, script, &["--threads=3", "--time=2", "run"]);
        assert_eq!(
            (code, fatal_lines(&got)),
            (want_code, fatal_lines(&want)),
            "{case}\n--- bakeoff ---\n{got}\n--- sysbench ---\n{want}"
        );
        assert!(!got.contains("General statistics"), "{got}");
    }
}

/// A failing report hook or done() is said and the run still succeeds (the intervals' hook at
/// every interval, folded by the logger); a failing command or prepare ends it, exit 1, each
/// in sysbench's words.
#[test]
fn failing_hooks_done_and_commands_read_as_sysbenchs() {
    let hooks = [
        (
            "cumulative",
            "function event() end\nfunction sysbench.hooks.report_cumulative(stat) error('cum boom') end\n",
            &["--time=1", "run"][..],
        ),
        (
            "done",
            "function event() end\nfunction done() error('done boom') end\n",
            &["--time=1", "run"],
        ),
        (
            "command",
            "sysbench.cmdline.commands = { boom = {function() error('cmd boom') end} }\nfunction prepare() error('prep boom') end\nfunction event() end\n",
            &["boom"],
        ),
        (
            "prepare",
            "sysbench.cmdline.commands = { boom = {function() error('cmd boom') end} }\nfunction prepare() error('prep boom') end\nfunction event() end\n",
            &["prepare"],
        ),
    ];
    for (case, script, args) in hooks {
        same(case, script, args);
    }
    // How many intervals report before the end is the clock's: their FATAL lines are read as
    // a set, the rest (the final report included) as it is.
    let script = "function event() end\nfunction sysbench.hooks.report_intermediate(stat) error('hook boom') end\n";
    let [(want_code, want), (code, got)] = both(
        "intermediate",
        script,
        &["--report-interval=1", "--time=2", "run"],
    );
    let (want_fatal, _, want_rest) = fatal_lines(&want);
    let (got_fatal, _, got_rest) = fatal_lines(&got);
    assert_eq!(
        (code, got_fatal, got_rest),
        (want_code, want_fatal, want_rest),
        "--- bakeoff ---\n{got}\n--- sysbench ---\n{want}"
    );
}
