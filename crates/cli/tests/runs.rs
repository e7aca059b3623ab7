//! A run's server end to end: variants that did not take effect, `server start`, sampling,
//! a hung or killed server, warmup and prewarm, connection limits, instances.

mod common;

use std::process::Command;

use bakeoff_driver::Endpoint;
use bakeoff_testkit::{connect, rt, server};
use common::{bakeoff, db, text};

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
    // Two signals 20 ms apart, as `timeout -s INT` or a terminal's group delivery gives: one
    // press, which says at once what it does and stops cleanly (a second press would exit
    // 130 at once, leaving the server).
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(std::time::Duration::from_millis(20));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("bakeoff: stopping cleanly; Ctrl-C again to abandon at once"),
        "{err}"
    );
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
