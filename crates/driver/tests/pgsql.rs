//! The PostgreSQL driver against a real postgres: each login it speaks (SCRAM-SHA-256, md5,
//! cleartext where private), TLS as sslmode says, statements counted as sysbench counts them,
//! a failed transaction recovered, and the bounds a server cannot push it past.

use bakeoff_driver::{Limits, Outcome, Param, PgConn, Secret, SslMode};
use bakeoff_server::{find_postgres_binary, lab_ca, Server, ServerSpec};
use bakeoff_testkit::pg::{pg_admin, pg_database, pg_server};
use bakeoff_testkit::rt;

#[test]
fn statements_are_counted_as_sysbench_counts_them() {
    let opts = pg_database("driver_counts");
    rt().block_on(async {
        let mut c = PgConn::connect(&opts).await.unwrap();
        c.exec("CREATE TABLE t (id int PRIMARY KEY, c char(120) NOT NULL DEFAULT '')").await.unwrap();
        let ins = c.prepare("INSERT INTO t (id, c) VALUES (?, ?)").await.unwrap();
        for id in 1..=5 {
            let out = c.execute(&ins, &[Param::Int(id), Param::Str(b"x-y")]).await.unwrap();
            assert!(matches!(out, Outcome::Ok(ref ok) if ok.affected_rows == 1), "{out:?}");
        }
        let sel = c.prepare("SELECT c FROM t WHERE id BETWEEN ? AND ?").await.unwrap();
        assert_eq!(c.execute(&sel, &[Param::Int(2), Param::Int(4)]).await.unwrap(), Outcome::Rows(3));
        // A read that finds nothing is still a read.
        assert_eq!(c.execute(&sel, &[Param::Int(9), Param::Int(9)]).await.unwrap(), Outcome::Rows(0));
        let upd = c.prepare("UPDATE t SET c=? WHERE id=?").await.unwrap();
        let out = c.execute(&upd, &[Param::Str(b"abc"), Param::Int(99)]).await.unwrap();
        assert!(matches!(out, Outcome::Ok(ref ok) if ok.affected_rows == 0), "{out:?}");
        // Strings bind as varchar, as sysbench binds them: the whole value is stored.
        c.execute(&upd, &[Param::Str(b"0123456789"), Param::Int(1)]).await.unwrap();
        assert_eq!(c.query_value("SELECT length(c) FROM t WHERE id = 1").await.unwrap().as_deref(), Some("10"));
        let begin = c.prepare("BEGIN").await.unwrap();
        assert!(matches!(c.execute(&begin, &[]).await.unwrap(), Outcome::Ok(ref ok) if ok.affected_rows == 0));
        // A duplicate key fails the transaction; recover() rolls it back, as sysbench's
        // driver does, and the connection takes the next event.
        match c.execute(&ins, &[Param::Int(1), Param::Str(b"dup")]).await.unwrap() {
            Outcome::Err(e) => assert_eq!(e.sql_state, "23505"),
            other => panic!("{other:?}"),
        }
        assert!(c.in_failed_transaction());
        c.recover().await.unwrap();
        assert!(!c.in_failed_transaction());
        assert_eq!(c.execute(&sel, &[Param::Int(1), Param::Int(5)]).await.unwrap(), Outcome::Rows(5));
        // Text with ? substituted client-side (--db-ps-mode=disable), quotes doubled.
        let out = c.query_with("SELECT ?::text, ?", &[Param::Str(b"it's"), Param::Int(7)]).await.unwrap();
        assert_eq!(out, Outcome::Rows(1));
        c.quit().await;
    });
}

/// A statement given its values' kinds is parsed when prepared (the backend's parse is then
/// part of connecting, as sysbench's bind-time parse is), one without waits for its first
/// execution or a `declare`, and the types are sysbench's (the statement then takes its values).
#[test]
fn typed_statements_are_parsed_when_prepared() {
    let opts = pg_database("driver_typed");
    rt().block_on(async {
        let mut c = PgConn::connect(&opts).await.unwrap();
        c.exec("CREATE TABLE t (id int PRIMARY KEY, c char(20) NOT NULL DEFAULT '')").await.unwrap();
        let parsed = "SELECT count(*) FROM pg_prepared_statements";
        let upd = c.prepare_typed("UPDATE t SET c=? WHERE id=?", &[Param::Str(b""), Param::Int(0)]).await.unwrap();
        assert_eq!(c.query_value(parsed).await.unwrap().as_deref(), Some("1"));
        assert_eq!(
            c.query_value("SELECT parameter_types::text FROM pg_prepared_statements").await.unwrap().as_deref(),
            Some("{\"character varying\",bigint}")
        );
        let sel = c.prepare("SELECT c FROM t WHERE id = ?").await.unwrap();
        assert_eq!(c.query_value(parsed).await.unwrap().as_deref(), Some("1"), "untyped: parsed at its first execution");
        // A sample that does not fit the statement leaves it for the first execution too.
        let del = c.prepare_typed("DELETE FROM t WHERE id = ?", &[]).await.unwrap();
        assert_eq!(c.query_value(parsed).await.unwrap().as_deref(), Some("1"));
        c.declare(&sel, &[Param::Int(0)]).await.unwrap();
        assert_eq!(c.query_value(parsed).await.unwrap().as_deref(), Some("2"));
        c.exec("INSERT INTO t (id) VALUES (1)").await.unwrap();
        let out = c.execute(&upd, &[Param::Str(b"v"), Param::Int(1)]).await.unwrap();
        assert!(matches!(out, Outcome::Ok(ref ok) if ok.affected_rows == 1), "{out:?}");
        assert_eq!(c.execute(&sel, &[Param::Int(1)]).await.unwrap(), Outcome::Rows(1));
        let out = c.execute(&del, &[Param::Int(1)]).await.unwrap();
        assert!(matches!(out, Outcome::Ok(ref ok) if ok.affected_rows == 1), "{out:?}");
        assert_eq!(c.query_value(parsed).await.unwrap().as_deref(), Some("3"));
        // A statement the server refuses: prepare_typed says so at once; declare leaves it
        // to the first execution, which reports it as a refused statement.
        let err = c.prepare_typed("SELECT * FROM missing WHERE id = ?", &[Param::Int(0)]).await.unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        let bad = c.prepare("SELECT * FROM missing WHERE id = ?").await.unwrap();
        c.declare(&bad, &[Param::Int(0)]).await.unwrap();
        assert!(matches!(c.execute(&bad, &[Param::Int(1)]).await.unwrap(), Outcome::Err(ref e) if e.sql_state == "42P01"));
        c.quit().await;
    });
}

/// Lines ahead of the lab's in the shared server's pg_hba.conf, then a reload.
fn allow(lines: &str) {
    let admin = pg_admin();
    let hba = pg_server().socket().parent().unwrap().join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    if !old.contains(lines) {
        std::fs::write(&hba, format!("{lines}{old}")).unwrap();
    }
    rt().block_on(async {
        let mut c = PgConn::connect(&admin).await.unwrap();
        c.query_value("SELECT pg_reload_conf()").await.unwrap();
        c.quit().await;
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
}

#[test]
fn md5_and_cleartext_logins_work_and_wrong_passwords_are_refused() {
    let admin = pg_admin();
    rt().block_on(async {
        let mut c = PgConn::connect(&admin).await.unwrap();
        for sql in [
            "DROP ROLE IF EXISTS md5_user",
            "DROP ROLE IF EXISTS clear_user",
            "SET password_encryption = 'md5'",
            "CREATE ROLE md5_user LOGIN PASSWORD 'pw-md5'",
            "SET password_encryption = 'scram-sha-256'",
            "CREATE ROLE clear_user LOGIN PASSWORD 'pw-clear'",
        ] {
            c.exec(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        c.quit().await;
    });
    allow("local all md5_user md5\nlocal all clear_user password\nhost all clear_user 127.0.0.1/32 password\n");
    let login = |user: &str, pw: &str, tcp: bool| {
        let mut o = if tcp {
            pg_server().tcp_connect_options()
        } else {
            pg_server().connect_options()
        };
        o.user = user.into();
        o.password = Secret::new(pw);
        o.database = Some("postgres".into());
        rt().block_on(async { PgConn::connect(&o).await.map(|c| c.connection_id()) })
    };
    assert!(login("md5_user", "pw-md5", false).is_ok());
    assert!(login("clear_user", "pw-clear", false).is_ok());
    // Loopback is private too.
    assert!(login("clear_user", "pw-clear", true).is_ok());
    let e = login("md5_user", "wrong", false).unwrap_err().to_string();
    assert!(e.contains("password authentication failed"), "{e}");
}

#[test]
fn tls_as_sslmode_says_and_a_result_over_the_cap_is_refused() {
    let ca = lab_ca().unwrap();
    let server = Server::start(&ServerSpec {
        binary: Some(find_postgres_binary().unwrap()),
        options: vec!["fsync=off".into()],
        tls: Some(ca.server_tls("127.0.0.1".parse().unwrap()).unwrap()),
        ..ServerSpec::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    rt().block_on(async {
        // verify-full against the lab's CA.
        let opts = server.tcp_connect_options();
        assert_eq!(opts.tls.mode, SslMode::VerifyIdentity);
        let mut c = PgConn::connect(&opts)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let tls = c.tls().expect("TLS in effect");
        assert!(
            tls.version.contains("1.3") || tls.version.contains("1.2"),
            "{tls:?}"
        );
        let on = c
            .query_value("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .await
            .unwrap();
        assert_eq!(on.as_deref(), Some("t"));
        c.quit().await;
        // verify-full against another CA is refused before any password is sent.
        let mut wrong = server.tcp_connect_options();
        wrong.tls = bakeoff_driver::Tls::new(SslMode::VerifyIdentity);
        let e = PgConn::connect(&wrong)
            .await
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("TLS"), "{e}");
        // A message over --max-packet is refused by its length, before it is read.
        let mut small = server.tcp_connect_options();
        small.limits = Limits {
            max_packet: 4096,
            ..Limits::default()
        };
        let mut c = PgConn::connect(&small).await.unwrap();
        let e = c
            .query_rows("SELECT repeat('x', 100000)")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("over the 4096-byte cap"), "{e}");
    });
}
