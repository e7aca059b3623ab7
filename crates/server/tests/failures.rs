//! Servers that fail to start, each way the reliability rules name: the error says why (with
//! the server's own log lines) and nothing is left behind, no process and no directory.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bakeoff_server::{Server, ServerError, ServerSpec};

/// One failing start at a time, so "nothing new left behind" is about that start alone.
static SERIAL: Mutex<()> = Mutex::new(());

fn our_run_dirs() -> Vec<String> {
    let prefix = format!("bakeoff-{}-", std::process::id());
    let mut dirs: Vec<String> = std::fs::read_dir("/tmp")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with(&prefix))
        .collect();
    dirs.sort();
    dirs
}

/// Start `spec`, expecting failure; returns the error after checking nothing was left.
fn failing_start(spec: ServerSpec) -> ServerError {
    failing_start_with(spec, Server::start)
}

fn failing_start_with(
    spec: ServerSpec,
    start: impl FnOnce(&ServerSpec) -> Result<Server, ServerError>,
) -> ServerError {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dirs = our_run_dirs();
    let err = match start(&spec) {
        Err(e) => e,
        Ok(s) => panic!(
            "started with {:?} on {}",
            spec.options,
            s.socket().display()
        ),
    };
    assert_eq!(
        our_run_dirs(),
        dirs,
        "run directory left behind after: {err}"
    );
    assert!(
        bakeoff_testkit::mariadbd_children(std::process::id()).is_empty(),
        "server process left behind after: {err}"
    );
    err
}

#[test]
fn an_unknown_option_is_quoted_from_the_server_log() {
    let err = failing_start(ServerSpec {
        options: vec!["no-such-option=1".into()],
        ..ServerSpec::default()
    });
    assert!(matches!(err, ServerError::ExitedAtStart { .. }), "{err}");
    assert!(err.to_string().contains("no-such-option"), "{err}");
}

#[test]
fn a_binary_that_is_not_there_or_of_another_engine_is_named_before_anything_starts() {
    let err = failing_start(ServerSpec {
        binary: Some("/nonexistent/mariadbd".into()),
        ..ServerSpec::default()
    });
    assert!(
        err.to_string()
            .contains("/nonexistent/mariadbd: no such executable file"),
        "{err}"
    );
    let mariadbd = bakeoff_server::Engine::MariaDb
        .default_binary()
        .expect("mariadbd");
    let err = failing_start(ServerSpec {
        engine: Some(bakeoff_server::Engine::PostgreSql),
        binary: Some(mariadbd),
        ..ServerSpec::default()
    });
    assert!(
        err.to_string().starts_with("engine \"postgresql\": ")
            && err.to_string().contains(" is MariaDB 1"),
        "{err}"
    );
    assert!(err.to_string().contains(", not PostgreSQL; "), "{err}");
    assert!(
        err.to_string().ends_with("or use engine \"mariadb\""),
        "{err}"
    );
}

/// A `mysqld` that is MariaDB's, as Debian's mariadb-server installs one: a link named
/// mysqld to mariadbd (made here, so the test holds whatever /usr/sbin/mysqld is).
fn mysqld_linked_to_mariadbd() -> std::path::PathBuf {
    let mariadbd = bakeoff_server::Engine::MariaDb
        .default_binary()
        .expect("mariadbd");
    let link = bakeoff_testkit::scratch::dir("mysqld-is-mariadbd").join("mysqld");
    match std::os::unix::fs::symlink(&mariadbd, &link) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => panic!("{e}"),
        _ => link,
    }
}

#[test]
fn a_mysql_variant_given_mariadbs_mysqld_is_refused_saying_what_it_found() {
    let link = mysqld_linked_to_mariadbd();
    let err = failing_start(ServerSpec {
        engine: Some(bakeoff_server::Engine::MySql),
        binary: Some(link.clone()),
        ..ServerSpec::default()
    });
    assert!(matches!(err, ServerError::Refused(_)), "{err}");
    let said = err.to_string();
    let head = format!("engine \"mysql\": {} is MariaDB 1", link.display());
    assert!(said.starts_with(&head), "{said}");
    assert!(
        said.contains("not MySQL; install MySQL 8.0 or 8.4"),
        "{said}"
    );
    assert!(said.contains("`[mysql] binary = "), "{said}");
    assert!(said.contains("or use engine \"mariadb\""), "{said}");
    // Named by the engine alone: its default, `mysqld` on PATH, is asked the same way (on
    // Debian with mariadb-server, /usr/sbin/mysqld is that link).
    let default = bakeoff_server::Engine::MySql.default_binary();
    let mariadbs = default
        .as_ref()
        .ok()
        .and_then(|d| std::fs::canonicalize(d).ok());
    if mariadbs.is_some_and(|d| d.ends_with("mariadbd")) {
        let err = failing_start(ServerSpec {
            engine: Some(bakeoff_server::Engine::MySql),
            ..ServerSpec::default()
        });
        assert!(err.to_string().contains("is MariaDB 1"), "{err}");
    }
}

#[test]
fn a_port_already_taken_says_so() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    // A later --port wins over the one bakeoff chose: the server must meet the taken port.
    let err = failing_start(ServerSpec {
        options: vec![format!("port={port}")],
        ..ServerSpec::default()
    });
    let msg = err.to_string();
    assert!(
        msg.contains("Address already in use") || msg.contains("Bind on TCP/IP port"),
        "{msg}"
    );
}

#[test]
fn a_server_that_never_becomes_ready_is_stopped_at_the_timeout() {
    // Listening on another socket: up and running, but never reachable where bakeoff looks.
    let elsewhere = std::env::temp_dir().join(format!(
        "bakeoff-test-elsewhere-{}.sock",
        std::process::id()
    ));
    let started = Instant::now();
    let err = failing_start(ServerSpec {
        options: vec![
            format!("socket={}", elsewhere.display()),
            "skip-networking".into(),
        ],
        start_timeout: Duration::from_secs(4),
        ..ServerSpec::default()
    });
    assert!(
        matches!(err, ServerError::NotReady { secs: 4, .. }),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "bounded: {:?}",
        started.elapsed()
    );
    let _ = std::fs::remove_file(&elsewhere);
}

#[test]
fn a_start_abandoned_half_way_stops_what_it_launched_and_removes_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let elsewhere = std::env::temp_dir().join(format!(
        "bakeoff-test-abandoned-{}.sock",
        std::process::id()
    ));
    // A server that would wait out its whole (long) timeout, given up after 2 s.
    let abandon = AtomicBool::new(false);
    let started = Instant::now();
    let err = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_secs(2));
            abandon.store(true, Ordering::Relaxed);
        });
        failing_start_with(
            ServerSpec {
                options: vec![
                    format!("socket={}", elsewhere.display()),
                    "skip-networking".into(),
                ],
                start_timeout: Duration::from_secs(300),
                ..ServerSpec::default()
            },
            |spec| Server::start_watched(spec, &abandon),
        )
    });
    assert!(matches!(err, ServerError::Abandoned), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "abandoning took {:?}",
        started.elapsed()
    );
    let _ = std::fs::remove_file(&elsewhere);
}
