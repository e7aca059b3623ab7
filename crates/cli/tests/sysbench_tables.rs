//! Tables shared with the real sysbench, in sysbench's grammar: either tool's prepare and
//! cleanup work on what the other made, and a prepare that finds the tables fails as
//! sysbench's does, leaving nothing behind (no marker table).

use std::process::{Command, Output};

use bakeoff_testkit::{connect, rt, schema, server};

/// `program` on the suite's server, in database `db`, with sysbench's connection options.
fn on_db(program: &str, db: &str, args: &[&str]) -> Output {
    let s = server();
    Command::new(program)
        .args(args)
        .arg(format!("--mysql-socket={}", s.socket().display()))
        .arg(format!("--mysql-user={}", s.user()))
        .arg(format!("--mysql-password={}", s.password().expose()))
        .arg(format!("--mysql-db={db}"))
        .output()
        .expect("run")
}

fn sysbench(db: &str, args: &[&str]) -> Output {
    assert!(
        std::path::Path::new("/usr/bin/sysbench").is_file(),
        "these tests need the real sysbench 1.0.20: `sudo apt-get install sysbench` (scripts/setup installs it)"
    );
    on_db("/usr/bin/sysbench", db, args)
}

fn bakeoff(db: &str, args: &[&str]) -> Output {
    on_db(env!("CARGO_BIN_EXE_bakeoff"), db, args)
}

fn tables_in(db: &str) -> Vec<String> {
    let opts = server().connect_options();
    rt().block_on(async {
        let mut c = connect(&opts).await;
        let rows = c
            .query_rows(&format!(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY table_name"
            ))
            .await
            .expect("list tables");
        c.quit().await;
        rows.into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect()
    })
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn each_tools_cleanup_drops_what_the_others_prepare_made() {
    let db = schema("shared_tables").database.expect("schema");
    let args = ["oltp_read_only", "--tables=2", "--table-size=100"];
    let prepare = [&args[..], &["prepare"]].concat();
    let cleanup = [&args[..], &["cleanup"]].concat();

    let o = sysbench(&db, &prepare);
    assert!(o.status.success(), "{}", text(&o));
    // bakeoff's prepare finds sysbench's tables: refused, nothing created.
    let o = bakeoff(&db, &prepare);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("FATAL: Table 'sbtest1' already exists"),
        "{}",
        text(&o)
    );
    assert_eq!(tables_in(&db), ["sbtest1", "sbtest2"]);
    // bakeoff's cleanup drops sysbench's tables, saying so as sysbench does.
    let o = bakeoff(&db, &cleanup);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Dropping table 'sbtest1'...\nDropping table 'sbtest2'...\n"),
        "{out}"
    );
    assert!(tables_in(&db).is_empty(), "{:?}", tables_in(&db));

    // And the other way round: no marker table, and sysbench's cleanup leaves nothing.
    let o = bakeoff(&db, &prepare);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(tables_in(&db), ["sbtest1", "sbtest2"]);
    let o = sysbench(&db, &cleanup);
    assert!(o.status.success(), "{}", text(&o));
    assert!(tables_in(&db).is_empty(), "{:?}", tables_in(&db));
}

#[test]
fn a_single_thread_prepare_prints_sysbenchs_lines_in_sysbenchs_order() {
    let db = schema("shared_order").database.expect("schema");
    let args = [
        "oltp_point_select",
        "--tables=2",
        "--table-size=50",
        "--threads=1",
        "prepare",
    ];
    let o = sysbench(&db, &args);
    assert!(o.status.success(), "{}", text(&o));
    let want = String::from_utf8_lossy(&o.stdout).into_owned();
    let o = sysbench(&db, &["oltp_point_select", "--tables=2", "cleanup"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = bakeoff(&db, &args);
    assert!(o.status.success(), "{}", text(&o));
    let got = String::from_utf8_lossy(&o.stdout).into_owned();
    let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&got), body(&want));
    assert!(got.starts_with("sysbench 1.0.20 (bakeoff "), "{got}");
}

/// sysbench's own driver test (drv_common.sh): a script's events through the engine, one Lua
/// state per thread, the report as sysbench's, line for line but the figures.
#[test]
fn a_scripts_run_reports_as_sysbenchs() {
    let db = schema("script_run").database.expect("schema");
    let dir = bakeoff_testkit::scratch::dir("script-run");
    let path = dir.join("drv.lua");
    std::fs::write(
        &path,
        "function event()\n  c = c or sysbench.sql.driver():connect()\n  c:query(\"SELECT 1\")\nend\n",
    )
    .unwrap();
    let script = path.to_str().unwrap();
    let args = [script, "--events=10", "--threads=2", "run"];
    let shape = |o: &Output| -> (Option<i32>, Vec<String>) {
        let out = String::from_utf8_lossy(&o.stdout);
        let lines = out
            .lines()
            .skip(1) // the banner's second half differs by design
            .map(|l| {
                l.split_whitespace()
                    .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        (o.status.code(), lines)
    };
    let want = sysbench(&db, &args);
    let got = bakeoff(&db, &args);
    assert_eq!(
        shape(&got),
        shape(&want),
        "{}\n---\n{}",
        text(&got),
        text(&want)
    );
    assert!(
        String::from_utf8_lossy(&got.stdout).contains("total number of events:              10"),
        "{}",
        text(&got)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--mysql-compression=on`: the same line to both tools through prepare, a single-thread run
/// of a fixed number of events and cleanup (that the session is compressed is the driver's
/// test, against the server's own status).
#[test]
fn compression_on_runs_as_sysbenchs() {
    let db = schema("compressed").database.expect("schema");
    let args = [
        "oltp_read_write",
        "--tables=1",
        "--table-size=200",
        "--mysql-compression=on",
    ];
    for tool in [sysbench as fn(&str, &[&str]) -> Output, bakeoff] {
        let o = tool(&db, &[&args[..], &["prepare"]].concat());
        assert!(o.status.success(), "{}", text(&o));
        let o = tool(
            &db,
            &[
                &args[..],
                &["--threads=1", "--events=50", "--time=0", "run"],
            ]
            .concat(),
        );
        assert!(o.status.success(), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("transactions:                        50 "),
            "{out}"
        );
        let o = tool(&db, &[&args[..], &["cleanup"]].concat());
        assert!(o.status.success(), "{}", text(&o));
        assert!(tables_in(&db).is_empty(), "{:?}", tables_in(&db));
    }
}
