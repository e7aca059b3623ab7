//! Checks before hours of work: limits and space the run will need, with the numbers when
//! they are not there.

use std::path::Path;

/// Make sure this process may open `needed` files: raise the soft limit up to the hard one,
/// or say what to change. Returns the limit now in force. Servers started afterwards inherit it
/// (mariadbd lowers max_connections quietly when its limit is too low).
pub fn raise_open_files(needed: u64) -> Result<u64, String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(format!(
            "reading the open-files limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    if lim.rlim_cur >= needed {
        return Ok(lim.rlim_cur);
    }
    if lim.rlim_max < needed {
        return Err(format!(
            "this run needs about {needed} open files, but the limit here is {} (hard {}); raise it (ulimit -n {needed} as root, or LimitNOFILE= in a systemd unit) or use fewer connections",
            lim.rlim_cur, lim.rlim_max
        ));
    }
    let raised = libc::rlimit {
        rlim_cur: needed.max(lim.rlim_cur),
        rlim_max: lim.rlim_max,
    };
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(format!(
            "raising the open-files limit to {needed}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(raised.rlim_cur)
}

/// Bytes free for an unprivileged user on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statvfs writes into the struct we pass; c is a valid C string.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(s.f_bavail as u64 * s.f_frsize as u64)
}

/// Refuse a dataset that will not fit in the embedded server's directory. `estimate` is the
/// bytes the tables will take on disk.
pub fn check_space(dir: &Path, estimate: u64) -> Result<(), String> {
    // The datadir starts at ~100 MiB (system tables, redo log) before any table.
    let needed = estimate + (128 << 20);
    match free_bytes(dir) {
        Ok(free) if free < needed => Err(format!(
            "the tables need about {} MiB in {}, which has {} MiB free; free some space, set TMPDIR to a larger file system, or use fewer/smaller tables",
            needed >> 20,
            dir.display(),
            free >> 20
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_limit_is_enough_for_a_few_files_and_a_huge_need_is_refused_with_numbers() {
        assert!(raise_open_files(16).unwrap() >= 16);
        let e = raise_open_files(u64::MAX / 2).unwrap_err();
        assert!(
            e.contains("open-files limit") || e.contains("open files"),
            "{e}"
        );
    }

    #[test]
    fn space_checks_name_the_directory_and_the_numbers() {
        let tmp = std::env::temp_dir();
        assert!(check_space(&tmp, 1 << 20).is_ok());
        let e = check_space(&tmp, u64::MAX / 4).unwrap_err();
        assert!(
            e.contains(&tmp.display().to_string()) && e.contains("MiB free"),
            "{e}"
        );
    }
}
