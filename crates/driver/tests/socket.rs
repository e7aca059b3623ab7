//! The socket layer against the suite's real MariaDB: a statement far larger than the socket
//! buffer (the write must wait for space, which the reactor streams do through a separate,
//! write-only registration) arrives whole, over unix socket and TCP, while another connection
//! on the same thread keeps running.

use bakeoff_driver::{ConnectOptions, Outcome};
use bakeoff_testkit::{connect, rt, server};

/// 8 MiB: some 40 times a unix socket's default send buffer, half of max_allowed_packet.
const BIG: usize = 8 << 20;

fn big_statement_while_another_runs(opts: ConnectOptions) {
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt(), async move {
        let mut big = connect(&opts).await;
        let mut small = connect(&opts).await;
        let other = tokio::task::spawn_local(async move {
            let mut n = 0;
            for _ in 0..200 {
                small.query("SELECT 1").await.expect("small query");
                n += 1;
                tokio::task::yield_now().await;
            }
            n
        });
        let sql = format!("SELECT LENGTH('{}')", "x".repeat(BIG));
        let rows = big.query_rows(&sql).await.expect("the big statement");
        assert_eq!(rows, vec![vec![Some(BIG.to_string())]]);
        assert_eq!(other.await.expect("other task"), 200);
        // The connection is still in step with the server after the long write.
        assert!(matches!(big.query("SELECT 2").await, Ok(Outcome::Rows(1))));
    });
}

#[test]
fn big_statement_over_unix_socket() {
    big_statement_while_another_runs(server().connect_options());
}

#[test]
fn big_statement_over_tcp() {
    big_statement_while_another_runs(server().tcp_connect_options());
}
