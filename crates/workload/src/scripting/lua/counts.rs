//! What a thread's Lua state counted since the engine last asked: statements by sysbench's
//! classes, errors and reconnects. One state per thread, so a thread-local is the state's
//! own, and scripts reach it through LuaJIT's ffi as sysbench's `sb_counter_inc`.

use std::cell::Cell;
use std::ffi::c_int;

use crate::StmtCounts;

thread_local! {
    static COUNTS: Cell<StmtCounts> = const { Cell::new(StmtCounts::ZERO) };
}

/// sysbench's counter enum (sb_counter_type), as scripts pass it to `sb_counter_inc`.
pub const OTHER: c_int = 0;
pub const READ: c_int = 1;
pub const WRITE: c_int = 2;
pub const ERROR: c_int = 4;
pub const RECONNECT: c_int = 5;

pub(super) fn add(counter: c_int, error_code: u16) {
    COUNTS.with(|c| {
        let mut n = c.get();
        match counter {
            OTHER => n.others += 1,
            READ => n.reads += 1,
            WRITE => n.writes += 1,
            ERROR => {
                n.errors += 1;
                n.error_code = error_code;
            }
            RECONNECT => n.reconnects += 1,
            // Events (3) are the engine's to count, one per event() call; anything else is
            // not a counter sysbench has.
            _ => {}
        }
        c.set(n);
    });
}

/// Take what this thread counted, leaving zero.
pub(super) fn take() -> StmtCounts {
    COUNTS.with(|c| c.replace(StmtCounts::ZERO))
}

/// `ffi.C.sb_counter_inc(thread_id, counter)`, as scripts written for sysbench call it (the
/// binary exports the symbol; see cli/build.rs). The thread is the caller's own, so
/// `thread_id` is not needed to find its counters.
#[no_mangle]
pub extern "C" fn sb_counter_inc(_thread_id: c_int, counter: c_int) {
    add(counter, 0);
}

/// The symbols the binary exports for scripts' ffi, named so the linker keeps them.
pub fn exported_symbols() -> [usize; 1] {
    [sb_counter_inc as *const () as usize]
}
