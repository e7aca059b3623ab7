//! Finding programs (on PATH and in the system directories servers install to) and
//! fingerprinting them.

use std::path::{Path, PathBuf};

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

pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
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
