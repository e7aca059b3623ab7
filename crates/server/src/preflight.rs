//! Checks before hours of work: space the run will need, with the numbers when it is not
//! there. (The open-files limit for the connections: `bakeoff_engine::files`, which every run
//! reaches before it builds its clients.)

use std::path::Path;

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
