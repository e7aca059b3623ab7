//! bakeoff drops only what it created, proven at drop time, on a server shared with another
//! account. A second account (mallory: CREATE and INSERT on the load database) plants rows in
//! bakeoff's marker table naming the user's `customers` table, the user's own `sbtest2`, and
//! SQL that would drop the database `prod` if a value reached SQL text; `bakeoff cleanup`
//! (after prepare and run with `--server`) and a study's series on the given server must
//! leave all of it as it was. `bulk_insert` must refuse a user's `sbtest1`, not adopt it.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use bakeoff_driver::{Conn, ConnectOptions, Endpoint};
use bakeoff_server::{Server, ServerSpec};

use common::text;

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| {
        Server::start(&ServerSpec::default()).unwrap_or_else(|e| {
            panic!(
                "these tests need a real MariaDB: {e}\n\nTo fix: {}",
                bakeoff_server::INSTALL_HINT
            )
        })
    })
}

/// Statements as the server's full account (over its socket).
fn admin(sql: &[&str]) -> Vec<Vec<Option<String>>> {
    run_as(&server().connect_options(), sql)
}

fn run_as(opts: &ConnectOptions, sql: &[&str]) -> Vec<Vec<Option<String>>> {
    bakeoff_testkit::rt().block_on(async {
        let mut c = Conn::connect(opts).await.expect("connect");
        let mut last = Vec::new();
        for s in sql {
            last = c.query_rows(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        c.quit().await;
        last
    })
}

/// A database for one test, the user's data in it and beside it: `customers` (two rows) and
/// `sbtest2` (the user's own, one row) in `db`, and the database `prod`. The load account
/// may do anything there, as a user's own account would.
fn users_data(db: &str) {
    let user = server().user();
    let prod = format!("{db}_prod");
    admin(&[
        &format!("CREATE DATABASE {db}"),
        &format!("CREATE DATABASE {prod}"),
        &format!("CREATE TABLE {prod}.orders (id INT PRIMARY KEY)"),
        &format!("INSERT INTO {prod}.orders VALUES (1)"),
        &format!("CREATE TABLE {db}.customers (id INT PRIMARY KEY, name TEXT)"),
        &format!("INSERT INTO {db}.customers VALUES (1, 'ada'), (2, 'grace')"),
        &format!("CREATE TABLE {db}.sbtest2 (id INT PRIMARY KEY)"),
        &format!("INSERT INTO {db}.sbtest2 VALUES (7)"),
        &format!("GRANT ALL ON {db}.* TO '{user}'@'127.0.0.1'"),
        &format!("GRANT ALL ON {prod}.* TO '{user}'@'127.0.0.1'"),
        &format!("CREATE USER IF NOT EXISTS 'mallory'@'127.0.0.1' IDENTIFIED BY 'm4llory'"),
        &format!("GRANT CREATE, INSERT ON {db}.* TO 'mallory'@'127.0.0.1'"),
    ]);
}

/// Mallory's account, into `db`.
fn mallory(db: &str) -> ConnectOptions {
    let at = Endpoint::Tcp {
        host: "127.0.0.1".into(),
        port: server().port(),
    };
    ConnectOptions::new(at, "mallory", "m4llory").with_database(db)
}

/// Mallory's rows in the marker table (made by her when bakeoff has not made it yet, as
/// bakeoff makes it): names that are not bakeoff's, the user's sbtest2 with a token of her
/// choosing, and a value built to escape a quoted string.
fn plant(db: &str) {
    let mallory = mallory(db);
    let token = "0123456789abcdef";
    let escape = format!("\\\\''; DROP DATABASE {db}_prod; #");
    run_as(
        &mallory,
        &[
            "CREATE TABLE IF NOT EXISTS bakeoff_tables (table_name VARCHAR(64) NOT NULL PRIMARY KEY, workload VARCHAR(64) NOT NULL, token CHAR(16) NOT NULL, created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) COMMENT='bakeoff marker'",
            &format!("INSERT INTO bakeoff_tables (table_name, workload, token) VALUES ('customers', 'x', '{token}')"),
            &format!("INSERT INTO bakeoff_tables (table_name, workload, token) VALUES ('sbtest2', 'x', '{token}')"),
            &format!("INSERT INTO bakeoff_tables (table_name, workload, token) VALUES ('{escape}', 'x', '{token}')"),
        ],
    );
}

/// The user's data as `users_data` made it.
fn assert_intact(db: &str) {
    let rows = admin(&[&format!("SELECT name FROM {db}.customers ORDER BY id")]);
    assert_eq!(rows.len(), 2, "customers");
    assert_eq!(
        admin(&[&format!("SELECT id FROM {db}.sbtest2")]).len(),
        1,
        "sbtest2"
    );
    assert_eq!(
        admin(&[&format!("SELECT id FROM {db}_prod.orders")]).len(),
        1,
        "prod"
    );
}

fn tables(db: &str) -> Vec<String> {
    admin(&[&format!(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY 1"
    )])
    .into_iter()
    .filter_map(|r| r.into_iter().next().flatten())
    .collect()
}

fn url(db: &str) -> String {
    format!(
        "mysql://{}@127.0.0.1:{}/{db}",
        server().user(),
        server().port()
    )
}

fn bakeoff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .env("MYSQL_PWD", server().password().expose())
        .env_remove("BAKEOFF_MYSQL_PASSWORD")
        .output()
        .expect("run bakeoff")
}

fn ok(o: &Output, what: &str) -> (String, String) {
    let (out, err) = text(o);
    assert!(o.status.success(), "{what}: {out}\n{err}");
    (out, err)
}

#[test]
fn planted_marker_rows_leave_the_users_tables_through_prepare_run_and_cleanup() {
    let db = "owned_cli";
    users_data(db);
    let url = url(db);
    let common = ["--server", url.as_str(), "--tables=1", "--table-size=200"];
    let with = |cmd: &str, more: &[&str]| {
        let mut args = vec![cmd, "oltp_point_select"];
        args.extend(common);
        args.extend(more);
        bakeoff(&args)
    };
    ok(&with("prepare", &[]), "prepare");
    plant(db);
    ok(&with("run", &["--time=1", "--threads=2"]), "run");
    let (out, err) = ok(&with("cleanup", &[]), "cleanup");
    assert_intact(db);
    assert_eq!(tables(db), ["customers", "sbtest2"], "{out}\n{err}");
    for said in ["'customers' alone", "'sbtest2' alone", "DROP DATABASE"] {
        assert!(out.contains(said), "'{said}' missing from: {out}");
    }
}

#[test]
fn a_studys_series_on_a_given_server_drops_only_its_own_tables() {
    let db = "owned_study";
    users_data(db);
    // The marker table and mallory's rows are there before the series starts.
    plant(db);
    let dir = bakeoff_testkit::scratch::dir("owned");
    let file: PathBuf = dir.join("owned.toml");
    std::fs::write(
        &file,
        format!(
            "duration = 1\nwarmup = 0\nthreads = [1]\n[dataset]\ntables = 1\ntable_size = 100\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"given\"\nserver = \"{}\"\n",
            url(db)
        ),
    )
    .unwrap();
    let o = bakeoff(&["study", "run", file.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_intact(db);
    assert_eq!(tables(db), ["customers", "sbtest2"], "{out}\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bulk_insert_refuses_a_table_it_did_not_create() {
    let db = "owned_bulk";
    users_data(db);
    admin(&[
        &format!("CREATE TABLE {db}.sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, PRIMARY KEY (id))"),
        &format!("INSERT INTO {db}.sbtest1 VALUES (1, 1), (2, 2)"),
    ]);
    let url = url(db);
    let o = bakeoff(&["prepare", "bulk_insert", "--server", &url, "--threads=1"]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "adopted: {out}\n{err}");
    assert!(
        err.contains("sbtest1") && err.contains("already exists"),
        "{err}"
    );
    ok(
        &bakeoff(&["cleanup", "bulk_insert", "--server", &url]),
        "cleanup",
    );
    assert_eq!(
        admin(&[&format!("SELECT id FROM {db}.sbtest1")]).len(),
        2,
        "their rows"
    );
    assert_intact(db);
}

/// Mallory, with TRIGGER there too, plants a marker table with triggers, then an `sbtest1`
/// with triggers, each logging into her table who wrote. Prepare, run, cleanup and a study
/// on the given server (its own tables or the server's) refuse them, and none fires.
#[test]
fn tables_planted_with_triggers_are_refused_and_no_trigger_fires() {
    use bakeoff_testkit::planted::mysql_trigger;
    let db = "owned_triggers";
    users_data(db);
    let log = format!("{db}_prod.mallory_log");
    admin(&[
        &format!("GRANT SELECT, TRIGGER, DROP ON {db}.* TO 'mallory'@'127.0.0.1'"),
        &format!("CREATE TABLE {log} (who TEXT, what TEXT)"),
        &format!("GRANT INSERT ON {log} TO 'mallory'@'127.0.0.1'"),
    ]);
    let mallory = mallory(db);
    let marker = "CREATE TABLE bakeoff_tables (table_name VARCHAR(64) NOT NULL PRIMARY KEY, workload VARCHAR(64) NOT NULL, token CHAR(16) NOT NULL, created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) COMMENT='bakeoff marker'";
    let mut plant: Vec<String> = vec![marker.into()];
    for event in ["INSERT", "UPDATE", "DELETE"] {
        plant.push(mysql_trigger("bakeoff_tables", event, &log));
    }
    run_as(
        &mallory,
        &plant.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let url = url(db);
    let args = |cmd: &'static str| -> Vec<String> {
        [
            cmd,
            "oltp_update_index",
            "--server",
            &url,
            "--tables=1",
            "--table-size=100",
        ]
        .map(String::from)
        .to_vec()
    };
    let refused = |o: Output, what: &str, words: &[&str]| {
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{what} went on: {out}\n{err}");
        for w in words {
            assert!(err.contains(w), "{what}: {w:?} not in {err}");
        }
    };
    let run = |cmd| bakeoff(&args(cmd).iter().map(String::as_str).collect::<Vec<_>>());
    let triggers = ["bakeoff_tables", "triggers or rules", "mallory_INSERT"];
    refused(run("prepare"), "prepare", &triggers);
    refused(run("cleanup"), "cleanup", &triggers);
    refused(run("run"), "run", &["bakeoff_tables"]);
    // Then sbtest1, planted with triggers, and no marker.
    admin(&[&format!("DROP TABLE {db}.bakeoff_tables")]);
    let mut plant: Vec<String> = vec![
        "CREATE TABLE sbtest1 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))".into(),
        "INSERT INTO sbtest1 (k) VALUES (1), (2), (3)".into(),
    ];
    for event in ["INSERT", "UPDATE", "DELETE"] {
        plant.push(mysql_trigger("sbtest1", event, &log));
    }
    admin(&[&format!("TRUNCATE {log}")]);
    run_as(
        &mallory,
        &plant.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    admin(&[&format!(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.sbtest1 TO 'mallory'@'127.0.0.1'"
    )]);
    let mut timed = args("run");
    timed.push("--time=1".into());
    refused(
        bakeoff(&timed.iter().map(String::as_str).collect::<Vec<_>>()),
        "run",
        &["sbtest1", "bakeoff prepare", "--existing-tables=use"],
    );
    // Told to use the tables there, it still refuses one with someone's code on it.
    timed.push("--existing-tables=use".into());
    refused(
        bakeoff(&timed.iter().map(String::as_str).collect::<Vec<_>>()),
        "run --existing-tables=use",
        &["sbtest1", "triggers"],
    );
    let dir = bakeoff_testkit::scratch::dir("owned-triggers");
    let file: PathBuf = dir.join("use.toml");
    std::fs::write(
        &file,
        format!(
            "duration = 1\nwarmup = 0\nthreads = [1]\n[dataset]\ntables = 1\ntable_size = 100\n[[workload]]\nname = \"oltp_update_index\"\n[[variant]]\nname = \"given\"\nserver = \"{url}\"\nexisting_tables = \"use\"\n"
        ),
    )
    .unwrap();
    let o = bakeoff(&["study", "run", file.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(format!("{out}{err}").contains("triggers"), "{out}\n{err}");
    assert_eq!(
        admin(&[&format!("SELECT who, what FROM {log}")]),
        Vec::<Vec<Option<String>>>::new(),
        "a trigger of mallory's fired"
    );
    assert_intact(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An account without the TRIGGER privilege still sees a trigger's name on MariaDB (checked
/// here against this MariaDB), so a table with one is refused to it as to any account.
#[test]
fn an_account_without_trigger_privilege_sees_the_trigger_and_refuses_the_table() {
    use bakeoff_testkit::planted::mysql_trigger;
    let db = "owned_low";
    users_data(db);
    let log = format!("{db}_prod.low_log");
    admin(&[
        "CREATE USER IF NOT EXISTS 'low'@'127.0.0.1' IDENTIFIED BY 'l0w'",
        &format!("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX ON {db}.* TO 'low'@'127.0.0.1'"),
        &format!("CREATE TABLE {log} (who TEXT, what TEXT)"),
        &format!("CREATE TABLE {db}.sbtest1 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))"),
        &format!("INSERT INTO {db}.sbtest1 (k) VALUES (1), (2)"),
        &format!("USE {db}"),
        &mysql_trigger("sbtest1", "UPDATE", &log),
    ]);
    let dir = bakeoff_testkit::scratch::dir("owned-low");
    let file: PathBuf = dir.join("use.toml");
    std::fs::write(
        &file,
        format!(
            "duration = 1\nwarmup = 0\nthreads = [1]\n[dataset]\ntables = 1\ntable_size = 2\n[[workload]]\nname = \"oltp_update_index\"\n[[variant]]\nname = \"given\"\nserver = \"mysql://low@127.0.0.1:{}/{db}\"\nexisting_tables = \"use\"\n",
            server().port()
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["study", "run", file.to_str().unwrap()])
        .env("MYSQL_PWD", "l0w")
        .output()
        .expect("run bakeoff");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        format!("{out}{err}").contains("mallory_UPDATE"),
        "{out}\n{err}"
    );
    assert_eq!(
        admin(&[&format!("SELECT who FROM {log}")]),
        Vec::<Vec<Option<String>>>::new()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run --existing-tables=use` runs on tables the user made (here as sysbench's prepare
/// would: plain sbtest1, no marker), which the default refuses; and is refused for the
/// embedded server, which starts empty.
#[test]
fn run_uses_the_users_own_tables_when_told_to() {
    let db = "owned_use";
    let user = server().user();
    admin(&[
        &format!("CREATE DATABASE {db}"),
        &format!("GRANT ALL ON {db}.* TO '{user}'@'127.0.0.1'"),
        &format!("CREATE TABLE {db}.sbtest1 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))"),
        &format!("INSERT INTO {db}.sbtest1 (k) VALUES (1), (2), (3), (4)"),
    ]);
    let url = url(db);
    let line = |extra: &[&str]| {
        let mut v = vec![
            "run",
            "oltp_point_select",
            "--server",
            &url,
            "--table-size=4",
            "--time=1",
        ];
        v.extend_from_slice(extra);
        bakeoff(&v)
    };
    let o = line(&[]);
    assert!(!o.status.success());
    assert!(
        text(&o).1.contains("--existing-tables=use"),
        "{}",
        text(&o).1
    );
    let (out, _) = ok(
        &line(&["--existing-tables=use"]),
        "run --existing-tables=use",
    );
    assert!(out.contains("transactions:"), "{out}");
    assert_eq!(tables(db), ["sbtest1"], "nothing made, nothing dropped");
    let o = bakeoff(&[
        "run",
        "oltp_point_select",
        "--existing-tables=use",
        "--time=1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("a server you give"), "{}", text(&o).1);
}
