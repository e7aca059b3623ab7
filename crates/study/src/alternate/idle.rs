//! What the servers not taking the load do between their turns, and the study's progress as
//! slices close.

use std::sync::Arc;

use bakeoff_engine::{Slice, TurnObserver};
use bakeoff_server::cgroup::Group;
use bakeoff_server::freeze::Tree;

use crate::{Idle, StudyObserver};

/// Told of every switch by the engine (nothing in flight then): under `Idle::Freeze`, every
/// server but the next is stopped and the next let go; under `Idle::Run` nothing is touched.
/// Each server is frozen as a cgroup of its own where the machine allows one for every
/// server (one write stops its whole tree, processes it forks meanwhile included), else by
/// signalling the process trees read from /proc.
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
    /// Each server's cgroup (see [`groups_of`]): empty where the machine allows none.
    groups: Vec<Arc<Group>>,
    switches: u32,
}

/// Switches between two reads of the process trees (a second or so of 50 ms turns).
const REREAD: u32 = 20;

impl<'o> Turns<'o> {
    pub fn new(
        idle: Idle,
        pids: Vec<Vec<u32>>,
        groups: Vec<Arc<Group>>,
        obs: &'o mut dyn StudyObserver,
    ) -> Self {
        let frozen = vec![false; pids.len()];
        Turns {
            idle,
            pids,
            frozen,
            obs,
            trees: Vec::new(),
            groups,
            switches: 0,
        }
    }

    fn set(&mut self, server: usize, frozen: bool) {
        if self.frozen[server] == frozen {
            return;
        }
        if let Some(g) = self.groups.get(server) {
            g.set_frozen(frozen);
        } else {
            if self.trees.is_empty() {
                self.reread();
            }
            for tree in &mut self.trees[server] {
                tree.set_frozen(frozen);
            }
        }
        self.frozen[server] = frozen;
    }

    /// Whether the servers are frozen as cgroups.
    fn in_groups(&self) -> bool {
        !self.groups.is_empty()
    }

    /// Read every server's process trees again: a process a server started in its last turn
    /// (a stopped one starts none) is stopped with the rest of its tree.
    fn reread(&mut self) {
        if self.trees.is_empty() {
            self.trees = self
                .pids
                .iter()
                .map(|p| p.iter().map(|&pid| Tree::of(pid)).collect())
                .collect();
            return;
        }
        for tree in self.trees.iter_mut().flatten() {
            tree.refresh();
        }
    }

    /// Why a server's process could not be held to be frozen, if one could not (out of
    /// descriptors, or a kernel before 5.3): it ran through the other servers' turns.
    pub fn unheld(&self) -> Option<String> {
        self.trees
            .iter()
            .flatten()
            .find_map(|t| t.unheld().map(str::to_string))
    }

    /// Every server running again (before the servers are sampled, checked or ended).
    pub fn thaw_all(&mut self) {
        for s in 0..self.pids.len() {
            self.set(s, false);
        }
    }
}

/// A cgroup per server (its instances' process trees), every server's or none (a block
/// whose servers were frozen two ways would treat them differently): made before a cell's
/// turns, so that its samplers read each server's CPU time from its group too.
pub(crate) fn groups_of(pids: &[Vec<u32>]) -> Result<Vec<Arc<Group>>, String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    pids.iter()
        .map(|p| {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Group::of(&n.to_string(), p).map(Arc::new)
        })
        .collect()
}

/// How idle servers are frozen: as cgroups, or by signals and why.
pub(crate) fn freezing_line(made: &Result<Vec<Arc<Group>>, String>) -> String {
    match made {
        Ok(_) => "idle servers are frozen as cgroups of their own (cgroup v2): one write stops a server's whole tree, processes it forks included, and its CPU time is the kernel's count in microseconds".to_string(),
        Err(why) => format!("idle servers are frozen by SIGSTOP to each process of their trees, read from /proc now and then ({why}; as root, or in a delegated cgroup, bakeoff freezes each server as a cgroup of its own)"),
    }
}

impl TurnObserver for Turns<'_> {
    fn on_switch(&mut self, to: usize) {
        self.switches += 1;
        if self.idle == Idle::Freeze && self.switches % REREAD == 0 && !self.in_groups() {
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
        self.obs.on_window(&slice.window, None);
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
