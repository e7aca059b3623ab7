//! How this invocation speaks. Given in sysbench's grammar (`bakeoff [options] TEST [command]`,
//! or invoked as `sysbench`), stdout is sysbench's, line for line, at sysbench's verbosity,
//! and what bakeoff adds goes to stderr. Given in bakeoff's own grammar, bakeoff's layout.
//! Decided once, from the command line, before anything prints.

use std::sync::OnceLock;

/// sysbench's logger (one per process: a line repeating the one before is counted, not
/// printed), shared with the Lua SQL layer's FATAL and ALERT lines.
use bakeoff_workload::scripting::lua::sysbench_log as log;

/// sysbench's log levels (sb_logger.h): a message prints when its level is at most
/// `--verbosity` (default 3).
pub(crate) const FATAL: u8 = 0;
pub(crate) const WARNING: u8 = 2;
pub(crate) const NOTICE: u8 = 3;
/// What bakeoff adds to sysbench's output is said at sysbench's info level: on stderr from
/// `--verbosity=4`, so at the default a parser (or a test) of sysbench's output, which may
/// read stderr too, sees sysbench's lines only. `--format=json` carries all of it.
pub(crate) const INFO: u8 = 4;

static SYSBENCH: OnceLock<u8> = OnceLock::new();

/// Speak sysbench's dialect at `verbosity` from now on.
pub(crate) fn speak_sysbench(verbosity: u8) {
    let _ = SYSBENCH.set(verbosity);
}

pub(crate) fn is_sysbench() -> bool {
    SYSBENCH.get().is_some()
}

/// Whether a message of sysbench level `level` prints (always, in bakeoff's dialect).
pub(crate) fn shows(level: u8) -> bool {
    SYSBENCH.get().is_none_or(|&v| level <= v)
}

/// Print sysbench's own output at notice level: stdout, when the verbosity shows it.
macro_rules! notice {
    ($($t:tt)*) => {
        if $crate::dialect::shows($crate::dialect::NOTICE) {
            println!($($t)*);
        }
    };
}
pub(crate) use notice;

/// Print what bakeoff adds to sysbench's output: stdout in bakeoff's dialect; in sysbench's,
/// stderr at its info level.
macro_rules! extra {
    ($($t:tt)*) => {
        if !$crate::dialect::is_sysbench() {
            print!($($t)*);
        } else if $crate::dialect::shows($crate::dialect::INFO) {
            eprint!($($t)*);
        }
    };
}

/// A line bakeoff adds on stderr in either dialect (notes, loading's summary): in sysbench's,
/// at its info level.
macro_rules! said {
    ($($t:tt)*) => {
        if $crate::dialect::shows($crate::dialect::INFO) || !$crate::dialect::is_sysbench() {
            eprintln!($($t)*);
        }
    };
}
pub(crate) use extra;
pub(crate) use said;

/// A failure: sysbench's `FATAL:` lines on stdout in its dialect (its logger prefixes each
/// line), bakeoff's on stderr.
pub(crate) fn fatal(message: &str) {
    match SYSBENCH.get() {
        Some(_) if shows(FATAL) => message.lines().for_each(|l| log(format!("FATAL: {l}"))),
        Some(_) => {}
        None => eprintln!("{message}"),
    }
}

/// sysbench's `WARNING:` line (stdout, at its warning level); bakeoff's dialect: stderr.
pub(crate) fn warning(message: &str) {
    match SYSBENCH.get() {
        Some(_) if shows(WARNING) => log(format!("WARNING: {message}")),
        Some(_) => {}
        None => eprintln!("warning: {message}"),
    }
}

/// One warning per run when a login goes to another machine unverified (see
/// `ConnectOptions::unverified_login_warning`): on stderr, in sysbench's grammar from its
/// verbosity 4, so its stdout stays sysbench's.
pub(crate) fn warn_unverified(servers: &[bakeoff_driver::ConnectOptions]) {
    static SAID: std::sync::Once = std::sync::Once::new();
    let Some(w) = servers.iter().find_map(|o| o.unverified_login_warning()) else {
        return;
    };
    if !is_sysbench() || shows(INFO) {
        SAID.call_once(|| eprintln!("{w}"));
    }
}
