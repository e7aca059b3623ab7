//! Prepared datadirs to start servers from: load the tables once, then give every later
//! server its own copy instead of loading again (a study's `dataset.policy = "copy"`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::launch::{unprivileged_user, RunAs};
use crate::rundir::RunDir;
use crate::ServerError;

/// A datadir taken from a cleanly stopped server; removed (it is marked as bakeoff's) when
/// dropped.
pub struct Template {
    dir: RunDir,
}

impl Template {
    pub(crate) fn new() -> Result<Template, ServerError> {
        Ok(Template {
            dir: RunDir::create(unprivileged_user())?,
        })
    }

    /// The datadir inside the template.
    pub fn datadir(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

/// Copy `from` into `to` (which must not exist), files and directories only, owned by
/// `run_as` when given. Symlinks are not followed: a datadir has none, and following one could
/// copy from anywhere. Directories keep their modes: PostgreSQL refuses a datadir open to others (0700 or 0750).
pub(crate) fn copy_tree(from: &Path, to: &Path, run_as: Option<RunAs>) -> io::Result<()> {
    fs::create_dir(to)?;
    fs::set_permissions(to, fs::metadata(from)?.permissions())?;
    chown(to, run_as)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target, run_as)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target)?;
            chown(&target, run_as)?;
        }
    }
    Ok(())
}

fn chown(path: &Path, run_as: Option<RunAs>) -> io::Result<()> {
    match run_as {
        Some(r) => std::os::unix::fs::chown(path, Some(r.uid), Some(r.gid)),
        None => Ok(()),
    }
}
