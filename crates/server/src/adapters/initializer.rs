//! Running a family's datadir initializer (mariadb-install-db, `mysqld --initialize`,
//! initdb): bounded by the start timeout and abandonable like the start itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::adapters::family::Bounds;
use crate::launch::{self, scrub_env, spawn_contained, Placement, RunAs};
use crate::rundir::RunDir;
use crate::ServerError;

/// The initializer's output, in the run directory.
const LOG: &str = "install.log";

/// Run a family's datadir initializer `tool` with `args` as the server's user, its output in
/// the run directory's `install.log`; it is killed when it outlasts `bounds.limit` (the server
/// start timeout) or the start is abandoned.
pub(crate) fn run(
    tool: &Path,
    args: &[String],
    rundir: &RunDir,
    run_as: Option<RunAs>,
    bounds: Bounds<'_>,
) -> Result<(), ServerError> {
    // Made anew through the run directory's descriptor, never opened by path: the directory
    // may already be the server's account's (see `RunDir`).
    let out = rundir.create_file(LOG, 0o600, None)?;
    let err = out.try_clone().map_err(|source| ServerError::RunDir {
        path: rundir.path().join(LOG),
        source,
    })?;
    let mut cmd = Command::new(tool);
    cmd.args(args);
    scrub_env(&mut cmd);
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let what = tool.display().to_string();
    let mut child =
        spawn_contained(cmd, run_as, Placement::default()).map_err(|e| ServerError::Spawn {
            what: what.clone(),
            detail: e.to_string(),
        })?;
    let started = Instant::now();
    let status = loop {
        let over = started.elapsed() > bounds.limit;
        if over || bounds.abandon.load(Ordering::Relaxed) {
            launch::signal_group(&child, libc::SIGKILL);
            let _ = child.wait();
            return Err(if over {
                ServerError::Initialize {
                    tool: what,
                    status: format!(
                        "still running after {} s, the server start timeout; killed",
                        bounds.limit.as_secs()
                    ),
                    log_tail: rundir.error_lines_and_tail(LOG, 25),
                }
            } else {
                ServerError::Abandoned
            });
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                return Err(ServerError::Spawn {
                    what: what.clone(),
                    detail: e.to_string(),
                })
            }
        }
    };
    if !status.success() {
        return Err(ServerError::Initialize {
            tool: what,
            status: status.to_string(),
            log_tail: rundir.error_lines_and_tail(LOG, 25),
        });
    }
    Ok(())
}
