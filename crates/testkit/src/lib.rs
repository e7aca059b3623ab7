//! Test helpers. Every database test runs against a real MariaDB that the suite starts itself:
//! one private `mariadbd` per test binary (throwaway datadir, unix socket, loopback), and one
//! schema per test so tests never see each other's tables.
//!
//! A machine without `mariadbd` fails the tests with the install command; nothing is skipped.

pub mod hostile_pg;
pub mod hosts;
pub mod pg;
pub mod planted;
pub mod procs;
pub mod scratch;
pub mod scripted;
pub mod tls;

use std::sync::OnceLock;

use bakeoff_driver::{Conn, ConnectOptions};
use bakeoff_server::{Server, ServerSpec, INSTALL_HINT};

/// The binary's shared server, started on first use. Panics (failing the test) with an
/// actionable message when no server can be started.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| match Server::start(&ServerSpec::default()) {
        Ok(s) => {
            scratch::at_exit(|| {
                if let Some(s) = SERVER.get() {
                    s.discard_at_exit();
                }
            });
            s
        }
        Err(e) => panic!("these tests need a real MariaDB server and could not start one: {e}\n\nTo fix: {INSTALL_HINT}"),
    })
}

/// Poll `done` every 200 ms; fail saying `what` if it is not true within `limit`.
pub fn wait_for(
    limit: std::time::Duration,
    what: impl Fn() -> String,
    mut done: impl FnMut() -> bool,
) {
    let until = std::time::Instant::now() + limit;
    while !done() {
        assert!(std::time::Instant::now() < until, "{}", what());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A current-thread runtime for driving async code from a test.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A fresh, empty schema named after the test; returns options that connect into it.
pub fn schema(name: &str) -> ConnectOptions {
    let opts = server().connect_options();
    let db = format!("t_{name}");
    rt().block_on(async {
        let mut c = Conn::connect(&opts)
            .await
            .expect("connect to the test server");
        c.exec(&format!("DROP DATABASE IF EXISTS `{db}`"))
            .await
            .expect("drop schema");
        c.exec(&format!("CREATE DATABASE `{db}`"))
            .await
            .expect("create schema");
    });
    opts.with_database(&db)
}

/// Open a connection (panics on failure: tests want the error message, not a Result).
pub async fn connect(opts: &ConnectOptions) -> Conn {
    Conn::connect(opts)
        .await
        .unwrap_or_else(|e| panic!("connect failed: {e}"))
}

/// A global status counter, e.g. `Com_select`.
pub async fn global_status(c: &mut Conn, name: &str) -> u64 {
    let rows = c
        .query_rows(&format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .await
        .expect("SHOW GLOBAL STATUS");
    rows.first()
        .and_then(|r| r.get(1).cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no global status {name}"))
}

/// The `mariadbd` processes among `pid`'s children, from every thread's list (servers are
/// forked by a spawner thread, so the main thread's list alone misses them).
pub fn mariadbd_children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten();
    for t in tasks {
        if let Ok(list) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok())
                    .filter(|p| {
                        std::fs::read_to_string(format!("/proc/{p}/comm"))
                            .is_ok_and(|c| c.trim() == "mariadbd")
                    }),
            );
        }
    }
    out
}
