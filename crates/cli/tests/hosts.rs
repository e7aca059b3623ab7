//! Studies across machines over real OpenSSH: test hosts are network namespaces on this
//! machine with link-local addresses and an sshd each (see bakeoff_testkit::hosts); bakeoff
//! runs in a namespace of its own and reaches them only with `ssh -F <throwaway config>`.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use bakeoff_testkit::hosts::{Hosts, Kind};
use bakeoff_testkit::wait_for;

const BAKEOFF: &str = env!("CARGO_BIN_EXE_bakeoff");

fn scratch(name: &str) -> PathBuf {
    let dir = bakeoff_testkit::scratch::dir(&format!("hosts-{name}"));
    dir
}

fn study(dir: &Path, duration: u32) -> PathBuf {
    let file = dir.join("fleet.toml");
    let text = format!(
        "duration = {duration}\nthreads = [2]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

fn run(hosts: &Hosts, args: &[&str]) -> (Output, String) {
    let o = hosts
        .local_command(BAKEOFF)
        .args(args)
        .output()
        .expect("run bakeoff");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, err)
}

fn server_in(hosts: &Hosts, name: &str) -> bool {
    hosts.runs(name, "mariadbd")
}

/// Load connections at host `name` that come from the local test host.
fn from_local(hosts: &Hosts, name: &str) -> usize {
    sockets(hosts, name, "established")
        .iter()
        .filter(|l| {
            l.split_whitespace()
                .nth(3)
                .is_some_and(|p| p.starts_with("169.254.77.1:"))
        })
        .count()
}

/// Cut host `name` off and wait for its mariadbd to go: within 20 s, as the issue asks.
fn cut_and_see_the_server_go(hosts: &Hosts, name: &str) {
    hosts.cut(name);
    wait_for(
        Duration::from_secs(20),
        || {
            format!(
                "mariadbd still running in host {name} 20 s after the link was cut: {:?}",
                hosts.processes(name)
            )
        },
        || !server_in(hosts, name),
    );
}

/// `bakeoff run oltp_point_select` against a server on host `name`, output piped.
fn remote_run(hosts: &Hosts, name: &str, threads: u32, seconds: u32) -> std::process::Child {
    hosts
        .local_command(BAKEOFF)
        .args([
            "run",
            "oltp_point_select",
            "--server-host",
            &hosts.url(name),
        ])
        .arg(format!("--threads={threads}"))
        .arg(format!("--time={seconds}"))
        .arg("--table-size=300")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_fleet_of_two_machines_lands_in_one_database_as_two_platforms() {
    let hosts = Hosts::new(&[("a", Kind::Full), ("b", Kind::Full)]);
    let dir = scratch("fleet");
    let file = study(&dir, 2);
    let db = dir.join("fleet.db");
    let (a, b) = (
        format!("a={}", hosts.url("a")),
        format!("b={}", hosts.url("b")),
    );
    let args = [
        "study",
        "run",
        file.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--on",
        &a,
        "--on",
        &b,
    ];
    let (o, err) = run(&hosts, &args);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("a (ssh://root@169.254.77.2): 1 ok, 0 failed"),
        "{err}"
    );
    assert!(
        err.contains("b (ssh://root@169.254.77.3): 1 ok, 0 failed"),
        "{err}"
    );
    let c = std::process::Command::new(BAKEOFF)
        .args(["compare", db.to_str().unwrap()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&c.stdout);
    assert!(c.status.success(), "{out}");
    assert!(
        out.contains("a default") && out.contains("b default"),
        "{out}"
    );
    // Run again: both machines are done, nothing is redone.
    let (o, err) = run(&hosts, &args);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("a (ssh://root@169.254.77.2): 0 ok"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_machine_cut_off_mid_run_stops_its_server_and_is_named() {
    let hosts = Hosts::new(&[("a", Kind::Full)]);
    let dir = scratch("cut");
    let file = study(&dir, 60);
    let db = dir.join("cut.db");
    let on = format!("a={}", hosts.url("a"));
    let child = hosts
        .local_command(BAKEOFF)
        .args([
            "study",
            "run",
            file.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--on",
            &on,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(
        Duration::from_secs(90),
        || "no mariadbd started in host a".into(),
        || server_in(&hosts, "a"),
    );
    // Into the measured run (the load is loaded, the run has begun), then cut.
    std::thread::sleep(Duration::from_secs(3));
    cut_and_see_the_server_go(&hosts, "a");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("ssh://root@169.254.77.2"), "{err}");
    assert!(err.contains("stopped:"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreachable_hosts_and_hosts_without_a_server_are_named() {
    let hosts = Hosts::new(&[("bare", Kind::NoServer)]);
    let dir = scratch("bad");
    let file = study(&dir, 1);
    let db = dir.join("bad.db");
    let bare = format!("bare={}", hosts.url("bare"));
    // Nothing answers at .99 on the test bridge.
    let nowhere = "gone=ssh://root@169.254.77.99";
    let started = Instant::now();
    let (o, err) = run(
        &hosts,
        &[
            "study",
            "run",
            file.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--on",
            &bare,
            "--on",
            nowhere,
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("gone (ssh://root@169.254.77.99)") && err.contains("could not be reached"),
        "{err}"
    );
    assert!(
        err.contains(&format!("bare ({})", hosts.url("bare"))) && err.contains("mariadbd"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ss` in host `name`'s namespace: lines of sockets in `state` (listening, established).
fn sockets(hosts: &Hosts, name: &str, state: &str) -> Vec<String> {
    let out = hosts
        .exec_in(name, "ss")
        .args(["-Htn", "state", state])
        .output()
        .expect("ss (iproute2)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_run_drives_a_server_on_another_host_that_admits_only_this_one() {
    let hosts = Hosts::new(&[("a", Kind::Full)]);
    let child = remote_run(&hosts, "a", 4, 6);
    // While it runs: the server listens on A's own address only, and the load's connections
    // come from the local host's address.
    wait_for(
        Duration::from_secs(60),
        || {
            format!(
                "no load connections at host a: {:?}",
                sockets(&hosts, "a", "established")
            )
        },
        || from_local(&hosts, "a") >= 4,
    );
    assert!(server_in(&hosts, "a"));
    the_network_account_holds_the_load_database_only(&hosts);
    let listening = sockets(&hosts, "a", "listening");
    // Local address is the third column: sshd's and the server's, both on A's address only.
    assert!(
        listening.len() >= 2
            && listening.iter().all(|l| l
                .split_whitespace()
                .nth(2)
                .is_some_and(|a| a.starts_with("169.254.77.2:"))),
        "{listening:?}"
    );
    let o = child.wait_with_output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains(&format!("ready on {} at 169.254.77.2:", hosts.url("a"))),
        "{err}"
    );
    assert!(out.contains("queries performed"), "{out}");
    wait_for(
        Duration::from_secs(20),
        || "mariadbd left running in host a".into(),
        || !server_in(&hosts, "a"),
    );
}

/// A query on host `name`'s server, through its socket as the OS's root (MariaDB's root logs
/// in by socket only); and the server's run directory.
fn server_sql(hosts: &Hosts, name: &str) -> (impl Fn(&str) -> String, PathBuf) {
    let socket = hosts
        .command_lines(name, "mariadbd")
        .into_iter()
        .flatten()
        .find_map(|a| a.strip_prefix("--socket=").map(PathBuf::from))
        .unwrap_or_else(|| panic!("host {name}'s mariadbd names its socket"));
    let rundir = socket.parent().unwrap().to_path_buf();
    let sql = move |q: &str| {
        let o = std::process::Command::new("mariadb")
            .arg("--no-defaults")
            .arg(format!("--socket={}", socket.display()))
            .args(["-u", "root", "-N", "-B", "-e", q])
            .output()
            .expect("the mariadb client (apt-get install mariadb-client)");
        assert!(
            o.status.success(),
            "{q}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    (sql, rundir)
}

/// The load reached host `name`'s server over TLS only: every network account requires it
/// (plain TCP is refused at login), and TLS handshakes were accepted.
fn only_tls_reaches(hosts: &Hosts, name: &str, from: &[&str]) {
    let (sql, _) = server_sql(hosts, name);
    for addr in from {
        let grants = sql(&format!("SHOW GRANTS FOR 'sbtest'@'{addr}'"));
        assert!(grants.contains("REQUIRE SSL"), "{addr}: {grants}");
    }
    let accepts = sql("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'");
    let n: u64 = accepts
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(n > 0, "no TLS handshakes: {accepts}");
}

/// The grants of host a's server: the account for the local host's address holds the load
/// database only and requires TLS, the socket account everything; no anonymous account; the
/// run directory 0700.
fn the_network_account_holds_the_load_database_only(hosts: &Hosts) {
    use std::os::unix::fs::PermissionsExt;
    let (sql, rundir) = server_sql(hosts, "a");
    let mode = std::fs::metadata(&rundir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", rundir.display());
    let network = sql("SHOW GRANTS FOR 'sbtest'@'169.254.77.1'");
    assert!(network.contains("ON `sbtest`.*"), "{network}");
    assert!(
        network
            .lines()
            .all(|g| !g.contains(" ON *.*") || g.starts_with("GRANT USAGE")),
        "{network}"
    );
    let socket_grants = sql("SHOW GRANTS FOR 'sbtest'@'localhost'");
    assert!(
        socket_grants.contains("ALL PRIVILEGES ON *.*"),
        "{socket_grants}"
    );
    assert_eq!(
        sql("SELECT COUNT(*) FROM mysql.user WHERE User = ''").trim(),
        "0"
    );
    only_tls_reaches(hosts, "a", &["169.254.77.1"]);
}

#[test]
fn a_run_whose_server_host_is_cut_off_stops_that_server_and_names_the_host() {
    let hosts = Hosts::new(&[("a", Kind::Full)]);
    let child = remote_run(&hosts, "a", 2, 30);
    wait_for(
        Duration::from_secs(60),
        || "the run never reached host a".into(),
        || from_local(&hosts, "a") >= 2,
    );
    std::thread::sleep(Duration::from_secs(2));
    cut_and_see_the_server_go(&hosts, "a");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&hosts.url("a")), "{err}");
}

#[test]
fn a_study_runs_its_servers_on_the_server_host_and_records_it() {
    let hosts = Hosts::new(&[("a", Kind::Full)]);
    let dir = scratch("server-host");
    let file = dir.join("remote.toml");
    std::fs::write(
        &file,
        format!(
            "duration = 3\nthreads = [1, 2]\n[hosts]\nserver = \"{}\"\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n",
            hosts.url("a")
        ),
    )
    .unwrap();
    let db = dir.join("remote.db");
    let child = hosts
        .local_command(BAKEOFF)
        .args([
            "study",
            "run",
            file.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(
        Duration::from_secs(60),
        || "the study's server never ran in host a".into(),
        || from_local(&hosts, "a") > 0 && server_in(&hosts, "a"),
    );
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("2 ok, 0 failed"), "{err}");
    // The environment stored with the runs names the server's host.
    let store = bakeoff_store::Store::open(&db).unwrap();
    let (study, _) = store.studies().unwrap()[0].clone();
    let manifests = store.manifests(study).unwrap();
    assert!(!manifests.is_empty());
    for r in manifests {
        let m: serde_json::Value =
            serde_json::from_str(r["manifest_json"].as_str().unwrap()).unwrap();
        assert_eq!(m["server_host"], hosts.url("a").as_str(), "{m}");
    }
    // The server's CPU was sampled on its host, through the agent, every tick.
    for r in store.runs(Some(study)).unwrap() {
        let us = r["server_cpu_us_per_event"].as_f64();
        assert!(us.is_some_and(|u| u > 0.0), "{r:?}");
    }
    drop(store);
    assert!(!server_in(&hosts, "a"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The addresses connected to host `name` other than over ssh (the server's load and status).
fn load_peers(hosts: &Hosts, name: &str) -> Vec<String> {
    sockets(hosts, name, "established")
        .iter()
        .filter_map(|l| {
            let mut f = l.split_whitespace().skip(2);
            let (local, peer) = (f.next()?, f.next()?);
            (!local.ends_with(":22")).then(|| peer.rsplit_once(':').map(|p| p.0.to_string()))?
        })
        .collect()
}

/// Hosts a (with a server) and b, c (without); a study with its server on a and its load
/// from b and c started in the background, its `duration` and `threads` as given, once the
/// load from both has reached a's server; and its database.
fn spread_study(
    hosts: &Hosts,
    dir: &Path,
    duration: u32,
    threads: &str,
) -> (std::process::Child, PathBuf) {
    let file = dir.join("spread.toml");
    std::fs::write(
        &file,
        format!(
            "duration = {duration}\nthreads = {threads}\n[hosts]\nserver = \"{}\"\nclients = [\"{}\", \"{}\"]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n",
            hosts.url("a"),
            hosts.url("b"),
            hosts.url("c")
        ),
    )
    .unwrap();
    let db = dir.join("spread.db");
    let child = hosts
        .local_command(BAKEOFF)
        .args(["study", "run", file.to_str().unwrap(), "--db"])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (b, c) = (hosts.addr("b").to_string(), hosts.addr("c").to_string());
    wait_for(
        Duration::from_secs(90),
        || {
            format!(
                "no load from both b and c at a's server: {:?}",
                load_peers(hosts, "a")
            )
        },
        || {
            let peers = load_peers(hosts, "a");
            server_in(hosts, "a") && peers.contains(&b) && peers.contains(&c)
        },
    );
    (child, db)
}

/// Every run of `study` has a server CPU per event, read where the server ran.
fn every_run_has_server_cpu(store: &bakeoff_store::Store, study: i64) {
    for r in store.runs(Some(study)).unwrap() {
        assert!(
            r["server_cpu_us_per_event"]
                .as_f64()
                .is_some_and(|u| u > 0.0),
            "{r:?}"
        );
    }
}

fn a_b_and_c() -> Hosts {
    Hosts::new(&[
        ("a", Kind::Full),
        ("b", Kind::NoServer),
        ("c", Kind::NoServer),
    ])
}

#[test]
fn a_study_with_its_server_on_a_takes_its_load_from_b_and_c() {
    let hosts = a_b_and_c();
    let dir = scratch("clients");
    let (child, db) = spread_study(&hosts, &dir, 4, "[3, 8]");
    // b and c reach a's server over TLS only, checked against this study's CA.
    only_tls_reaches(&hosts, "a", &[hosts.addr("b"), hosts.addr("c")]);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("2 ok, 0 failed"), "{err}");
    let store = bakeoff_store::Store::open(&db).unwrap();
    let (study, _) = store.studies().unwrap()[0].clone();
    for r in store.manifests(study).unwrap() {
        let m: serde_json::Value =
            serde_json::from_str(r["manifest_json"].as_str().unwrap()).unwrap();
        assert_eq!(m["server_host"], hosts.url("a").as_str(), "{m}");
        // Both machines: this one's profile and the server host's, read there.
        assert!(m["host"]["cpus"].as_u64() > Some(0), "{m}");
        assert!(m["server_machine"]["cpus"].as_u64() > Some(0), "{m}");
        assert!(m["server_binary_sha256"].as_str().is_some(), "{m}");
        assert_eq!(
            m["client_hosts"],
            serde_json::json!([hosts.url("b"), hosts.url("c")]),
            "{m}"
        );
    }
    for r in store.summaries(study).unwrap() {
        let summary: serde_json::Value =
            serde_json::from_str(r["summary_json"].as_str().unwrap()).unwrap();
        let shares = summary["client_hosts"].as_array().expect("client_hosts");
        let threads = r["threads"].as_u64().unwrap();
        // Both hosts ran a part; the parts make up the run, events and connections alike.
        assert_eq!(shares.len(), 2, "{summary}");
        let sum = |k: &str| shares.iter().map(|s| s[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(sum("connections"), threads, "{summary}");
        assert!(
            shares.iter().all(|s| s["events"].as_u64() > Some(0)),
            "{summary}"
        );
        assert_eq!(sum("events"), r["events"].as_u64().unwrap(), "{summary}");
        assert!(
            shares
                .iter()
                .all(|s| s["client_cpu_seconds"].as_f64() > Some(0.0)),
            "{summary}"
        );
        // Every second of the 4 s run is a tick merged from both hosts' ticks.
        let id = r["id"].as_i64().unwrap();
        assert!(store.tick_count(id).unwrap() >= 3, "{summary}");
    }
    // The server's CPU, sampled on a, over the load that came from b and c.
    every_run_has_server_cpu(&store, study);
    drop(store);
    assert!(!server_in(&hosts, "a"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_study_whose_server_host_is_cut_off_while_b_and_c_load_it_names_that_host() {
    let hosts = a_b_and_c();
    let dir = scratch("clients-cut");
    let (child, _) = spread_study(&hosts, &dir, 12, "[4]");
    cut_and_see_the_server_go(&hosts, "a");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&hosts.url("a")), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_spreads_its_load_over_client_hosts_onto_the_embedded_server() {
    let hosts = Hosts::new(&[("b", Kind::NoServer), ("c", Kind::NoServer)]);
    let o = hosts
        .local_command(BAKEOFF)
        .args([
            "run",
            "oltp_point_select",
            "--table-size=300",
            "--threads=5",
        ])
        .args(["--time=3", "--format=json", "--client-host"])
        .arg(hosts.url("b"))
        .arg("--client-host")
        .arg(hosts.url("c"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let shares = doc["client_hosts"].as_array().expect("client_hosts");
    let names: Vec<&str> = shares.iter().map(|s| s["host"].as_str().unwrap()).collect();
    assert_eq!(names, [hosts.url("b"), hosts.url("c")]);
    // Blocks of 3 and 2 connections; every event of the run came from one of them.
    let conns: Vec<u64> = shares
        .iter()
        .map(|s| s["connections"].as_u64().unwrap())
        .collect();
    assert_eq!(conns, [3, 2]);
    let events: u64 = shares.iter().map(|s| s["events"].as_u64().unwrap()).sum();
    assert!(
        shares.iter().all(|s| s["events"].as_u64() > Some(0)),
        "{doc}"
    );
    assert_eq!(
        doc["result"]["total"]["events"].as_u64(),
        Some(events),
        "{doc}"
    );
    assert_eq!(
        doc["result"]["connections"].as_array().map(Vec::len),
        Some(5)
    );
    // The per-second series is the merged one: its events add up to at most the total.
    let ticks = doc["result"]["ticks"].as_array().unwrap();
    assert!(ticks.len() >= 2, "{doc}");
    let in_ticks: u64 = ticks.iter().map(|t| t["events"].as_u64().unwrap()).sum();
    assert!(in_ticks > 0 && in_ticks <= events, "{in_ticks} of {events}");
}

#[test]
fn this_machine_can_be_one_of_the_client_hosts() {
    let hosts = Hosts::new(&[("b", Kind::NoServer)]);
    let o = hosts
        .local_command(BAKEOFF)
        .args([
            "run",
            "oltp_point_select",
            "--table-size=300",
            "--threads=4",
        ])
        .args([
            "--time=2",
            "--format=json",
            "--client-host=local",
            "--client-host",
        ])
        .arg(hosts.url("b"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let shares = doc["client_hosts"].as_array().expect("client_hosts");
    assert_eq!(shares.len(), 2, "{doc}");
    assert!(
        shares.iter().all(|s| s["events"].as_u64() > Some(0)),
        "{doc}"
    );
}

/// Each host's (connections, events) from a `client_hosts` list.
fn host_shares(shares: &serde_json::Value) -> Vec<(u64, u64)> {
    let shares = shares.as_array().expect("client_hosts");
    shares
        .iter()
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap();
            (n("connections"), n("events"))
        })
        .collect()
}

#[test]
fn fixed_work_splits_its_connections_over_the_client_hosts_in_a_run_and_a_study() {
    let hosts = Hosts::new(&[("b", Kind::NoServer), ("c", Kind::NoServer)]);
    let (b, c) = (hosts.url("b"), hosts.url("c"));
    let (o, err) = run(
        &hosts,
        &[
            "run",
            "oltp_point_select",
            "--table-size=300",
            "--threads=5",
            "--events-per-connection=20",
            "--iterations=3",
            "--format=json",
            "--client-host",
            &b,
            "--client-host",
            &c,
        ],
    );
    assert!(o.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    // Every iteration is the whole work: 5 connections x 20 events, each connection its 20,
    // from blocks of 3 and 2 connections on b and c.
    let its = doc["fixed_work"]["iterations"]
        .as_array()
        .expect("iterations");
    assert_eq!(its.len(), 3, "{doc}");
    assert!(its.iter().all(|i| i["events"] == 100), "{doc}");
    for run in doc["runs"].as_array().unwrap() {
        let conns = run["connections"].as_array().unwrap();
        assert_eq!(conns.len(), 5, "{run}");
        assert!(conns.iter().all(|c| c["events"] == 20), "{run}");
    }
    assert_eq!(host_shares(&doc["client_hosts"]), [(3, 180), (2, 120)]);
    let names: Vec<&str> = doc["client_hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["host"].as_str().unwrap())
        .collect();
    assert_eq!(names, [b.as_str(), c.as_str()]);

    // The same work in a study, its server embedded here.
    let dir = scratch("fixed");
    let file = dir.join("fixed.toml");
    std::fs::write(
        &file,
        format!(
            "threads = [4]\n[hosts]\nclients = [\"{b}\", \"{c}\"]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\niterations = 2\nevents_per_connection = 10\n"
        ),
    )
    .unwrap();
    let db = dir.join("fixed.db");
    let (o, err) = run(
        &hosts,
        &[
            "study",
            "run",
            file.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{err}");
    let store = bakeoff_store::Store::open(&db).unwrap();
    let (study, _) = store.studies().unwrap()[0].clone();
    let rows = store.summaries(study).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(rows[0]["events"].as_u64(), Some(80));
    let summary: serde_json::Value =
        serde_json::from_str(rows[0]["summary_json"].as_str().unwrap()).unwrap();
    assert_eq!(
        summary["fixed_work"]["iterations"].as_array().map(Vec::len),
        Some(2),
        "{summary}"
    );
    assert_eq!(host_shares(&summary["client_hosts"]), [(2, 40), (2, 40)]);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server bakeoff did not start, on host a, given by URL: without `--server-ssh` its CPU is
/// unknown (never 0); with it, bakeoff finds the process listening on the server's port there
/// and reads its CPU as for a server it started, in a run and in a study's manifest.
#[test]
fn a_given_servers_cpu_is_read_on_its_host_over_ssh_and_unknown_without() {
    use std::io::BufRead;
    let hosts = Hosts::new(&[("a", Kind::Full), ("b", Kind::NoServer)]);
    // The given server: one started by hand on a, on a's address, with an account for the
    // namespaces' addresses (as a DBA's server would have for its clients).
    let mut server = hosts
        .exec_in("a", BAKEOFF)
        .args([
            "server",
            "start",
            "--server-option=bind-address=169.254.77.2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(server.stdout.take().unwrap()).lines();
    let (mut socket, mut port) = (String::new(), String::new());
    while socket.is_empty() || port.is_empty() {
        let line = lines.next().expect("server start's lines").unwrap();
        if let Some(s) = line.trim().strip_prefix("socket:") {
            socket = s.trim().to_string();
        }
        if let Some(p) = line.trim().strip_prefix("tcp:") {
            port = p.trim().rsplit(':').next().unwrap().to_string();
        }
    }
    let sql = "CREATE USER 'sbtest'@'169.254.77.%' IDENTIFIED BY 'given-pw'; GRANT ALL ON sbtest.* TO 'sbtest'@'169.254.77.%'";
    let o = hosts
        .exec_in("a", "mariadb")
        .args([
            "--no-defaults",
            &format!("--socket={socket}"),
            "-u",
            "root",
            "-e",
            sql,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let url = format!("mysql://sbtest@{}:{port}/sbtest", hosts.addr("a"));
    let bakeoff = |args: &[&str]| {
        let o = hosts
            .local_command(BAKEOFF)
            .args(args)
            .env("MYSQL_PWD", "given-pw")
            .output()
            .unwrap();
        // bakeoff's own grammar: the report and its telemetry on stdout, notes on stderr.
        let all =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {all}");
        all
    };
    let load = ["--server", url.as_str(), "--table-size=300"];
    bakeoff(&[&["prepare", "oltp_point_select"], &load[..]].concat());
    let run = [
        &["run", "oltp_point_select", "--time=2", "--threads=2"],
        &load[..],
    ]
    .concat();
    let err = bakeoff(&run);
    assert!(err.contains("server CPU and memory: unknown"), "{err}");
    let a = hosts.url("a");
    let err = bakeoff(&[&run[..], &["--server-ssh", a.as_str()]].concat());
    assert!(
        err.contains(&format!("The server's process on {a}: pid")) && err.contains("(mariadbd)"),
        "{err}"
    );
    let cpu: f64 = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("server CPU: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no server CPU line: {err}"));
    assert!(cpu > 0.0, "{err}");
    // A study's variant says `ssh`: its manifest says where its CPU was read.
    let dir = scratch("given-ssh");
    let file = dir.join("given.toml");
    std::fs::write(
        &file,
        format!("duration = 2\nthreads = [2]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"a\"\nserver = \"{url}\"\nssh = \"{a}\"\nexisting_tables = \"use\"\n"),
    )
    .unwrap();
    let db = dir.join("given.db");
    bakeoff(&[
        "study",
        "run",
        file.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let store = bakeoff_store::Store::open(&db).unwrap();
    let (study, _) = store.studies().unwrap()[0].clone();
    let m = &store.manifests(study).unwrap()[0];
    let m: serde_json::Value = serde_json::from_str(m["manifest_json"].as_str().unwrap()).unwrap();
    let said = m["given"]["server_cpu"].as_str().unwrap_or_default();
    assert!(
        said.starts_with(&format!(
            "read on {a} from the process listening on port {port}"
        )),
        "{m}"
    );
    every_run_has_server_cpu(&store, study);
    // A password from a command (a token that expires) reaches a client host inside its ssh
    // session, asked for again for each load sent there: never the empty password field.
    let asked = dir.join("asked");
    let command = format!("echo asked >> {}; echo given-pw", asked.display());
    let b = hosts.url("b");
    let o = hosts
        .local_command(BAKEOFF)
        .args(&run)
        .args(["--client-host", b.as_str(), "--password-command", &command])
        .env_remove("MYSQL_PWD")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let asked = std::fs::read_to_string(&asked).unwrap_or_default();
    assert!(asked.lines().count() >= 2, "asked {asked:?} times: {err}");
    bakeoff(&[&["cleanup", "oltp_point_select"], &load[..]].concat());
    unsafe { libc::kill(server.id() as i32, libc::SIGINT) };
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Lua script of the user's spreads as the built-ins do: its text goes to each client host
/// with the run (nothing of it need be there), and each host runs its block of connections
/// in the script's own Lua states.
#[test]
fn a_lua_script_spreads_its_load_over_client_hosts() {
    let hosts = Hosts::new(&[("b", Kind::NoServer), ("c", Kind::NoServer)]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scripts/kv.lua");
    let o = hosts
        .local_command(BAKEOFF)
        .arg("run")
        .arg(&script)
        .args(["--script-option", "rows=300", "--threads=4", "--time=2"])
        .args(["--format=json", "--client-host"])
        .arg(hosts.url("b"))
        .arg("--client-host")
        .arg(hosts.url("c"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let shares = host_shares(&doc["client_hosts"]);
    assert_eq!(shares.len(), 2, "{doc}");
    assert!(shares.iter().all(|&(c, e)| c == 2 && e > 0), "{shares:?}");
    // kv.lua's event is one statement: a read, or an update.
    let total = &doc["result"]["total"];
    let n = |k: &str| total[k].as_u64().unwrap_or(0);
    assert_eq!(n("reads") + n("writes"), n("events"), "{total}");
}
