//! Freezing a server bakeoff started while another takes the load (turn-taking studies): its
//! process and every process under it stopped (SIGSTOP), then let go (SIGCONT). A frozen
//! server does nothing in another's turn: no background flush, purge or checkpoint lands on
//! the other's CPU time; what it put off it does in its own turn.
//!
//! Only processes bakeoff started are ever signalled: the tree under the pid a [`Server`]
//! holds, read from /proc at the time (PostgreSQL forks a backend per connection).
//!
//! [`Server`]: crate::Server

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::pidfd::Pidfd;

/// Every tree stopped now, by its id: what [`thaw_all_now`] lets go. Its lock is held while a
/// tree is stopped, so a thaw that begins meanwhile waits for the stop and then undoes it.
static STOPPED: Mutex<BTreeMap<u64, Vec<Arc<Pidfd>>>> = Mutex::new(BTreeMap::new());

/// A process and every process under it, as /proc showed them when last read, each held by
/// pidfd: reading /proc costs a millisecond or so, a switch between turns a few, so a caller
/// that switches often reads the tree now and then ([`Tree::refresh`]), not at every switch.
/// No process it stopped is ever let out of its hands still stopped: one that left the tree
/// is let go as it leaves, and dropping a stopped tree lets it go.
#[derive(Debug)]
pub struct Tree {
    id: u64,
    root: u32,
    /// Parents first (breadth first).
    procs: Vec<Arc<Pidfd>>,
    frozen: bool,
    /// Why a process of the tree could not be held (and so is neither stopped nor in the
    /// watchdog's hands), the last time one could not.
    unheld: Option<String>,
}

impl Tree {
    /// The tree under `pid`, a process bakeoff started.
    pub fn of(pid: u32) -> Tree {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut tree = Tree {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            root: pid,
            procs: Vec::new(),
            frozen: false,
            unheld: None,
        };
        tree.refresh();
        tree
    }

    /// Read the tree again: a process new to it is held (the watchdog holds it too, so that
    /// it dies with bakeoff however bakeoff ends) and, if the tree is stopped, stopped; one
    /// that left it (its parent ended) is let go first if it was stopped.
    pub fn refresh(&mut self) {
        // A held process that ended has given up its pid: whatever has it now is new.
        let mut had: HashMap<u32, Arc<Pidfd>> = std::mem::take(&mut self.procs)
            .into_iter()
            .filter(|p| !p.ended())
            .map(|p| (p.pid(), p))
            .collect();
        let mut new = Vec::new();
        for (pid, start) in read_tree(self.root) {
            match had.remove(&pid) {
                Some(p) => self.procs.push(p),
                None => match Pidfd::open_as(pid, start) {
                    Ok(Some(p)) => {
                        let p = Arc::new(p);
                        new.push(p.clone());
                        self.procs.push(p);
                    }
                    Ok(None) => {} // ended meanwhile
                    Err(e) => self.unheld = Some(format!("process {pid}: {e}")),
                },
            }
        }
        crate::watchdog::hold(new.iter().map(|p| p.fd()));
        if self.frozen {
            // Left the tree: let go, never dropped stopped.
            for p in had.values() {
                p.signal(libc::SIGCONT);
            }
            self.stop();
        }
    }

    /// Stop or continue every process of the tree; how many were signalled.
    pub fn set_frozen(&mut self, frozen: bool) -> usize {
        if frozen {
            return self.stop();
        }
        // Children first; forgotten only once let go, so a thaw between the two finds them.
        let n = self
            .procs
            .iter()
            .rev()
            .filter(|p| p.signal(libc::SIGCONT))
            .count();
        lock().remove(&self.id);
        self.frozen = false;
        n
    }

    /// Parents first (no new child escapes), all remembered before the first is stopped.
    fn stop(&mut self) -> usize {
        let mut stopped = lock();
        // A last-resort thaw ran: bakeoff is leaving, nothing is stopped any more.
        if crate::leaving::is_set() {
            return 0;
        }
        stopped.insert(self.id, self.procs.clone());
        self.frozen = true;
        self.procs
            .iter()
            .filter(|p| p.signal(libc::SIGSTOP))
            .count()
    }

    /// Why a process of the tree could not be held, if one could not: that process ran
    /// through its server's idle turns, so the turns it ran beside are not what they claim.
    pub fn unheld(&self) -> Option<&str> {
        self.unheld.as_deref()
    }

    /// How many processes the tree holds.
    pub fn len(&self) -> usize {
        self.procs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if self.frozen {
            self.set_frozen(false);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, BTreeMap<u64, Vec<Arc<Pidfd>>>> {
    STOPPED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Let every stopped process go (SIGCONT), and stop none after it: abandoning (a second
/// Ctrl-C) calls it from its own thread before it kills, since a stopped PostgreSQL backend
/// could never notice that its postmaster died, and would hold its memory and port for ever.
/// Not for a signal handler: it takes a lock.
pub fn thaw_all_now() {
    crate::leaving::set();
    for p in lock().values().flatten() {
        p.signal(libc::SIGCONT);
    }
}

/// The processes of `pid`'s tree, breadth first, each with its start time.
fn read_tree(pid: u32) -> Vec<(u32, u64)> {
    let stats = crate::procs::stats();
    crate::procs::tree_in(&stats, pid)
        .into_iter()
        .filter_map(|p| Some((p, stats.get(&p)?.start)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leaving::serial;
    use std::time::Duration;

    fn state(pid: u32) -> char {
        crate::procs::stat(pid).map_or('?', |s| s.state)
    }

    fn held() -> usize {
        lock().values().map(Vec::len).sum()
    }

    /// A shell with one child, and a second one once a line comes on its stdin.
    fn shell() -> (std::process::Child, u32) {
        let sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & read x; sleep 30 & wait"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = sh.id();
        wait_for(pid, 2);
        (sh, pid)
    }

    fn wait_for(pid: u32, n: usize) {
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while crate::procs::tree_of(pid).len() < n && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(crate::procs::tree_of(pid).len(), n);
    }

    // One test: the table and the leaving flag are the process's own.
    #[test]
    fn a_tree_is_stopped_whole_let_go_whole_and_never_dropped_stopped() {
        let _one = serial();
        let (mut sh, pid) = shell();
        let mut tree = Tree::of(pid);
        assert_eq!(tree.len(), 2);
        assert_eq!(tree.set_frozen(true), 2);
        std::thread::sleep(Duration::from_millis(50));
        let first = tree.procs[1].pid();
        assert_eq!((state(pid), state(first)), ('T', 'T'));
        assert_eq!(
            tree.set_frozen(true),
            2,
            "stopping again holds nothing twice"
        );
        assert_eq!(held(), 2);
        assert_eq!(tree.set_frozen(false), 2);
        assert_eq!(held(), 0, "let go, forgotten");
        // A child forked after the tree was read is not in it; a refresh of the stopped
        // tree stops it too.
        std::io::Write::write_all(sh.stdin.as_mut().unwrap(), b"go\n").unwrap();
        wait_for(pid, 3);
        assert_eq!(tree.set_frozen(true), 2);
        tree.refresh();
        assert_eq!(tree.len(), 3);
        std::thread::sleep(Duration::from_millis(50));
        assert!(tree.procs.iter().all(|p| state(p.pid()) == 'T'));
        // A process that leaves a stopped tree is let go as it leaves: the first child, its
        // parent's tree read again without it (as when its parent ends and it is adopted).
        tree.root = first;
        tree.refresh();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(tree.len(), 1);
        assert_eq!(state(pid), 'S', "the shell, out of the tree, runs");
        // Dropping a stopped tree lets it go.
        drop(tree);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(state(first), 'S');
        // The last resort abandoning takes: whatever is still stopped goes on, and nothing
        // is stopped after it.
        let mut tree = Tree::of(pid);
        tree.set_frozen(true);
        std::thread::sleep(Duration::from_millis(50));
        thaw_all_now();
        std::thread::sleep(Duration::from_millis(50));
        assert!(tree.procs.iter().all(|p| state(p.pid()) != 'T'));
        assert_eq!(tree.set_frozen(true), 0);
        std::thread::sleep(Duration::from_millis(50));
        assert!(tree.procs.iter().all(|p| state(p.pid()) != 'T'));
        crate::leaving::clear();
        for p in tree.procs.iter().skip(1) {
            p.signal(libc::SIGKILL);
        }
        drop(tree);
        let _ = sh.kill();
        let _ = sh.wait();
    }
}
