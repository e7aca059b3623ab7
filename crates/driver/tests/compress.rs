//! The compressed protocol against the suite's real MariaDB: the server says the session is
//! compressed; text and prepared statements, a result set of many rows, a statement and a
//! result far larger than one frame's worth of packets, LOAD DATA LOCAL's file, and the
//! goodbye all go through it, over a unix socket, TCP and TLS-less TCP alike, on async and
//! blocking connections.

use bakeoff_driver::{Conn, ConnectOptions, Outcome, Param};
use bakeoff_testkit::{connect, rt, schema, server};

fn compressed(mut o: ConnectOptions) -> ConnectOptions {
    o.compress = true;
    o
}

async fn status(c: &mut Conn, name: &str) -> String {
    let rows = c
        .query_rows(&format!("SHOW SESSION STATUS LIKE '{name}'"))
        .await
        .expect("status");
    rows[0][1].clone().unwrap_or_default()
}

async fn exercise(c: &mut Conn) {
    assert_eq!(status(c, "Compression").await, "ON");
    // Many rows in one result: frames carry several packets, and packets cross frames.
    let rows = c
        .query_rows("SELECT seq, REPEAT('r', 200) FROM seq_1_to_5000")
        .await
        .expect("many rows");
    assert_eq!(rows.len(), 5000);
    assert_eq!(rows[4999][0].as_deref(), Some("5000"));
    // A statement and a result of several MiB (more than one 16 MiB frame is not needed to
    // cross the zlib stream's buffers many times over).
    let big = "x".repeat(3 << 20);
    let rows = c
        .query_rows(&format!("SELECT LENGTH('{big}'), REPEAT('y', 4000000)"))
        .await
        .expect("big");
    assert_eq!(rows[0][0].as_deref(), Some("3145728"));
    assert_eq!(rows[0][1].as_ref().map(String::len), Some(4_000_000));
    // Prepared statements: types, then values only.
    c.exec("CREATE TABLE IF NOT EXISTS z (id INT PRIMARY KEY, v VARCHAR(100))")
        .await
        .expect("create");
    let ins = c
        .prepare("INSERT INTO z VALUES (?, ?)")
        .await
        .expect("prepare");
    for i in 0..50 {
        let o = c
            .execute(&ins, &[Param::Int(i), Param::Str(b"compressed")])
            .await
            .expect("execute");
        assert!(matches!(o, Outcome::Ok(_)), "{o:?}");
    }
    // LOAD DATA LOCAL: the file's packets continue the command's frames.
    let file: String = (1000..3000).map(|i| format!("{i}\tloaded\n")).collect();
    let o = c
        .load_local(
            "LOAD DATA LOCAL INFILE 'z.tsv' INTO TABLE z (id, v)",
            file.as_bytes(),
        )
        .await
        .expect("load data");
    assert!(matches!(o, Outcome::Ok(_)), "{o:?}");
    let n = c.query_rows("SELECT COUNT(*) FROM z").await.expect("count");
    assert_eq!(n[0][0].as_deref(), Some("2050"));
}

#[test]
fn a_compressed_session_runs_everything_over_a_socket_and_tcp() {
    let opts = schema("compress");
    let db = opts.database.clone().unwrap();
    rt().block_on(async {
        let mut c = connect(&compressed(opts.clone())).await;
        exercise(&mut c).await;
        c.quit().await;
        let mut tcp = compressed(server().tcp_connect_options());
        tcp.database = Some(server().database().to_string());
        let mut t = connect(&tcp).await;
        assert_eq!(status(&mut t, "Compression").await, "ON");
        t.exec(&format!("DROP TABLE IF EXISTS `{db}`.z")).await.ok();
        drop(t); // the goodbye from a drop, framed
        let mut plain = connect(&opts).await;
        assert_eq!(status(&mut plain, "Compression").await, "OFF");
    });
}

#[test]
fn a_blocking_compressed_connection_works() {
    let opts = compressed(schema("compress_blocking"));
    let mut c = Conn::connect_blocking(&opts).expect("blocking connect");
    bakeoff_driver::complete(exercise(&mut c));
}
