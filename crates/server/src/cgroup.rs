//! A cgroup (v2) of its own for a server bakeoff started, where the machine lets bakeoff make
//! one (root, or a delegated subtree): its whole process tree frozen and let go by one write,
//! new processes included (a PostgreSQL backend forked in its turn joins at once), and its
//! CPU time read in microseconds from the kernel's own count instead of /proc's 10 ms ticks.
//! Where no group can be made, turn-taking falls back to signalling the tree it reads from
//! /proc (see `freeze.rs`).
//!
//! Only processes bakeoff started are ever moved: the trees under the pids a server holds.
//! Dropping the group lets it go, moves whatever still lives back to the cgroup bakeoff runs
//! in, and removes it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every live group's freeze file, by group id: what a last-resort thaw ([`thaw_all_now`])
/// writes to. Its lock is held while a group is frozen, so a thaw that begins meanwhile
/// waits for the freeze and then undoes it.
static LIVE: Mutex<BTreeMap<u64, Arc<std::fs::File>>> = Mutex::new(BTreeMap::new());

/// One server's cgroup.
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    parent: PathBuf,
    freeze: Arc<std::fs::File>,
    id: u64,
}

impl Group {
    /// A group named `name` (unique to this bakeoff process) holding the trees of `pids`,
    /// under the cgroup v2 hierarchy bakeoff runs in; why not where the machine does not
    /// allow it (no cgroup v2, no freezer, no right to make or fill a group), with nothing
    /// left behind.
    pub fn of(name: &str, pids: &[u32]) -> Result<Group, String> {
        let parent = own_v2_dir().ok_or("no cgroup v2 hierarchy is mounted here")?;
        end_dead_owners_groups(&parent);
        let dir = parent.join(format!("bakeoff-{}-{name}", std::process::id()));
        make_dir(&dir).map_err(|e| format!("cannot make a cgroup in {}: {e}", parent.display()))?;
        let freeze = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.freeze"));
        let freeze = match freeze {
            Ok(f) => Arc::new(f),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(format!("this kernel's cgroups have no freezer: {e}"));
            }
        };
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let group = Group {
            dir,
            parent,
            freeze,
            id: NEXT.fetch_add(1, Ordering::Relaxed),
        };
        // Twice: a process forked while the tree was read and its parent not yet moved
        // starts outside; its parent is inside by the second reading, and new ones with it.
        for _ in 0..2 {
            let stats = crate::procs::stats();
            for &pid in pids {
                for p in crate::procs::tree_in(&stats, pid) {
                    // Held first, so the pid written is the process the reading placed in the
                    // tree, not one that took its pid since (checked again after the move: one
                    // that ended in between is moved back out, whatever has its pid now). A
                    // process that ended meanwhile is no loss; one refused means the machine
                    // does not let bakeoff move it, and the group would freeze part of a
                    // server (dropped: whatever moved goes back).
                    let Some(start) = stats.get(&p).map(|s| s.start) else {
                        continue;
                    };
                    let held = match crate::pidfd::Pidfd::open_as(p, start) {
                        Ok(Some(held)) => held,
                        Ok(None) => continue,
                        Err(e) => return Err(format!("cannot hold process {p}: {e}")),
                    };
                    if let Err(e) = group.take(p) {
                        if !held.ended() {
                            return Err(format!("cannot move process {p} into a cgroup: {e}"));
                        }
                    } else if held.ended() {
                        let _ = write(&group.parent.join("cgroup.procs"), &p.to_string());
                    }
                }
            }
        }
        lock().insert(group.id, group.freeze.clone());
        Ok(group)
    }

    fn take(&self, pid: u32) -> std::io::Result<()> {
        write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// Stop or continue every process in the group; false when the kernel refused, or when
    /// bakeoff is leaving (a last-resort thaw ran: nothing is frozen after it).
    pub fn set_frozen(&self, frozen: bool) -> bool {
        if !frozen {
            return (&*self.freeze).write_all(b"0").is_ok();
        }
        let _live = lock();
        !crate::leaving::is_set() && (&*self.freeze).write_all(b"1").is_ok()
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
        read_pids(&self.dir)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.set_frozen(false);
        lock().remove(&self.id);
        for pid in self.pids() {
            let _ = write(&self.parent.join("cgroup.procs"), &pid.to_string());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn lock() -> std::sync::MutexGuard<'static, BTreeMap<u64, Arc<std::fs::File>>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Let every group go, and freeze none after it: abandoning (a second Ctrl-C) calls it from
/// its own thread before it kills. Not for a signal handler: it takes a lock.
pub fn thaw_all_now() {
    crate::leaving::set();
    for f in lock().values() {
        let _ = (&**f).write_all(b"0");
    }
}

/// A group's directory, 0755 whatever the umask (the kernel applies it to a cgroup's mkdir
/// too; a group others may write to would let them move processes in and out of it).
fn make_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().mode(0o755).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
}

/// End the groups of bakeoff processes that are gone: a bakeoff killed, crashed or abandoned
/// at once leaves its groups behind, maybe frozen and full (its watchdog ends them, unless it
/// was killed too). What is in such a group is bakeoff's by construction: only bakeoff moves
/// processes into a `bakeoff-PID-...` group.
fn end_dead_owners_groups(parent: &Path) {
    for (dir, owner) in bakeoff_groups(parent) {
        if !Path::new(&format!("/proc/{owner}")).exists() {
            end_group(&dir);
        }
    }
}

/// End the groups of bakeoff process `owner`, gone now (its watchdog calls this; the
/// process may still be a zombie, so it is not asked whether it lives).
pub(crate) fn end_groups_of(owner: u32) {
    let Some(parent) = own_v2_dir() else {
        return;
    };
    for (dir, o) in bakeoff_groups(&parent) {
        if o == owner {
            end_group(&dir);
        }
    }
}

/// Kill everything in a group, frozen or not (`cgroup.kill`, Linux 5.14; before it, thawed
/// and killed by pid), wait a while for it to empty, and remove it.
fn end_group(dir: &Path) {
    if write(&dir.join("cgroup.kill"), "1").is_err() {
        let _ = write(&dir.join("cgroup.freeze"), "0");
        let name = format!("/{}", dir.file_name().unwrap_or_default().to_string_lossy());
        for pid in read_pids(dir) {
            // Held, then checked to be in the group still: the pid read may have been freed
            // and taken by a process outside it since.
            let Ok(Some(held)) = crate::pidfd::Pidfd::open(pid) else {
                continue;
            };
            let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup"));
            if cgroup.is_ok_and(|c| {
                c.lines()
                    .any(|l| l.starts_with("0::") && l.ends_with(&name))
            }) {
                held.signal(libc::SIGKILL);
            }
        }
    }
    let until = Instant::now() + Duration::from_secs(5);
    while std::fs::remove_dir(dir).is_err() && dir.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `bakeoff-PID-...` groups under `parent`, with the PID of the bakeoff that made each.
fn bakeoff_groups(parent: &Path) -> Vec<(PathBuf, u32)> {
    let Ok(dir) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| Some((e.path(), crate::fence::owner_of(&e.file_name())?)))
        .collect()
}

fn read_pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
}

/// The directory of the cgroup v2 group this process is in, where its groups go: the cgroup2
/// mount (from /proc/self/mountinfo) joined with the path of the "0::" line of
/// /proc/self/cgroup.
pub fn own_v2_dir() -> Option<PathBuf> {
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
        let _one = crate::leaving::serial();
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
        // SAFETY: umask only swaps this process's mask; the old one is put back at once.
        let old = unsafe { libc::umask(0) };
        let made = Group::of("test", &[sh.id()]);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let Ok(g) = made else {
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
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&g.dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "whatever the umask: {mode:o}");
        let first = g.pids().len();
        assert!(first >= 2, "the shell and its sleeps");
        // A process the shell forks once in the group is in it, with no reading of /proc.
        std::thread::sleep(std::time::Duration::from_millis(600));
        assert_eq!(g.pids().len(), 3, "the shell and its two sleeps");
        assert!(g.set_frozen(true));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(frozen(&g));
        assert!(g.cpu_seconds().is_some());
        // The last resort lets it go, and nothing is frozen after it.
        thaw_all_now();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!frozen(&g));
        assert!(!g.set_frozen(true));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!frozen(&g));
        crate::leaving::clear();
        let dir = g.dir.clone();
        drop(g);
        assert!(!dir.exists(), "removed");
        let back = std::fs::read_to_string(parent.join("cgroup.procs")).unwrap();
        assert!(back.lines().any(|l| l.trim() == sh.id().to_string()));
        let _ = sh.kill();
        let _ = sh.wait();
    }

    #[test]
    fn a_dead_owners_group_is_ended_frozen_and_full() {
        let _one = crate::leaving::serial();
        let Some(parent) = own_v2_dir() else {
            assert!(Group::of("test", &[std::process::id()]).is_err());
            return;
        };
        // A pid that was ours and is gone names the group, as a bakeoff killed leaves it.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let dir = parent.join(format!("bakeoff-{dead}-0"));
        make_dir(&dir).unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        write(&dir.join("cgroup.procs"), &sleeper.id().to_string()).unwrap();
        write(&dir.join("cgroup.freeze"), "1").unwrap();
        // The next group made sweeps it.
        let g = Group::of("sweeper", &[]).unwrap();
        drop(g);
        assert!(!dir.exists(), "the dead owner's group is removed");
        let status = sleeper.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
    }
}
