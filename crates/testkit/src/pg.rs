//! The PostgreSQL side of the suite: one private `postgres` per test binary (initdb once,
//! in a throwaway run directory, `fsync=off` as only tests may have it), and one database
//! per test so tests never see each other's tables.
//!
//! A machine without PostgreSQL 15 fails the tests with the install command; nothing is
//! skipped.

use std::sync::OnceLock;

use bakeoff_driver::{ConnectOptions, PgConn, Secret};
use bakeoff_server::{find_postgres_binary, Server, ServerSpec, PG_INSTALL_HINT};

/// The binary's shared PostgreSQL, started on first use.
pub fn pg_server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let started = find_postgres_binary().and_then(|binary| {
            Server::start(&ServerSpec {
                binary: Some(binary),
                // Tests only: a crash loses nothing worth a flush.
                options: vec!["fsync=off".into(), "synchronous_commit=off".into()],
                ..ServerSpec::default()
            })
        });
        match started {
            Ok(s) => {
                crate::scratch::at_exit(|| {
                    if let Some(s) = SERVER.get() {
                        s.discard_at_exit();
                    }
                });
                s
            }
            Err(e) => panic!("these tests need a real PostgreSQL server and could not start one: {e}\n\nTo fix: {PG_INSTALL_HINT}"),
        }
    })
}

/// The lab's superuser over the socket (trusted there): for what the load account may not do.
pub fn pg_admin() -> ConnectOptions {
    let mut o = pg_server().connect_options();
    o.user = "bakeoff".into();
    o.password = Secret::new("");
    o.database = Some("postgres".into());
    o
}

/// A fresh, empty database named after the test, owned by the load account; options that
/// connect into it as that account.
pub fn pg_database(name: &str) -> ConnectOptions {
    let db = format!("t_{name}");
    // Started (if it is not yet) outside the runtime: the lab starts servers with its own.
    let admin = pg_admin();
    crate::rt().block_on(async {
        let mut c = PgConn::connect(&admin)
            .await
            .unwrap_or_else(|e| panic!("connect to the test PostgreSQL: {e}"));
        c.exec(&format!("DROP DATABASE IF EXISTS \"{db}\""))
            .await
            .expect("drop database");
        c.exec(&format!("CREATE DATABASE \"{db}\" OWNER sbtest"))
            .await
            .expect("create database");
        c.quit().await;
    });
    pg_server().connect_options().with_database(&db)
}
