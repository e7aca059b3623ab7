//! The lab's PostgreSQL: initdb, start as an unprivileged account, ready when the load
//! account logs in with SCRAM, settings and an allocator verified, a fast stop that leaves
//! nothing behind.

use bakeoff_driver::{Outcome, Param, PgConn};
use bakeoff_server::{find_postgres_binary, Server, ServerSpec, Variant};
use bakeoff_testkit::rt;

fn pg_spec() -> ServerSpec {
    let binary = find_postgres_binary()
        .unwrap_or_else(|e| panic!("{e}\n\n{}", bakeoff_server::PG_INSTALL_HINT));
    ServerSpec {
        binary: Some(binary),
        options: vec!["fsync=off".into()],
        ..ServerSpec::default()
    }
}

#[test]
fn starts_answers_over_socket_and_tcp_then_stops_cleanly() {
    let server = Server::start(&pg_spec()).unwrap_or_else(|e| panic!("{e}"));
    assert!(server.version().starts_with("15"), "{}", server.version());
    let pid = server.pid().expect("pid");
    let dir = server.socket().parent().unwrap().to_path_buf();
    rt().block_on(async {
        for opts in [server.connect_options(), server.tcp_connect_options()] {
            let mut c = PgConn::connect(&opts)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let rows = c
                .query_rows("SELECT 1 + 1, current_database(), current_user")
                .await
                .unwrap();
            assert_eq!(
                rows,
                vec![vec![
                    Some("2".into()),
                    Some("sbtest".into()),
                    Some("sbtest".into())
                ]]
            );
            let stmt = c.prepare("SELECT ? + 1").await.unwrap();
            let out = c.execute(&stmt, &[Param::Int(41)]).await.unwrap();
            assert_eq!(out, Outcome::Rows(1));
            match c.query("SELECT * FROM no_such_table").await.unwrap() {
                Outcome::Err(e) => assert_eq!(e.sql_state, "42P01"),
                other => panic!("expected an error, got {other:?}"),
            }
            c.quit().await;
        }
        // The load account is no superuser, and a wrong password is refused.
        let mut c = PgConn::connect(&server.connect_options()).await.unwrap();
        let su = c
            .query_value("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            .await
            .unwrap();
        assert_eq!(su.as_deref(), Some("f"));
        let mut wrong = server.tcp_connect_options();
        wrong.password = bakeoff_driver::Secret::new("not-it");
        let e = PgConn::connect(&wrong).await.err().expect("refused");
        assert!(
            e.to_string().contains("password authentication failed"),
            "{e}"
        );
    });
    server.stop();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists() || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ")
        }
    );
    assert!(!dir.exists(), "the run directory is removed");
}

#[test]
fn settings_and_an_allocator_are_verified_on_postgres() {
    let mut spec = pg_spec();
    spec.variant = Variant {
        allocator: "jemalloc".parse().unwrap(),
        settings: vec![
            "work_mem=8MB".parse().unwrap(),
            "shared_buffers=256MB".parse().unwrap(),
        ],
        ..Variant::default()
    };
    let server = Server::start(&spec).unwrap_or_else(|e| panic!("{e}"));
    let checks = server.checks();
    assert!(server.variant_problems().is_none(), "{checks:?}");
    for axis in ["allocator", "setting"] {
        assert!(
            checks.iter().any(|c| c.axis == axis && c.ok),
            "{axis}: {checks:?}"
        );
    }
    assert!(
        checks
            .iter()
            .any(|c| c.wanted == "shared_buffers=256MB" && c.seen == "256MB"),
        "{checks:?}"
    );
}
