//! What the servers not taking the load do between their turns, and the study's progress as
//! slices close.

use bakeoff_engine::{Slice, TurnObserver};
use bakeoff_server::freeze::Tree;

use crate::{Idle, StudyObserver};

/// Told of every switch by the engine (nothing in flight then): under `Idle::Freeze`, every
/// server but the next is stopped and the next let go; under `Idle::Run` nothing is touched.
pub(crate) struct Turns<'o> {
    pub idle: Idle,
    /// Each server's processes (a variant's instances).
    pub pids: Vec<Vec<u32>>,
    pub frozen: Vec<bool>,
    pub obs: &'o mut dyn StudyObserver,
    /// Each server's process trees, read again every `REREAD` switches (a PostgreSQL forks
    /// a process per connection, all open before the first switch, and now and then a
    /// worker of its own).
    trees: Vec<Vec<Tree>>,
    switches: u32,
}

/// Switches between two reads of the process trees (a second or so of 50 ms turns).
const REREAD: u32 = 20;

impl<'o> Turns<'o> {
    pub fn new(idle: Idle, pids: Vec<Vec<u32>>, obs: &'o mut dyn StudyObserver) -> Self {
        let frozen = vec![false; pids.len()];
        Turns {
            idle,
            pids,
            frozen,
            obs,
            trees: Vec::new(),
            switches: 0,
        }
    }

    fn set(&mut self, server: usize, frozen: bool) {
        if self.frozen[server] != frozen {
            if self.trees.is_empty() {
                self.reread();
            }
            for tree in &self.trees[server] {
                tree.set_frozen(frozen);
            }
            self.frozen[server] = frozen;
        }
    }

    /// Read every server's process trees again. A process a server started in its last turn
    /// (a stopped one starts none) is stopped with the rest of its tree, before the old trees
    /// give up their places in the table a second Ctrl-C thaws from.
    fn reread(&mut self) {
        let new = self
            .pids
            .iter()
            .map(|p| p.iter().map(|&pid| Tree::of(pid)).collect())
            .collect();
        let old = std::mem::replace(&mut self.trees, new);
        for s in (0..self.pids.len()).filter(|&s| self.frozen[s]) {
            for t in &self.trees[s] {
                t.set_frozen(true);
            }
        }
        drop(old);
    }

    /// Every server running again (before the servers are sampled, checked or ended).
    pub fn thaw_all(&mut self) {
        for s in 0..self.pids.len() {
            self.set(s, false);
        }
    }
}

impl TurnObserver for Turns<'_> {
    fn on_switch(&mut self, to: usize) {
        self.switches += 1;
        if self.idle == Idle::Freeze && self.switches % REREAD == 0 {
            self.reread();
        }
        if self.idle == Idle::Freeze {
            for s in (0..self.pids.len()).filter(|&s| s != to) {
                self.set(s, true);
            }
        }
        self.set(to, false);
    }

    fn on_slice(&mut self, _server: usize, slice: &Slice) {
        self.obs.on_tick(slice.window.tps);
    }

    /// The connections close next (a script's thread_done may still run statements).
    fn on_end(&mut self) {
        self.thaw_all();
    }
}

impl Drop for Turns<'_> {
    /// A server left frozen would hang its own shutdown and the next study's sweep.
    fn drop(&mut self) {
        self.thaw_all();
    }
}
