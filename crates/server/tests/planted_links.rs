//! A run directory belongs to the server's account (postgres, mysql) once the server's
//! programs run in it, and bakeoff runs as root: whatever that account plants there, a link to
//! a file only root may touch above all, bakeoff must neither write through it (truncating the
//! file, pouring the server's log into it) nor read through it (quoting the file in an error).
//!
//! Each test starts PostgreSQL from an install directory of its own whose initdb or postgres
//! is a script: it runs as the server's account, as the lab runs them, and plants the link.
//! These tests need root (the lab starts servers as another account only then); CI runs them
//! as root, and elsewhere they fail rather than pass without having looked.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use bakeoff_server::{find_postgres_binary, Server, ServerSpec};
use bakeoff_testkit::scratch;

/// What the root-only file holds; it must never change, nor show up in an error.
const SECRET: &str = "root's own line, for root's eyes only\n";

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "these tests plant links as the server's account, which the lab uses only as root: run them as root (CI does)"
    );
}

/// A file only root may read or write, in a directory only root may enter.
fn root_only_file(name: &str) -> PathBuf {
    let dir = scratch::dir(&format!("root-only-{name}"));
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let file = dir.join("target");
    std::fs::write(&file, SECRET).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

/// The target's contents, mode, owner and group.
fn state(file: &Path) -> (String, u32, u32, u32) {
    let meta = std::fs::symlink_metadata(file).unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    (text, meta.mode() & 0o7777, meta.uid(), meta.gid())
}

fn unchanged(file: &Path) {
    assert_eq!(
        state(file),
        (SECRET.to_string(), 0o600, 0, 0),
        "the root-only file {} was changed through a link",
        file.display()
    );
}

/// The directory PostgreSQL's real binaries are in.
fn real_bin() -> PathBuf {
    find_postgres_binary()
        .unwrap_or_else(|e| panic!("{e}\n\n{}", bakeoff_server::PG_INSTALL_HINT))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// An install directory `name` holding `postgres` and `initdb`: each a script with the body
/// given, or (None) a link to the real one. A script finds the run directory in `$dir`; run
/// without one (`--version`, asked to tell what the binary is) it is the real tool.
fn fake_install(name: &str, initdb: Option<&str>, postgres: Option<&str>) -> PathBuf {
    let bin = scratch::dir(name);
    // The run directory, from initdb's --pgdata=DIR/data or postgres's -D DIR/data.
    let prologue = "#!/bin/sh\ndata=\nprev=\nfor a in \"$@\"; do\n  case \"$a\" in --pgdata=*) data=\"${a#--pgdata=}\";; esac\n  [ \"$prev\" = -D ] && data=\"$a\"\n  prev=\"$a\"\ndone\n";
    for (tool, body) in [("initdb", initdb), ("postgres", postgres)] {
        let path = bin.join(tool);
        let real = real_bin().join(tool);
        match body {
            Some(body) => {
                let script = format!(
                    "{prologue}[ -n \"$data\" ] || exec {} \"$@\"\ndir=$(dirname \"$data\")\n{body}\n",
                    real.display()
                );
                std::fs::write(&path, script).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            None => std::os::unix::fs::symlink(real, &path).unwrap(),
        }
    }
    bin
}

fn spec(bin: &Path) -> ServerSpec {
    ServerSpec {
        binary: Some(bin.join("postgres")),
        options: vec!["fsync=off".into()],
        ..ServerSpec::default()
    }
}

/// Start, and stop again if it started: the error, if any.
fn start(spec: &ServerSpec) -> Option<String> {
    match Server::start(spec) {
        Ok(server) => {
            server.stop();
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

#[test]
fn an_error_log_planted_as_a_link_is_never_opened_for_the_server() {
    require_root();
    let target = root_only_file("error-log");
    // A real datadir, then the link where the lab puts PostgreSQL's log.
    let initdb = format!(
        "{} \"$@\" || exit $?\nln -s {} \"$dir/error.log\"",
        real_bin().join("initdb").display(),
        target.display()
    );
    let bin = fake_install("pg-error-log", Some(&initdb), None);
    let err = start(&spec(&bin));
    unchanged(&target);
    let err = err.expect("a start whose error.log is already there is refused");
    assert!(
        err.contains("error.log") && err.contains("already there"),
        "{err}"
    );
}

#[test]
fn an_install_log_swapped_for_a_link_is_not_quoted() {
    require_root();
    let target = root_only_file("install-log");
    let initdb = format!(
        "ln -s {} \"$dir/install.log.planted\"\nmv -f \"$dir/install.log.planted\" \"$dir/install.log\"\necho ERROR: planted >&2\nexit 1",
        target.display()
    );
    let bin = fake_install("pg-install-log", Some(&initdb), None);
    let err = start(&spec(&bin)).expect("initdb failed");
    unchanged(&target);
    assert!(err.contains("initializing the datadir"), "{err}");
    assert!(
        !err.contains(SECRET.trim()),
        "the root-only file was read through the link: {err}"
    );
    assert!(err.contains("symbolic link"), "{err}");
}

#[test]
fn an_error_log_swapped_for_a_link_at_start_is_not_quoted() {
    require_root();
    let target = root_only_file("server-log");
    let initdb = "mkdir -m 0700 \"$data\"";
    let postgres = format!(
        "ln -s {} \"$dir/error.log.planted\"\nmv -f \"$dir/error.log.planted\" \"$dir/error.log\"\nexit 1",
        target.display()
    );
    let bin = fake_install("pg-server-log", Some(initdb), Some(&postgres));
    let err = start(&spec(&bin)).expect("the server exits at start");
    unchanged(&target);
    assert!(err.contains("exited during startup"), "{err}");
    assert!(
        !err.contains(SECRET.trim()),
        "the root-only file was read through the link: {err}"
    );
    assert!(err.contains("symbolic link"), "{err}");
}
