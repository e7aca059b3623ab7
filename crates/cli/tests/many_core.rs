//! Many-core behaviour (issue 12), end to end against real MariaDB servers: a thousand
//! connections at once through a short listen queue, the client kept on its own CPUs, a
//! bakeoff confined by taskset starting a server elsewhere, and sysbench's lines that used to
//! be refused.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use bakeoff_server::{Server, ServerSpec};
use bakeoff_testkit::{schema, server};

fn bakeoff(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    cmd.args(args);
    cmd
}

fn run(cmd: &mut Command) -> (Output, String, String) {
    let o = cmd.output().expect("run bakeoff");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, out, err)
}

/// A server of its own with a listen queue of `back_log`, its tables loaded.
fn small_queue_server(back_log: u32) -> Server {
    let s = Server::start(&ServerSpec {
        options: vec![format!("back-log={back_log}")],
        ..ServerSpec::default()
    })
    .expect("start a server (mariadbd from Debian's mariadb-server)");
    let (o, _, err) = run(with_server(
        &mut bakeoff(&["prepare", "oltp_point_select", "--table-size=1000"]),
        &s,
        false,
    ));
    assert!(o.status.success(), "prepare: {err}");
    s
}

/// Point `cmd` at `s`, over TCP or its unix socket.
fn with_server<'c>(cmd: &'c mut Command, s: &Server, tcp: bool) -> &'c mut Command {
    if tcp {
        cmd.arg("--mysql-host=127.0.0.1")
            .arg(format!("--mysql-port={}", s.port()));
    } else {
        cmd.arg(format!("--mysql-socket={}", s.socket().display()));
    }
    cmd.arg(format!("--mysql-user={}", s.user()))
        .arg(format!("--mysql-db={}", s.database()))
        .env("BAKEOFF_MYSQL_PASSWORD", s.password().expose())
}

/// The listen queue holds `back_log` connections; sysbench gets 1000 through because its
/// connects block until the server accepts. bakeoff's must too, fixed work and timed alike.
fn thousand_connections_through(back_log: u32, tcp: bool) {
    let s = small_queue_server(back_log);
    let fixed = [
        "run",
        "oltp_point_select",
        "--table-size=1000",
        "--concurrency=1000",
        "--events-per-connection=5",
        "--iterations=2",
    ];
    let (o, out, err) = run(with_server(&mut bakeoff(&fixed), &s, tcp));
    assert!(o.status.success(), "fixed work, back_log={back_log}: {err}");
    assert!(
        out.contains("Number of clients running queries: 1000"),
        "{out}"
    );
    let timed = [
        "run",
        "oltp_point_select",
        "--table-size=1000",
        "--threads=1000",
        "--time=1",
        "--format=json",
    ];
    let (o, out, err) = run(with_server(&mut bakeoff(&timed), &s, tcp));
    assert!(o.status.success(), "timed, back_log={back_log}: {err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        doc["result"]["connections"].as_array().map(Vec::len),
        Some(1000)
    );
    assert!(
        doc["result"]["total"]["events"].as_u64().unwrap_or(0) > 0,
        "{out}"
    );
    // The run said why connects may have waited.
    assert!(err.contains(&format!("back_log={back_log}")), "{err}");
}

#[test]
fn a_thousand_connections_get_through_a_listen_queue_of_one_on_a_unix_socket() {
    thousand_connections_through(1, false);
}

#[test]
fn a_thousand_connections_get_through_a_listen_queue_of_fifty_over_tcp() {
    thousand_connections_through(50, true);
}

/// Every thread of `pid` whose name starts with `prefix`, with its Cpus_allowed_list.
fn threads_of(pid: u32, prefix: &str) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            comm.starts_with(prefix).then(|| {
                let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
                allowed(&status)
            })
        })
        .collect()
}

fn allowed(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The mariadbd children of `pid`, with their Cpus_allowed_list.
fn servers_of(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let status = std::fs::read_to_string(p.path().join("status")).unwrap_or_default();
        let is_child = status
            .lines()
            .any(|l| l.strip_prefix("PPid:").map(str::trim) == Some(&pid.to_string()));
        if is_child
            && status
                .lines()
                .next()
                .is_some_and(|l| l.contains("mariadbd"))
        {
            out.push(allowed(&status));
        }
    }
    out
}

/// Start `cmd`, wait for its load threads, and read where they and its server may run.
fn placement_of(cmd: &mut Command) -> (Vec<String>, Vec<String>, Output) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bakeoff");
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut load, mut servers) = (Vec::new(), Vec::new());
    while Instant::now() < deadline && load.is_empty() {
        std::thread::sleep(Duration::from_millis(100));
        load = threads_of(pid, "bakeoff-client");
        servers = servers_of(pid);
    }
    let out = child.wait_with_output().expect("bakeoff ends");
    (load, servers, out)
}

fn two_cpus() {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        n >= 2,
        "these tests place the server and the client on CPUs 0 and 1: this machine has {n} CPU(s) available; run them on a machine with 2 or more"
    );
}

#[test]
fn the_client_runs_on_its_cpus_and_the_server_on_its_own() {
    two_cpus();
    let (load, servers, out) = placement_of(&mut bakeoff(&[
        "run",
        "oltp_point_select",
        "--cpus=0",
        "--client-cpus=1",
        "--threads=4",
        "--time=3",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!load.is_empty(), "no load thread seen: {err}");
    assert!(load.iter().all(|c| c == "1"), "load threads on {load:?}");
    assert_eq!(servers, ["0"], "the server's CPUs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("client CPUs: 1"), "{stdout}");
    assert!(!stdout.contains("shares"), "{stdout}");
}

#[test]
fn by_default_the_client_takes_the_cpus_the_server_leaves() {
    two_cpus();
    let (load, servers, out) = placement_of(&mut bakeoff(&[
        "run",
        "oltp_point_select",
        "--cpus=1",
        "--threads=4",
        "--time=3",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(load.iter().all(|c| c == "0"), "load threads on {load:?}");
    // One client thread per client CPU.
    assert_eq!(load.len(), 1, "{load:?}");
    assert_eq!(servers, ["1"]);
    assert!(err.contains("the client runs on CPUs 0"), "{err}");
}

#[test]
fn a_bakeoff_confined_by_taskset_starts_its_server_elsewhere() {
    two_cpus();
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", "1", env!("CARGO_BIN_EXE_bakeoff")]).args([
        "run",
        "oltp_point_select",
        "--cpus=0",
        "--threads=2",
        "--time=3",
    ]);
    let (load, servers, out) = placement_of(&mut cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "taskset (util-linux) and bakeoff: {err}"
    );
    assert_eq!(servers, ["0"], "{err}");
    assert!(load.iter().all(|c| c == "1"), "load threads on {load:?}");
}

#[test]
fn a_client_sharing_the_servers_cpus_is_warned_about_in_text_and_json() {
    two_cpus();
    let (o, out, err) = run(&mut bakeoff(&[
        "run",
        "oltp_point_select",
        "--cpus=0-1",
        "--client-cpus=1",
        "--threads=2",
        "--time=1",
    ]));
    assert!(o.status.success(), "{err}");
    for text in [&out, &err] {
        assert!(
            text.contains("client shares CPUs 1 with the server"),
            "{text}"
        );
    }
    let (o, out, err) = run(&mut bakeoff(&[
        "run",
        "oltp_point_select",
        "--cpus=0-1",
        "--threads=2",
        "--time=1",
        "--format=json",
    ]));
    assert!(o.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        doc["warnings"][0].as_str(),
        Some("client shares CPUs 0-1 with the server")
    );
    assert_eq!(doc["client"]["shared"].as_str(), Some("0-1"));
}

#[test]
fn client_cpus_this_machine_lacks_are_a_usage_error_naming_the_option() {
    let (o, _, err) = run(&mut bakeoff(&[
        "run",
        "oltp_point_select",
        "--client-cpus=1000",
    ]));
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--client-cpus=1000") && err.contains("online"),
        "{err}"
    );
}

#[test]
fn select_random_workloads_take_several_tables_as_sysbench_does() {
    let s = server();
    let db = schema("random_tables").database.expect("schema");
    let on_suite = |args: &[&str]| {
        let mut cmd = bakeoff(&[]);
        cmd.arg(format!("--mysql-socket={}", s.socket().display()))
            .arg(format!("--mysql-user={}", s.user()))
            .arg(format!("--mysql-db={db}"))
            .env("BAKEOFF_MYSQL_PASSWORD", s.password().expose())
            .args(args);
        run(&mut cmd)
    };
    for workload in ["select_random_points", "select_random_ranges"] {
        // sysbench's own order, with options the workload does not read.
        let common = [workload, "--tables=2", "--table-size=500", "--range-size=7"];
        let (o, out, err) =
            on_suite(&[&common[..], &["--thread-stack-size=64K", "prepare"]].concat());
        assert!(o.status.success(), "{workload} prepare: {out}{err}");
        let (o, out, err) =
            on_suite(&[&common[..], &["--time=1", "--verbosity=4", "run"]].concat());
        assert!(o.status.success(), "{workload} run: {err}");
        // sysbench's grammar: sysbench's stdout, what bakeoff adds on stderr (at sysbench's
        // info level, --verbosity=4).
        let note =
            format!("Options {workload} does not use (accepted, as sysbench does): --range-size");
        assert!(err.contains(&note), "{err}");
        assert!(!out.contains(&note), "{out}");
        // sysbench's grammar: cleanup drops the tables its options name, as sysbench's does.
        let (o, out, err) = on_suite(&[&common[..], &["cleanup"]].concat());
        assert!(o.status.success(), "{workload} cleanup: {out}{err}");
    }
}

/// A server's global status counter `name` so far.
fn status(s: &Server, password: &str, name: &str) -> u64 {
    let mut opts = s.connect_options();
    opts.password = bakeoff_driver::Secret::new(password);
    bakeoff_testkit::rt().block_on(async {
        let mut c = bakeoff_driver::Conn::connect(&opts).await.expect("connect");
        let rows = c
            .query_rows(&format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .await
            .expect("status");
        rows[0][1].as_deref().unwrap_or("0").parse().unwrap_or(0)
    })
}

#[test]
fn a_list_of_sockets_spreads_the_connections_as_sysbench_does() {
    let (a, b) = (small_queue_server(50), small_queue_server(50));
    // One password for the load account on both, as on a cluster behind several addresses.
    let password = "same-for-both";
    for s in [&a, &b] {
        bakeoff_testkit::rt().block_on(async {
            let mut c = bakeoff_driver::Conn::connect(&s.connect_options())
                .await
                .expect("connect");
            let alter = format!(
                "ALTER USER '{}'@'localhost' IDENTIFIED BY '{password}'",
                s.user()
            );
            c.query(&alter).await.expect("alter user");
        });
    }
    // Prepares count connections exactly (each prepares the same statements once); how the
    // 400 events split between connections is up to the scheduler, so executes only show both
    // servers did work.
    let counters = |s: &Server| {
        let prepared = status(s, password, "Com_stmt_prepare");
        (prepared, status(s, password, "Com_stmt_execute"))
    };
    let (before_a, before_b) = (counters(&a), counters(&b));
    let mut cmd = bakeoff(&[
        "run",
        "oltp_point_select",
        "--table-size=1000",
        "--threads=4",
        "--events=400",
        "--time=0",
    ]);
    cmd.arg(format!(
        "--mysql-socket={},{}",
        a.socket().display(),
        b.socket().display()
    ))
    .arg(format!("--mysql-user={}", a.user()))
    .arg(format!("--mysql-db={}", a.database()))
    .env("BAKEOFF_MYSQL_PASSWORD", password);
    let (o, _, err) = run(&mut cmd);
    assert!(o.status.success(), "{err}");
    let (after_a, after_b) = (counters(&a), counters(&b));
    let (pa, ea) = (after_a.0 - before_a.0, after_a.1 - before_a.1);
    let (pb, eb) = (after_b.0 - before_b.0, after_b.1 - before_b.1);
    // 4 connections, two on each server, so each server saw the same prepares.
    assert!(pa > 0 && pa == pb, "prepares per server: {pa} and {pb}");
    assert!(
        ea > 0 && eb > 0 && ea + eb >= 400,
        "statements per server: {ea} and {eb}"
    );
}

/// A server on a unix socket, pinned by `taskset -a` as a user pins one by hand: bakeoff reads
/// its CPUs from the socket's peer, places the client on the CPU left, and (by default) polls
/// there instead of sleeping, its idle polling kept out of the client's CPU; `sleep` does not.
#[test]
fn a_client_beside_a_server_pinned_by_taskset_goes_elsewhere_and_polls() {
    two_cpus();
    let s = small_queue_server(500);
    let pid = s.pid().expect("the server's pid").to_string();
    let pinned = Command::new("taskset")
        .args(["-a", "-p", "-c", "0", &pid])
        .output()
        .expect("taskset (util-linux)");
    assert!(pinned.status.success(), "taskset -a -p -c 0 {pid}");
    let load = |wait: &str| {
        let (o, out, err) = run(with_server(
            &mut bakeoff(&[
                "run",
                "oltp_point_select",
                "--table-size=1000",
                "--threads=8",
                "--time=2",
                "--format=json",
                wait,
            ]),
            &s,
            false,
        ));
        assert!(o.status.success(), "{wait}: {err}");
        serde_json::from_str::<serde_json::Value>(&out).expect("json")
    };
    let doc = load("--client-wait=auto");
    assert_eq!(
        doc["client"]["chosen"], "outside_servers",
        "{}",
        doc["client"]
    );
    assert_eq!(doc["client"]["cpus"], "1", "{}", doc["client"]);
    assert_eq!(doc["client"]["apart"], true);
    assert_eq!(doc["run"]["client_wait"], "poll");
    let t = &doc["result"]["telemetry"];
    assert!(
        t["client_idle_poll_seconds"].as_f64() > Some(0.0),
        "a polling client spends time finding nothing: {t}"
    );
    assert!(doc["result"]["total"]["events"].as_u64() > Some(0));
    let doc = load("--client-wait=sleep");
    assert_eq!(doc["run"]["client_wait"], "sleep");
    assert!(
        doc["result"]["telemetry"]["client_idle_poll_seconds"].is_null(),
        "{}",
        doc["result"]["telemetry"]
    );
}
