//! Freezing a server bakeoff started while another takes the load (turn-taking studies): its
//! process and every process under it stopped (SIGSTOP), then let go (SIGCONT). A frozen
//! server does nothing in another's turn: no background flush, purge or checkpoint lands on
//! the other's CPU time; what it put off it does in its own turn.
//!
//! Only processes bakeoff started are ever signalled: the tree under the pid a [`Server`]
//! holds, read from /proc at the time (PostgreSQL forks a backend per connection).
//!
//! [`Server`]: crate::Server

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};

/// Every process stopped now, for [`thaw_all_now`]: slots of pids (0: free). A fixed array
/// of atomics, so a signal handler can read it.
static FROZEN: [AtomicU32; 4096] = [const { AtomicU32::new(0) }; 4096];

/// Stop (`frozen`) or continue `pid` and every process under it. Best effort: a process that
/// ended meanwhile is skipped; the number signalled comes back.
pub fn set_frozen(pid: u32, frozen: bool) -> usize {
    Tree::of(pid).set_frozen(frozen)
}

/// A process and every process under it, as /proc showed them when read: reading /proc costs
/// a millisecond or so, a switch between turns a few, so a caller that switches often reads
/// the tree now and then, not at every switch.
#[derive(Debug, Clone)]
pub struct Tree(Vec<u32>);

impl Tree {
    pub fn of(pid: u32) -> Tree {
        Tree(tree_of(pid))
    }

    /// Stop or continue every process of the tree; how many were signalled.
    pub fn set_frozen(&self, frozen: bool) -> usize {
        let signal = if frozen { libc::SIGSTOP } else { libc::SIGCONT };
        for &p in &self.0 {
            remember(p, frozen);
        }
        // Parents first when stopping (no new child escapes), children first when continuing.
        let order: Box<dyn Iterator<Item = &u32>> = match frozen {
            true => Box::new(self.0.iter()),
            false => Box::new(self.0.iter().rev()),
        };
        order
            // SAFETY: kill with a valid signal on a pid read from /proc; no memory is shared.
            .filter(|&&p| unsafe { libc::kill(p as libc::pid_t, signal) } == 0)
            .count()
    }
}

/// Let every stopped process go (SIGCONT), from anywhere: a second Ctrl-C's handler calls it
/// before leaving at once, since a stopped PostgreSQL backend could never notice that its
/// postmaster died with bakeoff, and would hold its memory and port for ever.
/// Async-signal-safe: atomics and kill(2) only.
pub fn thaw_all_now() {
    for slot in &FROZEN {
        let pid = slot.swap(0, Ordering::SeqCst);
        if pid != 0 {
            // SAFETY: kill is async-signal-safe; the pid is one this process stopped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGCONT) };
        }
    }
}

/// Keep (`frozen`) or forget `pid` among the stopped. A full table forgets the newest,
/// which then only misses the last-resort thaw.
fn remember(pid: u32, frozen: bool) {
    if frozen {
        let take = |s: &AtomicU32| {
            s.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        };
        let _ = FROZEN.iter().any(take);
    } else {
        for s in FROZEN.iter() {
            let _ = s.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
}

/// `pid` and its descendants, breadth first.
fn tree_of(pid: u32) -> Vec<u32> {
    let children = children_by_parent();
    let mut out = vec![pid];
    let mut seen = BTreeSet::from([pid]);
    let mut i = 0;
    while i < out.len() {
        for &c in children.get(&out[i]).into_iter().flatten() {
            if seen.insert(c) {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

fn children_by_parent() -> BTreeMap<u32, Vec<u32>> {
    let mut map: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return map;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(ppid) = parent_of(pid) {
            map.entry(ppid).or_default().push(pid);
        }
    }
    map
}

/// The parent in /proc/PID/stat: the field after the command, which may hold spaces and
/// parentheses, so it is read after the last ')'.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap()
    }

    #[test]
    fn a_tree_is_stopped_whole_and_let_go_whole() {
        // A shell with a child of its own.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = sh.id();
        let child = (0..200)
            .find_map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                children_by_parent()
                    .get(&pid)
                    .and_then(|c| c.first().copied())
            })
            .expect("the shell's child");
        assert_eq!(set_frozen(pid, true), 2);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!((state(pid), state(child)), ('T', 'T'));
        assert_eq!(set_frozen(pid, false), 2);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_ne!(state(child), 'T');
        // The last resort a second Ctrl-C takes: whatever is still stopped goes on.
        set_frozen(pid, true);
        std::thread::sleep(std::time::Duration::from_millis(50));
        thaw_all_now();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(state(pid) != 'T' && state(child) != 'T');
        // SAFETY: the child is ours.
        unsafe { libc::kill(child as i32, libc::SIGKILL) };
        let _ = sh.wait();
    }
}
