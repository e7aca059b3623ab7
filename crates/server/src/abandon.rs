//! What abandoning leaves behind: nothing bakeoff started. Every process group bakeoff spawns
//! (servers, datadir initializers, agents) and every run directory it makes is recorded here,
//! so that a second Ctrl-C can kill exactly those, wait until they are gone and remove exactly
//! those directories, and say what it did.
//!
//! [`abandon_all`] runs on an ordinary thread (the CLI's), never in a signal handler: removing
//! a directory tree allocates. The parent-death signal (`launch::spawn_contained`) stays the
//! backstop for a process that dies any other way, but it reaches only a direct child: a
//! shell script's children (mariadb-install-db's `mariadbd --bootstrap`) outlive it, which is
//! why the whole group is killed here.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::pidfd::Pidfd;

/// Leaders of the process groups bakeoff spawned (each a child of ours, its pid its group).
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// Run directories made and not yet removed.
static RUNDIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What [`abandon_all`] did.
#[derive(Debug, Default)]
pub struct Abandoned {
    /// Processes killed (every member of every group, alive when it looked).
    pub killed: usize,
    /// Processes still there when the wait ran out (pid, command name).
    pub left: Vec<(i32, String)>,
    /// Run directories removed.
    pub removed: usize,
}

/// Spawn a child in a process group of its own with `spawn` and record its group, as one
/// step abandoning cannot fall between; refused once abandoning has begun.
pub fn spawn_tracked(
    spawn: impl FnOnce() -> std::io::Result<std::process::Child>,
) -> std::io::Result<std::process::Child> {
    let mut g = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    refuse_if_abandoning()?;
    let child = spawn()?;
    // Groups whose leader was reaped are no longer ours to name: their pid may come back.
    g.retain(|&p| is_unreaped_child(p));
    g.push(child.id() as i32);
    Ok(child)
}

/// Make a run directory with `make` (the directory and its marker) and record it, as one
/// step: abandoning takes the list only between such steps, so it never meets a directory
/// it does not know of, or one not yet marked as bakeoff's.
pub(crate) fn make_rundir<E>(
    path: &Path,
    refused: impl FnOnce(std::io::Error) -> E,
    make: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    let mut dirs = RUNDIRS.lock().unwrap_or_else(|p| p.into_inner());
    refuse_if_abandoning().map_err(refused)?;
    make()?;
    dirs.push(path.to_path_buf());
    Ok(())
}

pub(crate) fn untrack_rundir(path: &Path) {
    RUNDIRS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|p| p != path);
}

/// Kill every group bakeoff spawned whose leader it has not reaped, wait up to `wait` until
/// none of their processes is left, then remove every run directory it made.
pub fn abandon_all(wait: Duration) -> Abandoned {
    // From here on nothing new starts (`refuse_if_abandoning`, checked under each list's
    // lock); taking a list waits for a start or a directory being made to be recorded, so
    // the lists taken are all there will be.
    ABANDONING.store(true, Ordering::SeqCst);
    // A server stopped between its turns takes SIGKILL as well; thawed it dies at once.
    crate::freeze::thaw_all_now();
    crate::cgroup::thaw_all_now();
    let groups = GROUPS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let dirs = std::mem::take(&mut *RUNDIRS.lock().unwrap_or_else(|p| p.into_inner()));
    kill_and_remove(&groups, dirs, wait)
}

/// Set once abandoning has begun: no server, initializer or run directory starts after it.
static ABANDONING: AtomicBool = AtomicBool::new(false);

/// Refuse to start anything once abandoning has begun.
fn refuse_if_abandoning() -> std::io::Result<()> {
    match ABANDONING.load(Ordering::SeqCst) {
        true => Err(std::io::Error::other(
            "bakeoff is abandoning (a second Ctrl-C)",
        )),
        false => Ok(()),
    }
}

fn kill_and_remove(groups: &[i32], dirs: Vec<PathBuf>, wait: Duration) -> Abandoned {
    let groups: Vec<i32> = groups
        .iter()
        .copied()
        .filter(|&p| is_unreaped_child(p))
        .collect();
    // Everything each group leader started, whatever group it is in now (a PostgreSQL
    // backend leads a process group of its own), held by pidfd before anything is killed.
    // One reading of /proc: each pid is held only if it is still the process that reading
    // placed under a leader (its start time), never one that took a freed pid since.
    let stats = crate::procs::stats();
    let mut pids = std::collections::BTreeSet::new();
    for &g in &groups {
        pids.extend(crate::procs::tree_in(&stats, g as u32));
        pids.extend(stats.iter().filter(|(_, s)| s.group == g).map(|(&p, _)| p));
    }
    let held: Vec<Pidfd> = pids
        .into_iter()
        .filter_map(|p| Some((p, stats.get(&p)?)))
        .filter(|(_, s)| s.state != 'Z' && s.state != 'X')
        .filter_map(|(p, s)| Pidfd::open_as(p, s.start).ok().flatten())
        .collect();
    let mut done = Abandoned::default();
    for p in &held {
        done.killed += usize::from(p.signal(libc::SIGKILL));
    }
    for &g in &groups {
        // SAFETY: kill has no memory preconditions; `g` is a group whose leader is our
        // unreaped child, so the id cannot have been reused by anyone else's group.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    // A cgroup's processes, a fork after the trees were read included.
    crate::cgroup::end_groups_of(std::process::id());
    let deadline = Instant::now() + wait;
    loop {
        let left: Vec<&Pidfd> = held.iter().filter(|p| !p.ended()).collect();
        if left.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            done.left = left
                .into_iter()
                .map(|p| (p.pid() as i32, command_name(p.pid() as i32)))
                .collect();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for dir in dirs {
        // Run directories are fenced: only a marked directory of ours is removed.
        // Gone either way counts: the clean stop under way may remove it first.
        if crate::fence::remove_if_ours(&dir) || std::fs::symlink_metadata(&dir).is_err() {
            done.removed += 1;
        }
    }
    done
}

/// Whether `pid` is a child of this process not yet waited for (alive or a zombie).
fn is_unreaped_child(pid: i32) -> bool {
    // SAFETY: an all-zero siginfo_t is valid; waitid writes only into it. WNOWAIT leaves the
    // child to whoever waits for it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: as above.
    unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) == 0 }
}

fn command_name(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_group_and_its_grandchildren_are_killed_and_a_rundir_removed() {
        // Abandoning ends this process's cgroups too: not while a cgroup test has one.
        let _one = crate::leaving::serial();
        // A shell in a group of its own whose child outlives it unless the group is killed,
        // and a child that left the group for a session of its own, as each PostgreSQL
        // backend does: only the tree finds it.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 300 & setsid sleep 301 & sleep 300"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        // A marked directory, as a run directory is.
        let path = std::env::temp_dir().join(format!("bakeoff-abandon-test-{pid}"));
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join(crate::fence::MARKER), "0\n").unwrap();
        // The three children are up (the one that left its group among them) before the kill.
        let started = Instant::now();
        let tree = || crate::procs::tree_of(pid);
        let own_session = |p: &u32| crate::procs::stat(*p).is_some_and(|s| s.group == *p as i32);
        while !(tree().len() == 4 && tree().iter().any(own_session))
            && started.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let away = *tree()
            .iter()
            .find(|p| own_session(p))
            .expect("the setsid child");
        let away = Pidfd::open(away).unwrap().unwrap();
        // The lists given, not the process's: other tests' servers run beside this one.
        let done = kill_and_remove(&[pid as i32], vec![path.clone()], Duration::from_secs(5));
        assert_eq!(done.killed, 4, "the shell and its three sleeps");
        assert!(done.left.is_empty(), "{:?}", done.left);
        let alive_in_group = crate::procs::stats()
            .values()
            .any(|s| s.group == pid as i32 && s.state != 'Z');
        assert!(!alive_in_group);
        assert!(
            away.ended(),
            "the child in a session of its own is gone too"
        );
        assert!(done.removed == 1 && !path.exists());
        child.wait().unwrap();
        // Reaped: no longer ours to name.
        assert!(!is_unreaped_child(pid as i32));
    }
}
