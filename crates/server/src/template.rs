//! Prepared datadirs to start servers from: load the tables once, then give every later
//! server its own copy instead of loading again (a study's `dataset.policy = "copy"`).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use crate::launch::RunAs;
use crate::rundir::{at, RunDir};
use crate::ServerError;

/// The datadir's name, in a template and in a run directory alike.
const DATA: &CStr = c"data";

/// A datadir taken from a cleanly stopped server; removed (it is marked as bakeoff's) when
/// dropped.
pub struct Template {
    dir: RunDir,
}

impl Template {
    /// The directory is root's (bakeoff's) alone, not the server's account's: the datadir it
    /// keeps still belongs to that account, but no process of it can reach it here to swap
    /// what later copies read.
    pub(crate) fn new() -> Result<Template, ServerError> {
        Ok(Template {
            dir: RunDir::create(None)?,
        })
    }

    /// The datadir inside the template.
    pub fn datadir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Move the datadir of the run directory `from` (a stopped server's) in, by both
    /// directories' descriptors: the run directory is the server's account's, whose
    /// processes could have put a link where its path leads.
    pub(crate) fn take_datadir(&self, from: &RunDir) -> Result<(), ServerError> {
        at::rename(from.fd(), DATA, self.dir.fd(), DATA).map_err(|source| ServerError::RunDir {
            path: from.path().join("data"),
            source,
        })
    }
}

/// Copy the datadir `from` into `to` as its `data` (which must not exist yet), files and
/// directories only, owned by `run_as` when given. Directories and files keep their modes:
/// PostgreSQL refuses a datadir open to others (0700 or 0750).
///
/// `from` belongs to the server's account, and `to` is in a run directory of that account:
/// both are walked by descriptors, never by path (see [`at`]). A link is never followed: one
/// found is skipped, like anything else that is not a plain file or a directory, and one
/// swapped in after its entry was looked at is refused; so is an entry of another owner than
/// the datadir's (a hard link to a file of root's, say). What is made is root's and private
/// until it is full, then given to `run_as`.
pub(crate) fn copy_tree(from: &Path, to: &RunDir, run_as: Option<RunAs>) -> io::Result<()> {
    let src = at::open_dir_path(from)?;
    let st = at::stat(src.as_fd())?;
    let owner = st.st_uid;
    copy_dir(src.as_fd(), st.st_mode, to.fd(), DATA, owner, run_as)
}

/// Copy the open directory `src` (whose mode is `mode`) to a new directory `name` in `parent`.
fn copy_dir(
    src: BorrowedFd<'_>,
    mode: libc::mode_t,
    parent: BorrowedFd<'_>,
    name: &CStr,
    owner: libc::uid_t,
    run_as: Option<RunAs>,
) -> io::Result<()> {
    at::mkdir(parent, name, 0o700)?;
    let dst = at::open_dir(parent, name)?;
    // Made by root a moment ago: a directory of anyone else's is one swapped in meanwhile.
    if at::stat(dst.as_fd())?.st_uid != at::euid() {
        return Err(refused(name, "replaced while the copy ran"));
    }
    for entry in at::entries(src)? {
        let st = at::stat_at(src, &entry)?;
        match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => {
                let sub = at::open_dir(src, &entry).map_err(|e| refused(&entry, e))?;
                let opened = same(&st, &at::stat(sub.as_fd())?, &entry, owner)?;
                copy_dir(
                    sub.as_fd(),
                    opened.st_mode,
                    dst.as_fd(),
                    &entry,
                    owner,
                    run_as,
                )?;
            }
            libc::S_IFREG => {
                let (mut f, opened) = at::open_read(src, &entry).map_err(|e| refused(&entry, e))?;
                let opened = same(&st, &opened, &entry, owner)?;
                // Root's and 0600 while it fills; its own mode and owner once full.
                let mut out = at::create(dst.as_fd(), &entry, 0o600)?;
                io::copy(&mut f, &mut out)?;
                at::own(out.as_fd(), run_as, opened.st_mode & 0o777)?;
            }
            // A link, a socket, a FIFO, a device: a datadir has none worth copying.
            _ => {}
        }
    }
    // Given away last: until it is full, nobody but root can put anything in it.
    at::own(dst.as_fd(), run_as, mode & 0o777)
}

/// What was opened is what was looked at (no swap between the two), and the datadir's
/// owner's.
fn same(
    looked: &libc::stat,
    opened: &libc::stat,
    name: &CStr,
    owner: libc::uid_t,
) -> io::Result<libc::stat> {
    if (looked.st_dev, looked.st_ino) != (opened.st_dev, opened.st_ino) {
        return Err(refused(name, "replaced while the copy ran"));
    }
    if opened.st_uid != owner {
        let why = format!(
            "it belongs to uid {}, not to the datadir's owner (uid {owner})",
            opened.st_uid
        );
        return Err(refused(name, why));
    }
    Ok(*opened)
}

fn refused(name: &CStr, why: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{}: {why}; not copied", name.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};

    const SECRET: &str = "not the template's\n";

    /// A directory `secrets` (0700) holding a file `key` (0600): what a link may point at.
    fn secrets(dir: &RunDir) -> PathBuf {
        let secrets = dir.path().join("secrets");
        fs::create_dir(&secrets).unwrap();
        fs::set_permissions(&secrets, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(secrets.join("key"), SECRET).unwrap();
        fs::set_permissions(secrets.join("key"), fs::Permissions::from_mode(0o600)).unwrap();
        secrets
    }

    #[test]
    fn a_template_datadir_swapped_for_a_link_is_not_copied() {
        let elsewhere = RunDir::create(None).unwrap();
        let secrets = secrets(&elsewhere);
        let template = RunDir::create(None).unwrap();
        symlink(&secrets, template.path().join("data")).unwrap();
        let to = RunDir::create(None).unwrap();
        let copied = copy_tree(&template.path().join("data"), &to, None);
        assert!(copied.is_err(), "copied through a link");
        assert!(
            !to.path().join("data/key").exists(),
            "the linked directory's file was copied"
        );
    }

    #[test]
    fn only_plain_files_and_directories_are_copied_with_their_modes() {
        let elsewhere = RunDir::create(None).unwrap();
        let secrets = secrets(&elsewhere);
        let template = RunDir::create(None).unwrap();
        let data = template.path().join("data");
        fs::create_dir_all(data.join("base/1")).unwrap();
        fs::set_permissions(&data, fs::Permissions::from_mode(0o750)).unwrap();
        fs::write(data.join("base/1/1259"), "a table").unwrap();
        fs::set_permissions(data.join("base/1/1259"), fs::Permissions::from_mode(0o640)).unwrap();
        symlink(secrets.join("key"), data.join("linked-file")).unwrap();
        symlink(&secrets, data.join("base/linked-dir")).unwrap();
        let fifo =
            std::ffi::CString::new(data.join("fifo").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let to = RunDir::create(None).unwrap();
        copy_tree(&data, &to, None).unwrap();
        let copy = to.path().join("data");
        assert_eq!(
            fs::read_to_string(copy.join("base/1/1259")).unwrap(),
            "a table"
        );
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().mode() & 0o7777;
        assert_eq!(mode(&copy), 0o750);
        assert_eq!(mode(&copy.join("base/1/1259")), 0o640);
        for skipped in ["linked-file", "base/linked-dir", "fifo"] {
            assert!(
                fs::symlink_metadata(copy.join(skipped)).is_err(),
                "{skipped} was copied"
            );
        }
        assert_eq!(fs::read_to_string(secrets.join("key")).unwrap(), SECRET);
    }

    #[test]
    fn a_copy_is_handed_to_the_server_and_a_file_of_another_owner_is_refused() {
        use crate::rundir::tests::{require_root, NOBODY};
        require_root();
        let template = RunDir::create(None).unwrap();
        let data = template.path().join("data");
        fs::create_dir_all(data.join("base")).unwrap();
        fs::set_permissions(&data, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(data.join("base/1259"), "a table").unwrap();
        for p in [&data, &data.join("base"), &data.join("base/1259")] {
            std::os::unix::fs::chown(p, Some(NOBODY.uid), Some(NOBODY.gid)).unwrap();
        }
        let to = RunDir::create(Some(NOBODY)).unwrap();
        copy_tree(&data, &to, Some(NOBODY)).unwrap();
        for p in ["data", "data/base", "data/base/1259"] {
            let m = fs::symlink_metadata(to.path().join(p)).unwrap();
            assert_eq!((m.uid(), m.gid()), (NOBODY.uid, NOBODY.gid), "{p}");
        }
        // A file of root's in the server's datadir (a hard link to one, say): not copied.
        fs::write(data.join("base/shadow"), SECRET).unwrap();
        let again = RunDir::create(Some(NOBODY)).unwrap();
        let err = copy_tree(&data, &again, Some(NOBODY)).unwrap_err();
        assert!(err.to_string().contains("shadow"), "{err}");
        assert!(fs::symlink_metadata(again.path().join("data/base/shadow")).is_err());
    }
}
