//! Auth plugins against the suite's real MariaDB: an account on ed25519 (MariaDB's
//! auth_ed25519, whose client half is client_ed25519), with passwords of several lengths.

use bakeoff_driver::{Conn, ConnectOptions, Endpoint, Outcome};
use bakeoff_testkit::{rt, server};

fn as_root(sql: &[&str]) {
    let s = server();
    let root = ConnectOptions::new(Endpoint::Unix(s.socket().into()), "root", "");
    rt().block_on(async {
        let mut c = Conn::connect(&root).await.expect("root over the socket");
        for q in sql {
            match c.query(q).await.expect(q) {
                Outcome::Err(e) if e.code == 1968 => {} // the plugin is there already
                Outcome::Err(e) => panic!("{q}: {e}"),
                _ => {}
            }
        }
    });
}

fn connect_as(user: &str, password: &str) -> Result<Option<Outcome>, String> {
    let mut o = server().tcp_connect_options();
    o.user = user.into();
    o.password = bakeoff_driver::Secret::new(password);
    o.database = None;
    rt().block_on(async {
        let mut c = Conn::connect(&o).await.map_err(|e| e.to_string())?;
        Ok(c.query("SELECT 1").await.ok())
    })
}

#[test]
fn an_ed25519_account_logs_in_with_its_password_and_not_with_another() {
    as_root(&["INSTALL SONAME 'auth_ed25519'"]);
    // A short one, exactly 32 bytes (Ed25519's seed size), and a long one. (An empty one the
    // server itself never accepts on ed25519, from the mariadb client either.)
    let passwords = [
        "pw",
        "0123456789abcdef0123456789abcdef",
        &"long password ".repeat(20),
    ];
    for (i, pw) in passwords.iter().enumerate() {
        let user = format!("ed{i}");
        as_root(&[
            &format!("DROP USER IF EXISTS '{user}'@'127.0.0.1'"),
            &format!(
                "CREATE USER '{user}'@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('{pw}')"
            ),
        ]);
        let r = connect_as(&user, pw);
        assert!(
            matches!(r, Ok(Some(Outcome::Rows(1)))),
            "password {pw:?}: {r:?}"
        );
        let wrong = connect_as(&user, &format!("{pw}x"));
        let e = wrong.expect_err("a wrong password is refused");
        assert!(e.contains("Access denied"), "{e}");
    }
}
