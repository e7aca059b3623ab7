//! `bakeoff` on PostgreSQL against the suite's own postgres: the embedded server end to end,
//! a given server by URL beside the real sysbench's pgsql driver (same counts, same schema),
//! and ownership: nothing dropped that bakeoff did not create.

mod common;

use std::process::{Command, Output};

use bakeoff_driver::{Endpoint, PgConn};
use bakeoff_testkit::pg::{pg_database, pg_server};
use bakeoff_testkit::rt;
use common::{parse_report, real_sysbench, text};

/// bakeoff against a database of the shared PostgreSQL, by URL over loopback TCP.
fn bakeoff_pg(args: &[&str], db: &str) -> Output {
    let s = pg_server();
    let url = format!(
        "postgresql://{}@127.0.0.1:{}/{db}?sslmode=disable",
        s.user(),
        s.port()
    );
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .arg("--server")
        .arg(url)
        .env("PGPASSWORD", s.password().expose())
        .env_remove("MYSQL_PWD")
        .output()
        .expect("run bakeoff")
}

/// sysbench's pgsql driver against the same database.
fn sysbench_pg(args: &[&str], db: &str) -> Output {
    let s = pg_server();
    Command::new(real_sysbench())
        .args(args)
        .arg("--db-driver=pgsql")
        .arg("--pgsql-host=127.0.0.1")
        .arg(format!("--pgsql-port={}", s.port()))
        .arg(format!("--pgsql-user={}", s.user()))
        .arg(format!("--pgsql-password={}", s.password().expose()))
        .arg(format!("--pgsql-db={db}"))
        .current_dir(bakeoff_testkit::scratch::dir("sysbench-pg"))
        .output()
        .expect("run sysbench")
}

fn ok(o: &Output, what: &str) -> String {
    let (out, err) = text(o);
    assert!(o.status.success(), "{what}: {:?}\n{out}\n{err}", o.status);
    out
}

fn rows(db: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    let opts = pg_server().connect_options().with_database(db);
    rt().block_on(async {
        let mut c = PgConn::connect(&opts).await.unwrap();
        let r = c
            .query_rows(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        c.quit().await;
        r
    })
}

#[test]
fn run_on_the_embedded_postgres_counts_as_sysbench() {
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "run",
            "oltp_read_write",
            "--db-driver=pgsql",
            "--tables=2",
            "--table-size=2000",
            "--threads=1",
            "--events=40",
            "--server-option=fsync=off",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(err.contains("Starting the embedded PostgreSQL"), "{err}");
    let r = parse_report(&out);
    // oltp_read_write: 10 point selects and 4 ranges read, 4 writes, BEGIN and COMMIT.
    assert_eq!(
        (r["read"], r["write"], r["other"], r["total"]),
        (560.0, 160.0, 80.0, 800.0),
        "{out}"
    );
    assert_eq!(r["transactions"], 40.0);
    // The server's CPU is its processes': the postmaster's backends did the work.
    assert!(!err.contains("server CPU: 0.00 us/event"), "{err}");
}

#[test]
fn a_given_postgres_runs_the_same_statements_as_sysbench_pgsql() {
    let db = pg_database("given_same").database.unwrap();
    ok(
        &bakeoff_pg(
            &[
                "prepare",
                "oltp_read_write",
                "--tables=1",
                "--table-size=500",
            ],
            &db,
        ),
        "prepare",
    );
    // 300 events (about a quarter of a second): /proc counts CPU in 10 ms ticks, and 30
    // events' 20 ms sometimes read as none.
    let common = [
        "--tables=1",
        "--table-size=500",
        "--events=300",
        "--threads=1",
    ];
    let run = bakeoff_pg(&[&["run", "oltp_read_write"][..], &common].concat(), &db);
    let ours = ok(&run, "bakeoff run");
    // The given server's CPU is read from its processes (the postmaster listening on the
    // loopback port, and its backends).
    assert!(
        ours.contains("server CPU: ") && !ours.contains("server CPU: 0.00 us/event"),
        "{ours}"
    );
    let theirs = ok(
        &sysbench_pg(&[&["oltp_read_write"][..], &common, &["run"]].concat(), &db),
        "sysbench run",
    );
    common::same_counts(&ours, &theirs);
    ok(&bakeoff_pg(&["cleanup", "oltp_read_write"], &db), "cleanup");
    assert!(rows(
        &db,
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
    )
    .is_empty());
}

/// The columns, defaults and indexes of a database's sbtest tables, as the catalog has them.
fn schema_of(db: &str) -> Vec<Vec<Option<String>>> {
    let mut r = rows(
        db,
        "SELECT table_name, column_name, data_type, character_maximum_length::text, is_nullable, \
         regexp_replace(coalesce(column_default, ''), '''::character', '''::bpchar') \
         FROM information_schema.columns WHERE table_name LIKE 'sbtest%' ORDER BY 1, ordinal_position",
    );
    r.extend(rows(db, "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'sbtest%' ORDER BY 1, 2"));
    r
}

#[test]
fn prepare_makes_sysbenchs_pgsql_schema_and_rows() {
    let (ours, theirs) = (pg_database("schema_ours"), pg_database("schema_theirs"));
    let (ours, theirs) = (ours.database.unwrap(), theirs.database.unwrap());
    let args = ["--tables=2", "--table-size=300"];
    ok(
        &bakeoff_pg(&[&["prepare", "oltp_read_only"][..], &args].concat(), &ours),
        "bakeoff prepare",
    );
    ok(
        &sysbench_pg(
            &[&["oltp_read_only"][..], &args, &["prepare"]].concat(),
            &theirs,
        ),
        "sysbench prepare",
    );
    assert_eq!(schema_of(&ours), schema_of(&theirs));
    let shape = "SELECT count(*), min(id), max(id), min(length(c)), max(length(pad)), \
                 nextval(pg_get_serial_sequence('sbtest2', 'id')) FROM sbtest2";
    assert_eq!(rows(&ours, shape), rows(&theirs, shape));
    // Loaded, analyzed: the planner knows the rows.
    let stats = rows(&ours, "SELECT n_live_tup > 0, last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'sbtest1'");
    assert_eq!(stats, vec![vec![Some("t".into()), Some("t".into())]]);
}

#[test]
fn cleanup_drops_only_what_bakeoff_made_on_postgres() {
    let db = pg_database("owned").database.unwrap();
    let exec = |sql: &str| {
        let opts = pg_server().connect_options().with_database(&db);
        rt().block_on(async {
            let mut c = PgConn::connect(&opts).await.unwrap();
            c.exec(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            c.quit().await;
        })
    };
    // A user's own sbtest2 with a row: prepare refuses it and leaves it alone.
    exec("CREATE TABLE sbtest2 (id int PRIMARY KEY, note text); INSERT INTO sbtest2 VALUES (1, 'mine')");
    let o = bakeoff_pg(
        &["prepare", "oltp_read_only", "--tables=2", "--table-size=10"],
        &db,
    );
    assert!(!o.status.success());
    assert!(text(&o).1.contains("sbtest2"), "{}", text(&o).1);
    // With one table bakeoff makes and marks sbtest1; a planted row then names the user's.
    ok(
        &bakeoff_pg(
            &["prepare", "oltp_read_only", "--tables=1", "--table-size=10"],
            &db,
        ),
        "prepare",
    );
    exec("INSERT INTO bakeoff_tables (table_name, workload, token) VALUES ('sbtest2', 'x', '0123456789abcdef')");
    // A row written to break out of a quoted literal where backslashes escape (an account
    // can turn standard_conforming_strings off for its sessions, or a server run so).
    exec(&format!(
        "ALTER DATABASE \"{db}\" SET standard_conforming_strings = off"
    ));
    exec(
        r"INSERT INTO bakeoff_tables (table_name, workload, token) VALUES (E'x\\''; DROP TABLE sbtest2; --', 'x', 'y')",
    );
    let out = bakeoff_pg(&["cleanup", "oltp_read_only"], &db);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    let (said, _) = text(&out);
    assert!(
        said.contains("Leaving table 'sbtest2' alone: it does not carry the token"),
        "the planted row is said: {said}\n{err}"
    );
    let left: Vec<String> = rows(
        &db,
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
    )
    .into_iter()
    .filter_map(|r| r.into_iter().next().flatten())
    .collect();
    assert_eq!(left, ["sbtest2"], "only the user's table is left");
    assert_eq!(
        rows(&db, "SELECT note FROM sbtest2"),
        vec![vec![Some("mine".into())]]
    );
}

#[test]
fn the_embedded_postgres_is_on_a_short_socket_path() {
    let Endpoint::Unix(p) = pg_server().connect_options().endpoint else {
        unreachable!()
    };
    assert!(p.as_os_str().len() < 107, "{}", p.display());
}
