//! A second role on a shared PostgreSQL (`planted.rs` in the test kit: `public` open to
//! every role, as on PostgreSQL 14 and older, and the load account a member of mallory's
//! role) plants a marker table with a trigger, functions that match bakeoff's calls better
//! than pg_catalog's, and an `sbtest1` with a trigger. bakeoff's prepare, run, prewarm,
//! cleanup and a study on the given server refuse what is hers, say so, and run none of her
//! code: her log stays empty and the user's `keep_me` stays.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use bakeoff_testkit::pg::pg_server;
use bakeoff_testkit::planted::{pg_shared, PgShared, Plant};
use common::text;

fn url(shared: &PgShared) -> String {
    let s = pg_server();
    format!(
        "postgresql://{}@127.0.0.1:{}/{}?sslmode=disable",
        s.user(),
        s.port(),
        shared.user.database.as_deref().unwrap_or_default()
    )
}

/// bakeoff with `args`, then `--server URL`.
fn bakeoff(shared: &PgShared, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .arg("--server")
        .arg(url(shared))
        .env("PGPASSWORD", pg_server().password().expose())
        .env_remove("MYSQL_PWD")
        .output()
        .expect("run bakeoff")
}

fn study(shared: &PgShared, dir: &Path, existing: &str) -> Output {
    let file = dir.join("study.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"planted\"\nduration = 1\nthreads = [1]\n[dataset]\ntables = 1\ntable_size = 100\n\
             [[workload]]\nname = \"oltp_update_index\"\n[[variant]]\nname = \"given\"\nserver = \"{}\"\n{existing}",
            url(shared)
        ),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["study", "run", file.to_str().unwrap()])
        .current_dir(dir)
        .env("PGPASSWORD", pg_server().password().expose())
        .output()
        .expect("run bakeoff")
}

/// Nothing of mallory's ran and the user's table is as it was.
fn untouched(shared: &PgShared) {
    assert_eq!(shared.ran(), Vec::<String>::new(), "mallory's code ran");
    assert_eq!(shared.keep_me(), Some(vec!["7".to_string()]));
}

fn refused(o: &Output, what: &str, words: &[&str]) {
    let (out, err) = text(o);
    assert!(!o.status.success(), "{what} was not refused:\n{out}\n{err}");
    for w in words {
        assert!(err.contains(w), "{what}: {w:?} not in\n{err}");
    }
}

#[test]
fn a_planted_marker_table_is_refused_by_prepare_run_prewarm_cleanup_and_a_study() {
    let shared = pg_shared("planted_marker");
    shared.plant(Plant::Marker);
    let prepare = [
        "prepare",
        "oltp_read_write",
        "--tables=1",
        "--table-size=100",
    ];
    refused(
        &bakeoff(&shared, &prepare),
        "prepare",
        &["bakeoff_tables", "owned by role \"mallory\""],
    );
    refused(
        &bakeoff(&shared, &["cleanup", "oltp_read_write"]),
        "cleanup",
        &["bakeoff_tables", "mallory"],
    );
    let run = ["run", "oltp_read_write", "--tables=1", "--time=1"];
    refused(&bakeoff(&shared, &run), "run", &["bakeoff_tables"]);
    refused(
        &bakeoff(&shared, &["prewarm", "oltp_read_only", "--tables=1"]),
        "prewarm",
        &["bakeoff_tables"],
    );
    // A study's series drops its leftovers first: the marker is refused there, unread.
    let dir = bakeoff_testkit::scratch::dir("planted-marker-study");
    let o = study(&shared, &dir, "");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        format!("{out}{err}").contains("bakeoff_tables"),
        "{out}\n{err}"
    );
    untouched(&shared);
    assert!(shared
        .tables()
        .contains(&"bakeoff_tables:mallory".to_string()));
}

#[test]
fn functions_that_shadow_pg_catalogs_are_never_called() {
    let shared = pg_shared("planted_functions");
    shared.plant(Plant::Functions);
    // auto_inc (the default) sets each table's sequence: setval(text, integer) would match.
    let prepare = [
        "prepare",
        "oltp_read_write",
        "--tables=2",
        "--table-size=100",
    ];
    let o = bakeoff(&shared, &prepare);
    assert!(o.status.success(), "{:?}", text(&o));
    let run = [
        "run",
        "oltp_read_write",
        "--tables=2",
        "--table-size=100",
        "--time=1",
        "--threads=2",
    ];
    let o = bakeoff(&shared, &run);
    assert!(o.status.success(), "{:?}", text(&o));
    let o = bakeoff(&shared, &["prewarm", "oltp_read_write", "--tables=2"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let o = bakeoff(&shared, &["cleanup", "oltp_read_write"]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(text(&o).0.contains("sbtest2"), "{:?}", text(&o));
    untouched(&shared);
    assert_eq!(
        shared.tables(),
        ["keep_me:sbtest", "mallory_log:mallory"],
        "bakeoff's tables dropped, the others left"
    );
    // sysbench's grammar: sysbench's statements as sysbench sends them, and bakeoff's own
    // one (the sequence set after COPY) calling pg_catalog's setval by name.
    let s = pg_server();
    let sysbench = |command: &str| {
        Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args([
                "oltp_read_write",
                "--db-driver=pgsql",
                "--pgsql-host=127.0.0.1",
            ])
            .arg(format!("--pgsql-port={}", s.port()))
            .arg(format!("--pgsql-user={}", s.user()))
            .arg(format!("--pgsql-password={}", s.password().expose()))
            .arg(format!(
                "--pgsql-db={}",
                shared.user.database.as_deref().unwrap_or_default()
            ))
            .args(["--tables=1", "--table-size=100", command])
            .output()
            .expect("run bakeoff")
    };
    for command in ["prepare", "cleanup"] {
        let o = sysbench(command);
        assert!(o.status.success(), "{command}: {:?}", text(&o));
    }
    untouched(&shared);
}

#[test]
fn a_planted_sbtest1_is_never_written_adopted_or_dropped() {
    let shared = pg_shared("planted_sbtest1");
    shared.plant(Plant::Sbtest1);
    let run = ["run", "oltp_update_index", "--tables=1", "--time=1"];
    refused(
        &bakeoff(&shared, &run),
        "run",
        &["sbtest1", "bakeoff prepare"],
    );
    refused(
        &bakeoff(&shared, &["prepare", "oltp_read_write", "--tables=1"]),
        "prepare",
        &["sbtest1"],
    );
    let o = bakeoff(&shared, &["cleanup", "oltp_read_write"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let dir = bakeoff_testkit::scratch::dir("planted-sbtest1-study");
    for existing in ["existing_tables = \"use\"\n", ""] {
        let o = study(&shared, &dir, existing);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{existing}{out}\n{err}");
        assert!(format!("{out}{err}").contains("sbtest1"), "{out}\n{err}");
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
    }
    untouched(&shared);
    assert!(shared.tables().contains(&"sbtest1:mallory".to_string()));
}

#[test]
fn a_table_the_user_owns_but_with_a_trigger_of_another_role_is_refused() {
    // Mallory cannot add a trigger to the user's table herself; a grant of TRIGGER can.
    let shared = pg_shared("planted_granted");
    let prepare = [
        "prepare",
        "oltp_update_index",
        "--tables=1",
        "--table-size=100",
    ];
    let o = bakeoff(&shared, &prepare);
    assert!(o.status.success(), "{:?}", text(&o));
    shared.user(&["GRANT TRIGGER ON public.sbtest1 TO mallory"]);
    shared.admin(&[
        "SET ROLE mallory",
        "CREATE TRIGGER mallory BEFORE UPDATE ON public.sbtest1 FOR EACH ROW EXECUTE FUNCTION public.mallory_trigger()",
        "RESET ROLE",
    ]);
    let run = ["run", "oltp_update_index", "--tables=1", "--time=1"];
    refused(
        &bakeoff(&shared, &run),
        "run",
        &["sbtest1", "triggers or rules", "mallory"],
    );
    let o = bakeoff(&shared, &["cleanup", "oltp_read_write"]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(
        text(&o).0.contains("Leaving table 'sbtest1' alone"),
        "{:?}",
        text(&o)
    );
    untouched(&shared);
}

#[test]
fn a_schema_another_role_owns_is_refused_before_anything_is_made() {
    // PostgreSQL 15's public belongs to the database's owner: here mallory's database, the
    // user allowed to create in it. Mallory could drop and replace anything bakeoff made.
    let shared = pg_shared("planted_schema");
    let db = "t_planted_schema_hers";
    let admin = bakeoff_testkit::pg::pg_admin();
    bakeoff_testkit::rt().block_on(async {
        let mut c = bakeoff_driver::PgConn::connect(&admin).await.unwrap();
        c.exec(&format!("DROP DATABASE IF EXISTS {db}"))
            .await
            .unwrap();
        c.exec(&format!("CREATE DATABASE {db} OWNER mallory"))
            .await
            .unwrap();
        c.quit().await;
        let mut c = bakeoff_driver::PgConn::connect(&admin.with_database(db))
            .await
            .unwrap();
        c.exec("GRANT CREATE, USAGE ON SCHEMA public TO sbtest")
            .await
            .unwrap();
        c.quit().await;
    });
    let s = pg_server();
    let url = format!(
        "postgresql://{}@127.0.0.1:{}/{db}?sslmode=disable",
        s.user(),
        s.port()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["prepare", "oltp_read_only", "--tables=1", "--server", &url])
        .env("PGPASSWORD", s.password().expose())
        .output()
        .unwrap();
    refused(
        &o,
        "prepare",
        &["schema \"public\"", "database's owner, role \"mallory\""],
    );
    drop(shared);
}
