//! How this invocation speaks. Given in sysbench's grammar (`bakeoff [options] TEST [command]`,
//! or invoked as `sysbench`), stdout is sysbench's, line for line, at sysbench's verbosity,
//! and what bakeoff adds goes to stderr. Given in bakeoff's own grammar, bakeoff's layout.
//! Decided once, from the command line, before anything prints.

use std::sync::OnceLock;

/// sysbench's log levels (sb_logger.h): a message prints when its level is at most
/// `--verbosity` (default 3).
pub(crate) const FATAL: u8 = 0;
pub(crate) const NOTICE: u8 = 3;

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

/// Print what bakeoff adds to sysbench's output: stdout in bakeoff's dialect, stderr in
/// sysbench's, where a parser of sysbench's output does not see it.
macro_rules! extra {
    ($($t:tt)*) => {
        if $crate::dialect::is_sysbench() {
            eprint!($($t)*);
        } else {
            print!($($t)*);
        }
    };
}
pub(crate) use extra;

/// A failure: sysbench's `FATAL:` line on stdout in its dialect, bakeoff's on stderr.
pub(crate) fn fatal(message: &str) {
    match SYSBENCH.get() {
        Some(_) if shows(FATAL) => println!("FATAL: {message}"),
        Some(_) => {}
        None => eprintln!("{message}"),
    }
}
