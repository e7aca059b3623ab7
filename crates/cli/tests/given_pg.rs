//! A PostgreSQL the user runs, given by URL in a study: the password from ~/.pgpass or a
//! service of pg_service.conf (libpq's conventions, nothing in the study file), never written
//! in what bakeoff writes; its CPU read on this machine; priced; its tables left as found
//! but for bakeoff's own, which are dropped; a table bakeoff did not create refused and left
//! alone.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use bakeoff_driver::{ConnectOptions, PgConn};
use bakeoff_testkit::pg::{pg_database, pg_server};

use common::text;

fn bakeoff(dir: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("PGSERVICEFILE", home.join("services.conf"))
        .env_remove("PGPASSWORD")
        .env_remove("PGSERVICE")
        .env_remove("PGPASSFILE")
        .env_remove("MYSQL_PWD")
        .output()
        .expect("run bakeoff")
}

fn exec(o: &ConnectOptions, sql: &str) -> Vec<Vec<Option<String>>> {
    bakeoff_testkit::rt().block_on(async {
        let mut c = PgConn::connect(o).await.expect("connect");
        let rows = c
            .query_rows(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        c.quit().await;
        rows
    })
}

fn tables(o: &ConnectOptions) -> Vec<String> {
    exec(
        o,
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
    )
    .into_iter()
    .filter_map(|r| r.into_iter().next().flatten())
    .collect()
}

/// A HOME with a password file and a service file for database `db` of the suite's server.
fn home(dir: &Path, db: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let s = pg_server();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pgpass = home.join(".pgpass");
    std::fs::write(
        &pgpass,
        format!(
            "127.0.0.1:{}:{db}:{}:{}\n",
            s.port(),
            s.user(),
            s.password().expose()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(
        home.join("services.conf"),
        format!(
            "[bench]\nhost=127.0.0.1\nport={}\ndbname={db}\nuser={}\nsslmode=disable\n",
            s.port(),
            s.user()
        ),
    )
    .unwrap();
    home
}

#[test]
fn a_study_over_a_given_postgresql_finds_its_password_by_libpqs_rules_and_leaves_its_tables() {
    let o = pg_database("given_study");
    let db = o.database.clone().unwrap();
    exec(&o, "CREATE TABLE keep_me (id int PRIMARY KEY)");
    exec(&o, "INSERT INTO keep_me VALUES (7)");
    let dir = bakeoff_testkit::scratch::dir("given-pg-study");
    let home = home(&dir, &db);
    let s = pg_server();
    let file = dir.join("given.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "given postgresql"
duration = 1
threads = [2]
[dataset]
tables = 1
table_size = 500
[[workload]]
name = "oltp_point_select"

[[variant]]
name = "by-pgpass"
server = "postgresql://{user}@127.0.0.1:{port}/{db}?sslmode=disable"
price_per_hour = 0.10

[[variant]]
name = "by-service"
server = "postgresql:///?service=bench"
price_per_hour = 0.20
"#,
            user = s.user(),
            port = s.port(),
        ),
    )
    .unwrap();
    let run = bakeoff(&dir, &home, &["study", "run", file.to_str().unwrap()]);
    let (out, err) = text(&run);
    assert_eq!(run.status.code(), Some(0), "{out}\n{err}");
    let results = dir.join("given.db");
    let cmp = bakeoff(&dir, &home, &["compare", results.to_str().unwrap()]);
    let (cmp, _) = text(&cmp);
    assert!(
        cmp.contains("by-service") && cmp.contains("by-pgpass"),
        "{cmp}"
    );
    assert!(cmp.contains("cost per million transactions"), "{cmp}");
    // The server's CPU was found (its process is on this machine), per run.
    let store = bakeoff_store::Store::open(&results).unwrap();
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for r in &runs {
        let cpu = r["server_cpu_us_per_event"].as_f64();
        assert!(cpu.is_some_and(|u| u > 0.0), "server CPU per run: {r:?}");
    }
    drop(store);
    // The password is in the files bakeoff was given, and in nothing it wrote.
    let written = std::fs::read(&results).unwrap();
    let pw = s.password().expose().as_bytes().to_vec();
    assert!(
        !written.windows(pw.len()).any(|w| w == pw),
        "the password is in the results"
    );
    assert!(!out.contains(s.password().expose()) && !err.contains(s.password().expose()));
    assert_eq!(
        tables(&o),
        ["keep_me"],
        "bakeoff's tables dropped, the user's kept"
    );
    assert_eq!(
        exec(&o, "SELECT id FROM keep_me"),
        vec![vec![Some("7".to_string())]]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_given_postgresqls_table_bakeoff_did_not_create_is_refused_and_left_alone() {
    let o = pg_database("given_theirs");
    let db = o.database.clone().unwrap();
    exec(&o, "CREATE TABLE sbtest1 (id int PRIMARY KEY)");
    exec(&o, "INSERT INTO sbtest1 VALUES (42)");
    let dir = bakeoff_testkit::scratch::dir("given-pg-theirs");
    let home = home(&dir, &db);
    let file = dir.join("theirs.toml");
    std::fs::write(
        &file,
        "duration = 1\nthreads = [1]\n[dataset]\ntable_size = 100\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"theirs\"\nserver = \"postgresql:///?service=bench\"\n",
    )
    .unwrap();
    let run = bakeoff(&dir, &home, &["study", "run", file.to_str().unwrap()]);
    let (out, err) = text(&run);
    assert_eq!(run.status.code(), Some(1), "a failed cell: {out}\n{err}");
    let cmp = bakeoff(
        &dir,
        &home,
        &["compare", dir.join("theirs.db").to_str().unwrap()],
    );
    let (cmp, _) = text(&cmp);
    assert!(cmp.contains("bakeoff did not create it"), "{cmp}");
    assert_eq!(
        exec(&o, "SELECT id FROM sbtest1"),
        vec![vec![Some("42".to_string())]]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
