//! Ctrl-C, and the signals that mean the same: SIGTERM (`kill`, `timeout`, a cancelled CI
//! job), SIGHUP (the ssh session or terminal went away) and SIGQUIT each count as a press. The
//! first press stops cleanly: the run in progress ends as interrupted, servers stop
//! in order, what was measured is stored and printed. A signal within 0.5 s of the press
//! before it is the same press (`timeout -s INT` delivers SIGINT to bakeoff and to its process
//! group at once), the second and third as much as the first. A later second press abandons: every process group bakeoff started
//! (servers, datadir initializers, agents) is killed, waited for, and its run directories
//! removed, on a thread of its own (a signal handler may not allocate); the results database
//! and every stored run stay. A third press leaves at once, without cleaning up; the
//! watchdog (`bakeoff_server::watchdog`) then kills what bakeoff started, as it does when
//! bakeoff is killed by a signal it cannot catch.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

use crate::exit;

/// When the last press came (CLOCK_MONOTONIC, ns).
static LAST_PRESS: AtomicU64 = AtomicU64::new(0);
/// Presses counted after the first (the abandoning one and any after it).
static LATER_PRESSES: AtomicU8 = AtomicU8::new(0);
/// The write end of the pipe that wakes the abandoning thread (-1 before it exists).
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// How long the abandoning thread waits for the killed processes to be gone.
const WAIT_FOR_GONE: Duration = Duration::from_secs(10);

/// Install the handler (once: `bakeoff pgbench` reaches here by two paths).
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(install_once);
}

fn install_once() {
    start_abandoner();
    // SAFETY: the handler only touches atomics and calls clock_gettime, write and _exit, all
    // async-signal-safe.
    unsafe {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, on_press as *const () as libc::sighandler_t);
        }
    }
}

extern "C" fn on_press(signal: libc::c_int) {
    // The code the signal interrupted may read errno next: it is put back as it was.
    // SAFETY: __errno_location returns this thread's errno, valid for the thread's life.
    let errno = unsafe { *libc::__errno_location() };
    press(signal);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

fn press(signal: libc::c_int) {
    if signal == libc::SIGHUP {
        quiet_gone_terminal();
    }
    let now = monotonic_ns();
    if !exit::INTERRUPTED.swap(true, Ordering::SeqCst) {
        LAST_PRESS.store(now, Ordering::SeqCst);
        say(match signal {
            libc::SIGTERM => b"\nbakeoff: SIGTERM: stopping cleanly, as for Ctrl-C; a second signal abandons at once\n",
            libc::SIGHUP => b"\nbakeoff: SIGHUP: stopping cleanly, as for Ctrl-C; a second signal abandons at once\n",
            libc::SIGQUIT => b"\nbakeoff: SIGQUIT: stopping cleanly, as for Ctrl-C; a second signal abandons at once\n",
            _ => b"\nbakeoff: stopping cleanly; Ctrl-C again to abandon at once\n",
        });
        return;
    }
    if now.saturating_sub(LAST_PRESS.load(Ordering::SeqCst)) < 500_000_000 {
        return;
    }
    LAST_PRESS.store(now, Ordering::SeqCst);
    let wake = WAKE.load(Ordering::SeqCst);
    if LATER_PRESSES.fetch_add(1, Ordering::SeqCst) > 0 || wake < 0 {
        say(b"bakeoff: leaving at once (exit 130), without cleaning up\n");
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(exit::EXIT_INTERRUPTED as i32) };
    }
    say(b"bakeoff: abandoning: killing what it started and removing its run directories\n");
    // SAFETY: write(2) is async-signal-safe; `wake` is the pipe's write end.
    unsafe { libc::write(wake, [1u8].as_ptr().cast(), 1) };
}

/// Called as bakeoff is about to exit on its own: once abandoning has begun, its thread owns
/// the exit (a clean stop finishing meanwhile must not end the process under it, leaving
/// processes and run directories it was about to remove).
pub(crate) fn leave_to_abandoner() {
    if LATER_PRESSES.load(Ordering::SeqCst) > 0 && WAKE.load(Ordering::SeqCst) >= 0 {
        loop {
            std::thread::park();
        }
    }
}

/// The thread that abandons, asleep on a pipe until the handler writes to it.
fn start_abandoner() {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return; // No thread: a second press leaves at once, as a third would.
    }
    let [read_end, write_end] = fds;
    let spawned = std::thread::Builder::new()
        .name("abandon".into())
        .spawn(move || {
            let mut byte = 0u8;
            // SAFETY: reading one byte into `byte` from our own pipe.
            while unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) } != 1 {}
            abandon();
        });
    if spawned.is_ok() {
        WAKE.store(write_end, Ordering::SeqCst);
    }
}

fn abandon() -> ! {
    let done = bakeoff_server::abandon::abandon_all(WAIT_FOR_GONE);
    let mut said = format!(
        "bakeoff: abandoned (exit 130): killed {} process{} it started (servers, initializers, agents) and removed {} run director{}; the results database and every run already stored are kept",
        done.killed,
        if done.killed == 1 { "" } else { "es" },
        done.removed,
        if done.removed == 1 { "y" } else { "ies" },
    );
    if !done.left.is_empty() {
        let left: Vec<String> = done
            .left
            .iter()
            .map(|(p, n)| format!("{p} ({n})"))
            .collect();
        said.push_str(&format!(
            "\nbakeoff: still there after {} s: {}",
            WAIT_FOR_GONE.as_secs(),
            left.join(", ")
        ));
    }
    eprintln!("{said}");
    // SAFETY: _exit ends the process without running other threads' destructors, which may be
    // mid-run; the results database is committed run by run.
    unsafe { libc::_exit(exit::EXIT_INTERRUPTED as i32) }
}

/// After a hangup nobody reads the terminal, and a write to it fails (EIO), which the
/// standard library's printing turns into a panic: the terminal's descriptors among stdin,
/// stdout and stderr are pointed at /dev/null instead (a file or pipe they name stays). Only
/// a terminal that really hung up: it is no longer the session's (tcgetpgrp fails), where a
/// `kill -HUP` by hand leaves it in place and bakeoff's last words on it.
/// Async-signal-safe: isatty and tcgetpgrp (ioctls), open, dup2 and close.
fn quiet_gone_terminal() {
    // SAFETY: open with a literal path; dup2 and close on descriptors of this process.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            return;
        }
        for fd in 0..3 {
            if libc::isatty(fd) == 1 && libc::tcgetpgrp(fd) < 0 {
                libc::dup2(null, fd);
            }
        }
        libc::close(null);
    }
}

fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe and writes only `t`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64) * 1_000_000_000 + t.tv_nsec as u64
}

fn say(msg: &[u8]) {
    // SAFETY: write(2) is async-signal-safe; a failed write is nothing to act on here.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}
