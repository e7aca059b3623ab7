//! The engine's event loop run in Lua (the prelude's `sysbench.__loop`), as sysbench runs its
//! `thread_run` loop: LuaJIT then compiles the loop and the script's event into one trace.
//! Entered from Rust once per event instead, the event ran partly interpreted (its loops
//! aborted as "leaving loop in root trace"). The engine's bookkeeping around each event
//! ([`Pace`]) is reached through ffi, with the address of a [`Paced`] on the calling Rust
//! frame, valid for the whole call. A state on a fiber (`fiber.rs`) runs the same loop, its
//! calls suspending the fiber as they wait.

use std::ffi::{c_int, c_void};

use super::counts;
use super::sql::Yielder;
use crate::scripting::{Pace, StmtCounts};

/// What the loop's ffi calls reach: the engine's bookkeeping, and the state's fiber where it
/// runs on one.
pub(super) struct Paced<'a> {
    pub pace: &'a mut dyn Pace,
    pub on: Option<&'a Yielder>,
}

impl Paced<'_> {
    /// The address the prelude's loop passes back to the functions below.
    pub fn address(&mut self) -> usize {
        self as *mut Paced as usize
    }

    /// What the state counted since the last event ended.
    fn counted(&self) -> StmtCounts {
        match self.on {
            Some(y) => y.counted(),
            None => counted(),
        }
    }
}

/// What this thread's state counted since the engine last asked.
pub(super) fn counted() -> StmtCounts {
    let mut c = StmtCounts::default();
    c.add(&counts::take());
    c
}

/// SAFETY (all three): `p` is the address of the `Paced` that `Session::run_events` keeps on
/// its frame while the loop runs; the prelude passes nothing else, on this thread only.
unsafe fn paced<'a>(p: *mut c_void) -> &'a mut Paced<'a> {
    &mut *p.cast::<Paced>()
}

extern "C" fn bk_event_begin(p: *mut c_void) -> c_int {
    // SAFETY: see `paced`.
    unsafe { paced(p) }.pace.begin() as c_int
}

extern "C" fn bk_event_end(p: *mut c_void) {
    // SAFETY: see `paced`.
    let paced = unsafe { paced(p) };
    let c = paced.counted();
    paced.pace.end(&c);
    if let Some(y) = paced.on {
        // An event that did no I/O (a dry run's, or one that only computes) gave the
        // thread's other states no turn: give them one now, or they would never run.
        if !y.did_io() {
            y.give_turn();
        }
    }
}

extern "C" fn bk_event_restart(p: *mut c_void) -> c_int {
    // SAFETY: see `paced`.
    unsafe { paced(p) }.pace.restart() as c_int
}

/// The loop's functions for the prelude: name, C signature, address.
pub(super) fn fast_functions() -> Vec<(&'static str, &'static str, usize)> {
    vec![
        (
            "event_begin",
            "int (*)(void *)",
            bk_event_begin as *const () as usize,
        ),
        (
            "event_end",
            "void (*)(void *)",
            bk_event_end as *const () as usize,
        ),
        (
            "event_restart",
            "int (*)(void *)",
            bk_event_restart as *const () as usize,
        ),
    ]
}
