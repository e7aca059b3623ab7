//! The throwaway directory a server lives in: datadir, socket, logs.
//!
//! Deletion is fenced: only a real directory (not a symlink) under the temp root that holds
//! our marker file is ever removed.

use std::fs;
use std::path::{Path, PathBuf};

use crate::launch::RunAs;
use crate::ServerError;

use crate::fence::{remove_if_ours, MARKER};

const TMP: &str = "tmp";
/// sun_path is 108 bytes; the socket path must fit with room to spare.
const MAX_SOCKET_PATH: usize = 100;

pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    pub fn create(run_as: Option<RunAs>) -> Result<RunDir, ServerError> {
        // The pid names the owner for the sweep; the rest is random, so nobody can prepare the
        // path (a directory or a link) before this process makes it.
        let random = crate::random_hex(8).map_err(|source| ServerError::RunDir {
            path: std::env::temp_dir(),
            source,
        })?;
        let name = format!("bakeoff-{}-{random}", std::process::id());
        let mut root = std::env::temp_dir();
        if root.join(&name).join("mysqld.sock").as_os_str().len() > MAX_SOCKET_PATH {
            root = PathBuf::from("/tmp");
        }
        sweep_stale(&root);
        let path = root.join(name);
        let err = |source| ServerError::RunDir {
            path: path.clone(),
            source,
        };
        // 0700: the socket, the init file and the datadir are the server's owner's alone (the
        // socket account holds every privilege; whoever reaches the socket is that account).
        crate::abandon::make_rundir(&path, err, || {
            private_dir(&path).map_err(err)?;
            write_private(
                &path.join(MARKER),
                &format!("{}\n", std::process::id()),
                None,
            )
        })?;
        // The server's own tmpdir: a starting mariadbd deletes every `#sql*` file in its tmpdir,
        // so in a shared /tmp one server's start destroys another's bootstrap temp tables.
        private_dir(&path.join(TMP)).map_err(err)?;
        if let Some(r) = run_as {
            chown(&path, r).map_err(err)?;
            chown(&path.join(TMP), r).map_err(err)?;
        }
        Ok(RunDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The server's private tmpdir (see `create`).
    pub fn tmp(&self) -> PathBuf {
        self.path.join(TMP)
    }

    /// Remove the directory if it is still ours (see [`remove_if_ours`]).
    pub fn remove(&self) {
        remove_if_ours(&self.path);
        crate::abandon::untrack_rundir(&self.path);
    }
}

/// A run directory goes with its owner, on every path: a start that fails half-way (datadir
/// initialized, server never ready) leaves nothing behind either.
impl Drop for RunDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Remove run directories left by bakeoff processes that are gone (killed, or a test binary
/// whose shared server died with it). Only marked directories of dead owners are touched.
fn sweep_stale(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("bakeoff-"))
            .and_then(|r| r.split('-').next())
        else {
            continue;
        };
        let Ok(pid) = owner.parse::<u32>() else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            RunDir { path: entry.path() }.remove();
        }
    }
}

/// Create `path` (it must not exist: an existing one, or a symlink, fails) with mode 0700,
/// whatever the umask.
fn private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    fs::DirBuilder::new().mode(0o700).create(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o700))
}

fn chown(path: &Path, r: RunAs) -> std::io::Result<()> {
    std::os::unix::fs::chown(path, Some(r.uid), Some(r.gid))
}

/// The last `n` lines of a log file, for error messages.
pub fn tail(path: &Path, n: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("(could not read {}: {e})", path.display()),
    }
}

/// The lines that say what went wrong (`ERROR`, `[Warning]`), then the last `n` lines: an
/// installer's log ends in pages of generic advice that bury its one real error line.
pub fn error_lines_and_tail(path: &Path, n: usize) -> String {
    let Ok(bytes) = fs::read(path) else {
        return tail(path, n);
    };
    let text = String::from_utf8_lossy(&bytes);
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("ERROR") || l.contains("[Warning]"))
        .take(10)
        .collect();
    if errors.is_empty() {
        return tail(path, n);
    }
    format!("{}\n...\n{}", errors.join("\n"), tail(path, n))
}

/// Write `text` to a new file only its owner (the server's user, `run_as`) may read.
pub(crate) fn write_private(
    path: &Path,
    text: &str,
    run_as: Option<RunAs>,
) -> Result<(), ServerError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let err = |source| ServerError::RunDir {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(err)?;
    std::io::Write::write_all(&mut f, text.as_bytes()).map_err(err)?;
    if let Some(r) = run_as {
        std::os::unix::fs::chown(path, Some(r.uid), Some(r.gid)).map_err(err)?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that was ours and is gone (a child waited for).
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    #[test]
    fn names_are_fresh_private_and_a_dead_owners_directory_is_reaped() {
        let (a, b) = (RunDir::create(None).unwrap(), RunDir::create(None).unwrap());
        assert_ne!(a.path(), b.path());
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        // As a bakeoff killed with SIGKILL leaves it: marked, its owner gone.
        let dead = dead_pid();
        let root = a.path().parent().unwrap().to_path_buf();
        let left = root.join(format!("bakeoff-{dead}-0123456789abcdef"));
        private_dir(&left).unwrap();
        write_private(&left.join(MARKER), &format!("{dead}\n"), None).unwrap();
        fs::write(left.join("ibdata1"), "a datadir").unwrap();
        // Not ours though named like it: no marker, or a marker that is a link.
        let foreign = root.join(format!("bakeoff-{dead}-fedcba9876543210"));
        fs::create_dir(&foreign).unwrap();
        std::os::unix::fs::symlink(left.join(MARKER), foreign.join(MARKER)).unwrap();
        let c = RunDir::create(None).unwrap();
        assert!(!left.exists(), "the dead owner's run directory was reaped");
        assert!(foreign.exists(), "an unmarked one is left alone");
        fs::remove_dir_all(&foreign).unwrap();
        drop((a, b, c));
    }
}
