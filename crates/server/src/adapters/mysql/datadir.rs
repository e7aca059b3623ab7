//! A fresh datadir for a lab server: which family the binary is (MariaDB and MySQL initialize
//! differently) and the initializer run to make it, bounded and abandonable like the start.

use std::path::{Path, PathBuf};

use super::binary::find_install_db;
use crate::adapters::family::Bounds;
use crate::identity::{Identity, Product};
use crate::launch::RunAs;
use crate::rundir::RunDir;
use crate::ServerError;

/// Make the run directory's `data` with the initializer that belongs to `binary` (see
/// [`run_initializer`](crate::adapters::initializer::run)).
pub(crate) fn initialize(
    flavor: Flavor,
    binary: &Path,
    rundir: &RunDir,
    run_as: Option<RunAs>,
    bounds: Bounds<'_>,
) -> Result<(), ServerError> {
    let (tool, args) = init_command(flavor, binary, rundir.path(), &rundir.tmp())?;
    crate::adapters::initializer::run(&tool, &args, rundir, run_as, bounds)
}

/// Which server family a binary belongs to: they initialize datadirs differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    MariaDb,
    MySql,
}

/// From what `binary --version` says (see [`Identity`]): MySQL's and Percona Server's
/// initialize alike; MariaDB when it cannot tell.
pub(crate) fn flavor(binary: &Path) -> Flavor {
    match Identity::of(binary).product {
        Product::MySql | Product::Percona => Flavor::MySql,
        _ => Flavor::MariaDb,
    }
}

/// From what a server of the family says its version is (`SELECT VERSION()`, or a
/// `--version` line): MariaDB's always names MariaDB ("10.11.19-MariaDB-0+deb12u1"); MySQL's
/// and Percona Server's give a number ("8.4.3", "8.0.39-30"). MariaDB when it says nothing.
pub(crate) fn flavor_of(version: &str) -> Flavor {
    match version.contains("MariaDB") || version.trim().is_empty() {
        true => Flavor::MariaDb,
        false => Flavor::MySql,
    }
}

/// The program and arguments that initialize a datadir for `binary`: MariaDB's
/// mariadb-install-db, or MySQL's own `mysqld --initialize-insecure` (root without a password,
/// reachable only through the socket of a server nobody else can reach before the init file
/// has created the load account).
fn init_command(
    flavor: Flavor,
    binary: &Path,
    dir: &Path,
    tmp: &Path,
) -> Result<(PathBuf, Vec<String>), ServerError> {
    let datadir = format!("--datadir={}", dir.join("data").display());
    // Private tmpdir: see RunDir::create.
    let tmpdir = format!("--tmpdir={}", tmp.display());
    if flavor == Flavor::MySql {
        let args = vec![
            "--no-defaults".into(),
            "--initialize-insecure".into(),
            datadir,
            tmpdir,
        ];
        return Ok((binary.to_path_buf(), args));
    }
    let tool = find_install_db(binary)?;
    let mut args = vec![
        "--no-defaults".into(),
        datadir,
        "--skip-test-db".into(),
        "--auth-root-authentication-method=socket".into(),
        // Passed through to the bootstrap server.
        tmpdir,
    ];
    // A tree of its own (a tarball in /opt): the initializer found in it needs --basedir to
    // find its share files. One from the system's PATH uses the system's, whatever wraps the
    // server binary (a script that delays or traces it).
    if let Some(basedir) = binary
        .parent()
        .and_then(|d| d.parent())
        .filter(|d| d != &Path::new("/usr") && tool.starts_with(d))
    {
        args.push(format!("--basedir={}", basedir.display()));
    }
    Ok((tool, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_family_is_read_from_the_version_line() {
        assert_eq!(
            flavor_of("mariadbd  Ver 15.1 Distrib 10.11.19-MariaDB, for debian-linux-gnu"),
            Flavor::MariaDb
        );
        assert_eq!(
            flavor_of(
                "/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)"
            ),
            Flavor::MySql
        );
        assert_eq!(flavor_of(""), Flavor::MariaDb);
        // Percona Server for MySQL initializes as MySQL does.
        assert_eq!(
            flavor_of("mysqld  Ver 8.0.39-30 for Linux on x86_64 (Percona Server (GPL), Release '30', Revision '1b9e6b3a')"),
            Flavor::MySql
        );
    }

    #[test]
    fn mysql_initializes_with_its_own_binary_and_no_root_password() {
        let (tool, args) = init_command(
            Flavor::MySql,
            Path::new("/opt/mysql-8.0/bin/mysqld"),
            Path::new("/tmp/bakeoff-1-0"),
            Path::new("/tmp/bakeoff-1-0/tmp"),
        )
        .unwrap();
        assert_eq!(tool, Path::new("/opt/mysql-8.0/bin/mysqld"));
        assert_eq!(
            args.join(" "),
            "--no-defaults --initialize-insecure --datadir=/tmp/bakeoff-1-0/data --tmpdir=/tmp/bakeoff-1-0/tmp"
        );
    }
}
