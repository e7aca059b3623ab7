//! The fence around deletion: only a directory bakeoff made and marked is ever removed, by
//! the run directory that owns it or by abandoning (a second Ctrl-C), which both come here.

use std::fs;
use std::path::Path;

/// The file that marks a directory as a run directory of bakeoff's, holding its owner's pid.
pub(crate) const MARKER: &str = ".bakeoff-rundir";

/// Remove `path` if it is a run directory of ours: a real directory holding our marker, a
/// regular file this user wrote (the directory itself may belong to the server's user).
/// Errors are ignored: nothing measured lives here. Whether it removed it.
pub(crate) fn remove_if_ours(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    let marker = fs::symlink_metadata(path.join(MARKER));
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || !marker.is_ok_and(|m| m.is_file() && m.uid() == me) {
        return false;
    }
    fs::remove_dir_all(path).is_ok()
}
