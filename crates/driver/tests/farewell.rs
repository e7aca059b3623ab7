//! A connection dropped without `quit` (a failed run, Ctrl-C) still says goodbye: the server
//! counts no aborted client and logs no "Aborted connection" warning for it. A client killed
//! without a goodbye is the control: the server must log that one, or the check proves nothing.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bakeoff_driver::{Conn, Endpoint};
use bakeoff_testkit::{connect, rt, schema, server};

const DB: &str = "t_farewell";

/// "Aborted connection" warnings in the server's log for connections to this test's schema.
fn aborted_in_log() -> usize {
    let log = std::fs::read_to_string(server().error_log()).expect("the server's error log");
    log.lines()
        .filter(|l| l.contains("Aborted connection") && l.contains(&format!("to db: '{DB}'")))
        .count()
}

/// Wait until `f` holds, for at most 10 s.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "timed out waiting: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn connections_to_db(c: &mut Conn) -> usize {
    let rows = c
        .query_rows(&format!(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE db = '{DB}'"
        ))
        .await
        .expect("processlist");
    rows[0][0].as_deref().unwrap_or("0").parse().unwrap()
}

#[test]
fn a_connection_dropped_between_statements_says_goodbye() {
    let opts = schema("farewell");
    let s = server();
    let Endpoint::Unix(sock) = &s.connect_options().endpoint else {
        unreachable!()
    };
    let rt = rt();
    let mut watcher = rt.block_on(connect(&s.connect_options()));
    let idle = |w: &mut Conn| rt.block_on(connections_to_db(w)) == 0;

    // The control: the mariadb client, connected and waiting on stdin, killed.
    let mut client = Command::new("mariadb")
        .arg(format!("--socket={}", sock.display()))
        .arg(format!("--user={}", s.user()))
        .arg(format!("--database={DB}"))
        .env("MYSQL_PWD", s.password().expose())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("the mariadb client (Debian: apt-get install mariadb-client)");
    let t = Instant::now();
    while idle(&mut watcher) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the mariadb client never connected"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    client.kill().expect("kill the client");
    client.wait().expect("reap the client");
    eventually(
        "the server logs the killed client's connection as aborted",
        || aborted_in_log() == 1,
    );

    // bakeoff's connections, dropped without quit: at rest, and after a statement error.
    rt.block_on(async {
        for _ in 0..3 {
            let mut c = connect(&opts).await;
            c.query("SELECT 1").await.expect("a statement");
            drop(c);
        }
        let mut c = connect(&opts).await;
        c.query("SELECT * FROM no_such_table")
            .await
            .expect("a server error is an outcome, not a lost connection");
        drop(c);
    });
    let t = Instant::now();
    while !idle(&mut watcher) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the dropped connections never ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        aborted_in_log(),
        1,
        "only the killed client is logged as aborted:\n{}",
        s.error_log_tail(20)
    );
}
