//! The bakeoff binary end to end, against the suite's own MariaDB.

use std::process::{Command, Output};

use bakeoff_driver::Endpoint;
use bakeoff_testkit::{connect, rt, schema, server};

fn bakeoff(args: &[&str], db: Option<&str>) -> Output {
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

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn db(name: &str) -> String {
    schema(name).database.expect("schema")
}

#[test]
fn bad_options_are_usage_errors_that_name_the_option() {
    for (args, needle) in [
        (vec!["run", "oltp_readonly"], "oltp_read_only"),
        (vec!["run", "oltp_read_only", "--threads=zero"], "--threads"),
        (
            vec!["run", "oltp_read_only", "--rand-type=normal"],
            "--rand-type",
        ),
        (
            vec!["run", "oltp_read_only", "--skip-trx=maybe"],
            "skip-trx",
        ),
        (
            vec!["run", "oltp_read_only", "--time=0", "--events=0"],
            "--events",
        ),
        (
            vec!["run", "oltp_read_only", "--mysql-ignore-errors=12x3"],
            "--mysql-ignore-errors",
        ),
        (vec!["prepare", "oltp_read_only"], "--mysql-socket"),
        (
            vec!["run", "oltp_read_only", "--iterations=2", "--events=5"],
            "--events-per-connection",
        ),
        (
            vec!["run", "oltp_read_only", "--iterations=2", "--rate=10"],
            "--rate",
        ),
        (
            vec!["run", "oltp_read_only", "--iterations=0"],
            "--iterations",
        ),
        (vec!["run", "oltp_read_only", "--cpus=0-x"], "--cpus"),
        (
            vec!["run", "oltp_read_only", "--numa=spread"],
            "interleave=NODES",
        ),
        (
            vec!["run", "oltp_read_only", "--allocator=hoard"],
            "jemalloc",
        ),
        (
            vec!["run", "oltp_read_only", "--set=max_connections"],
            "name=value",
        ),
        (
            vec![
                "run",
                "oltp_read_only",
                "--allocator=jemalloc",
                "--mysql-socket=/tmp/x.sock",
            ],
            "embedded server",
        ),
    ] {
        let o = bakeoff(&args, None);
        let (_, err) = text(&o);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?} should be a usage error: {err}"
        );
        assert!(
            err.contains(needle),
            "{args:?}: message should name {needle}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn prepare_run_cleanup_with_a_published_05_command_line() {
    let d = db("legacy");
    let o = bakeoff(
        &[
            "prepare",
            "oltp_read_write",
            "--tables=2",
            "--table-size=1000",
        ],
        Some(&d),
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let line = "--num-threads=4 --test=oltp.lua --oltp_tables_count=2 --oltp-table-size=1000 --rand-init=on \
        --report-interval=1 --rand-type=uniform --forced-shutdown=1 --max-time=2 --max-requests=0 \
        --percentile=99 --oltp-point-selects=9 --oltp-simple-ranges=0 --oltp-sum-ranges=0 \
        --oltp-order-ranges=0 --oltp-distinct-ranges=0 --oltp-skip-trx=on --oltp-test-mode=nontrx \
        --oltp-read-only=off --oltp-index-updates=1 --oltp-non-index-updates=0 run";
    let mut args: Vec<&str> = line.split_whitespace().collect();
    // On 1000-row tables, skip-trx DELETE+INSERT pairs of 4 threads collide on ids (1062),
    // as with sysbench (reference 1.6: expected; ignore 1062). The study used 1M-row tables.
    args.push("--mysql-ignore-errors=1213,1020,1205,1062");
    let o = bakeoff(&args, Some(&d));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let report = parse_report(&out);
    let (events, reads, writes, others) = (
        report["transactions"],
        report["read"],
        report["write"],
        report["other"],
    );
    let restarts = report["ignored errors"];
    assert!(events > 0.0, "{out}");
    // 9 point selects + 1 index update + delete + insert per event, no BEGIN/COMMIT; an event
    // restarted after 1062 ran its selects again.
    assert_eq!(reads, 9.0 * (events + restarts), "{out}");
    assert!(writes + others >= 3.0 * events, "{out}");
    assert!(
        out.contains("lat (ms,99%)"),
        "interval lines use --percentile: {out}"
    );
    let o = bakeoff(&["cleanup", "oltp_read_write"], Some(&d));
    assert!(o.status.success(), "{:?}", text(&o));
}

/// Values sysbench parsers read from the final report: "read:", "write:", "transactions:", ...
fn parse_report(out: &str) -> std::collections::HashMap<String, f64> {
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

#[test]
fn json_output_holds_series_totals_and_percentiles() {
    let d = db("json");
    let o = bakeoff(
        &[
            "prepare",
            "oltp_point_select",
            "--tables=1",
            "--table-size=500",
        ],
        Some(&d),
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--tables=1",
            "--table-size=500",
            "--threads=3",
            "--time=2",
            "--format=json",
        ],
        Some(&d),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    let total = &v["result"]["total"];
    assert!(total["events"].as_u64().unwrap() > 0);
    assert_eq!(total["reads"], total["events"]);
    assert!(
        total["latency"]["p99_ms"].as_f64().unwrap()
            >= total["latency"]["p50_ms"].as_f64().unwrap()
    );
    assert_eq!(
        v["result"]["ticks"].as_array().unwrap().len(),
        2,
        "one interval per second of --time=2, the last one included as sysbench prints it"
    );
    assert_eq!(v["result"]["status"]["status"], "completed");
    // A server given by its unix socket is sampled too: its process is the socket's peer.
    let t = &v["result"]["telemetry"];
    assert!(t["server"]["rss_bytes"].as_u64().unwrap() > 10 << 20, "{t}");
    assert!(t["server_cpu_us_per_event"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(
        v["workload"]["distribution"]["kind"], "special",
        "the default distribution is stated"
    );
    assert!(
        !out.contains(server().password().expose()),
        "no secret in the output"
    );
}

#[test]
fn prepare_reports_where_its_time_went() {
    let d = db("prepared");
    let args = [
        "prepare",
        "oltp_read_only",
        "--tables=2",
        "--table-size=5000",
    ];
    let o = bakeoff(&[&args[..], &["--format=json"]].concat(), Some(&d));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // stdout is the one document: sysbench's progress messages stay out of it.
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(
        (v["tables"].as_u64(), v["rows"].as_u64()),
        (Some(2), Some(10_000))
    );
    let (load, index) = (
        v["load_seconds"].as_f64().unwrap(),
        v["index_seconds"].as_f64().unwrap(),
    );
    assert!(load > 0.0 && index > 0.0, "{v}");
    assert!(
        (v["seconds"].as_f64().unwrap() - load - index).abs() < 1e-6,
        "{v}"
    );
    // Every row's c and pad alone are 180 bytes, and all of it goes through the redo log.
    assert!(v["redo_bytes"].as_u64().unwrap() > 10_000 * 180, "{v}");
    // A server on a unix socket here: its process is read through the socket's peer.
    assert!(v["server_cpu_seconds"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["server_cpus"].as_u64().unwrap() >= 1, "{v}");
    assert!(v["client_cpu_seconds"].as_f64().unwrap() > 0.0, "{v}");
    let limit = v["limit"].as_str().unwrap();
    assert!(
        ["server_cpu", "client_cpu", "waiting"].contains(&limit),
        "{v}"
    );
    rt().block_on(async {
        let mut c = connect(&server().connect_options().with_database(&d)).await;
        let n = c.query_rows("SELECT COUNT(*) FROM sbtest2").await.unwrap();
        assert_eq!(n[0][0].as_deref(), Some("5000"));
    });
    assert!(bakeoff(&["cleanup", "oltp_read_only"], Some(&d))
        .status
        .success());
    // The text report says the same in words, after sysbench's messages.
    let o = bakeoff(&args, Some(&d));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("Creating a secondary index on 'sbtest2'"),
        "{out}"
    );
    for needle in [
        "Prepared 10000 rows in 2 table(s)",
        "secondary indexes",
        "redo log",
        "server ",
        "held back by: ",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert!(bakeoff(&["cleanup", "oltp_read_only"], Some(&d))
        .status
        .success());
}

#[test]
fn ctrl_c_stops_prepare_between_chunks_and_cleanup_drops_the_partial_tables() {
    use std::io::{BufRead, BufReader};
    let d = db("interrupted_prepare");
    let s = server();
    let Endpoint::Unix(sock) = &s.connect_options().endpoint else {
        unreachable!()
    };
    // 8 x 500k rows take this machine some 10 s: far more than the chunks in flight.
    let mut child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "prepare",
            "oltp_read_only",
            "--tables=8",
            "--table-size=500000",
        ])
        .arg(format!("--mysql-socket={}", sock.display()))
        .arg(format!("--mysql-user={}", s.user()))
        .arg(format!("--mysql-db={d}"))
        .env("BAKEOFF_MYSQL_PASSWORD", s.password().expose())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn bakeoff prepare");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The tables exist and the load starts once sysbench's "Inserting" messages are out.
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.starts_with("Inserting 500000 records into 'sbtest8'"))),
        "prepare never started loading"
    );
    let sent = std::time::Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(5),
        "stopped after the chunks in flight, not at the end: {:?}",
        sent.elapsed()
    );
    assert!(
        err.contains("prepare was interrupted with ") && err.contains("bakeoff cleanup"),
        "{err}"
    );
    let loaded: u64 = rt().block_on(async {
        let mut c = connect(&s.connect_options().with_database(&d)).await;
        let mut n = 0;
        for t in 1..=8 {
            let r = c
                .query_rows(&format!("SELECT COUNT(*) FROM sbtest{t}"))
                .await
                .unwrap();
            n += r[0][0].as_deref().unwrap().parse::<u64>().unwrap();
        }
        n
    });
    assert!(
        loaded < 4_000_000,
        "the load went on to the end: {loaded} rows"
    );
    let o = bakeoff(&["cleanup", "oltp_read_only"], Some(&d));
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(
        text(&o).0.contains("Dropping table 'sbtest8'"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn cleanup_leaves_a_foreign_table_alone() {
    let d = db("foreign");
    let opts = server().connect_options().with_database(&d);
    rt().block_on(async {
        let mut c = connect(&opts).await;
        c.exec("CREATE TABLE sbtest9 (id INT PRIMARY KEY)")
            .await
            .unwrap();
        c.exec("INSERT INTO sbtest9 VALUES (1)").await.unwrap();
    });
    let o = bakeoff(
        &[
            "prepare",
            "oltp_read_only",
            "--tables=2",
            "--table-size=100",
        ],
        Some(&d),
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let o = bakeoff(&["cleanup", "oltp_read_only", "--tables=9"], Some(&d));
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(
        out.contains("Dropping table 'sbtest1'") && out.contains("Leaving table 'sbtest9' alone"),
        "{out}"
    );
    rt().block_on(async {
        let mut c = connect(&opts).await;
        let rows = c
            .query_rows("SELECT COUNT(*) FROM sbtest9")
            .await
            .expect("sbtest9 survives cleanup");
        assert_eq!(rows[0][0].as_deref(), Some("1"));
        let left = c.query_rows("SHOW TABLES").await.unwrap();
        assert_eq!(left.len(), 1, "only the foreign table is left: {left:?}");
    });
}

#[test]
fn a_statement_error_stops_the_run_naming_the_statement() {
    let d = db("fatal");
    // No prepare: the tables do not exist, so preparing the statements fails at connect time.
    let o = bakeoff(&["run", "oltp_point_select", "--time=2"], Some(&d));
    let (_, err) = text(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(err.contains("sbtest1") && err.contains("1146"), "{err}");
}

#[test]
fn fixed_work_runs_exactly_n_events_per_connection_and_reports_as_mysqlslap() {
    let d = db("slap");
    let common = ["oltp_read_only", "--tables=1", "--table-size=500"];
    let o = bakeoff(&[&["prepare"][..], &common[..]].concat(), Some(&d));
    assert!(o.status.success(), "{:?}", text(&o));
    let fixed = [
        "--concurrency=7",
        "--events-per-connection=3",
        "--iterations=4",
    ];
    let o = bakeoff(
        &[
            &["run"][..],
            &common[..],
            &fixed[..],
            &["--format=json"][..],
        ]
        .concat(),
        Some(&d),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    let its = v["fixed_work"]["iterations"]
        .as_array()
        .expect("iterations");
    assert_eq!(its.len(), 4);
    for it in its {
        assert_eq!(it["events"], 21, "7 connections x 3 events: {it}");
        // oltp_read_only: 10 point selects + 4 ranges (reads) + BEGIN/COMMIT (other).
        assert_eq!(it["statements"], 21 * 16, "{it}");
        assert!(it["seconds"].as_f64().unwrap() >= it["setup_seconds"].as_f64().unwrap());
    }
    for run in v["runs"].as_array().unwrap() {
        let per_conn: Vec<u64> = run["connections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["events"].as_u64().unwrap())
            .collect();
        assert_eq!(
            per_conn,
            vec![3; 7],
            "each connection runs exactly its share"
        );
    }
    assert_eq!(v["fixed_work"]["status"], "completed");

    let o = bakeoff(&[&["run"][..], &common[..], &fixed[..]].concat(), Some(&d));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let field = |label: &str| -> f64 {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no '{label}' line in:\n{out}"));
        line.rsplit(':')
            .next()
            .unwrap()
            .trim()
            .trim_end_matches(" seconds")
            .parse()
            .unwrap()
    };
    let (avg, min, max) = (
        field("Average number of seconds to run all queries"),
        field("Minimum number of seconds to run all queries"),
        field("Maximum number of seconds to run all queries"),
    );
    assert!(min > 0.0 && min <= avg && avg <= max, "{min} {avg} {max}");
    assert_eq!(field("Number of clients running queries"), 7.0);
    assert_eq!(field("Average number of queries per client"), 48.0);
    assert!(
        out.starts_with("Benchmark\n"),
        "mysqlslap's block comes first:\n{out}"
    );
}

#[test]
fn a_variant_that_did_not_take_effect_measures_nothing_and_says_why() {
    // The embedded server: MariaDB 10.6+ accepts innodb_thread_concurrency and ignores it.
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--table-size=100",
            "--time=1",
            "--set=innodb_thread_concurrency=8",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("did not take effect") && err.contains("innodb_thread_concurrency"),
        "{err}"
    );
    assert!(!out.contains("transactions:"), "nothing measured: {out}");
}

#[test]
fn server_start_serves_until_ctrl_c_then_stops_and_cleans_up() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "server",
            "start",
            "--allocator=jemalloc",
            "--set=max_connections=77",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bakeoff server start");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut socket, mut cnf, mut pid) = (String::new(), String::new(), 0u32);
    for line in lines.by_ref() {
        let line = line.expect("stdout");
        if let Some(v) = line.trim().strip_prefix("socket:") {
            socket = v.trim().to_string();
        }
        if let Some(v) = line.trim().strip_prefix("credentials:") {
            cnf = v.split_whitespace().next().unwrap().to_string();
        }
        if let Some(rest) = line.split("(pid ").nth(1) {
            pid = rest.trim_end_matches(").").parse().unwrap();
        }
        if line.starts_with("Ctrl-C") {
            break;
        }
    }
    assert!(
        !socket.is_empty() && !cnf.is_empty() && pid > 0,
        "connection details printed"
    );
    let text = std::fs::read_to_string(&cnf).expect("client file");
    let password = text
        .lines()
        .find_map(|l| l.strip_prefix("password="))
        .unwrap();
    let mut opts =
        bakeoff_driver::ConnectOptions::new(Endpoint::Unix(socket.into()), "sbtest", password);
    opts.database = Some("sbtest".into());
    let max = rt().block_on(async {
        let mut c = connect(&opts).await;
        c.query_rows("SELECT @@max_connections").await.unwrap()[0][0]
            .clone()
            .unwrap()
    });
    assert_eq!(max, "77");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} stopped"
    );
    assert!(
        !std::path::Path::new(&cnf).exists(),
        "its directory removed"
    );
}

#[test]
fn a_run_samples_the_server_process_and_its_counters_every_tick() {
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--table-size=1000",
            "--threads=4",
            "--time=2",
            "--allocator=jemalloc",
            "--format=json",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let checks = v["server_checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["axis"] == "allocator" && c["ok"] == true),
        "{checks:?}"
    );
    let r = &v["result"];
    let t = &r["telemetry"];
    // The server's own count of SELECTs over the run equals the reads the engine counted.
    assert_eq!(t["status"]["Com_select"], r["total"]["reads"], "{t}");
    let server = &t["server"];
    assert!(
        server["cpu_user_seconds"].as_f64().unwrap() + server["cpu_sys_seconds"].as_f64().unwrap()
            > 0.0
    );
    assert!(server["rss_bytes"].as_u64().unwrap() > 10 << 20, "{server}");
    assert!(
        server["voluntary_context_switches"].as_u64().unwrap() > 0,
        "{server}"
    );
    assert!(t["server_cpu_us_per_event"].as_f64().unwrap() > 0.0);
    assert_eq!(
        t["client_bound"], false,
        "4 connections cannot saturate the client"
    );
    for tick in r["ticks"].as_array().unwrap() {
        assert!(
            tick["telemetry"]["server"]["threads"].as_u64().unwrap() > 4,
            "{tick}"
        );
        assert!(
            tick["telemetry"]["status"]["Threads_running"]
                .as_i64()
                .unwrap()
                >= 1
        );
    }
    assert!(v["server_variables"]["version"]
        .as_str()
        .unwrap()
        .contains("MariaDB"));
}

#[test]
fn a_hung_server_cannot_hold_the_run_past_its_grace_period() {
    let d = db("hang");
    let o = bakeoff(
        &[
            "prepare",
            "oltp_point_select",
            "--tables=1",
            "--table-size=100",
        ],
        Some(&d),
    );
    assert!(o.status.success(), "{:?}", text(&o));
    // A write lock held by another session: every SELECT of the run waits on it, as on a
    // server that stopped answering.
    let mut opts = server().connect_options();
    opts.database = Some(d.clone());
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        rt().block_on(async {
            let mut c = connect(&opts).await;
            c.exec("LOCK TABLES sbtest1 WRITE").await.expect("lock");
            locked_tx.send(()).unwrap();
            let _ = release_rx.recv();
            c.exec("UNLOCK TABLES").await.expect("unlock");
        })
    });
    locked_rx.recv().unwrap();
    let started = std::time::Instant::now();
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--tables=1",
            "--table-size=100",
            "--threads=3",
            "--time=2",
            "--forced-shutdown=1",
            "--format=json",
        ],
        Some(&d),
    );
    let took = started.elapsed();
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let (out, err) = text(&o);
    // --time=2 plus the 1 s grace, plus start-up and slack for a loaded machine.
    assert!(
        took < std::time::Duration::from_secs(8),
        "took {took:?}: {err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON even after a hang");
    assert_eq!(
        v["result"]["unfinished_events"], 3,
        "the 3 stuck events are reported"
    );
    assert_eq!(v["result"]["total"]["events"], 0);
}

#[test]
fn a_server_killed_mid_run_fails_the_run_after_reporting_what_was_measured() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let started = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "run",
            "oltp_point_select",
            "--table-size=1000",
            "--threads=4",
            "--time=4",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bakeoff run");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 && !line.contains("Threads started") {
        line.clear();
    }
    let servers = bakeoff_testkit::mariadbd_children(child.id());
    assert_eq!(servers.len(), 1, "one embedded server");
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: a process of our own test's child tree.
    unsafe { libc::kill(servers[0] as i32, libc::SIGKILL) };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("exited during the run"), "{err}");
    assert!(
        out.contains("transactions:"),
        "what was measured is reported: {out}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "ended on time"
    );
    assert!(!std::path::Path::new(&format!("/proc/{}", servers[0])).exists());
}

#[test]
fn warmup_events_are_not_measured_and_prewarm_reads_every_table() {
    let d = db("warmup");
    let common = ["oltp_point_select", "--tables=2", "--table-size=500"];
    let o = bakeoff(&[&["prepare"][..], &common[..]].concat(), Some(&d));
    assert!(o.status.success(), "{:?}", text(&o));

    let analyze_before = rt().block_on(async {
        let mut c = connect(&server().connect_options()).await;
        bakeoff_testkit::global_status(&mut c, "Com_analyze").await
    });
    let o = bakeoff(&[&["prewarm"][..], &common[..]].concat(), Some(&d));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("Prewarming table sbtest1") && out.contains("Prewarming table sbtest2"),
        "{out}"
    );
    let analyze_after = rt().block_on(async {
        let mut c = connect(&server().connect_options()).await;
        bakeoff_testkit::global_status(&mut c, "Com_analyze").await
    });
    assert_eq!(
        analyze_after - analyze_before,
        2,
        "one ANALYZE per table, as sysbench's prewarm"
    );

    let o = bakeoff(
        &[
            &["run"][..],
            &common[..],
            &[
                "--threads=2",
                "--time=1",
                "--warmup-time=1",
                "--format=json",
            ][..],
        ]
        .concat(),
        Some(&d),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["result"];
    assert_eq!(
        r["ticks"].as_array().unwrap().len(),
        1,
        "one measured second"
    );
    let reads = r["total"]["reads"].as_i64().unwrap();
    let selects = r["telemetry"]["status"]["Com_select"].as_i64().unwrap();
    // The server counted SELECTs from the end of the warmup; the engine's figures must start
    // there too, not include the warmup's second (as many again, a 100% difference). The
    // boundary cannot be atomic: the coordinator samples the server, then drops what the
    // engine recorded, and on a loaded 2-CPU machine (the suite runs tests in parallel) it was
    // seen descheduled for 25 ms between the two (2.5% of this one-second run). Allow 5%.
    assert!(
        (selects - reads).abs() <= reads / 20 + 2,
        "server {selects} vs measured {reads}"
    );
    assert!(
        r["elapsed_seconds"].as_f64().unwrap() < 1.5,
        "the warmup is not in the measured time"
    );
}

#[test]
fn more_connections_than_the_server_allows_is_refused_before_the_run() {
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--table-size=100",
            "--threads=20",
            "--time=1",
            "--set=max_connections=10",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("max_connections") && err.contains("--set max_connections=120"),
        "{err}"
    );
    assert!(!out.contains("transactions:"));
}

#[test]
fn instances_each_get_their_own_cpu_and_the_load_adds_up_over_them() {
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--table-size=500",
            "--threads=4",
            "--time=1",
            "--instances=2",
            "--cpus=0/1",
            "--format=json",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cpus: Vec<(u64, String)> = v["server_checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["axis"] == "cpus" && c["ok"] == true)
        .map(|c| {
            (
                c["instance"].as_u64().unwrap(),
                c["seen"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(cpus, vec![(1, "0".into()), (2, "1".into())]);
    let r = &v["result"];
    // Both servers' SELECT counters, added up, equal the engine's reads.
    assert_eq!(r["telemetry"]["status"]["Com_select"], r["total"]["reads"]);
    let o = bakeoff(
        &["run", "oltp_point_select", "--instances=2", "--cpus=0/1/0"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--instances=2"), "{}", text(&o).1);
}

#[test]
fn every_example_study_checks_and_a_bad_one_lists_each_problem_at_its_place() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&examples).expect("examples/") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let o = bakeoff(&["study", "check", path.to_str().unwrap()], None);
            let (out, err) = text(&o);
            assert!(o.status.success(), "{}: {err}", path.display());
            assert!(out.contains("estimated duration"), "{out}");
            checked += 1;
        }
    }
    assert!(checked >= 5, "the examples the issue asks for");

    let bad = std::env::temp_dir().join(format!("bakeoff-bad-study-{}.toml", std::process::id()));
    std::fs::write(
        &bad,
        "treads = [1]\n[[workload]]\nname = \"oltp_point_select\"\nduration = 5\n",
    )
    .unwrap();
    let o = bakeoff(&["study", "check", bad.to_str().unwrap()], None);
    let (_, err) = text(&o);
    let _ = std::fs::remove_file(&bad);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:1:1: unknown key `treads`; did you mean `threads`?",
            bad.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}:4:1: unknown key `workload[1].duration`",
            bad.display()
        )),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
}

#[test]
fn a_study_runs_resumes_refuses_an_edited_file_and_exports() {
    let dir = std::env::temp_dir().join(format!("bakeoff-cli-study-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tiny.toml");
    let study = "duration = 1\nthreads = [2]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n";
    std::fs::write(&file, study).unwrap();
    let f = file.to_str().unwrap();

    let o = bakeoff(&["study", "run", f], None);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("1 of 1 runs to do") && err.contains("1 ok, 0 failed"),
        "{err}"
    );
    let db = dir.join("tiny.db");
    assert!(db.exists(), "results beside the study file");

    let o = bakeoff(&["study", "run", f], None);
    assert!(o.status.success());
    assert!(
        text(&o).1.contains("0 of 1 runs to do"),
        "resumed: nothing left"
    );

    let o = bakeoff(&["export", db.to_str().unwrap(), "--format=csv"], None);
    let (out, _) = text(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "header and one run: {out}");
    assert!(
        lines[0].contains("tps") && lines[0].contains("status"),
        "{out}"
    );
    assert!(lines[1].contains(",ok,"), "{out}");
    let o = bakeoff(
        &[
            "export",
            db.to_str().unwrap(),
            "--what=ticks",
            "--format=json",
        ],
        None,
    );
    let ticks: serde_json::Value = serde_json::from_str(&text(&o).0).expect("JSON ticks");
    assert!(
        !ticks.as_array().unwrap().is_empty() && ticks[0]["tps"].as_f64().unwrap() > 0.0,
        "{ticks}"
    );

    let o = bakeoff(&["compare", db.to_str().unwrap()], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("one variant: nothing to compare") && out.contains("peak"),
        "{out}"
    );
    let charts = dir.join("charts");
    let o = bakeoff(
        &[
            "report",
            db.to_str().unwrap(),
            "--charts",
            charts.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let page =
        std::fs::read_to_string(dir.join("tiny.html")).expect("the report beside the database");
    assert!(
        page.contains("<svg") && page.contains("oltp_point_select") && !page.contains("<script")
    );
    assert!(charts.join("oltp_point_select-throughput.svg").exists());
    assert!(charts.join("oltp_point_select-latency.svg").exists());
    assert!(charts.join("server-rss.svg").exists());
    let pngs = dir.join("pngs");
    let o = bakeoff(
        &[
            "report",
            db.to_str().unwrap(),
            "-o",
            dir.join("again.html").to_str().unwrap(),
            "--charts",
            pngs.to_str().unwrap(),
            "--format=png",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let png = std::fs::read(pngs.join("oltp_point_select-throughput.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG file");
    let o = bakeoff(&["compare", db.to_str().unwrap(), "--p99-limit=0"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--p99-limit=0"), "{}", text(&o).1);

    // Merged into another database: copied once, reported the same.
    let all = dir.join("all.db");
    let merge = |into: &std::path::Path| {
        bakeoff(
            &["merge", db.to_str().unwrap(), "-o", into.to_str().unwrap()],
            None,
        )
    };
    let o = merge(&all);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(
        text(&o).0.contains("1 study(ies) [tiny], 1 runs"),
        "{}",
        text(&o).0
    );
    let o = merge(&all);
    assert!(text(&o).0.contains("already there"), "{}", text(&o).0);
    let o = merge(&db);
    assert_eq!(o.status.code(), Some(2), "merging a database into itself");
    assert!(
        text(&o).1.contains("both an input and --output"),
        "{}",
        text(&o).1
    );
    let o = bakeoff(&["compare", all.to_str().unwrap()], None);
    assert!(text(&o).0.contains("nothing to compare"), "{}", text(&o).0);
    let o = bakeoff(&["compare", db.to_str().unwrap(), "--baseline=nope"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .contains("--baseline 'nope' is neither AXIS=VALUE nor a variant"),
        "{}",
        text(&o).1
    );

    std::fs::write(&file, study.replace("threads = [2]", "threads = [1, 2]")).unwrap();
    let o = bakeoff(&["study", "run", f], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--new"), "{}", text(&o).1);
    let o = bakeoff(&["study", "run", f, "--new"], None);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).1.contains("2 of 2 runs to do"), "{}", text(&o).1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_probes_report_as_sysbench_and_sweep_threads() {
    let o = bakeoff(&["host", "cpu", "--time=1", "--cpu-max-prime=2000"], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for needle in [
        "Prime numbers limit: 2000",
        "CPU speed:",
        "events per second:",
        "General statistics:",
        "Threads fairness:",
    ] {
        assert!(out.contains(needle), "{needle} missing:\n{out}");
    }
    let o = bakeoff(
        &[
            "host",
            "memory",
            "--memory-total-size=64M",
            "--threads=1,2",
            "--format=json",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2, "one run per thread count");
    for r in runs {
        // 64 MiB in 1 KiB blocks, split over the threads: the work ends the run, not the time.
        assert_eq!(r["result"]["total"]["events"], 65536, "{r}");
    }
    let o = bakeoff(&["host", "memory", "--memory-block-size=3K"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("power of 2"), "{}", text(&o).1);
}

#[test]
fn fileio_prepares_runs_and_cleans_up_only_its_own_marked_directory() {
    let base = std::env::temp_dir().join(format!("bakeoff-cli-fileio-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let dir = base.join("files");
    let d = format!("--file-dir={}", dir.display());
    let common = ["--file-total-size=4M", "--file-num=4", d.as_str()];
    let o = bakeoff(
        &[&["host", "fileio", "prepare"][..], &common[..]].concat(),
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(
        text(&o).0.contains("4194304 bytes written"),
        "{}",
        text(&o).0
    );
    let o = bakeoff(
        &[
            &[
                "host",
                "fileio",
                "run",
                "--file-test-mode=rndrw",
                "--time=1",
            ][..],
            &common[..],
        ]
        .concat(),
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for needle in [
        "Doing random r/w test",
        "File operations:",
        "fsyncs/s:",
        "written, MiB/s:",
        "General statistics:",
    ] {
        assert!(out.contains(needle), "{needle} missing:\n{out}");
    }
    let fsyncs: f64 = out
        .lines()
        .find(|l| l.contains("fsyncs/s:"))
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(fsyncs > 0.0, "periodic fsyncs happen");
    std::fs::write(dir.join("keep.me"), "not bakeoff's").unwrap();
    let o = bakeoff(
        &[&["host", "fileio", "cleanup"][..], &common[..]].concat(),
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(dir.join("keep.me").exists() && !dir.join("test_file.0").exists());
    // A directory bakeoff did not create is refused.
    let foreign = format!("--file-dir={}", base.display());
    let o = bakeoff(
        &[
            "host",
            "fileio",
            "prepare",
            "--file-total-size=4M",
            "--file-num=4",
            foreign.as_str(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("did not create"), "{}", text(&o).1);
    let _ = std::fs::remove_dir_all(&base);
}
