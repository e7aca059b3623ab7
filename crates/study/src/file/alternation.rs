//! `[alternation]`: how a block's servers take turns (see `alternate/`). Every key has a
//! default; a study without the section alternates wherever it can.

use std::time::Duration;

use crate::reader::{one_of, Problems, Table};

/// What an idle server does while another takes the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Idle {
    /// Left running: its background work (a once-a-second log flush, purge) shares the
    /// machine with the server whose turn it is.
    Run,
    /// Stopped and let go at its turn: as a cgroup of its own where bakeoff may make one,
    /// else by SIGSTOP to each process of its tree.
    Freeze,
}

/// `[alternation]`, validated.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Alternation {
    /// false: the study runs in blocks of one server at a time, as before alternation.
    pub enabled: bool,
    /// One server's measured turn.
    pub slice: Duration,
    /// Unmeasured time after each switch.
    pub settle: Duration,
    pub idle: Idle,
    /// After every this many blocks by turns, one block of the same variants one server at
    /// a time (a check block, numbered apart: `bakeoff_store::check_block`), so the report can
    /// test that the two ways agree (the ratio of their ratios). 0: never.
    pub validate_every: u32,
}

/// Measured on this project's 2-CPU VM (the closing note of the alternation issue has the
/// tables): the variance of a round's log ratio per second of turns fell about 2-4x from
/// 250 ms slices to 50 ms (the machine's speed moves within a second too), and rose again
/// at 20 ms for a write workload whose events take a millisecond; a switch costs the settle
/// and ~2 ms more, a tenth of a 50 ms slice.
pub const DEFAULT_SLICE: Duration = Duration::from_millis(50);
/// For a study with TPC-C, whose transactions take 5-300 ms on this VM (Delivery's p95 reached
/// 700 ms at 64 terminals on 10 warehouses): a 50 ms turn would end inside most of them, and
/// an event longer than its turn is not counted. A second holds a few of the longest.
pub const LONG_EVENTS_SLICE: Duration = Duration::from_millis(1000);
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(5);
/// Frozen: on the A/A/B study (write_only, flush at commit against once a second), servers
/// left running read B's ratio higher (1.89x, 1.82-1.97) than frozen ones (1.80x, 1.76-1.85)
/// and blocks (1.74x, 1.57-1.91): an idle server's once-a-second flush landed in the other's
/// turns. Frozen, each server pays for its own background work in its own turn.
pub const DEFAULT_IDLE: Idle = Idle::Freeze;

impl Default for Alternation {
    fn default() -> Self {
        Alternation {
            enabled: true,
            slice: DEFAULT_SLICE,
            settle: DEFAULT_SETTLE,
            idle: DEFAULT_IDLE,
            validate_every: 0,
        }
    }
}

/// `[alternation]`; `long_events`: a workload's events take tens of milliseconds or more
/// (TPC-C's), so a turn not given is [`LONG_EVENTS_SLICE`].
pub(super) fn alternation(p: &mut Problems, top: &mut Table, long_events: bool) -> Alternation {
    let mut d = Alternation::default();
    if long_events {
        d.slice = LONG_EVENTS_SLICE;
    }
    let Some(mut t) = top.tables(p, "alternation").into_iter().next() else {
        return d;
    };
    let enabled = t.bool(p, "enabled").unwrap_or(d.enabled);
    let ms = |p: &mut Problems, t: &mut Table, key, range, default: Duration| {
        t.int(p, key, range)
            .map_or(default, |n| Duration::from_millis(n as u64))
    };
    let slice = ms(p, &mut t, "slice_ms", 20..60_001, d.slice);
    let settle = ms(p, &mut t, "settle_ms", 0..10_001, d.settle);
    let idle = match t.string(p, "idle") {
        None => d.idle,
        Some((s, span)) => {
            let choices = [("run", Idle::Run), ("freeze", Idle::Freeze)];
            one_of(p, span, "alternation.idle", s, &choices).unwrap_or(d.idle)
        }
    };
    let validate_every = t
        .int(p, "validate_every", 0..101)
        .map_or(d.validate_every, |n| n as u32);
    t.finish(p);
    Alternation {
        enabled,
        slice,
        settle,
        idle,
        validate_every,
    }
}
