//! Finding MariaDB's or MySQL's server binary and its datadir initializer.

use std::path::{Path, PathBuf};

use crate::binary::{is_executable, which};
use crate::value_kind::ValueKind;
use crate::ServerError;

pub const INSTALL_HINT: &str =
    "install MariaDB's server (Debian/Ubuntu: `sudo apt-get install mariadb-server`), or name a binary with --server-binary";

/// `mariadbd`, else `mysqld`, from PATH or the usual system directories.
pub fn find_server_binary() -> Result<PathBuf, ServerError> {
    which("mariadbd")
        .or_else(|| which("mysqld"))
        .ok_or_else(|| {
            ServerError::NotFound(format!(
                "no mariadbd or mysqld found on PATH or in /usr/sbin: {INSTALL_HINT}"
            ))
        })
}

/// The datadir initializer that belongs with `server`: mariadb-install-db beside it or on PATH.
pub fn find_install_db(server: &Path) -> Result<PathBuf, ServerError> {
    let beside = server.parent().map(|d| d.join("mariadb-install-db"));
    let candidates = [
        beside,
        server
            .parent()
            .and_then(|d| d.parent())
            .map(|d| d.join("bin/mariadb-install-db")),
        which("mariadb-install-db"),
        which("mysql_install_db"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            ServerError::NotFound(format!(
                "no mariadb-install-db found to initialize a datadir for {}: {INSTALL_HINT}",
                server.display()
            ))
        })
}

/// Whether `binary` refuses `--name=value` (`--name` for no value) as an unknown option: asked with `--help`, so
/// nothing starts. An answer that cannot be had (the binary will not run) is no refusal: the
/// start will say.
pub fn refuses_option(binary: &Path, name: &str, value: &str) -> bool {
    let option = match value.is_empty() {
        true => format!("--{name}"),
        false => format!("--{name}={value}"),
    };
    let out = std::process::Command::new(binary)
        .args(["--no-defaults", &option, "--verbose", "--help"])
        .output();
    out.is_ok_and(|o| {
        let said = String::from_utf8_lossy(&o.stderr);
        said.contains("unknown variable") || said.contains("unknown option")
    })
}

/// The options and variables `binary` takes, from `--no-defaults --verbose --help`: the table
/// after its "Variables (--variable-name=value)" heading, one name per line up to the first
/// blank one, dashes read as underscores (the lab passes settings either way).
pub fn setting_names(
    binary: &Path,
) -> Result<std::collections::BTreeMap<String, ValueKind>, String> {
    let out = std::process::Command::new(binary)
        .args(["--no-defaults", "--verbose", "--help"])
        .output()
        .map_err(|e| format!("{} --verbose --help: {e}", binary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "name   default": the default tells the kind of value the setting takes.
    let names: std::collections::BTreeMap<String, ValueKind> = text
        .lines()
        .skip_while(|l| !l.starts_with("Variables (--variable-name=value)"))
        .skip_while(|l| !l.starts_with("----"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let (name, default) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (!name.is_empty())
                .then(|| (name.replace('-', "_"), ValueKind::of_mysql_default(default)))
        })
        .collect();
    if names.is_empty() {
        return Err(format!(
            "{} --verbose --help listed no variables ({})",
            binary.display(),
            out.status
        ));
    }
    Ok(names)
}
