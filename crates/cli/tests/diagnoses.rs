//! What bakeoff says when the server is not where it was told, or an option is not what the
//! server takes: the right cause, at once, and what to check.

mod common;

use std::time::{Duration, Instant};

use common::{bakeoff, db, real_sysbench, text};

/// A TCP port nothing listens on, refused.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}

#[test]
fn a_refused_port_or_a_missing_socket_fails_at_once_saying_nothing_listens() {
    let port = closed_port();
    let missing = bakeoff_testkit::scratch::path("no-such.sock");
    let pg_missing = bakeoff_testkit::scratch::path("no-such-dir");
    let cases: Vec<(Vec<String>, String, &str)> = vec![
        (
            vec![
                "--mysql-host=127.0.0.1".into(),
                format!("--mysql-port={port}"),
            ],
            format!("nothing is listening at 127.0.0.1:{port}: "),
            "is the server running, is that the port?",
        ),
        (
            vec![format!("--mysql-socket={}", missing.display())],
            format!("nothing is listening at unix:{}: ", missing.display()),
            "is the server running, is that its socket?",
        ),
        (
            vec![
                "--server".into(),
                format!("postgresql://u@127.0.0.1:{port}/db"),
            ],
            format!("nothing is listening at 127.0.0.1:{port}: "),
            "is the server running, is that the port?",
        ),
        (
            vec![
                "--server".into(),
                format!("postgresql://u@/db?host={}", pg_missing.display()),
            ],
            format!(
                "nothing is listening at unix:{}/.s.PGSQL.5432: ",
                pg_missing.display()
            ),
            "is the server running, is that its socket?",
        ),
    ];
    for (given, at, ask) in cases {
        let mut args = vec!["run", "oltp_point_select", "--time=1"];
        args.extend(given.iter().map(String::as_str));
        let started = Instant::now();
        let o = bakeoff(&args, None);
        let took = started.elapsed();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{given:?}: {err}");
        assert!(err.contains(&at) && err.contains(ask), "{given:?}: {err}");
        // Said once: the cause is not repeated after the message that quotes it.
        let cause = err
            .split(&at)
            .nth(1)
            .and_then(|r| r.split(';').next())
            .unwrap_or("");
        assert_eq!(err.matches(cause).count(), 1, "{given:?}: {err}");
        assert!(!err.contains("back_log"), "no queue to blame: {err}");
        // At once: not after the connect timeout (10 s).
        assert!(took < Duration::from_secs(3), "{given:?}: took {took:?}");
    }
}

/// A misspelt `--set` or `--server-option` is refused before any server starts, with the
/// name the binary knows, as `study check` refuses it in a study file.
#[test]
fn a_misspelt_setting_is_refused_before_a_server_starts() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["--set", "innodb_bufer_pool_size=1G"],
            "--set `innodb_bufer_pool_size` is not a MariaDB setting",
        ),
        (
            &["--server-option=innodb-bufer-pool-size=1G"],
            "--server-option `innodb-bufer-pool-size` is not a MariaDB setting",
        ),
        (
            &["--db-driver=pgsql", "--set", "shared_bufers=1GB"],
            "--set `shared_bufers` is not a PostgreSQL setting",
        ),
    ];
    for (given, says) in cases {
        let mut args = vec!["run", "oltp_point_select", "--time=1"];
        args.extend_from_slice(given);
        let started = Instant::now();
        let o = bakeoff(&args, None);
        let took = started.elapsed();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{given:?}: {err}");
        assert!(
            err.contains(says) && err.contains("did you mean"),
            "{given:?}: {err}"
        );
        assert!(
            err.contains("nothing was started") && !err.contains("Starting the embedded"),
            "{err}"
        );
        assert!(took < Duration::from_secs(3), "{given:?}: took {took:?}");
    }
}

/// `prepare` over tables sysbench made: refused, saying `bakeoff cleanup` would leave them
/// (it does) and what would remove them, not sent to a cleanup that does nothing.
#[test]
fn prepare_over_tables_it_did_not_create_says_what_would_remove_them() {
    let d = db("diag_foreign");
    let s = bakeoff_testkit::server();
    let bakeoff_driver::Endpoint::Unix(sock) = &s.connect_options().endpoint else {
        unreachable!()
    };
    let made = std::process::Command::new(real_sysbench())
        .args(["oltp_read_only", "--table-size=10"])
        .arg(format!("--mysql-socket={}", sock.display()))
        .arg(format!("--mysql-user={}", s.user()))
        .arg(format!("--mysql-password={}", s.password().expose()))
        .arg(format!("--mysql-db={d}"))
        .arg("prepare")
        .output()
        .unwrap();
    assert!(made.status.success(), "{:?}", text(&made));
    let o = bakeoff(&["prepare", "oltp_read_only", "--table-size=10"], Some(&d));
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("table 'sbtest1' already exists and bakeoff did not create it")
            && err.contains("`bakeoff cleanup` leaves it alone")
            && err.contains("drop or rename it yourself"),
        "{err}"
    );
    assert!(
        !err.contains("run `bakeoff cleanup` with the same options first"),
        "{err}"
    );
    // As said: cleanup leaves them.
    let o = bakeoff(&["cleanup", "oltp_read_only"], Some(&d));
    assert!(
        text(&o).0.contains("Leaving table 'sbtest1' alone"),
        "{:?}",
        text(&o)
    );
}

/// A run on a server with no tables at all says they are not there, not that bakeoff did not
/// make them (it said "was not made by `bakeoff prepare`" of a table that did not exist).
#[test]
fn a_run_on_a_server_without_the_tables_says_they_are_not_there() {
    let d = db("diag_missing");
    let o = bakeoff(&["run", "oltp_point_select", "--time=1"], Some(&d));
    let (_, err) = text(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "table 'sbtest1' is not there: run `bakeoff prepare` with the same options first"
        ),
        "{err}"
    );
    assert!(!err.contains("was not made by"), "{err}");
}

/// What makes a run suspect is said in one set of words: `compare --help` says the report's.
#[test]
fn compare_help_says_the_reports_suspect_criteria() {
    let o = bakeoff(&["compare", "--help"], None);
    let (out, _) = text(&o);
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&bakeoff_report::suspect::criteria()), "{out}");
    assert!(!flat.contains("drifted more than 10%"), "{out}");
}

/// A run with no server given measures the embedded one, and says so in either grammar: a
/// DBA who forgot --mysql-socket reads it in the log with the figures. On stdout in bakeoff's
/// grammar; on stderr in sysbench's, whose stdout is sysbench's report line for line.
#[test]
fn a_run_on_the_embedded_server_says_so() {
    let as_sysbench = common::bakeoff_as_sysbench();
    let runs = [
        std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(["run", "oltp_point_select", "--time=1", "--table-size=100"])
            .output()
            .unwrap(),
        std::process::Command::new(&as_sysbench)
            .args(["oltp_point_select", "--time=1", "--table-size=100", "run"])
            .output()
            .unwrap(),
    ];
    let says = |text: &str| {
        text.lines().any(|l| {
            l.starts_with("Server: embedded ")
                && l.contains("started by bakeoff for this run (--mysql-socket or --mysql-host measures yours)")
        })
    };
    for (o, sysbench) in runs.iter().zip([false, true]) {
        let (out, err) = text(o);
        assert!(o.status.success(), "{err}");
        match sysbench {
            false => assert!(says(&out), "{out}"),
            true => assert!(says(&err) && !out.contains("Server: "), "{out}\n{err}"),
        }
    }
}

/// A server that accepts and never answers: the run fails after the connect timeout it
/// states, once (the pre-run check and the run's own connects used to wait it out twice).
#[test]
fn a_silent_server_takes_the_connect_timeout_it_states() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().flatten() {
            held.push(c);
        }
    });
    let started = Instant::now();
    let o = bakeoff(
        &[
            "run",
            "oltp_point_select",
            "--time=1",
            "--mysql-host=127.0.0.1",
            &format!("--mysql-port={port}"),
            "--mysql-connect-timeout=2",
        ],
        None,
    );
    let took = started.elapsed();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("timed out connecting to 127.0.0.1") && err.contains("after 2 s"),
        "{err}"
    );
    assert!(
        took < Duration::from_millis(3500),
        "took {took:?}: the timeout twice"
    );
}

/// A login refused for want of a password names what gives one, in either grammar; in
/// sysbench's, stdout keeps sysbench's FATAL line alone.
#[test]
fn a_login_without_a_password_names_what_gives_one() {
    let s = bakeoff_testkit::server();
    let bakeoff_driver::Endpoint::Unix(sock) = &s.connect_options().endpoint else {
        unreachable!()
    };
    let socket = format!("--mysql-socket={}", sock.display());
    let user = format!("--mysql-user={}", s.user());
    for line in [
        vec!["prepare", "oltp_read_only", &socket, &user],
        vec!["oltp_read_only", &socket, &user, "prepare"],
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(&line)
            .env_remove("BAKEOFF_MYSQL_PASSWORD")
            .env_remove("MYSQL_PWD")
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{line:?}: {out}{err}");
        assert!(
            err.contains("none was given: set BAKEOFF_MYSQL_PASSWORD")
                && !out.contains("BAKEOFF_MYSQL_PASSWORD"),
            "{line:?}: {out}{err}"
        );
    }
}
