//! Files and directories reached through an open directory, never through a link.
//!
//! As root, bakeoff makes and reads files in directories another account may write: a run
//! directory belongs to the server's account (mysql, postgres) once the server's programs run
//! in it, and so does a template's datadir. That account can put a link, or a directory of its
//! own, wherever a path names, between one call and the next. So nothing there is reached by
//! path: a directory is opened once (while it is still root's, or with O_NOFOLLOW), and
//! everything under it is one name looked up in that descriptor with O_NOFOLLOW, made with
//! O_EXCL, owned and moded through its own descriptor. A link met anywhere is refused.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::launch::RunAs;

/// How every directory is opened: never through a link, never inherited by a child.
const DIR: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// `name` as one path component: a slash would have the kernel look up the directories it
/// names, following links, and `.` or `..` would leave the directory meant.
pub(crate) fn component(name: impl AsRef<OsStr>) -> io::Result<CString> {
    let bytes = name.as_ref().as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{:?} is not a name in one directory", name.as_ref()),
        ));
    }
    CString::new(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// -1 as the error in errno, with O_NOFOLLOW's ELOOP said in words: it is how a link
/// planted where bakeoff looks reads.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r != -1 {
        return Ok(r);
    }
    let e = io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ELOOP) => io::Error::other(
            "a symbolic link is there, and bakeoff never follows one",
        ),
        Some(libc::EEXIST) => io::Error::new(
            io::ErrorKind::AlreadyExists,
            "something is already there, and bakeoff makes its files itself: it never opens one it did not make",
        ),
        _ => e,
    })
}

/// A descriptor `open`/`openat` returned (checked not to be -1).
fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful open and is owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// The directory at `path`, its last component not a link (those above it are the
/// caller's: a directory it made in the sticky /tmp, or one a user named).
pub(crate) fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    check(unsafe { libc::open(c.as_ptr(), DIR) }).map(owned)
}

/// The directory `name` in `dir`, not a link.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated component.
    check(unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), DIR) }).map(owned)
}

/// A new file `name` in `dir`, write-only, with `mode` (before any chown). Fails if anything
/// is there already, a link above all: O_EXCL never opens an existing file, and with
/// O_NOFOLLOW never makes one at a link's target either.
pub(crate) fn create(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> io::Result<File> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated component; the mode is
    // passed as the variadic argument O_CREAT reads.
    let fd = check(unsafe {
        libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint)
    })?;
    Ok(File::from(owned(fd)))
}

/// The plain file `name` in `dir`, for reading, with what fstat says of it. A link, a FIFO
/// (which would block the open), a device or a directory is refused.
pub(crate) fn open_read(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<(File, libc::stat)> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated component.
    let fd = owned(check(unsafe {
        libc::openat(dir.as_raw_fd(), name.as_ptr(), flags)
    })?);
    let st = stat(fd.as_fd())?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::other("not a plain file"));
    }
    Ok((File::from(fd), st))
}

/// A new directory `name` in `dir`, with `mode` (before any chown); an existing one fails.
pub(crate) fn mkdir(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated component.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

/// What `name` in `dir` is, the link itself if it is one (lstat).
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value; fstatat writes only into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is an open descriptor, `name` a NUL-terminated component, `st` writable.
    check(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(st)
}

/// What the open file `fd` is.
pub(crate) fn stat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value; fstat writes only into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is an open descriptor and `st` writable.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// Give the open file `fd` to `run_as` (when given), then set its `mode`: through the
/// descriptor, so it is the file bakeoff made whatever its name now points at. The mode
/// comes last, as a chown may clear set-id bits and the umask has had its say at creation.
pub(crate) fn own(fd: BorrowedFd<'_>, run_as: Option<RunAs>, mode: u32) -> io::Result<()> {
    if let Some(r) = run_as {
        // SAFETY: `fd` is an open descriptor; fchown has no memory preconditions.
        check(unsafe { libc::fchown(fd.as_raw_fd(), r.uid, r.gid) })?;
    }
    // SAFETY: `fd` is an open descriptor; fchmod has no memory preconditions.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) }).map(drop)
}

/// Move `from_name` in `from` to `to_name` in `to`: each name one component of a directory
/// held open, so neither end can be a link's.
pub(crate) fn rename(
    from: BorrowedFd<'_>,
    from_name: &CStr,
    to: BorrowedFd<'_>,
    to_name: &CStr,
) -> io::Result<()> {
    // SAFETY: both descriptors are open and both names NUL-terminated components.
    check(unsafe {
        libc::renameat(
            from.as_raw_fd(),
            from_name.as_ptr(),
            to.as_raw_fd(),
            to_name.as_ptr(),
        )
    })
    .map(drop)
}

/// The names in the directory `dir` (not `.` and `..`).
pub(crate) fn entries(dir: BorrowedFd<'_>) -> io::Result<Vec<CString>> {
    // The directory opened anew through its own `.`, not dup'ed: fdopendir takes the
    // descriptor over and reads from its offset, which a dup would share with `dir`.
    let own = open_dir(dir, c".")?;
    let raw = own.into_raw_fd();
    // SAFETY: `raw` is an open directory descriptor nobody else owns; on success the DIR
    // owns it (closedir closes it), on failure it is closed here.
    let d = unsafe { libc::fdopendir(raw) };
    if d.is_null() {
        let e = io::Error::last_os_error();
        drop(owned(raw));
        return Err(e);
    }
    let stream = Stream(d);
    let mut names = Vec::new();
    loop {
        // SAFETY: errno is this thread's; zeroing it tells readdir's end from its error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `stream.0` is an open DIR used by this thread only.
        let e = unsafe { libc::readdir(stream.0) };
        if e.is_null() {
            let err = io::Error::last_os_error();
            if err.raw_os_error().unwrap_or(0) != 0 {
                return Err(err);
            }
            break;
        }
        // SAFETY: readdir returned an entry whose d_name is NUL-terminated; it is copied
        // before the next readdir may reuse the buffer.
        let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) };
        if name != c"." && name != c".." {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// An open directory stream, closed when dropped.
struct Stream(*mut libc::DIR);

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream came from a successful fdopendir and is closed only here.
        unsafe { libc::closedir(self.0) };
    }
}

/// This process's effective uid: whoever made, and so owns, what bakeoff makes.
pub(crate) fn euid() -> libc::uid_t {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}
