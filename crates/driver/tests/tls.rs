//! TLS against a real MariaDB that refuses plain TCP (`require_secure_transport=ON`), with a
//! CA and certificates made at test time by OpenSSL's command line: each mode's checks, what a
//! refused certificate says, client certificates, cipher choice, and large statements.

use std::sync::OnceLock;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Endpoint, Outcome, SslMode, Tls};
use bakeoff_server::Server;
use bakeoff_testkit::rt;
use bakeoff_testkit::tls::{tls_server, Pki};

fn lab() -> &'static (Server, Pki) {
    static LAB: OnceLock<(Server, Pki)> = OnceLock::new();
    LAB.get_or_init(|| tls_server("driver"))
}

/// The load account over TCP to `host`, with TLS as `tls` says.
fn options(host: &str, tls: Tls) -> ConnectOptions {
    let (server, _) = lab();
    let mut o = server.tcp_connect_options();
    o.endpoint = Endpoint::Tcp {
        host: host.into(),
        port: server.port(),
    };
    o.tls = tls;
    o
}

fn tls(mode: SslMode, ca: Option<std::path::PathBuf>) -> Tls {
    let mut t = Tls::new(mode);
    t.ca = ca;
    t
}

/// Connect and run `f` on the connection, in one runtime (a connection's socket is the
/// runtime's).
fn with<T>(o: &ConnectOptions, f: impl AsyncFnOnce(&mut Conn) -> T) -> Result<T, DriverError> {
    rt().block_on(async {
        let mut c = Conn::connect(o).await?;
        Ok(f(&mut c).await)
    })
}

fn connect(o: &ConnectOptions) -> Result<(), DriverError> {
    with(o, async |_| ())
}

fn refused(o: &ConnectOptions) -> String {
    match connect(o) {
        Ok(_) => panic!("connected, where a refusal was expected"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn plain_tcp_is_refused_and_required_tls_runs_statements() {
    let e = refused(&options("127.0.0.1", Tls::default()));
    assert!(e.contains("Access denied") || e.contains("secure"), "{e}");
    let sql = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_version'";
    let (s, rows) = with(
        &options("127.0.0.1", tls(SslMode::Required, None)),
        async |c| (c.tls(), c.query_rows(sql).await.expect("query")),
    )
    .expect("REQUIRED");
    let s = s.expect("a TLS session");
    assert!(s.version.starts_with("TLSv1."), "{s:?}");
    assert_eq!(
        rows,
        vec![vec![Some(s.version.clone())]],
        "the server agrees"
    );
}

#[test]
fn verify_ca_checks_the_signer_and_names_the_certificate_it_refuses() {
    let (_, pki) = lab();
    connect(&options(
        "localhost",
        tls(SslMode::VerifyCa, Some(pki.ca())),
    ))
    .expect("the right CA");
    let e = refused(&options(
        "127.0.0.1",
        tls(SslMode::VerifyCa, Some(pki.other_ca())),
    ));
    for part in [
        "CN=db1.test",
        "SHA-256",
        "unknown CA",
        "other-ca.pem",
        "127.0.0.1",
    ] {
        assert!(e.contains(part), "'{part}' missing from: {e}");
    }
}

#[test]
fn a_ca_given_is_checked_whatever_the_mode_and_required_alone_checks_nothing() {
    // As libmariadb does for sysbench's --mysql-ssl=on with its cacert.pem: a CA named means
    // the chain is verified, not ignored because the mode is REQUIRED or PREFERRED.
    let (_, pki) = lab();
    for mode in [SslMode::Required, SslMode::Preferred] {
        let e = refused(&options("127.0.0.1", tls(mode, Some(pki.other_ca()))));
        assert!(
            e.contains("unknown CA") && e.contains("other-ca.pem"),
            "{mode:?}: {e}"
        );
        connect(&options("localhost", tls(mode, Some(pki.ca())))).expect("the right CA");
    }
    connect(&options("localhost", tls(SslMode::Required, None)))
        .expect("REQUIRED without a CA encrypts and verifies nothing");
}

#[test]
fn verify_identity_checks_the_host_name_too() {
    let (_, pki) = lab();
    connect(&options(
        "127.0.0.1",
        tls(SslMode::VerifyIdentity, Some(pki.ca())),
    ))
    .expect("a named address");
    let e = refused(&options(
        "localhost",
        tls(SslMode::VerifyIdentity, Some(pki.ca())),
    ));
    for part in ["does not name localhost", "db1.test", "VERIFY_CA"] {
        assert!(e.contains(part), "'{part}' missing from: {e}");
    }
}

#[test]
fn an_account_that_requires_x509_needs_the_client_certificate() {
    let (server, pki) = lab();
    let mut root = ConnectOptions::new(Endpoint::Unix(server.socket().into()), "root", "");
    root.database = None;
    rt().block_on(async {
        let mut c = Conn::connect(&root).await.expect("root over the socket");
        for sql in [
            "CREATE USER IF NOT EXISTS 'x509'@'127.0.0.1' IDENTIFIED BY 'pw' REQUIRE X509",
            "GRANT SELECT ON *.* TO 'x509'@'127.0.0.1'",
        ] {
            c.exec(sql).await.expect(sql);
        }
    });
    let mut o = options("127.0.0.1", tls(SslMode::VerifyCa, Some(pki.ca())));
    o.user = "x509".into();
    o.password = bakeoff_driver::Secret::new("pw");
    o.database = None;
    let e = refused(&o);
    assert!(e.contains("Access denied"), "{e}");
    let mut t = tls(SslMode::VerifyCa, Some(pki.ca()));
    t.cert = Some(pki.client_cert());
    t.key = Some(pki.client_key());
    o.tls = t;
    let r = with(&o, async |c| c.query("SELECT 1").await).expect("with the client certificate");
    assert!(matches!(r, Ok(Outcome::Rows(1))), "{r:?}");
}

#[test]
fn a_cipher_can_be_chosen_by_openssls_name_and_an_unknown_one_is_refused() {
    let mut t = tls(SslMode::Required, None);
    t.cipher = Some("ECDHE-RSA-AES128-GCM-SHA256".into());
    let s = with(&options("127.0.0.1", t), async |c| c.tls()).expect("TLS 1.2 with that suite");
    let s = s.expect("TLS");
    assert_eq!(s.version, "TLSv1.2");
    assert_eq!(s.cipher, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
    let mut t = tls(SslMode::Required, None);
    t.cipher = Some("RC4-MD5".into());
    let e = t.check().expect_err("RC4 is not there");
    assert!(
        e.contains("'RC4-MD5'") && e.contains("ECDHE-RSA-AES128-GCM-SHA256"),
        "{e}"
    );
}

#[test]
fn a_missing_file_or_a_verify_mode_without_a_ca_is_said_before_connecting() {
    let e = tls(SslMode::VerifyIdentity, None)
        .check()
        .expect_err("no CA");
    assert!(e.contains("--mysql-ssl-ca"), "{e}");
    let e = tls(SslMode::VerifyCa, Some("/nonexistent/ca.pem".into()))
        .check()
        .expect_err("no file");
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");
}

/// 8 MiB each way: rustls takes plaintext a bounded batch at a time, and records arrive in
/// pieces; the blocking connection (a script's) reads and writes through the same layer.
#[test]
fn large_statements_and_blocking_connections_work_over_tls() {
    const BIG: usize = 8 << 20;
    let o = options("127.0.0.1", tls(SslMode::Required, None));
    let sql = format!("SELECT LENGTH('{}'), REPEAT('y', {BIG})", "x".repeat(BIG));
    let rows = with(&o, async |c| c.query_rows(&sql).await).expect("connect");
    let rows = rows.expect("the big statement");
    assert_eq!(rows[0][0], Some(BIG.to_string()));
    assert_eq!(rows[0][1].as_ref().map(String::len), Some(BIG));
    let mut b = Conn::connect_blocking(&o).expect("blocking connect");
    assert!(b.tls().is_some());
    for _ in 0..100 {
        let r = bakeoff_driver::complete(b.query("SELECT 1"));
        assert!(matches!(r, Ok(Outcome::Rows(1))), "{r:?}");
    }
}
