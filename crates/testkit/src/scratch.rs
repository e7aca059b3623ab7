//! Scratch space for tests: every file and directory a test binary makes lives under one
//! directory of its own in the temporary directory, removed when the process exits, whether
//! the tests passed or failed. Helpers kept in statics (a PKI, a shared server) are never
//! dropped, so cleaning up at exit is the only way a suite leaves nothing behind.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// What goes at exit besides the scratch root: the shared servers (see `crate::server`).
static AT_EXIT: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

static ROOT: OnceLock<PathBuf> = OnceLock::new();

/// This process's scratch root, `bakeoff-test-<pid>-<random>`, made on first use.
pub fn root() -> &'static Path {
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "bakeoff-test-{}-{}",
            std::process::id(),
            bakeoff_driver::random_hex(6).expect("randomness from the kernel")
        ));
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("scratch {}: {e}", dir.display()));
        register_exit();
        dir
    })
}

/// The directory `name` under the root, made if it is not there yet (the root is fresh for
/// each process, so only this process's tests can have made it).
pub fn dir(name: &str) -> PathBuf {
    let d = root().join(name);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("scratch {}: {e}", d.display()));
    d
}

/// A path `name` under the root, not created (a database file, say).
pub fn path(name: &str) -> PathBuf {
    root().join(name)
}

/// Run `f` at process exit, before the scratch root goes.
pub fn at_exit(f: fn()) {
    register_exit();
    AT_EXIT.lock().unwrap_or_else(|e| e.into_inner()).push(f);
}

fn register_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: atexit takes a plain extern "C" fn with no arguments; it is registered once.
    ONCE.call_once(|| unsafe {
        libc::atexit(clean_up);
    });
}

extern "C" fn clean_up() {
    let hooks = std::mem::take(&mut *AT_EXIT.lock().unwrap_or_else(|e| e.into_inner()));
    for f in hooks {
        f();
    }
    if let Some(root) = ROOT.get() {
        let _ = std::fs::remove_dir_all(root);
    }
}
