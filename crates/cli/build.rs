//! Two things the binary needs from its build:
//! - Scripts written for sysbench call C functions of the sysbench binary through LuaJIT's ffi
//!   (`ffi.C.sb_counter_inc`): the binary exports bakeoff's versions of them to its dynamic
//!   symbol table, where ffi.C looks.
//! - `--version` names the commit it was built from (`BAKEOFF_COMMIT`), so that a result can
//!   be traced to its code; "unknown" outside a git checkout (a source tarball).
use std::process::Command;

fn main() {
    for symbol in ["sb_counter_inc"] {
        println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol={symbol}");
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=BAKEOFF_COMMIT={commit}");
    // Built again when HEAD moves (a commit, a checkout), not on every build. Only files
    // that exist are watched: cargo reruns a script whose watched file is missing, every
    // time. A branch's ref lives in the common git directory (a worktree's own has none).
    let watch = |path: String| {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    };
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        watch(format!("{dir}/HEAD"));
    }
    if let Some(common) = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]) {
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch(format!("{common}/{head}"));
        }
        watch(format!("{common}/packed-refs"));
    }
    println!("cargo:rerun-if-changed=build.rs");
}
