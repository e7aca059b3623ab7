//! The throwaway directory a server lives in: datadir, socket, logs.
//!
//! Deletion is fenced: only a real directory (not a symlink) under the temp root that holds
//! our marker file is ever removed. Nothing in it is opened by path (see [`RunDir`]).

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::launch::RunAs;
use crate::ServerError;

use crate::fence::{remove_if_ours, MARKER};

pub(crate) mod at;

const TMP: &str = "tmp";
/// sun_path is 108 bytes; the socket path must fit with room to spare.
const MAX_SOCKET_PATH: usize = 100;
/// The most of a log read back for an error message: its end, where a failure is told. A
/// log the server's account grew without bound (or a sparse one) costs no more than this.
const MAX_LOG_READ: u64 = 4 << 20;

/// A run directory. Once the server's programs run in it, it belongs to the server's account
/// (the lab runs as root, the server never does), which may then put anything under any name
/// in it: so every file bakeoff makes or reads back here goes through `dir`, never a path
/// (see [`at`]).
pub struct RunDir {
    path: PathBuf,
    /// The directory itself, opened while it was still root's.
    dir: OwnedFd,
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
        let mut made = None;
        crate::abandon::make_rundir(&path, err, || {
            let dir = private_dir(&path).map_err(err)?;
            write_new(
                dir.as_fd(),
                MARKER,
                &format!("{}\n", std::process::id()),
                None,
            )
            .map_err(err)?;
            made = Some(dir);
            Ok(())
        })?;
        let dir = made.ok_or_else(|| err(std::io::Error::other("the directory was not made")))?;
        // From here on a failure removes it (Drop).
        let rundir = RunDir {
            path: path.clone(),
            dir,
        };
        // The server's own tmpdir: a starting mariadbd deletes every `#sql*` file in its tmpdir,
        // so in a shared /tmp one server's start destroys another's bootstrap temp tables.
        let tmp = at::component(TMP).map_err(err)?;
        at::mkdir(rundir.fd(), &tmp, 0o700).map_err(err)?;
        let tmp = at::open_dir(rundir.fd(), &tmp).map_err(err)?;
        at::own(tmp.as_fd(), run_as, 0o700).map_err(err)?;
        // The directory itself last: until now only root could put anything in it.
        at::own(rundir.fd(), run_as, 0o700).map_err(err)?;
        Ok(rundir)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory's descriptor, which whatever is made or read in it goes through.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// The server's private tmpdir (see `create`).
    pub fn tmp(&self) -> PathBuf {
        self.path.join(TMP)
    }

    /// A new file `name`, write-only, owned by `run_as` (when given) with `mode`. Anything
    /// already under that name (a link the server's account put there) fails the call and is
    /// left as it is. Its path is in the error.
    pub(crate) fn create_file(
        &self,
        name: &str,
        mode: u32,
        run_as: Option<RunAs>,
    ) -> Result<fs::File, ServerError> {
        create_new(self.fd(), name, mode, run_as).map_err(|source| self.error(name, source))
    }

    /// Write `text` to a new file `name` only its owner (the server's user, `run_as`) may
    /// read, as [`create_file`](Self::create_file) makes it; its path, for the server's
    /// command line.
    pub(crate) fn write_private(
        &self,
        name: &str,
        text: &str,
        run_as: Option<RunAs>,
    ) -> Result<PathBuf, ServerError> {
        write_new(self.fd(), name, text, run_as).map_err(|source| self.error(name, source))?;
        Ok(self.path.join(name))
    }

    /// A log in the directory (its last [`MAX_LOG_READ`] bytes), read only if it is a plain
    /// file with no other name: a link or a hard link the server's account put in its place
    /// could name a file only root may read.
    pub(crate) fn read_log(&self, name: &str) -> std::io::Result<Vec<u8>> {
        let (mut f, st) = at::open_read(self.fd(), &at::component(name)?)?;
        if st.st_nlink != 1 {
            return Err(std::io::Error::other(
                "it has other names (a hard link), so it may not be the log bakeoff made",
            ));
        }
        let size = st.st_size.max(0) as u64;
        if size > MAX_LOG_READ {
            f.seek(SeekFrom::Start(size - MAX_LOG_READ))?;
        }
        let mut bytes = Vec::new();
        f.take(MAX_LOG_READ).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The last `n` lines of the log `name`, for error messages.
    pub(crate) fn tail(&self, name: &str, n: usize) -> String {
        match self.read_log(name) {
            Ok(bytes) => last_lines(&String::from_utf8_lossy(&bytes), n),
            Err(e) => self.unreadable(name, e),
        }
    }

    /// The lines of the log `name` that say what went wrong (`ERROR`, `[Warning]`), then the
    /// last `n` lines: an installer's log ends in pages of generic advice that bury its one
    /// real error line.
    pub(crate) fn error_lines_and_tail(&self, name: &str, n: usize) -> String {
        let bytes = match self.read_log(name) {
            Ok(bytes) => bytes,
            Err(e) => return self.unreadable(name, e),
        };
        let text = String::from_utf8_lossy(&bytes);
        let errors: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("ERROR") || l.contains("[Warning]"))
            .take(10)
            .collect();
        if errors.is_empty() {
            return last_lines(&text, n);
        }
        format!("{}\n...\n{}", errors.join("\n"), last_lines(&text, n))
    }

    fn unreadable(&self, name: &str, e: std::io::Error) -> String {
        format!("(could not read {}: {e})", self.path.join(name).display())
    }

    fn error(&self, name: &str, source: std::io::Error) -> ServerError {
        ServerError::RunDir {
            path: self.path.join(name),
            source,
        }
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
    let me = std::process::id();
    crate::fence::remove_rundirs_of(root, |pid| {
        pid != me && !Path::new(&format!("/proc/{pid}")).exists()
    });
}

/// Create `path` (it must not exist: an existing one, or a symlink, fails) with mode 0700,
/// whatever the umask, and open it. It is made in the sticky temporary directory, where
/// nobody else can rename or replace what root made; that it is the directory just made, and
/// root's, is checked all the same.
fn private_dir(path: &Path) -> std::io::Result<OwnedFd> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().mode(0o700).create(path)?;
    let dir = at::open_dir_path(path)?;
    if at::stat(dir.as_fd())?.st_uid != at::euid() {
        return Err(std::io::Error::other(
            "replaced by another account's directory",
        ));
    }
    at::own(dir.as_fd(), None, 0o700)?;
    Ok(dir)
}

/// A new file `name` in `dir`, given to `run_as` (when given) with `mode`.
fn create_new(
    dir: BorrowedFd<'_>,
    name: &str,
    mode: u32,
    run_as: Option<RunAs>,
) -> std::io::Result<fs::File> {
    let f = at::create(dir, &at::component(name)?, mode)?;
    at::own(f.as_fd(), run_as, mode)?;
    Ok(f)
}

/// `text` in a new file `name` in `dir`, mode 0600, given to `run_as` (when given).
fn write_new(
    dir: BorrowedFd<'_>,
    name: &str,
    text: &str,
    run_as: Option<RunAs>,
) -> std::io::Result<()> {
    create_new(dir, name, 0o600, run_as)?.write_all(text.as_bytes())
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
pub(crate) mod tests {
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
        let fd = private_dir(&left).unwrap();
        write_new(fd.as_fd(), MARKER, &format!("{dead}\n"), None).unwrap();
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

    /// A file only its owner may touch, outside `dir`, holding `SECRET`.
    const SECRET: &str = "the file a link points at\n";

    #[test]
    fn a_link_planted_in_the_run_directory_is_neither_written_nor_read_through() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let elsewhere = RunDir::create(None).unwrap();
        let target = elsewhere.path().join("target");
        fs::write(&target, SECRET).unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        let dir = RunDir::create(None).unwrap();
        for name in ["error.log", "init.sql"] {
            std::os::unix::fs::symlink(&target, dir.path().join(name)).unwrap();
        }
        let written = dir.write_private("init.sql", "overwritten", None);
        assert!(written.is_err(), "written through a link");
        let created = dir.create_file("error.log", 0o600, None);
        assert!(created.is_err(), "created through a link");
        for read in [
            dir.tail("error.log", 5),
            dir.error_lines_and_tail("error.log", 5),
        ] {
            assert!(!read.contains(SECRET.trim()), "read through a link: {read}");
            assert!(read.contains("link"), "{read}");
        }
        let meta = fs::metadata(&target).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), SECRET);
        assert_eq!(meta.mode() & 0o7777, 0o600);
    }

    /// The lab hands its files to the server's account only as root; as anyone else this
    /// test could not look, and fails rather than pass without looking.
    pub(crate) fn require_root() {
        assert_eq!(
            at::euid(),
            0,
            "this test gives files to another account, which needs root: run it as root (CI does)"
        );
    }

    /// The account a lab running as root hands things to, as far as these tests go.
    pub(crate) const NOBODY: RunAs = RunAs {
        uid: 65534,
        gid: 65534,
    };

    #[test]
    fn the_directory_and_what_is_made_for_the_server_are_handed_over_the_marker_is_not() {
        use std::os::unix::fs::MetadataExt;
        require_root();
        let dir = RunDir::create(Some(NOBODY)).unwrap();
        let seen = |name: &str| {
            let m = fs::symlink_metadata(dir.path().join(name)).unwrap();
            (m.uid(), m.gid(), m.mode() & 0o7777)
        };
        assert_eq!(seen(""), (65534, 65534, 0o700));
        assert_eq!(seen(TMP), (65534, 65534, 0o700));
        assert_eq!(seen(MARKER), (0, 0, 0o600));
        let path = dir
            .write_private("init.sql", "SELECT 1;", Some(NOBODY))
            .unwrap();
        assert_eq!(path, dir.path().join("init.sql"));
        assert_eq!(seen("init.sql"), (65534, 65534, 0o600));
        assert_eq!(fs::read_to_string(&path).unwrap(), "SELECT 1;");
        dir.create_file("error.log", 0o600, None).unwrap();
        assert_eq!(seen("error.log"), (0, 0, 0o600));
        // A name of more than one component would be looked up through directories by name.
        assert!(dir.create_file("tmp/x", 0o600, None).is_err());
        assert!(dir.create_file("..", 0o600, None).is_err());
    }

    #[test]
    fn a_log_with_another_name_is_not_read() {
        let elsewhere = RunDir::create(None).unwrap();
        let target = elsewhere.path().join("target");
        fs::write(&target, SECRET).unwrap();
        let dir = RunDir::create(None).unwrap();
        fs::hard_link(&target, dir.path().join("error.log")).unwrap();
        let read = dir.tail("error.log", 5);
        assert!(!read.contains(SECRET.trim()), "{read}");
        assert!(read.contains("hard link"), "{read}");
        // Its own log, a plain file with one name, reads.
        fs::write(dir.path().join("install.log"), "a\nERROR: b\nc\n").unwrap();
        assert_eq!(dir.tail("install.log", 2), "ERROR: b\nc");
        assert_eq!(
            dir.error_lines_and_tail("install.log", 1),
            "ERROR: b\n...\nc"
        );
    }
}
