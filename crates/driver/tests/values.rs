//! `execute_into` against the suite's real MariaDB and PostgreSQL: each column type a TPC-C
//! transaction reads comes back value by value (integers signed and unsigned, DECIMAL whole
//! and not, DOUBLE, CHAR, VARCHAR, DATETIME/TIMESTAMP, NULLs), as do 50 ordered rows, an
//! empty result, aggregates, a refused statement (the connection usable after), and on
//! MariaDB the executions where the server leaves out the column definitions it cached.

use bakeoff_driver::{Conn, Connection, DriverError, Outcome, Param, PgConn, RowBuf};
use bakeoff_testkit::pg::pg_database;
use bakeoff_testkit::{rt, schema};

/// The text of a value, for messages and comparisons.
fn text(out: &RowBuf, row: usize, col: usize) -> Option<String> {
    out.bytes(row, col)
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

/// The table both engines fill: `v` with one row of values and one of NULLs, `m` with 50
/// rows (`k` = 3 id, `amt` = id + 0.25, `grp` = id mod 7).
async fn fill<C: Connection>(c: &mut C, create_v: &str, create_m: &str) {
    for sql in [create_v, create_m] {
        assert!(
            matches!(c.query(sql).await.unwrap(), Outcome::Ok(_)),
            "{sql}"
        );
    }
    let rows = "INSERT INTO v VALUES \
        (1, -9000000000, 4294967295, -32768, -128, 12.00, 2.5, 'ab', 'hello', \
         '2024-02-29 13:05:09', '2001-01-02 03:04:05'), \
        (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), \
        (3, 9000000000, 0, 32767, 127, -3.75, -0.125, 'x', '', \
         '1999-12-31 23:59:59', '2030-01-01 00:00:00')";
    assert!(matches!(c.query(rows).await.unwrap(), Outcome::Ok(_)));
    let mut ins = String::from("INSERT INTO m (id, k, amt, grp) VALUES ");
    for id in 1..=50 {
        let sep = if id > 1 { ", " } else { "" };
        ins.push_str(&format!("{sep}({id}, {}, {id}.25, {})", id * 3, id % 7));
    }
    assert!(matches!(c.query(&ins).await.unwrap(), Outcome::Ok(_)));
}

/// The row of values and the row of NULLs, read back value by value. `ch`: how the engine
/// sends CHAR(4) 'ab' (MariaDB strips the padding, PostgreSQL keeps it).
async fn values_read_back<C: Connection>(c: &mut C, ch: &str) {
    let sel = c
        .prepare("SELECT id, big, u, s, t, d, f, c, vc, dt, ts FROM v WHERE id = ?")
        .await
        .unwrap();
    let mut out = RowBuf::new();
    let o = c
        .execute_into(&sel, &[Param::Int(1)], &mut out)
        .await
        .unwrap();
    assert_eq!(o, Outcome::Rows(1));
    assert_eq!((out.rows(), out.columns()), (1, 11));
    assert_eq!(out.int(0, 0), Some(1));
    assert_eq!(out.int(0, 1), Some(-9_000_000_000));
    assert_eq!(out.int(0, 2), Some(4_294_967_295));
    assert_eq!((out.int(0, 3), out.int(0, 4)), (Some(-32768), Some(-128)));
    assert_eq!(text(&out, 0, 5).as_deref(), Some("12.00"));
    assert_eq!((out.int(0, 5), out.float(0, 5)), (Some(12), Some(12.0)));
    assert_eq!((out.float(0, 6), out.int(0, 6)), (Some(2.5), None));
    assert_eq!(text(&out, 0, 7).as_deref(), Some(ch));
    assert_eq!(text(&out, 0, 8).as_deref(), Some("hello"));
    assert_eq!(out.int(0, 8), None);
    assert_eq!(text(&out, 0, 9).as_deref(), Some("2024-02-29 13:05:09"));
    assert_eq!(text(&out, 0, 10).as_deref(), Some("2001-01-02 03:04:05"));
    assert!((0..11).all(|col| !out.is_null(0, col)));
    assert!(
        out.is_null(1, 0) && out.is_null(0, 11),
        "outside the result"
    );

    let o = c
        .execute_into(&sel, &[Param::Int(2)], &mut out)
        .await
        .unwrap();
    assert_eq!((o, out.rows()), (Outcome::Rows(1), 1));
    assert_eq!(out.int(0, 0), Some(2));
    for col in 1..11 {
        assert!(
            out.is_null(0, col),
            "column {col}: {:?}",
            text(&out, 0, col)
        );
        assert_eq!((out.int(0, col), out.float(0, col)), (None, None));
    }

    let o = c
        .execute_into(&sel, &[Param::Int(3)], &mut out)
        .await
        .unwrap();
    assert_eq!(o, Outcome::Rows(1));
    assert_eq!(
        (out.int(0, 1), out.int(0, 2)),
        (Some(9_000_000_000), Some(0))
    );
    assert_eq!((out.int(0, 3), out.int(0, 4)), (Some(32767), Some(127)));
    assert_eq!((out.int(0, 5), out.float(0, 5)), (None, Some(-3.75)));
    assert_eq!(text(&out, 0, 5).as_deref(), Some("-3.75"));
    assert_eq!(out.float(0, 6), Some(-0.125));
    assert_eq!(text(&out, 0, 8).as_deref(), Some(""));
    assert!(!out.is_null(0, 8), "an empty string is not NULL");
    assert_eq!(text(&out, 0, 9).as_deref(), Some("1999-12-31 23:59:59"));
}

/// 50 rows in order, an empty result (its columns still said), aggregates.
async fn results_of_every_shape<C: Connection>(c: &mut C) {
    let mut out = RowBuf::new();
    let range = c
        .prepare("SELECT id, k FROM m WHERE id BETWEEN ? AND ? ORDER BY id")
        .await
        .unwrap();
    let o = c
        .execute_into(&range, &[Param::Int(1), Param::Int(50)], &mut out)
        .await
        .unwrap();
    assert_eq!((o, out.rows(), out.columns()), (Outcome::Rows(50), 50, 2));
    for row in 0..50 {
        let id = row as i64 + 1;
        assert_eq!((out.int(row, 0), out.int(row, 1)), (Some(id), Some(3 * id)));
    }
    let o = c
        .execute_into(&range, &[Param::Int(1000), Param::Int(2000)], &mut out)
        .await
        .unwrap();
    assert_eq!((o, out.rows(), out.columns()), (Outcome::Rows(0), 0, 2));
    assert!(out.is_null(0, 0));

    let sums = c
        .prepare("SELECT SUM(amt), COUNT(DISTINCT grp), COUNT(*) FROM m WHERE id BETWEEN ? AND ?")
        .await
        .unwrap();
    let o = c
        .execute_into(&sums, &[Param::Int(1), Param::Int(4)], &mut out)
        .await
        .unwrap();
    assert_eq!(o, Outcome::Rows(1));
    assert_eq!(text(&out, 0, 0).as_deref(), Some("11.00"));
    assert_eq!(
        (out.int(0, 0), out.int(0, 1), out.int(0, 2)),
        (Some(11), Some(4), Some(4))
    );
    c.execute_into(&sums, &[Param::Int(1), Param::Int(50)], &mut out)
        .await
        .unwrap();
    assert_eq!((out.float(0, 0), out.int(0, 0)), (Some(1287.5), None));
    assert_eq!((out.int(0, 1), out.int(0, 2)), (Some(7), Some(50)));
    // An aggregate over no rows is one row of NULL.
    c.execute_into(&sums, &[Param::Int(99), Param::Int(99)], &mut out)
        .await
        .unwrap();
    assert_eq!(out.rows(), 1);
    assert!(out.is_null(0, 0));
    assert_eq!(out.int(0, 2), Some(0));

    // A statement with no result set: no rows, no columns.
    let upd = c.prepare("UPDATE m SET k = k WHERE id = ?").await.unwrap();
    let o = c
        .execute_into(&upd, &[Param::Int(1)], &mut out)
        .await
        .unwrap();
    assert!(matches!(o, Outcome::Ok(_)), "{o:?}");
    assert_eq!((out.rows(), out.columns()), (0, 0));
}

/// A refused statement is the outcome, with nothing kept; the next statement runs.
async fn a_refusal_is_data<C: Connection>(c: &mut C, sql_state: &str) -> Result<(), DriverError> {
    let mut out = RowBuf::new();
    let sel = c.prepare("SELECT k FROM m WHERE id = ?").await?;
    c.execute_into(&sel, &[Param::Int(5)], &mut out).await?;
    assert_eq!(out.int(0, 0), Some(15));
    let dup = c
        .prepare("INSERT INTO m (id, k, amt, grp) VALUES (?, 0, 0, 0)")
        .await?;
    match c.execute_into(&dup, &[Param::Int(1)], &mut out).await? {
        Outcome::Err(e) => assert_eq!(e.sql_state, sql_state),
        other => panic!("{other:?}"),
    }
    assert_eq!((out.rows(), out.columns()), (0, 0));
    c.recover().await?;
    c.execute_into(&sel, &[Param::Int(6)], &mut out).await?;
    assert_eq!(out.int(0, 0), Some(18));
    Ok(())
}

const MY_V: &str = "CREATE TABLE v (id INT PRIMARY KEY, big BIGINT, u INT UNSIGNED, s SMALLINT, \
    t TINYINT, d DECIMAL(12,2), f DOUBLE, c CHAR(4), vc VARCHAR(20), dt DATETIME, ts TIMESTAMP NULL)";
const MY_M: &str =
    "CREATE TABLE m (id INT PRIMARY KEY, k INT NOT NULL, amt DECIMAL(6,2), grp TINYINT)";

#[test]
fn mariadb_values_read_back() {
    let opts = schema("values_read_back");
    rt().block_on(async {
        let mut c = Conn::connect(&opts).await.unwrap();
        fill(&mut c, MY_V, MY_M).await;
        values_read_back(&mut c, "ab").await;
        results_of_every_shape(&mut c).await;
        a_refusal_is_data(&mut c, "23000").await.unwrap();
        c.quit().await;
    });
}

async fn metadata_skipped(c: &mut Conn) -> u64 {
    let rows = c
        .query_rows("SHOW SESSION STATUS LIKE 'Resultset_metadata_skipped'")
        .await
        .unwrap();
    let value = rows.first().and_then(|r| r.get(1).cloned().flatten());
    value
        .and_then(|v| v.parse().ok())
        .expect("MariaDB 10.6+ counts the result sets it sent without their metadata")
}

/// A MariaDB that caches metadata sends a statement's column definitions with its prepare
/// and then only when they change: the executions in between decode with the prepare's, or
/// with those an execution (counting or keeping) was sent last.
#[test]
fn mariadb_executions_without_column_definitions() {
    let opts = schema("values_cached_metadata");
    rt().block_on(async {
        let mut c = Conn::connect(&opts).await.unwrap();
        fill(&mut c, MY_V, MY_M).await;
        let mut out = RowBuf::new();
        let sel = c
            .prepare("SELECT d, u, dt, c FROM v WHERE id = ?")
            .await
            .unwrap();
        let skipped = metadata_skipped(&mut c).await;
        for _ in 0..2 {
            c.execute_into(&sel, &[Param::Int(1)], &mut out)
                .await
                .unwrap();
            assert_eq!(text(&out, 0, 0).as_deref(), Some("12.00"));
            assert_eq!(out.int(0, 1), Some(4_294_967_295));
            assert_eq!(text(&out, 0, 2).as_deref(), Some("2024-02-29 13:05:09"));
            assert_eq!(text(&out, 0, 3).as_deref(), Some("ab"));
        }
        assert_eq!(
            metadata_skipped(&mut c).await,
            skipped + 2,
            "both executions came without their column definitions"
        );
        // Counting executions between, then keeping ones again.
        assert_eq!(
            c.execute(&sel, &[Param::Int(3)]).await.unwrap(),
            Outcome::Rows(1)
        );
        c.execute_into(&sel, &[Param::Int(3)], &mut out)
            .await
            .unwrap();
        assert_eq!(out.float(0, 0), Some(-3.75));

        // A result whose types follow the parameters': new definitions each time they change,
        // whichever of execute and execute_into was sent them.
        let echo = c.prepare("SELECT ?").await.unwrap();
        c.execute_into(&echo, &[Param::Int(5)], &mut out)
            .await
            .unwrap();
        assert_eq!(out.int(0, 0), Some(5));
        c.execute_into(&echo, &[Param::Str(b"abc")], &mut out)
            .await
            .unwrap();
        assert_eq!(text(&out, 0, 0).as_deref(), Some("abc"));
        assert_eq!(
            c.execute(&echo, &[Param::Double(2.5)]).await.unwrap(),
            Outcome::Rows(1)
        );
        c.execute_into(&echo, &[Param::Double(0.5)], &mut out)
            .await
            .unwrap();
        assert_eq!(out.float(0, 0), Some(0.5));
        c.execute_into(&echo, &[Param::Int(-7)], &mut out)
            .await
            .unwrap();
        assert_eq!(out.int(0, 0), Some(-7));

        // The table changes under a prepared statement: the server sends the new
        // definitions to the counting execution, and the keeping one reads with them.
        let one = c.prepare("SELECT k FROM m WHERE id = ?").await.unwrap();
        c.execute_into(&one, &[Param::Int(2)], &mut out)
            .await
            .unwrap();
        assert_eq!(out.int(0, 0), Some(6));
        c.exec("ALTER TABLE m MODIFY k DOUBLE NOT NULL")
            .await
            .unwrap();
        c.exec("UPDATE m SET k = k + 0.5 WHERE id = 2")
            .await
            .unwrap();
        assert_eq!(
            c.execute(&one, &[Param::Int(2)]).await.unwrap(),
            Outcome::Rows(1)
        );
        c.execute_into(&one, &[Param::Int(2)], &mut out)
            .await
            .unwrap();
        assert_eq!(out.float(0, 0), Some(6.5));
        c.quit().await;
    });
}

/// `--max-rows` bounds what execute_into keeps, as it bounds a script's result sets.
#[test]
fn mariadb_max_rows_ends_the_call() {
    let mut opts = schema("values_max_rows");
    rt().block_on(async {
        let mut c = Conn::connect(&opts).await.unwrap();
        fill(&mut c, MY_V, MY_M).await;
        c.quit().await;
        opts.limits.max_rows = 10;
        let mut c = Conn::connect(&opts).await.unwrap();
        let all = c.prepare("SELECT id FROM m").await.unwrap();
        let mut out = RowBuf::new();
        let r = c.execute_into(&all, &[], &mut out).await;
        assert!(
            matches!(r, Err(DriverError::TooManyRows { max: 10, .. })),
            "{r:?}"
        );
        assert_eq!(out.rows(), 0);
    });
}

const PG_V: &str = "CREATE TABLE v (id int PRIMARY KEY, big bigint, u bigint, s smallint, \
    t smallint, d numeric(12,2), f double precision, c char(4), vc varchar(20), dt timestamp, \
    ts timestamp)";
const PG_M: &str =
    "CREATE TABLE m (id int PRIMARY KEY, k int NOT NULL, amt numeric(6,2), grp smallint)";

#[test]
fn postgres_values_read_back() {
    let opts = pg_database("values_read_back");
    rt().block_on(async {
        let mut c = PgConn::connect(&opts).await.unwrap();
        fill(&mut c, PG_V, PG_M).await;
        values_read_back(&mut c, "ab  ").await;
        results_of_every_shape(&mut c).await;
        a_refusal_is_data(&mut c, "23505").await.unwrap();
        // Inside a transaction the refusal fails it; recover() rolls it back.
        c.exec("BEGIN").await.unwrap();
        a_refusal_is_data(&mut c, "23505").await.unwrap();
        assert!(!c.in_failed_transaction());
        c.quit().await;
    });
}

#[test]
fn postgres_max_rows_ends_the_call_in_step() {
    let mut opts = pg_database("values_max_rows");
    rt().block_on(async {
        let mut c = PgConn::connect(&opts).await.unwrap();
        fill(&mut c, PG_V, PG_M).await;
        c.quit().await;
        opts.limits.max_rows = 10;
        let mut c = PgConn::connect(&opts).await.unwrap();
        let all = c.prepare("SELECT id FROM m").await.unwrap();
        let mut out = RowBuf::new();
        let r = c.execute_into(&all, &[], &mut out).await;
        assert!(
            matches!(r, Err(DriverError::TooManyRows { max: 10, .. })),
            "{r:?}"
        );
        assert_eq!(out.rows(), 0);
        // The reply was read to its end: the connection is in step.
        let few = c
            .prepare("SELECT id FROM m WHERE id < 3 ORDER BY id")
            .await
            .unwrap();
        c.execute_into(&few, &[], &mut out).await.unwrap();
        assert_eq!((out.rows(), out.int(1, 0)), (2, Some(2)));
        c.quit().await;
    });
}
