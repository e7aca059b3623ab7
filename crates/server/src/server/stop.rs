//! Ending a server: SHUTDOWN, then SIGTERM, then SIGKILL, each bounded; or, for a server
//! nobody drives any more, SIGKILL at once. Its run directory goes with it.

use std::process::Child;
use std::time::{Duration, Instant};

use bakeoff_driver::ConnectOptions;

use super::Server;
use crate::launch;
use crate::template::Template;
use crate::ServerError;

impl Server {
    /// Stop: SQL SHUTDOWN, then SIGTERM, then SIGKILL, each with a bounded wait.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    /// Stop cleanly and keep the datadir as a [`Template`] to start other servers from (with
    /// the tables already loaded). Fails if the server did not shut down cleanly: a datadir of
    /// a killed server would need crash recovery in every copy.
    pub fn stop_into_template(mut self) -> Result<Template, ServerError> {
        let template = Template::new()?;
        let clean = self.shutdown_cleanly();
        let result = if clean {
            template.take_datadir(&self.rundir)
        } else {
            Err(ServerError::Spawn {
                what: "stopping the server to keep its datadir".into(),
                detail: "it did not shut down cleanly".into(),
            })
        };
        self.stop_inner();
        result.map(|_| template)
    }

    /// SHUTDOWN and wait for the exit within the stop timeout; true if it exited by itself.
    fn shutdown_cleanly(&mut self) -> bool {
        if let Some(child) = &self.child {
            self.ask_shutdown(child);
        }
        let timeout = self.stop_timeout;
        match self.child.as_mut() {
            Some(child) => {
                wait_exit(child, timeout) && matches!(child.try_wait(), Ok(Some(s)) if s.success())
            }
            None => false,
        }
    }

    /// Ask the server to shut down (SHUTDOWN over SQL), bounded; true if it took the request.
    fn ask_shutdown(&self, child: &Child) -> bool {
        let opts = ConnectOptions {
            connect_timeout: Duration::from_secs(2),
            ..self.connect_options()
        };
        self.family.ask_shutdown(&opts, child)
    }

    /// Kill a server nobody drives any more (its driver's link is gone) at once, and remove
    /// its directories: its data is throwaway, and a clean shutdown could wait on connections
    /// to a host that no longer answers.
    pub fn discard(mut self) {
        self.kill_now();
        self.rundir.remove();
    }

    /// For a server held where it is never dropped (a test binary's shared one, in a static):
    /// at process exit, SIGKILL its group, reap it and remove its run directory, so nothing is
    /// left in the temporary directory for the next bakeoff to sweep.
    pub fn discard_at_exit(&self) {
        if let Some(child) = &self.child {
            launch::signal_group(child, libc::SIGKILL);
            // SAFETY: waitpid on our own unreaped child; a null status pointer is allowed.
            unsafe {
                libc::waitpid(child.id() as libc::pid_t, std::ptr::null_mut(), 0);
            }
        }
        self.rundir.remove();
    }

    /// SIGKILL the server's whole process group (a wrapper script and what it started too).
    pub(super) fn kill_now(&mut self) {
        if let Some(mut child) = self.child.take() {
            launch::signal_group(&child, libc::SIGKILL);
            let _ = child.wait();
        }
    }

    fn stop_inner(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(None)) {
            // Only a server that took the SHUTDOWN is worth the long wait; one we cannot reach
            // (never ready, wedged) goes straight to SIGTERM.
            let shutting_down = self.ask_shutdown(&child);
            let steps = [
                (
                    None,
                    if shutting_down {
                        self.stop_timeout
                    } else {
                        Duration::ZERO
                    },
                ),
                (Some(libc::SIGTERM), Duration::from_secs(10)),
                (Some(libc::SIGKILL), Duration::from_secs(10)),
            ];
            for (sig, wait) in steps {
                if let Some(sig) = sig {
                    launch::signal(&child, sig);
                }
                if wait_exit(&mut child, wait) {
                    break;
                }
            }
        }
        let _ = child.wait();
        self.rundir.remove();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

fn wait_exit(child: &mut Child, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    while Instant::now() < until {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
