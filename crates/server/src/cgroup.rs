//! A cgroup (v2) of its own for a server bakeoff started, where the machine lets bakeoff make
//! one (root, or a delegated subtree): its whole process tree frozen and let go by one write,
//! new processes included (a PostgreSQL backend forked in its turn joins at once), and its
//! CPU time read in microseconds from the kernel's own count instead of /proc's 10 ms ticks.
//! Where no group can be made, turn-taking falls back to signalling the tree it reads from
//! /proc (see [`crate::freeze`]).
//!
//! Only processes bakeoff started are ever moved: the trees under the pids a server holds.
//! Dropping the group lets it go, moves whatever still lives back to the cgroup bakeoff runs
//! in, and removes it.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

/// Groups whose freeze file a last-resort thaw writes to (see [`thaw_all_now`]): open file
/// descriptors (-1: free), so a signal handler needs no allocation.
static FREEZERS: [AtomicI32; 256] = [const { AtomicI32::new(-1) }; 256];

/// One server's cgroup.
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    parent: PathBuf,
    freeze: std::fs::File,
    slot: Option<usize>,
}

impl Group {
    /// A group named `name` (unique to this bakeoff process) holding the trees of `pids`,
    /// under the cgroup v2 hierarchy bakeoff runs in; why not where the machine does not
    /// allow it (no cgroup v2, no freezer, no right to make or fill a group), with nothing
    /// left behind.
    pub fn of(name: &str, pids: &[u32]) -> Result<Group, String> {
        let parent = own_v2_dir().ok_or("no cgroup v2 hierarchy is mounted here")?;
        sweep(&parent);
        let dir = parent.join(format!("bakeoff-{}-{name}", std::process::id()));
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot make a cgroup in {}: {e}", parent.display()))?;
        let freeze = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.freeze"));
        let freeze = match freeze {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(format!("this kernel's cgroups have no freezer: {e}"));
            }
        };
        let mut group = Group {
            dir,
            parent,
            freeze,
            slot: None,
        };
        // Twice: a process forked while the tree was read and its parent not yet moved
        // starts outside; its parent is inside by the second reading, and new ones with it.
        for _ in 0..2 {
            for &pid in pids {
                for p in crate::freeze::tree_of(pid) {
                    // A process that ended meanwhile is no loss; one refused means the
                    // machine does not let bakeoff move it, and the group would freeze part
                    // of a server.
                    if let Err(e) = group.take(p) {
                        if Path::new(&format!("/proc/{p}")).exists() {
                            // Dropped: whatever moved goes back.
                            return Err(format!("cannot move process {p} into a cgroup: {e}"));
                        }
                    }
                }
            }
        }
        group.slot = claim(group.freeze.as_raw_fd());
        Ok(group)
    }

    fn take(&self, pid: u32) -> std::io::Result<()> {
        write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// Stop or continue every process in the group; false when the kernel refused.
    pub fn set_frozen(&self, frozen: bool) -> bool {
        (&self.freeze)
            .write_all(if frozen { b"1" } else { b"0" })
            .is_ok()
    }

    /// The group's CPU time so far, user and system, in seconds (`cpu.stat`).
    pub fn cpu_seconds(&self) -> Option<(f64, f64)> {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?;
        let field = |k: &str| -> Option<f64> {
            let line = stat
                .lines()
                .find(|l| l.split_whitespace().next() == Some(k))?;
            Some(line.split_whitespace().nth(1)?.parse::<f64>().ok()? / 1e6)
        };
        Some((field("user_usec")?, field("system_usec")?))
    }

    /// The processes in the group now.
    pub fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.set_frozen(false);
        if let Some(s) = self.slot {
            FREEZERS[s].store(-1, Ordering::SeqCst);
        }
        for pid in self.pids() {
            let _ = write(&self.parent.join("cgroup.procs"), &pid.to_string());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Let every group go, from anywhere: a second Ctrl-C's handler calls it before leaving at
/// once. Async-signal-safe: atomics and write(2) only.
pub fn thaw_all_now() {
    for slot in &FREEZERS {
        let fd = slot.load(Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: write(2) on a descriptor this process opened and still holds.
            unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        }
    }
}

/// Remove the empty groups of bakeoff processes that are gone (one abandoned at once by a
/// second Ctrl-C leaves its groups behind, emptied as its servers died).
fn sweep(parent: &Path) {
    let Ok(dir) = std::fs::read_dir(parent) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("bakeoff-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(e.path()); // refused while anything lives in it
        }
    }
}

fn claim(fd: i32) -> Option<usize> {
    FREEZERS.iter().position(|s| {
        s.compare_exchange(-1, fd, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
}

/// The directory of the cgroup v2 group this process is in: the cgroup2 mount (from
/// /proc/self/mountinfo) joined with the path of the "0::" line of /proc/self/cgroup.
fn own_v2_dir() -> Option<PathBuf> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let dir = mount.join(own.trim_start_matches('/'));
    dir.join("cgroup.procs").exists().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frozen(g: &Group) -> bool {
        std::fs::read_to_string(g.dir.join("cgroup.events"))
            .unwrap_or_default()
            .lines()
            .any(|l| l == "frozen 1")
    }

    #[test]
    fn a_tree_is_frozen_whole_its_new_children_too_and_left_as_found() {
        let Some(parent) = own_v2_dir() else {
            // A machine with no cgroup v2 makes no group: the /proc and SIGSTOP path is the
            // one used (freeze.rs).
            assert!(Group::of("test", &[std::process::id()]).is_err());
            return;
        };
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 0.4; sleep 30 & wait"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let Ok(g) = Group::of("test", &[sh.id()]) else {
            // Not allowed here (no right to make a group): the fallback is tested in
            // freeze.rs; nothing may be left behind.
            let left = std::fs::read_dir(&parent)
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("bakeoff-"));
            assert!(!left);
            let _ = sh.kill();
            let _ = sh.wait();
            return;
        };
        let first = g.pids().len();
        assert!(first >= 2, "the shell and its sleeps");
        // A process the shell forks once in the group is in it, with no reading of /proc.
        std::thread::sleep(std::time::Duration::from_millis(600));
        assert_eq!(g.pids().len(), 3, "the shell and its two sleeps");
        assert!(g.set_frozen(true));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(frozen(&g));
        assert!(g.cpu_seconds().is_some());
        // The last resort lets it go.
        thaw_all_now();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!frozen(&g));
        let dir = g.dir.clone();
        drop(g);
        assert!(!dir.exists(), "removed");
        let back = std::fs::read_to_string(parent.join("cgroup.procs")).unwrap();
        assert!(back.lines().any(|l| l.trim() == sh.id().to_string()));
        let _ = sh.kill();
        let _ = sh.wait();
    }
}
