//! `execute_many` against the suite's real MariaDB and PostgreSQL: a batch's replies come
//! back in order, each into its own buffer; a statement twice in one batch (on PostgreSQL
//! before it was ever parsed); what a refused statement leaves of the rest (MySQL runs them;
//! PostgreSQL refuses them and its COMMIT rolls back); a batch too long refused before
//! anything is sent, the connection usable after each.

use bakeoff_driver::{Conn, Connection, DriverError, Outcome, Param, PgConn, RowBuf, MAX_BATCH};
use bakeoff_testkit::pg::pg_database;
use bakeoff_testkit::{rt, schema};

async fn ok<C: Connection>(c: &mut C, sql: &str) {
    let o = c.query(sql).await.unwrap();
    assert!(
        matches!(o, Outcome::Ok(_) | Outcome::Rows(_)),
        "{sql}: {o:?}"
    );
}

async fn count<C: Connection>(c: &mut C, sql: &str) -> i64 {
    let stmt = c.prepare(sql).await.unwrap();
    let mut out = RowBuf::new();
    c.execute_into(&stmt, &[], &mut out).await.unwrap();
    out.int(0, 0).expect("a count")
}

/// Reads and writes in one batch: each reply in its own buffer, in the batch's order, the
/// same statement twice with different values.
async fn replies_in_order<C: Connection>(c: &mut C) {
    ok(c, "CREATE TABLE b (id INT PRIMARY KEY, k INT NOT NULL)").await;
    ok(c, "INSERT INTO b VALUES (1, 10), (2, 20), (3, 30)").await;
    let sel = c
        .prepare("SELECT id, k FROM b WHERE id <= ? ORDER BY id")
        .await
        .unwrap();
    let upd = c
        .prepare("UPDATE b SET k = k + ? WHERE id = ?")
        .await
        .unwrap();
    let mut outs = vec![RowBuf::new(); 4];
    let mut outcomes = vec![Outcome::Rows(99)];
    let one = [Param::Int(1)];
    let three = [Param::Int(3)];
    let bump = [Param::Int(5), Param::Int(2)];
    let batch: [(&C::Stmt, &[Param<'_>]); 4] =
        [(&sel, &three), (&upd, &bump), (&sel, &one), (&sel, &three)];
    c.execute_many(&batch, &mut outs, &mut outcomes)
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 4, "{outcomes:?}");
    assert_eq!(outcomes[0], Outcome::Rows(3));
    assert!(
        matches!(&outcomes[1], Outcome::Ok(o) if o.affected_rows == 1),
        "{outcomes:?}"
    );
    assert_eq!((outcomes[2].clone(), outs[2].rows()), (Outcome::Rows(1), 1));
    // The first read saw the row before the update; the last, after it.
    assert_eq!((outs[0].int(1, 1), outs[3].int(1, 1)), (Some(20), Some(25)));
    assert_eq!((outs[1].rows(), outs[1].columns()), (0, 0));
    assert_eq!(outs[2].int(0, 1), Some(10));
}

/// A refused statement in the middle of a transaction's batch that ends in COMMIT: what the
/// statements after it did, and what was committed. Returns the later statements' outcomes.
async fn refused_in_a_transaction<C: Connection>(c: &mut C) -> Vec<Outcome> {
    let begin = c.prepare("BEGIN").await.unwrap();
    let commit = c.prepare("COMMIT").await.unwrap();
    let ins = c
        .prepare("INSERT INTO b (id, k) VALUES (?, 0)")
        .await
        .unwrap();
    let (four, dup, five) = ([Param::Int(4)], [Param::Int(1)], [Param::Int(5)]);
    let batch: [(&C::Stmt, &[Param<'_>]); 5] = [
        (&begin, &[]),
        (&ins, &four),
        (&ins, &dup),
        (&ins, &five),
        (&commit, &[]),
    ];
    let mut outs = vec![RowBuf::new(); 5];
    let mut outcomes = Vec::new();
    c.execute_many(&batch, &mut outs, &mut outcomes)
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 5);
    assert!(matches!(outcomes[1], Outcome::Ok(_)), "{outcomes:?}");
    assert!(
        matches!(&outcomes[2], Outcome::Err(e) if e.sql_state == "23505" || e.sql_state == "23000"),
        "{outcomes:?}"
    );
    c.recover().await.unwrap();
    outcomes.split_off(3)
}

/// Longer than MAX_BATCH, or with fewer buffers than statements: refused, nothing sent.
async fn too_long_is_refused<C: Connection>(c: &mut C) {
    let sel = c.prepare("SELECT 1").await.unwrap();
    let batch: Vec<(&C::Stmt, &[Param<'_>])> = vec![(&sel, &[]); MAX_BATCH + 1];
    let mut outs = vec![RowBuf::new(); MAX_BATCH + 1];
    let mut outcomes = Vec::new();
    let e = c
        .execute_many(&batch, &mut outs, &mut outcomes)
        .await
        .unwrap_err();
    assert!(matches!(e, DriverError::Batch { .. }), "{e}");
    assert!(e.to_string().contains("at most 64"), "{e}");
    let e = c
        .execute_many(&batch[..3], &mut outs[..2], &mut outcomes)
        .await
        .unwrap_err();
    assert!(matches!(e, DriverError::Batch { .. }), "{e}");
    assert!(outcomes.is_empty());
    c.execute_many(&batch[..MAX_BATCH], &mut outs, &mut outcomes)
        .await
        .unwrap();
    assert_eq!(outcomes.len(), MAX_BATCH);
    assert!(outs[..MAX_BATCH].iter().all(|o| o.int(0, 0) == Some(1)));
}

#[test]
fn mariadb_batches() {
    let opts = schema("driver_batches");
    rt().block_on(async {
        let mut c = Conn::connect(&opts).await.unwrap();
        assert!(!c.error_aborts_transaction());
        replies_in_order(&mut c).await;
        // MySQL undoes the refused statement alone and runs the rest: 5 is inserted and
        // the COMMIT commits it with 4. A batch that must not commit part of its work
        // keeps its COMMIT apart (TPC-C's terminals do).
        let later = refused_in_a_transaction(&mut c).await;
        assert!(matches!(later[0], Outcome::Ok(_)), "{later:?}");
        assert_eq!(
            count(&mut c, "SELECT COUNT(*) FROM b WHERE id IN (4, 5)").await,
            2
        );
        too_long_is_refused(&mut c).await;
        types_change_within_a_batch(&mut c).await;
        c.quit().await;
    });
}

/// One statement twice in a batch with values of other types than the server holds for it
/// (an integer that needs 64 bits, then one that fits 32): each copy is read as its own.
async fn types_change_within_a_batch(c: &mut Conn) {
    let sel = c.prepare("SELECT ? + 0").await.unwrap();
    let mut outs = vec![RowBuf::new(); 2];
    let mut outcomes = Vec::new();
    c.execute_many(&[(&sel, &[Param::Int(1)])], &mut outs, &mut outcomes)
        .await
        .unwrap();
    let (big, small) = ([Param::Int(5_000_000_000)], [Param::Int(7)]);
    let batch: [(&bakeoff_driver::Stmt, &[Param<'_>]); 2] = [(&sel, &big), (&sel, &small)];
    c.execute_many(&batch, &mut outs, &mut outcomes)
        .await
        .unwrap();
    assert_eq!(outcomes, [Outcome::Rows(1), Outcome::Rows(1)]);
    assert_eq!(
        (outs[0].int(0, 0), outs[1].int(0, 0)),
        (Some(5_000_000_000), Some(7))
    );
}

#[test]
fn postgres_batches() {
    let opts = pg_database("driver_batches");
    rt().block_on(async {
        let mut c = PgConn::connect(&opts).await.unwrap();
        assert!(c.error_aborts_transaction());
        replies_in_order(&mut c).await;
        // PostgreSQL fails the transaction: the insert after the refusal is refused too,
        // and the COMMIT rolls back, so neither 4 nor 5 is there.
        let later = refused_in_a_transaction(&mut c).await;
        assert!(
            matches!(&later[0], Outcome::Err(e) if e.sql_state == "25P02"),
            "{later:?}"
        );
        assert!(matches!(later[1], Outcome::Ok(_)), "{later:?}");
        assert!(!c.in_failed_transaction());
        assert_eq!(
            count(&mut c, "SELECT COUNT(*) FROM b WHERE id IN (4, 5)").await,
            0
        );
        too_long_is_refused(&mut c).await;
        // A transaction given up without a server error (a check of what it read) is
        // rolled back too, not left for the next BEGIN to warn about.
        ok(&mut c, "BEGIN").await;
        ok(&mut c, "INSERT INTO b VALUES (9, 9)").await;
        c.recover().await.unwrap();
        assert_eq!(
            count(&mut c, "SELECT COUNT(*) FROM b WHERE id = 9").await,
            0
        );
        c.quit().await;
    });
}

/// A scripted server for a batch of two executions: it answers the first with OK, then the
/// second as `second` says, and holds the connection until the client leaves.
mod hostile {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    use bakeoff_testkit::scripted::{greeting, packet, read_packet};

    #[derive(Clone, Copy)]
    pub enum Second {
        /// A result set of one BIGINT column whose rows never end.
        EndlessRows,
        /// Nothing.
        Silence,
    }

    /// A column definition (protocol 4.1) of a BIGINT named `k`.
    fn bigint_column() -> Vec<u8> {
        let mut p = Vec::new();
        for s in ["def", "", "", "", "k", ""] {
            p.push(s.len() as u8);
            p.extend_from_slice(s.as_bytes());
        }
        p.push(0x0c);
        p.extend_from_slice(&63u16.to_le_bytes());
        p.extend_from_slice(&20u32.to_le_bytes());
        p.push(0x08);
        p.extend_from_slice(&[0, 0, 0, 0, 0]);
        p
    }

    fn serve(mut s: TcpStream, second: Second) -> std::io::Result<()> {
        let caps = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000;
        let hello = greeting(
            "10.11.0-hostile",
            caps,
            b"abcdefghijklmnopqrst",
            "mysql_native_password",
        );
        s.write_all(&packet(0, &hello))?;
        read_packet(&mut s)?;
        s.write_all(&packet(2, &[0, 0, 0, 2, 0, 0, 0]))?;
        // Both executions, one write: read them before answering, as a server would
        // answer the first while the second waits in its socket.
        for _ in 0..2 {
            let cmd = read_packet(&mut s)?;
            assert_eq!(cmd[0], 0x17, "COM_STMT_EXECUTE");
        }
        s.write_all(&packet(1, &[0, 0, 0, 2, 0, 0, 0]))?;
        if let Second::EndlessRows = second {
            let mut head = packet(1, &[1]);
            head.extend(packet(2, &bigint_column()));
            head.extend(packet(3, &[0xfe, 0, 0, 2, 0]));
            s.write_all(&head)?;
            let mut rows = Vec::new();
            for seq in 0..=255u8 {
                rows.extend(packet(seq, &[0, 0, 7, 0, 0, 0, 0, 0, 0, 0]));
            }
            // Until the client hangs up.
            while s.write_all(&rows).is_ok() {}
            return Ok(());
        }
        let mut rest = [0u8; 64];
        let _ = s.read(&mut rest);
        Ok(())
    }

    /// Where the scripted server listens; it serves one client.
    pub fn start(second: Second) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((s, _)) = listener.accept() {
                let _ = serve(s, second);
            }
        });
        port
    }
}

/// A batch against a scripted server: its second reply's rows never end (the call ends at
/// `--max-rows`, the first reply's outcome still given), or never come (the read timeout
/// ends it). Either way an error that names the bound, and nothing held past it.
#[test]
fn a_hostile_servers_batch_ends_at_its_bounds() {
    use bakeoff_driver::{Endpoint, Stmt};
    use std::time::{Duration, Instant};
    let mut opts = schema("driver_batches_hostile");
    opts.password = Default::default();
    opts.limits.max_rows = 1000;
    opts.limits.read_timeout = Some(Duration::from_millis(500));
    let stmt = Stmt {
        id: 1,
        params: 1,
        columns: 1,
    };
    let one = [Param::Int(1)];
    let batch: [(&Stmt, &[Param<'_>]); 2] = [(&stmt, &one), (&stmt, &one)];
    for second in [hostile::Second::EndlessRows, hostile::Second::Silence] {
        opts.endpoint = Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: hostile::start(second),
        };
        rt().block_on(async {
            let mut c = Conn::connect(&opts).await.unwrap();
            let mut outs = vec![RowBuf::new(); 2];
            let mut outcomes = Vec::new();
            let began = Instant::now();
            let e = c
                .execute_many(&batch, &mut outs, &mut outcomes)
                .await
                .unwrap_err();
            assert!(matches!(outcomes[..], [Outcome::Ok(_)]), "{outcomes:?}");
            match second {
                hostile::Second::EndlessRows => {
                    assert!(
                        matches!(e, DriverError::TooManyRows { max: 1000, .. }),
                        "{e}"
                    );
                    assert!(outs[1].rows() <= 1000, "{}", outs[1].rows());
                }
                hostile::Second::Silence => {
                    assert!(matches!(e, DriverError::ReadTimeout { .. }), "{e}");
                    assert!(e.to_string().contains("--read-timeout"), "{e}");
                    assert!(began.elapsed() < Duration::from_secs(5));
                }
            }
        });
    }
}
