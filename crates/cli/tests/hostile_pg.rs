//! A hostile PostgreSQL (the test kit's `hostile_pg`) and a relay in the middle of the
//! suite's real one: bakeoff gives them no session, no password and no memory. SCRAM whose
//! steps a server skips is refused; over TLS the login is bound to the channel
//! (SCRAM-SHA-256-PLUS against a real PostgreSQL 15, and a relay that strikes -PLUS gets a
//! `y` the real server refuses); a password in clear or as md5 goes only to a verified or
//! local peer; a message's length is checked by its type before anything is allocated.

mod common;

use std::io::Read;
use std::process::{Command, Output, Stdio};

use bakeoff_server::{find_postgres_binary, lab_ca, Server, ServerSpec};
use bakeoff_testkit::hostile_pg::{in_private_net, Answer, Hostile, Login, Script, Skip};
use common::text;

const MIB: u64 = 1 << 20;

fn script(login: Login, tls: bool) -> Script {
    Script {
        login,
        tls,
        answers: Vec::new(),
    }
}

/// `bakeoff cleanup` (a login, then bakeoff's own questions) against `url`, PGPASSWORD set.
fn cleanup(url: &str, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["cleanup", "oltp_read_only", "--server", url])
        .args(more)
        .env("PGPASSWORD", "secret-pw")
        .env("HOME", "/nonexistent")
        .env_remove("PGSSLROOTCERT")
        .output()
        .expect("run bakeoff")
}

/// bakeoff with `args`, over plain TCP (PGSSLMODE=disable).
fn plain(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .env("PGSSLMODE", "disable")
        .output()
        .expect("run bakeoff")
}

fn refused(o: &Output, says: &str) -> String {
    let (out, err) = text(o);
    assert!(!o.status.success(), "not refused:\n{out}\n{err}");
    assert!(err.contains(says), "{says:?} not in:\n{err}");
    err
}

#[test]
fn scram_that_a_server_cuts_short_or_signs_wrong_is_refused() {
    for skip in [Skip::OkAfterFirst, Skip::OkAfterProof, Skip::WrongSignature] {
        let h = Hostile::start(script(Login::Scram(vec!["SCRAM-SHA-256"], skip), false));
        let url = format!("postgresql://u@127.0.0.1:{}/db?sslmode=disable", h.port);
        let why = match skip {
            Skip::WrongSignature => "signature is wrong",
            _ => "before proving it knows the password",
        };
        refused(&cleanup(&url, &[]), why);
        let seen = h.seen();
        assert!(
            !seen.iter().any(|s| s.starts_with("query")),
            "{skip:?}: a session: {seen:?}"
        );
    }
}

#[test]
fn require_auth_refuses_a_server_that_asks_for_nothing_or_less() {
    let h = Hostile::start(script(Login::Trust, false));
    let url = format!("postgresql://u@127.0.0.1:{}/db?sslmode=disable", h.port);
    let err = refused(
        &cleanup(&format!("{url}&require_auth=scram-sha-256"), &[]),
        "authentication method requirement \"scram-sha-256\" failed: server did not complete authentication",
    );
    assert!(!err.contains("secret-pw"));
    let h = Hostile::start(script(Login::Cleartext, false));
    let url = format!("postgresql://u@127.0.0.1:{}/db?sslmode=disable", h.port);
    refused(
        &cleanup(&format!("{url}&require_auth=scram-sha-256"), &[]),
        "server requested a cleartext password",
    );
    assert!(!h.seen().iter().any(|s| s.starts_with("password")));
    // channel_binding=require wants TLS and -PLUS.
    let h = Hostile::start(script(
        Login::Scram(vec!["SCRAM-SHA-256"], Skip::OkAfterProof),
        false,
    ));
    let url = format!(
        "postgresql://u@127.0.0.1:{}/db?sslmode=disable&channel_binding=require",
        h.port
    );
    refused(
        &cleanup(&url, &[]),
        "channel binding required, but SSL not in use",
    );
}

#[test]
fn plus_offered_without_tls_is_someone_who_stripped_it() {
    let h = Hostile::start(script(
        Login::Scram(
            vec!["SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"],
            Skip::OkAfterProof,
        ),
        false,
    ));
    let url = format!("postgresql://u@127.0.0.1:{}/db?sslmode=prefer", h.port);
    refused(
        &cleanup(&url, &[]),
        "server offered SCRAM-SHA-256-PLUS authentication over a non-SSL connection",
    );
    assert!(
        !h.seen().iter().any(|s| s.starts_with("sasl")),
        "{:?}",
        h.seen()
    );
}

/// The first SASL message a hostile server over TLS offering `mechanisms` gets, with `query`.
fn first_sasl(mechanisms: Vec<&'static str>, query: &str) -> String {
    let h = Hostile::start(script(Login::Scram(mechanisms, Skip::OkAfterProof), true));
    let url = format!("postgresql://u@127.0.0.1:{}/db?{query}", h.port);
    refused(&cleanup(&url, &[]), "before proving");
    let seen = h.seen();
    seen.into_iter().find(|s| s.starts_with("sasl")).unwrap()
}

#[test]
fn over_tls_scram_says_y_when_no_plus_is_offered_and_binds_when_it_is() {
    let both = || vec!["SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"];
    for (mechanisms, query, starts) in [
        (
            vec!["SCRAM-SHA-256"],
            "sslmode=require",
            "sasl SCRAM-SHA-256 y,,",
        ),
        (
            both(),
            "sslmode=require",
            "sasl SCRAM-SHA-256-PLUS p=tls-server-end-point,,",
        ),
        (
            both(),
            "sslmode=require&channel_binding=disable",
            "sasl SCRAM-SHA-256 n,,",
        ),
    ] {
        let first = first_sasl(mechanisms, query);
        assert!(first.starts_with(starts), "{query}: {first}");
    }
}

/// A real PostgreSQL 15 with TLS (a certificate from the lab's CA for 127.0.0.1).
fn tls_postgres() -> Server {
    let binary = find_postgres_binary().expect("PostgreSQL 15");
    let tls = lab_ca().unwrap().server_tls([127, 0, 0, 1].into()).unwrap();
    Server::start(&ServerSpec {
        binary: Some(binary),
        tls: Some(tls),
        options: vec!["fsync=off".into()],
        ..ServerSpec::default()
    })
    .expect("start PostgreSQL with TLS")
}

#[test]
fn a_real_server_binds_the_channel_and_refuses_a_relay_in_the_middle() {
    let pg = tls_postgres();
    let ca = bakeoff_testkit::scratch::dir("hostile-pg-ca").join("ca.pem");
    std::fs::write(&ca, lab_ca().unwrap().pem()).unwrap();
    let run = |port: u16, query: &str| {
        // The CA only where the mode verifies: with one, libpq's require verifies too.
        let root = match query.contains("verify") {
            true => format!("&sslrootcert={}", ca.display()),
            false => String::new(),
        };
        let url = format!(
            "postgresql://{}@127.0.0.1:{port}/sbtest?{query}{root}",
            pg.user()
        );
        Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(["cleanup", "oltp_read_only", "--server", &url])
            .env("PGPASSWORD", pg.password().expose())
            .output()
            .expect("run bakeoff")
    };
    // Straight to the server: bound, even when required.
    for q in [
        "sslmode=verify-full",
        "sslmode=verify-full&channel_binding=require",
    ] {
        let o = run(pg.port(), q);
        assert!(o.status.success(), "{q}: {:?}", text(&o));
    }
    // A relay with a certificate of its own, TLS to the server too: it strikes -PLUS, the
    // client says `y`, the server sees the downgrade.
    let to = format!("127.0.0.1:{}", pg.port()).parse().unwrap();
    let relay = Hostile::relay(to, true, "CREATE TABLE relay_was_here (x int)");
    let o = run(relay.port, "sslmode=require");
    let (_, err) = text(&o);
    assert!(
        !o.status.success(),
        "the relay logged in: {:?}",
        relay.seen()
    );
    assert!(err.contains("channel binding"), "{err}");
    assert!(
        !relay.seen().iter().any(|s| s == "logged in"),
        "{:?}",
        relay.seen()
    );
    // verify-full: the relay's certificate is refused before any password exchange.
    let before = relay.seen().len();
    let o = run(relay.port, "sslmode=verify-full");
    assert!(!o.status.success());
    let (_, err) = text(&o);
    assert!(
        err.contains("sslrootcert") && !err.contains("--mysql"),
        "{err}"
    );
    let after = relay.seen();
    assert!(
        !after[before..].iter().any(|s| s.starts_with("passed on")),
        "{after:?}"
    );
    // A relay whose own leg to the server is plain: the server offers no -PLUS there and
    // accepts `y`; channel_binding=require is what refuses it (prefer lets it in, as libpq).
    let plain = Hostile::relay(to, false, "CREATE TABLE relay_was_here (x int)");
    let o = run(plain.port, "sslmode=require&channel_binding=require");
    assert!(!o.status.success());
    assert!(
        !plain.seen().iter().any(|s| s == "logged in"),
        "{:?}",
        plain.seen()
    );
}

#[test]
fn a_password_goes_only_to_a_verified_or_local_peer() {
    in_private_net(|address| {
        for (login, key) in [(Login::Cleartext, "password"), (Login::Md5, "md5")] {
            let h = Hostile::start_at(address, script(login.clone(), true));
            let ca = bakeoff_testkit::scratch::dir("hostile-pg-pw").join("ca.pem");
            std::fs::write(&ca, h.ca_pem.clone().unwrap()).unwrap();
            let url = |q: &str| format!("postgresql://u@{address}:{}/db?{q}", h.port);
            // TLS that nobody checked, and plain TCP: refused, naming what to set.
            for q in ["sslmode=require", "sslmode=prefer"] {
                let err = refused(&cleanup(&url(q), &[]), "verify-full");
                assert!(err.contains(&format!("require_auth={key}")), "{err}");
            }
            assert!(
                !h.seen().iter().any(|s| s.starts_with("password")),
                "{:?}",
                h.seen()
            );
            // Verified TLS, or allowed in so many words: sent.
            let verified = format!("sslmode=verify-ca&sslrootcert={}", ca.display());
            for q in [
                verified.as_str(),
                &format!("sslmode=require&require_auth={key}"),
                "sslmode=disable",
            ] {
                let _ = cleanup(&url(q), &[]);
            }
            let sent = h
                .seen()
                .iter()
                .filter(|s| s.starts_with("password"))
                .count();
            assert_eq!(sent, 3, "{:?}", h.seen());
        }
    });
}

/// `bakeoff cleanup` against a hostile server: exit code, stderr, peak resident bytes.
fn peak(url: &str) -> (i32, String, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["cleanup", "oltp_read_only", "--server", url])
        .env("PGPASSWORD", "pw")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bakeoff");
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(r, child.id() as i32);
    let mut err = String::new();
    child.stderr.unwrap().read_to_string(&mut err).unwrap();
    (
        libc::WEXITSTATUS(status),
        err,
        usage.ru_maxrss as u64 * 1024,
    )
}

#[test]
fn what_a_server_announces_costs_no_memory_until_it_arrives() {
    // A 1 GiB header where the login's first request belongs (the default --max-packet).
    let h = Hostile::start(script(Login::HugeHeader(1 << 30), false));
    let (code, err, bytes) = peak(&format!(
        "postgresql://u@127.0.0.1:{}/db?sslmode=disable",
        h.port
    ));
    assert_ne!(code, 0);
    assert!(err.contains("over the 2000 bytes"), "{err}");
    assert!(bytes < 100 * MIB, "{} MiB", bytes / MIB);
    // 500,000 DataRows of 7 bytes, each claiming 32,767 columns.
    let mut s = script(Login::Trust, false);
    s.answers
        .push(("current_schema", Answer::WideRows(500_000)));
    let h = Hostile::start(s);
    let (code, err, bytes) = peak(&format!(
        "postgresql://u@127.0.0.1:{}/db?sslmode=disable",
        h.port
    ));
    assert_ne!(code, 0);
    assert!(err.contains("32767 columns in 2 bytes"), "{err}");
    assert!(bytes < 100 * MIB, "{} MiB", bytes / MIB);
    // 300,000 notices before the answer: the connection keeps the last hundred at most.
    let mut s = script(Login::Trust, false);
    s.answers.push(("current_schema", Answer::Notices(300_000)));
    let h = Hostile::start(s);
    let (_, _, bytes) = peak(&format!(
        "postgresql://u@127.0.0.1:{}/db?sslmode=disable",
        h.port
    ));
    assert!(bytes < 100 * MIB, "{} MiB", bytes / MIB);
}

/// A server's error carrying terminal escape sequences reaches the terminal written out.
#[test]
fn a_servers_escape_sequences_are_written_out() {
    let mut s = script(Login::Trust, false);
    s.answers.push(("current_schema", Answer::Escapes));
    let h = Hostile::start(s);
    let url = format!("postgresql://u@127.0.0.1:{}/db?sslmode=disable", h.port);
    let o = cleanup(&url, &[]);
    assert!(!o.status.success());
    assert!(
        !o.stderr.contains(&0x1b) && !o.stderr.contains(&0x07),
        "{:?}",
        text(&o)
    );
    assert!(text(&o).1.contains("owned"), "{:?}", text(&o));
}

/// `-i` against a server that answers its COPY FROM STDIN with an endless COPY OUT: pgbench
/// stops at once, and so does bakeoff, in pgbench's words.
#[test]
fn a_copy_out_where_init_copies_in_ends_init_at_once() {
    let mut s = script(Login::Trust, false);
    s.answers.push(("copy pgbench_accounts", Answer::CopyOut));
    let h = Hostile::start(s);
    let port = h.port.to_string();
    for program in [
        env!("CARGO_BIN_EXE_bakeoff"),
        "/usr/lib/postgresql/15/bin/pgbench",
    ] {
        let mut c = Command::new(program);
        if program.ends_with("bakeoff") {
            c.arg("pgbench");
        }
        let started = std::time::Instant::now();
        let o = c
            .args([
                "-i",
                "-s",
                "1",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "u",
                "db",
            ])
            .env("PGSSLMODE", "disable")
            .output()
            .expect("run");
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{program}: {err}");
        assert!(
            err.contains("unexpected copy in result"),
            "{program}: {err}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{program}"
        );
    }
}

/// A script's `connect()` to a server silent at login, or one that chatters without end so
/// that no read ever waits, ends within the connect timeout, as bakeoff's own connects do,
/// instead of going on for ever.
#[test]
fn a_scripts_connect_to_a_silent_or_chattering_server_times_out() {
    let dir = bakeoff_testkit::scratch::dir("hostile-pg-lua");
    let lua = dir.join("connect.lua");
    std::fs::write(
        &lua,
        "function thread_init()\n  con = sysbench.sql.driver():connect()\nend\nfunction event() end\n",
    )
    .unwrap();
    for login in [Login::Silent, Login::Chatter] {
        let h = Hostile::start(script(login.clone(), false));
        let started = std::time::Instant::now();
        let port = format!("--pgsql-port={}", h.port);
        let o = plain(&[
            lua.to_str().unwrap(),
            "--db-driver=pgsql",
            "--pgsql-host=127.0.0.1",
            &port,
            "--pgsql-user=u",
            "--pgsql-db=db",
            "--time=1",
            "run",
        ]);
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{login:?}: {out}\n{err}");
        assert!(
            format!("{out}{err}").contains("timed out"),
            "{login:?}: {out}\n{err}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{login:?}"
        );
    }
}

/// `--max-packet` where a server is given every way: a URL's `max_packet`, `bakeoff pgbench`'s
/// own option, and sysbench's grammar: a 64 MiB message is refused at its header by 1M.
#[test]
fn max_packet_is_bakeoffs_own_option_in_every_grammar() {
    let mut s = script(Login::Trust, false);
    s.answers
        .push(("current_schema", Answer::HugeHeader(64 << 20)));
    s.answers
        .push(("pgbench_branches", Answer::HugeHeader(64 << 20)));
    s.answers
        .push(("to_regclass", Answer::HugeHeader(64 << 20)));
    let h = Hostile::start(s);
    let port = h.port.to_string();
    let capped = "over the 1048576-byte cap (--max-packet sets it)";
    let url = format!("postgresql://u@127.0.0.1:{port}/db?sslmode=disable&max_packet=1M");
    refused(&cleanup(&url, &[]), capped);
    let run = plain;
    let o = run(&[
        "pgbench",
        "-n",
        "-S",
        "-t",
        "1",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-U",
        "u",
        "--max-packet=1M",
        "db",
    ]);
    refused(&o, capped);
    let pg_port = format!("--pgsql-port={port}");
    let o = run(&[
        "oltp_point_select",
        "--db-driver=pgsql",
        "--pgsql-host=127.0.0.1",
        &pg_port,
        "--pgsql-user=u",
        "--pgsql-db=db",
        "--max-packet=1M",
        "prepare",
    ]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}\n{err}\n{:?}", h.seen());
    assert!(format!("{out}{err}").contains(capped), "{out}\n{err}");
    // An abbreviation pgbench takes still means pgbench's option, not bakeoff's.
    let o = run(&["pgbench", "--max=2", "--max-packet=1", "db"]);
    refused(&o, "--max-packet");
}

/// A server that stops answering in the middle of a run of fixed work, which no clock ends:
/// bakeoff's own `--stall-timeout` ends it, in `bakeoff pgbench` (`-t`) and in sysbench's
/// grammar (`--events` with `--time=0`), saying why.
#[test]
fn a_stalled_server_ends_a_fixed_run_where_stall_timeout_is_given() {
    let mut s = script(Login::Trust, false);
    s.answers.push(("pgbench_branches", Answer::Value("1")));
    s.answers.push(("abalance", Answer::Stall));
    let h = Hostile::start(s);
    let port = h.port.to_string();
    let pg_port = format!("--pgsql-port={port}");
    let runs: [&[&str]; 2] = [
        &[
            "pgbench",
            "-n",
            "-S",
            "-t",
            "1",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "u",
            "--stall-timeout=2",
            "db",
        ],
        &[
            "oltp_point_select",
            "--db-driver=pgsql",
            "--pgsql-host=127.0.0.1",
            &pg_port,
            "--pgsql-user=u",
            "--pgsql-db=db",
            "--time=0",
            "--events=1",
            "--stall-timeout=2",
            "run",
        ],
    ];
    for args in runs {
        let started = std::time::Instant::now();
        let o = plain(args);
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{args:?}: {out}\n{err}");
        // The run started, and ended on its stall, named.
        assert!(
            format!("{out}{err}").contains("within 2 s (--stall-timeout): the server stalled"),
            "{args:?}: {out}\n{err}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{args:?}: {:?}",
            started.elapsed()
        );
    }
}
