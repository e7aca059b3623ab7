//! The fence around deletion: only a directory bakeoff made and marked is ever removed, by
//! the run directory that owns it or by abandoning (a second Ctrl-C), which both come here.

use std::fs;
use std::path::Path;

/// The file that marks a directory as a run directory of bakeoff's, holding its owner's pid.
pub(crate) const MARKER: &str = ".bakeoff-rundir";

/// One removal at a time: a run directory's owner and abandoning may both remove it at once
/// (a Ctrl-C while a start is being given up), and two walks of one tree fail each other,
/// one seeing the marker gone, the other an entry gone, leaving the rest behind.
static REMOVING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Remove `path` if it is a run directory of ours: a real directory holding our marker, a
/// regular file this user wrote (the directory itself may belong to the server's user).
/// A removal that fails (a killed server's last write racing it) is tried again for a second.
/// Errors are otherwise ignored: nothing measured lives here. Whether it removed it.
pub(crate) fn remove_if_ours(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let _one = REMOVING.lock().unwrap_or_else(|p| p.into_inner());
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    let marker = fs::symlink_metadata(path.join(MARKER));
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || !marker.is_ok_and(|m| m.is_file() && m.uid() == me) {
        return false;
    }
    for _ in 0..50 {
        if fs::remove_dir_all(path).is_ok() || fs::symlink_metadata(path).is_err() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// The pid of the bakeoff process that made what a `bakeoff-PID-...` name names: a run
/// directory or a cgroup (the naming both follow, so that a later bakeoff or the watchdog can
/// tell whose each is).
pub(crate) fn owner_of(name: &std::ffi::OsStr) -> Option<u32> {
    name.to_str()?
        .strip_prefix("bakeoff-")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Remove the run directories in `root` of the bakeoff processes `gone` says are gone. Only
/// marked directories of ours go (see [`remove_if_ours`]).
pub(crate) fn remove_rundirs_of(root: &Path, gone: impl Fn(u32) -> bool) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        if owner_of(&e.file_name()).is_some_and(&gone) {
            remove_if_ours(&e.path());
        }
    }
}

/// Remove the run directories of bakeoff process `owner`, gone now: the watchdog's last step
/// after it killed what that process started (a run directory is in the temporary directory
/// or /tmp, see `rundir.rs`).
pub(crate) fn remove_owners_rundirs(owner: u32) {
    for root in [std::env::temp_dir(), std::path::PathBuf::from("/tmp")] {
        remove_rundirs_of(&root, |o| o == owner);
    }
}
