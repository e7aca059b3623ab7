//! Servers users already run, given by URL: a study over two of them (one that requires TLS,
//! checked with VERIFY_IDENTITY against the certificate's names (its IP address); one plain), compared and
//! priced; passwords from an option file and a command, found nowhere in what bakeoff writes;
//! tables it did not create refused and left alone; `bakeoff run --server URL`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use bakeoff_driver::Conn;
use bakeoff_server::{Server, ServerSpec};
use bakeoff_testkit::tls::{tls_server, Pki};

use common::text;

/// The two given servers: one that refuses plain TCP (with its certificates), one plain.
fn servers() -> &'static ((Server, Pki), Server) {
    static S: OnceLock<((Server, Pki), Server)> = OnceLock::new();
    S.get_or_init(|| {
        let plain = Server::start(&ServerSpec::default()).unwrap_or_else(|e| {
            panic!(
                "these tests need a real MariaDB: {e}\n\nTo fix: {}",
                bakeoff_server::INSTALL_HINT
            )
        });
        (tls_server("given"), plain)
    })
}

fn scratch(name: &str) -> PathBuf {
    let dir = bakeoff_testkit::scratch::dir(&format!("given-{name}"));
    dir
}

fn bakeoff(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .current_dir(dir)
        .env_remove("MYSQL_PWD")
        .env_remove("BAKEOFF_MYSQL_PASSWORD")
        .output()
        .expect("run bakeoff")
}

/// The sbtest tables (and bakeoff's marker) in `server`'s database, by name.
fn tables(server: &Server) -> Vec<String> {
    bakeoff_testkit::rt().block_on(async {
        let mut c = Conn::connect(&server.connect_options()).await.expect("connect");
        let rows = c
            .query_rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1")
            .await
            .expect("tables");
        c.quit().await;
        rows.into_iter().filter_map(|r| r.into_iter().next().flatten()).collect()
    })
}

fn exec(server: &Server, sql: &str) {
    bakeoff_testkit::rt().block_on(async {
        let mut c = Conn::connect(&server.connect_options())
            .await
            .expect("connect");
        c.exec(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        c.quit().await;
    })
}

/// The study file: the TLS server's password from an option file, the plain one's from a
/// command; each priced.
fn study(dir: &Path) -> PathBuf {
    let ((tls, pki), plain) = servers();
    let cnf = dir.join("my.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[client]\npassword = wrong\n[client_bench]\npassword = \"{}\"\n",
            tls.password().expose()
        ),
    )
    .unwrap();
    let pw = dir.join("token");
    std::fs::write(&pw, format!("{}\n", plain.password().expose())).unwrap();
    let file = dir.join("given.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "given servers"
duration = 1
warmup = 0
threads = [2]
[dataset]
tables = 1
table_size = 500
[[workload]]
name = "oltp_point_select"

[[variant]]
name = "plain.small"
server = "mysql://{pu}@127.0.0.1:{pp}/{pd}"
password_command = "cat {pw}"
price_per_hour = 0.10

[[variant]]
name = "tls.large"
server = "mysql://{tu}@127.0.0.1:{tp}/{td}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"
defaults_file = "{cnf}"
defaults_group = "client_bench"
price_per_hour = 0.40
"#,
            pu = plain.user(),
            pp = plain.port(),
            pd = plain.database(),
            pw = pw.display(),
            tu = tls.user(),
            tp = tls.port(),
            td = tls.database(),
            ca = pki.ca().display(),
            cnf = cnf.display(),
        ),
    )
    .unwrap();
    file
}

#[test]
fn a_study_over_two_given_servers_compares_and_prices_them_and_keeps_no_password() {
    let dir = scratch("study");
    let file = study(&dir);
    let f = file.to_str().unwrap();
    let o = bakeoff(&dir, &["study", "check", f]);
    assert!(o.status.success(), "check: {}", text(&o).1);

    let o = bakeoff(&dir, &["study", "run", f]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "run: {out}\n{err}");
    let results = dir.join("given.db");
    let o = bakeoff(&dir, &["compare", results.to_str().unwrap()]);
    let (cmp, err) = text(&o);
    assert!(o.status.success(), "compare: {err}");
    assert!(
        cmp.contains("tls.large") && cmp.contains("plain.small"),
        "{cmp}"
    );
    assert!(cmp.contains("cost per million transactions"), "{cmp}");
    assert!(cmp.contains("its price_per_hour"), "{cmp}");

    let o = bakeoff(
        &dir,
        &["compare", results.to_str().unwrap(), "--format=json"],
    );
    let (json, err) = text(&o);
    assert!(o.status.success(), "compare --format json: {err}");
    // The TLS server was reached over TLS, and said so.
    assert!(json.contains("TLSv1."), "{json}");
    assert!(json.contains("\"hostname\""), "{json}");
    // Both are on this machine: their processes, found by their ports, are read here.
    assert!(
        json.contains("read from its process on this machine"),
        "{json}"
    );
    assert!(json.contains("dataset.policy"), "{json}");

    // No password anywhere bakeoff wrote or said.
    let ((tls, _), plain) = servers();
    let db_bytes = std::fs::read(&results).unwrap();
    for secret in [tls.password().expose(), plain.password().expose()] {
        for (what, hay) in [
            ("stdout", &out),
            ("stderr", &err),
            ("compare", &cmp),
            ("json", &json),
        ] {
            assert!(!hay.contains(secret), "the password is in {what}");
        }
        let found = db_bytes
            .windows(secret.len())
            .any(|w| w == secret.as_bytes());
        assert!(!found, "the password is in the results database");
    }
    // Its tables were dropped after each series; nothing of bakeoff's is left.
    assert!(tables(tls).is_empty(), "{:?}", tables(tls));
    assert!(tables(plain).is_empty(), "{:?}", tables(plain));
    let _ = std::fs::remove_dir_all(&dir);
    // On the same server, after the study: the tests share it.
    tables_bakeoff_did_not_create_are_refused_and_left_alone();
}

#[test]
fn bakeoff_run_takes_a_server_url_and_refuses_it_beside_the_mysql_options() {
    let ((tls, pki), _) = servers();
    let dir = scratch("run");
    // A database of its own: the study test uses the account's default one meanwhile.
    exec(tls, "CREATE DATABASE IF NOT EXISTS given_run");
    exec(
        tls,
        &format!("GRANT ALL ON given_run.* TO '{}'@'127.0.0.1'", tls.user()),
    );
    let url = format!(
        "mysql://{}@127.0.0.1:{}/given_run?ssl-mode=VERIFY_CA&ssl-ca={}",
        tls.user(),
        tls.port(),
        pki.ca().display()
    );
    let with_pwd = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(args)
            .current_dir(&dir)
            .env("MYSQL_PWD", tls.password().expose())
            .env_remove("BAKEOFF_MYSQL_PASSWORD")
            .output()
            .expect("run bakeoff")
    };
    let common = ["--server", url.as_str(), "--tables=1", "--table-size=300"];
    for cmd in ["prepare", "run", "cleanup"] {
        let mut args = vec![cmd, "oltp_point_select"];
        args.extend(common);
        if cmd == "run" {
            args.extend(["--time=1", "--threads=2"]);
        }
        let o = with_pwd(&args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{cmd}: {out}\n{err}");
        assert!(!out.contains(tls.password().expose()) && !err.contains(tls.password().expose()));
        if cmd == "run" {
            assert!(out.contains("transactions:"), "{out}");
            // On this machine over TCP: its process is found by its port, and read.
            assert!(out.contains("    server CPU: "), "{out}");
        }
    }
    let o = with_pwd(&[
        "run",
        "oltp_point_select",
        "--server",
        &url,
        "--mysql-host=127.0.0.1",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--server") && err.contains("--mysql-host"),
        "{err}"
    );
    let o = with_pwd(&[
        "run",
        "oltp_point_select",
        "--server",
        "mysql://u:hunter2@127.0.0.1/x",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("MYSQL_PWD") && !err.contains("hunter2"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A table bakeoff did not create, in the given database: the series fails saying so, and
/// the table is left as it was.
#[test]
fn tables_bakeoff_did_not_create_are_refused_and_left_alone() {
    let (_, plain) = servers();
    let dir = scratch("theirs");
    let token = dir.join("token");
    std::fs::write(&token, plain.password().expose()).unwrap();
    // A database of its own: the study test loads the account's default one meanwhile.
    let db = "given_theirs";
    exec(plain, &format!("CREATE DATABASE IF NOT EXISTS {db}"));
    exec(
        plain,
        &format!("GRANT ALL ON {db}.* TO '{}'@'127.0.0.1'", plain.user()),
    );
    exec(
        plain,
        &format!("CREATE TABLE {db}.sbtest1 (id INT PRIMARY KEY)"),
    );
    exec(plain, &format!("INSERT INTO {db}.sbtest1 VALUES (42)"));
    let file = dir.join("theirs.toml");
    std::fs::write(
        &file,
        format!(
            "duration = 1\nthreads = [1]\n[dataset]\ntable_size = 100\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"theirs\"\nserver = \"mysql://{}@127.0.0.1:{}/{db}\"\npassword_command = \"cat {}\"\n",
            plain.user(),
            plain.port(),
            token.display()
        ),
    )
    .unwrap();
    let o = bakeoff(&dir, &["study", "run", file.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "a failed cell: {out}\n{err}");
    let o = bakeoff(&dir, &["compare", dir.join("theirs.db").to_str().unwrap()]);
    let (cmp, _) = text(&o);
    assert!(cmp.contains("bakeoff did not create it"), "{cmp}");
    let kept = bakeoff_testkit::rt().block_on(async {
        let mut c = Conn::connect(&plain.connect_options()).await.unwrap();
        let r = c
            .query_rows(&format!("SELECT id FROM {db}.sbtest1"))
            .await
            .unwrap();
        c.exec(&format!("DROP DATABASE {db}")).await.unwrap();
        r
    });
    assert_eq!(
        kept,
        vec![vec![Some("42".to_string())]],
        "their table, untouched"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
