//! Processes as /proc shows them: a process's place in the tree (parent, group, start), and
//! the tree under a process bakeoff started. A pid read here names a process only until it
//! ends; whoever acts on one holds it by pidfd first (`pidfd.rs`).

use std::collections::{BTreeMap, BTreeSet};

/// What /proc/PID/stat says of a process's place in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub state: char,
    pub parent: u32,
    pub group: i32,
    /// When it started, in clock ticks after boot: with the pid, it names one process.
    pub start: u64,
}

/// A process's /proc stat line, read past a command name that may hold spaces or parentheses.
pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

pub(crate) fn parse_stat(line: &str) -> Option<Stat> {
    let rest = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ppid (4), pgrp (5) ... starttime (22).
    Some(Stat {
        state: f.first()?.chars().next()?,
        parent: f.get(1)?.parse().ok()?,
        group: f.get(2)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// `pid` and its descendants, breadth first.
#[cfg(test)]
pub(crate) fn tree_of(pid: u32) -> Vec<u32> {
    tree_in(&stats(), pid)
}

pub(crate) fn tree_in(stats: &BTreeMap<u32, Stat>, pid: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&p, s) in stats {
        children.entry(s.parent).or_default().push(p);
    }
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

/// Every process's stat line now, by pid.
pub(crate) fn stats() -> BTreeMap<u32, Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_parentheses() {
        let line = "4242 (a (b) c) S 1 4240 4240 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.state, s.parent, s.group, s.start), ('S', 1, 4240, 98765));
        assert_eq!(parse_stat("garbage"), None);
    }
}
