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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// Slots in the table of stopped processes.
const SLOTS: usize = 4096;
/// No slot.
const NONE: usize = usize::MAX;

/// Every process stopped now, for [`thaw_all_now`]: slots of pids (0: free). A fixed array
/// of atomics, so a signal handler can read it.
static FROZEN: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];
/// Where the search for a free slot starts (the last one taken).
static HINT: AtomicUsize = AtomicUsize::new(0);
/// Set by [`thaw_all_now`]: bakeoff is leaving, and nothing may be stopped any more.
static LEAVING: AtomicBool = AtomicBool::new(false);

/// A process and every process under it, as /proc showed them when read: reading /proc costs
/// a millisecond or so, a switch between turns a few, so a caller that switches often reads
/// the tree now and then, not at every switch. Each stopped process holds a slot of the
/// table [`thaw_all_now`] reads, until it is let go or the tree is dropped.
#[derive(Debug)]
pub struct Tree {
    pids: Vec<u32>,
    slots: Vec<AtomicUsize>,
}

impl Tree {
    pub fn of(pid: u32) -> Tree {
        let pids = tree_of(pid);
        let slots = pids.iter().map(|_| AtomicUsize::new(NONE)).collect();
        Tree { pids, slots }
    }

    /// Stop or continue every process of the tree; how many were signalled.
    pub fn set_frozen(&self, frozen: bool) -> usize {
        let kill = |p: u32, signal| {
            // SAFETY: kill with a valid signal on a pid read from /proc; no memory is shared.
            unsafe { libc::kill(p as libc::pid_t, signal) == 0 }
        };
        if !frozen {
            // Children first; forgotten only once let go, so a Ctrl-C between the two finds
            // them still in the table.
            let n = self
                .pids
                .iter()
                .rev()
                .filter(|&&p| kill(p, libc::SIGCONT))
                .count();
            self.forget();
            return n;
        }
        // Parents first (no new child escapes); each remembered before it is stopped.
        let mut n = 0;
        for (i, &p) in self.pids.iter().enumerate() {
            if self.slots[i].load(Ordering::SeqCst) == NONE {
                self.slots[i].store(take_slot(p), Ordering::SeqCst);
            }
            n += usize::from(kill(p, libc::SIGSTOP));
            // A last-resort thaw ran meanwhile: bakeoff is leaving, nothing stays stopped.
            if LEAVING.load(Ordering::SeqCst) {
                kill(p, libc::SIGCONT);
            }
        }
        n
    }

    /// Give back the tree's slots.
    fn forget(&self) {
        for (i, slot) in self.slots.iter().enumerate() {
            let s = slot.swap(NONE, Ordering::SeqCst);
            if s != NONE {
                let _ =
                    FROZEN[s].compare_exchange(self.pids[i], 0, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.forget();
    }
}

/// A free slot holding `pid` now, or NONE when the table is full (that process then only
/// misses the last-resort thaw).
fn take_slot(pid: u32) -> usize {
    let start = HINT.load(Ordering::Relaxed);
    for k in 0..SLOTS {
        let i = (start + k) % SLOTS;
        if FROZEN[i].load(Ordering::Relaxed) == 0
            && FROZEN[i]
                .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            HINT.store(i + 1, Ordering::Relaxed);
            return i;
        }
    }
    NONE
}

/// Let every stopped process go (SIGCONT), from anywhere: a second Ctrl-C's handler calls it
/// before leaving at once, since a stopped PostgreSQL backend could never notice that its
/// postmaster died with bakeoff, and would hold its memory and port for ever.
/// Async-signal-safe: atomics and kill(2) only.
pub fn thaw_all_now() {
    LEAVING.store(true, Ordering::SeqCst);
    for slot in &FROZEN {
        let pid = slot.load(Ordering::SeqCst);
        if pid != 0 {
            // SAFETY: kill is async-signal-safe; the pid is one this process stopped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGCONT) };
        }
    }
}

/// `pid` and its descendants, breadth first.
pub(crate) fn tree_of(pid: u32) -> Vec<u32> {
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
        let tree = Tree::of(pid);
        assert_eq!(tree.set_frozen(true), 2);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!((state(pid), state(child)), ('T', 'T'));
        assert_eq!(
            tree.set_frozen(true),
            2,
            "stopping again holds no second slot"
        );
        let held = FROZEN
            .iter()
            .filter(|s| s.load(Ordering::SeqCst) != 0)
            .count();
        assert_eq!(held, 2);
        assert_eq!(tree.set_frozen(false), 2);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_ne!(state(child), 'T');
        let held = FROZEN
            .iter()
            .filter(|s| s.load(Ordering::SeqCst) != 0)
            .count();
        assert_eq!(held, 0, "let go, forgotten");
        // The last resort a second Ctrl-C takes: whatever is still stopped goes on, and
        // nothing is stopped after it.
        tree.set_frozen(true);
        std::thread::sleep(std::time::Duration::from_millis(50));
        thaw_all_now();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(state(pid) != 'T' && state(child) != 'T');
        tree.set_frozen(true);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(state(pid) != 'T' && state(child) != 'T');
        drop(tree);
        // SAFETY: the child is ours.
        unsafe { libc::kill(child as i32, libc::SIGKILL) };
        let _ = sh.wait();
    }
}
