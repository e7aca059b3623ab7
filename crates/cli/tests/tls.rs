//! TLS from the command line, against a MariaDB that refuses plain TCP: sysbench 1.0.20's
//! `--mysql-ssl=on` with its files in the working directory, beside the real sysbench (the
//! same line to both; both fail alike without the files); bakeoff's own grammar with
//! VERIFY_IDENTITY through prepare, run and cleanup; a wrong CA refused with the certificate
//! named.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use bakeoff_server::Server;
use bakeoff_testkit::tls::{tls_server, Pki};
use common::real_sysbench;

fn lab() -> &'static (Server, Pki) {
    static LAB: OnceLock<(Server, Pki)> = OnceLock::new();
    LAB.get_or_init(|| tls_server("cli"))
}

fn bakeoff() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bakeoff"))
}

/// `program args` with the lab's TCP account, in `dir`.
fn over_tcp(program: &Path, dir: &Path, args: &[&str]) -> Output {
    over_tcp_to(lab().0.database(), program, dir, args)
}

fn over_tcp_to(db: &str, program: &Path, dir: &Path, args: &[&str]) -> Output {
    let (s, _) = lab();
    Command::new(program)
        .args(args)
        .arg("--mysql-host=127.0.0.1")
        .arg(format!("--mysql-port={}", s.port()))
        .arg(format!("--mysql-user={}", s.user()))
        .arg(format!("--mysql-password={}", s.password().expose()))
        .arg(format!("--mysql-db={db}"))
        .current_dir(dir)
        .output()
        .expect("run")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn scratch(name: &str) -> PathBuf {
    let dir = bakeoff_testkit::scratch::dir(&format!("tls-{name}"));
    dir
}

/// The tables, once: prepared by bakeoff over TLS in sysbench's grammar.
fn tables() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let (_, pki) = lab();
        let ca = format!("--mysql-ssl-ca={}", pki.ca().display());
        let args = [
            "oltp_point_select",
            "--tables=1",
            "--table-size=1000",
            "--mysql-ssl=VERIFY_CA",
            &ca,
            "prepare",
        ];
        let o = over_tcp(&bakeoff(), &std::env::temp_dir(), &args);
        assert!(o.status.success(), "prepare over TLS: {}", text(&o));
    });
}

#[test]
fn sysbenchs_ssl_on_reads_its_files_from_the_working_directory_as_sysbench_does() {
    tables();
    let (_, pki) = lab();
    let with_files = scratch("files");
    for (from, to) in [
        (pki.ca(), "cacert.pem"),
        (pki.client_cert(), "client-cert.pem"),
        (pki.client_key(), "client-key.pem"),
    ] {
        std::fs::copy(from, with_files.join(to)).expect("copy");
    }
    let without = scratch("none");
    std::fs::copy(
        "/usr/share/sysbench/oltp_point_select.lua",
        with_files.join("ps.lua"),
    )
    .expect("copy");
    std::fs::copy(
        "/usr/share/sysbench/oltp_common.lua",
        with_files.join("oltp_common.lua"),
    )
    .expect("copy");
    // The built-in name (bakeoff's native workload) and the script (bakeoff's LuaJIT).
    for test in ["oltp_point_select", "ps.lua"] {
        let args = [
            test,
            "--tables=1",
            "--table-size=1000",
            "--mysql-ssl=on",
            "--events=200",
            "--time=0",
            "run",
        ];
        for program in [real_sysbench(), bakeoff()] {
            let o = over_tcp(&program, &with_files, &args);
            let t = text(&o);
            assert!(
                o.status.success(),
                "{} {test} with the files: {t}",
                program.display()
            );
            assert!(t.contains("queries:"), "{t}");
        }
    }
    let args = [
        "oltp_point_select",
        "--mysql-ssl=on",
        "--events=10",
        "--time=0",
        "run",
    ];
    let sb = over_tcp(&real_sysbench(), &without, &args);
    let bo = over_tcp(&bakeoff(), &without, &args);
    assert_eq!(
        sb.status.code(),
        Some(1),
        "sysbench without the files: {}",
        text(&sb)
    );
    assert_eq!(
        bo.status.code(),
        Some(1),
        "bakeoff without the files: {}",
        text(&bo)
    );
    assert!(text(&bo).contains("cacert.pem"), "{}", text(&bo));
    let _ = std::fs::remove_dir_all(with_files);
    let _ = std::fs::remove_dir_all(without);
}

#[test]
fn bakeoffs_own_grammar_verifies_the_identity_and_names_a_certificate_it_refuses() {
    let (_, pki) = lab();
    let dir = scratch("own");
    let ca = format!("--mysql-ssl-ca={}", pki.ca().display());
    let tls = [
        "--mysql-ssl=VERIFY_IDENTITY",
        ca.as_str(),
        "--tables=1",
        "--table-size=500",
    ];
    let (s, _) = lab();
    let root = Command::new("mariadb")
        .args(["-u", "root", "-S"])
        .arg(s.socket())
        .args([
            "-e",
            "CREATE DATABASE IF NOT EXISTS own_tls; GRANT ALL ON own_tls.* TO 'sbtest'@'127.0.0.1'",
        ])
        .output()
        .expect("mariadb client");
    assert!(root.status.success(), "{}", text(&root));
    for command in [
        &["prepare", "oltp_read_only"][..],
        &["run", "oltp_read_only", "--time=1"],
        &["cleanup", "oltp_read_only"],
    ] {
        let mut args = command.to_vec();
        args.extend(tls);
        let o = over_tcp_to("own_tls", &bakeoff(), &dir, &args);
        assert!(o.status.success(), "{command:?}: {}", text(&o));
    }
    let wrong = format!("--mysql-ssl-ca={}", pki.other_ca().display());
    let args = [
        "run",
        "oltp_read_only",
        "--time=1",
        "--mysql-ssl=VERIFY_CA",
        wrong.as_str(),
    ];
    let o = over_tcp(&bakeoff(), &dir, &args);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    for part in ["CN=db1.test", "unknown CA", "other-ca.pem"] {
        assert!(t.contains(part), "'{part}' missing from: {t}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A server whose certificates were made as MySQL's manual makes them (X.509 version 1,
/// CN=localhost): the real sysbench's `--mysql-ssl=on` and bakeoff's reach it with the manual's
/// files in the working directory; bakeoff's REQUIRED, VERIFY_CA and VERIFY_IDENTITY agree
/// with the `mariadb` client's `--ssl`, `--ssl-ca` and `--ssl-verify-server-cert`, by
/// 127.0.0.1 (which the certificate does not name) and by localhost (which it does).
#[test]
fn a_server_with_the_manuals_certificates_is_reached_as_libmariadb_reaches_it() {
    let (s, pki) = &*manual_lab();
    let dir = scratch("manual");
    for (from, to) in [
        ("ca.pem", "cacert.pem"),
        ("client-cert.pem", "client-cert.pem"),
        ("client-key.pem", "client-key.pem"),
    ] {
        std::fs::copy(pki.file(from), dir.join(to)).expect("copy");
    }
    let script = "function event() local c = sysbench.sql.driver():connect(); print(c:query_row(\"SHOW STATUS LIKE 'Ssl_version'\")) end\n";
    std::fs::write(dir.join("ssl.lua"), script).expect("script");
    let port = format!("--mysql-port={}", s.port());
    let password = format!("--mysql-password={}", s.password().expose());
    let lua = |program: &Path, host: &str, tls: &[&str]| {
        let o = Command::new(program)
            .args(["ssl.lua", "--events=1", "--verbosity=1"])
            .arg(format!("--mysql-host={host}"))
            .args([port.as_str(), password.as_str()])
            .arg(format!("--mysql-user={}", s.user()))
            .args(tls)
            .arg("run")
            .current_dir(&dir)
            .output()
            .expect("run");
        (
            o.status.success() && text(&o).contains("Ssl_version\tTLS"),
            text(&o),
        )
    };
    for program in [real_sysbench(), bakeoff()] {
        let (ok, t) = lua(&program, "127.0.0.1", &["--mysql-ssl=on"]);
        assert!(ok, "{} --mysql-ssl=on: {t}", program.display());
    }
    let client = |host: &str, tls: &[&str]| {
        let o = Command::new("mariadb")
            .args(["--no-defaults", "--protocol=tcp", "-N", "-h", host])
            .arg(format!("-P{}", s.port()))
            .arg(format!("-u{}", s.user()))
            .arg(format!("-p{}", s.password().expose()))
            .args(tls)
            .args(["-e", "SHOW STATUS LIKE 'Ssl_version'"])
            .current_dir(&dir)
            .output()
            .expect("the mariadb client");
        (o.status.success() && text(&o).contains("TLS"), text(&o))
    };
    let ca = "--ssl-ca=cacert.pem";
    let bakeoff_ca = "--mysql-ssl-ca=cacert.pem";
    for host in ["127.0.0.1", "localhost"] {
        for (mode, theirs) in [
            ("REQUIRED", &["--ssl"][..]),
            ("VERIFY_CA", &["--ssl", ca]),
            (
                "VERIFY_IDENTITY",
                &["--ssl", ca, "--ssl-verify-server-cert"],
            ),
        ] {
            let mode = format!("--mysql-ssl={mode}");
            let ours = match theirs.len() {
                1 => vec![mode.as_str()],
                _ => vec![mode.as_str(), bakeoff_ca],
            };
            let (want, said) = client(host, theirs);
            let (got, t) = lua(&bakeoff(), host, &ours);
            assert_eq!(got, want, "{host} {ours:?}: bakeoff: {t}\nmariadb: {said}");
        }
    }
    // The one refused: by an address the certificate does not name, which the error says.
    let (_, t) = lua(
        &bakeoff(),
        "127.0.0.1",
        &["--mysql-ssl=VERIFY_IDENTITY", bakeoff_ca],
    );
    assert!(
        t.contains("CN=localhost (X.509 version 1) does not name 127.0.0.1 (it names localhost)"),
        "{t}"
    );
}

fn manual_lab() -> &'static (Server, Pki) {
    static LAB: OnceLock<(Server, Pki)> = OnceLock::new();
    LAB.get_or_init(|| bakeoff_testkit::tls::manual_tls_server("cli-manual"))
}
