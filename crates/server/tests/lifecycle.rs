//! The launcher against a real mariadbd: ready means authenticated, stop leaves nothing behind.

use bakeoff_driver::{Conn, Outcome};
use bakeoff_server::{Server, ServerSpec};
use bakeoff_testkit::rt;

fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn starts_answers_over_socket_and_tcp_then_stops_cleanly() {
    let server = Server::start(&ServerSpec::default())
        .unwrap_or_else(|e| panic!("{e}\n\n{}", bakeoff_server::INSTALL_HINT));
    assert!(server.version().contains("MariaDB") || !server.version().is_empty());
    let pid = server.pid().expect("pid");
    rt().block_on(async {
        for opts in [server.connect_options(), server.tcp_connect_options()] {
            let mut c = Conn::connect(&opts).await.unwrap();
            let rows = c.query_rows("SELECT 1 + 1, DATABASE()").await.unwrap();
            assert_eq!(
                rows,
                vec![vec![Some("2".to_string()), Some("sbtest".to_string())]]
            );
            let stmt = c.prepare("SELECT ? + 1").await.unwrap();
            assert_eq!((stmt.params, stmt.columns), (1, 1));
            let out = c
                .execute(&stmt, &[bakeoff_driver::Param::Int(41)])
                .await
                .unwrap();
            assert_eq!(out, Outcome::Rows(1));
            match c.query("SELECT * FROM no_such_table").await.unwrap() {
                Outcome::Err(e) => assert_eq!(e.code, 1146),
                other => panic!("expected an error, got {other:?}"),
            }
        }
    });
    let dir = server.socket().parent().unwrap().to_path_buf();
    server.stop();
    assert!(
        !process_alive(pid),
        "mariadbd {pid} still running after stop"
    );
    assert!(!dir.exists(), "run directory {} left behind", dir.display());
}

#[test]
fn a_server_that_cannot_start_reports_its_log() {
    let spec = ServerSpec {
        options: vec!["no-such-option=1".into()],
        ..ServerSpec::default()
    };
    let err = Server::start(&spec)
        .err()
        .expect("an unknown option must stop the server");
    let msg = err.to_string();
    assert!(
        msg.contains("no-such-option"),
        "error should quote the log: {msg}"
    );
}

#[test]
fn wrong_password_is_an_authentication_error() {
    let server = bakeoff_testkit::server();
    let mut opts = server.connect_options();
    opts.password = bakeoff_driver::Secret::new("wrong");
    let err = rt()
        .block_on(Conn::connect(&opts))
        .err()
        .expect("must fail");
    assert!(err.to_string().contains("Access denied"), "{err}");
}

#[test]
fn a_blocking_connection_runs_statements_and_sees_the_server_go() {
    let server = bakeoff_testkit::server();
    rt().block_on(async {
        let c = Conn::connect(&server.connect_options()).await.unwrap();
        let mut c = c.into_blocking().unwrap();
        let stmt = c.prepare("SELECT ?, REPEAT('x', 100000)").await.unwrap();
        for i in 0..50 {
            assert_eq!(
                c.execute(&stmt, &[bakeoff_driver::Param::Int(i)])
                    .await
                    .unwrap(),
                Outcome::Rows(1)
            );
        }
        // The server closing the connection is a lost connection, not a hang.
        let id = c.connection_id();
        let mut admin = Conn::connect(&server.connect_options()).await.unwrap();
        admin.exec(&format!("KILL {id}")).await.unwrap();
        let err = c.query("SELECT 1").await;
        let lost = match err {
            Err(e) => e.is_connection_lost(),
            Ok(Outcome::Err(e)) => bakeoff_driver::is_lost_code(e.code),
            Ok(other) => panic!("a killed connection answered {other:?}"),
        };
        assert!(lost, "a killed connection must read as lost");
    });
}

#[test]
fn a_stopped_servers_datadir_starts_other_servers_with_its_tables() {
    let first = Server::start(&ServerSpec::default()).unwrap_or_else(|e| panic!("{e}"));
    rt().block_on(async {
        let mut c = Conn::connect(&first.connect_options()).await.unwrap();
        c.exec("CREATE TABLE kept (id INT PRIMARY KEY)")
            .await
            .unwrap();
        c.exec("INSERT INTO kept VALUES (1), (2), (3)")
            .await
            .unwrap();
    });
    let template = first
        .stop_into_template()
        .expect("a clean stop keeps the datadir");
    for _ in 0..2 {
        let copy = Server::start(&ServerSpec {
            datadir_from: Some(template.datadir()),
            ..ServerSpec::default()
        })
        .unwrap_or_else(|e| panic!("starting from the template: {e}"));
        let n = rt().block_on(async {
            // A fresh password, set by the copy's own init file, logs in.
            let mut c = Conn::connect(&copy.connect_options()).await.unwrap();
            let rows = c.query_rows("SELECT COUNT(*) FROM kept").await.unwrap();
            c.exec("INSERT INTO kept VALUES (4)").await.unwrap();
            rows[0][0].clone().unwrap()
        });
        assert_eq!(
            n, "3",
            "each copy starts from the template, not from the last copy"
        );
    }
    let dir = template.datadir();
    drop(template);
    assert!(!dir.exists(), "the template goes with its owner");
}

/// Every `SHOW GRANTS` line for `account`, read through `c`.
async fn grants(c: &mut Conn, account: &str) -> Vec<String> {
    c.query_rows(&format!("SHOW GRANTS FOR {account}"))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r[0].clone().unwrap_or_default())
        .collect()
}

#[test]
fn the_tcp_account_holds_the_load_database_only_and_the_run_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::start(&ServerSpec::default()).unwrap_or_else(|e| panic!("{e}"));
    let dir = server.socket().parent().unwrap();
    let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "run directory {} is {mode:o}", dir.display());
    rt().block_on(async {
        let mut local = Conn::connect(&server.connect_options()).await.unwrap();
        let tcp = grants(&mut local, "'sbtest'@'127.0.0.1'").await;
        assert!(
            tcp.iter().any(|g| g.contains("ON `sbtest`.*"))
                && tcp
                    .iter()
                    .all(|g| !g.contains(" ON *.*") || g.starts_with("GRANT USAGE")),
            "{tcp:?}"
        );
        let socket = grants(&mut local, "'sbtest'@'localhost'").await;
        assert!(
            socket.iter().any(|g| g.contains("ALL PRIVILEGES ON *.*")),
            "{socket:?}"
        );
        let anonymous = local
            .query_rows("SELECT COUNT(*) FROM mysql.user WHERE User = ''")
            .await
            .unwrap();
        assert_eq!(anonymous[0][0].as_deref(), Some("0"));
        // Over TCP the account reaches its database and nothing else.
        let mut c = Conn::connect(&server.tcp_connect_options()).await.unwrap();
        c.exec("CREATE TABLE over_tcp (id INT)").await.unwrap();
        match c.query("CREATE DATABASE not_ours").await.unwrap() {
            Outcome::Err(e) => assert_eq!(e.code, 1044, "{e:?}"),
            other => panic!("the TCP account created a database: {other:?}"),
        }
        match c.query("SELECT COUNT(*) FROM mysql.user").await.unwrap() {
            Outcome::Err(e) => assert!(e.code == 1142 || e.code == 1044, "{e:?}"),
            other => panic!("the TCP account read mysql.user: {other:?}"),
        }
    });
}

#[test]
fn anonymous_accounts_in_a_datadir_are_dropped_or_refuse_the_start() {
    let first = Server::start(&ServerSpec::default()).unwrap_or_else(|e| panic!("{e}"));
    rt().block_on(async {
        let mut c = Conn::connect(&first.connect_options()).await.unwrap();
        for host in ["localhost", "%"] {
            c.exec(&format!("CREATE USER ''@'{host}'")).await.unwrap();
        }
    });
    let template = first.stop_into_template().unwrap();
    let copy = Server::start(&ServerSpec {
        datadir_from: Some(template.datadir()),
        ..ServerSpec::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    rt().block_on(async {
        let mut c = Conn::connect(&copy.connect_options()).await.unwrap();
        let rows = c
            .query_rows("SELECT COUNT(*) FROM mysql.user WHERE User = ''")
            .await
            .unwrap();
        assert_eq!(rows[0][0].as_deref(), Some("0"), "anonymous accounts left");
        // One the init file cannot know of (a documentation address, never contacted).
        c.exec("CREATE USER ''@'192.0.2.7'").await.unwrap();
    });
    let second = copy.stop_into_template().unwrap();
    let err = Server::start(&ServerSpec {
        datadir_from: Some(second.datadir()),
        ..ServerSpec::default()
    })
    .err()
    .expect("a server with an anonymous account must not count as started");
    assert!(err.to_string().contains("''@'192.0.2.7'"), "{err}");
}
