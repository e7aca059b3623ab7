//! How a command ends: the exit codes (0 ok, 1 some runs or cells failed, 2 usage or
//! environment, 130 interrupted) and the Ctrl-C flag the engine and the lab watch.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use bakeoff_engine::RunStatus;

pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_INTERRUPTED: u8 = 130;

/// Set by the SIGINT handler; the engine polls it.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// 0 completed, 130 interrupted, 1 failed; says on stderr what the figures cover.
pub(crate) fn exit_code(status: &RunStatus, measured_seconds: f64) -> ExitCode {
    match status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::Interrupted => {
            eprintln!(
                "Interrupted: the figures above cover the {measured_seconds:.1} s measured before Ctrl-C, not the requested run."
            );
            ExitCode::from(EXIT_INTERRUPTED)
        }
        RunStatus::Failed(reason) => {
            // In sysbench's dialect, its FATAL lines on stdout, one per failed connection.
            match crate::dialect::is_sysbench() {
                true => reason
                    .lines()
                    .for_each(|l| crate::dialect::fatal(l.strip_prefix("FATAL: ").unwrap_or(l))),
                false => eprintln!("{reason}"),
            }
            ExitCode::from(EXIT_FAILED)
        }
    }
}
