//! Finding the server binaries.

use std::path::{Path, PathBuf};

use crate::ServerError;

pub const INSTALL_HINT: &str =
    "install MariaDB's server (Debian/Ubuntu: `sudo apt-get install mariadb-server`), or name a binary with --server-binary";

/// Directories searched after PATH: Debian puts mariadbd in /usr/sbin, which is not on every
/// user's PATH.
const EXTRA_DIRS: &[&str] = &[
    "/usr/sbin",
    "/usr/local/sbin",
    "/usr/local/mysql/bin",
    "/usr/local/bin",
    "/usr/bin",
];

pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

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

/// SHA-256 of a file (the server binary), hex; None when unreadable.
pub fn file_sha256(path: &Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Some(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
