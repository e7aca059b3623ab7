//! Whether bakeoff is leaving: set by a last-resort thaw (abandoning, a second Ctrl-C), after
//! which no server may be stopped or frozen again. One flag for both ways of freezing (the
//! cgroup freezer and SIGSTOP), read under each one's lock.

use std::sync::atomic::{AtomicBool, Ordering};

static LEAVING: AtomicBool = AtomicBool::new(false);

/// From here on nothing is frozen.
pub(crate) fn set() {
    LEAVING.store(true, Ordering::SeqCst);
}

pub(crate) fn is_set() -> bool {
    LEAVING.load(Ordering::SeqCst)
}

/// Tests that freeze take turns: the flag is the process's own, and a test that sets it
/// clears it again before it lets the next one go.
#[cfg(test)]
pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
pub(crate) fn clear() {
    LEAVING.store(false, Ordering::SeqCst);
}
