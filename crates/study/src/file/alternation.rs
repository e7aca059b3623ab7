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
    /// Stopped (SIGSTOP on its process tree) and let go at its turn.
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
}

/// Measured on this project's 2-CPU VM (see the closing note of the alternation issue):
/// slices of a quarter second sit well under the machine's speed spells (1-5 s), so a round's
/// two slices see nearly the same machine, while the 20 ms settle and the drain at each
/// switch cost under a tenth of the time.
pub const DEFAULT_SLICE: Duration = Duration::from_millis(50);
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(5);
pub const DEFAULT_IDLE: Idle = Idle::Run;

impl Default for Alternation {
    fn default() -> Self {
        Alternation {
            enabled: true,
            slice: DEFAULT_SLICE,
            settle: DEFAULT_SETTLE,
            idle: DEFAULT_IDLE,
        }
    }
}

pub(super) fn alternation(p: &mut Problems, top: &mut Table) -> Alternation {
    let d = Alternation::default();
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
    t.finish(p);
    Alternation {
        enabled,
        slice,
        settle,
        idle,
    }
}
