//! Processes held by pidfd, not by number: a pid read from /proc may be reused by a stranger's
//! process the moment the one it named ends, while a pidfd names that one process for as long
//! as it is held, and signals sent through it after that process ended reach no one.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// One process, held.
#[derive(Debug)]
pub struct Pidfd {
    fd: OwnedFd,
    pid: u32,
}

impl Pidfd {
    /// The process `pid` is now, held from here on; None when there is none (it ended), an
    /// error when it could not be held (out of descriptors even at the hard limit, or a
    /// kernel before 5.3). Whoever names a pid it did not fork itself checks
    /// [`Pidfd::open_as`] instead.
    pub fn open(pid: u32) -> std::io::Result<Option<Pidfd>> {
        let mut raised = false;
        loop {
            // SAFETY: pidfd_open has no memory preconditions; it returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
            if fd >= 0 {
                // SAFETY: the descriptor was just made and is owned by nothing else.
                let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
                return Ok(Some(Pidfd { fd, pid }));
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ESRCH) => return Ok(None),
                // One per process frozen by signals, beside one per connection: the limit
                // the run raised for its connections may not cover them.
                Some(libc::EMFILE) if !raised => raised = raise_to_hard(),
                _ => return Err(e),
            }
        }
    }

    /// The process `pid` if it is still the one /proc showed starting at `start` (clock ticks
    /// after boot, /proc/PID/stat's 22nd field): opened first, then checked, so that a pid
    /// reused between the reading and the opening is never held.
    pub fn open_as(pid: u32, start: u64) -> std::io::Result<Option<Pidfd>> {
        let held = Pidfd::open(pid)?;
        let same = crate::procs::stat(pid).map(|s| s.start) == Some(start);
        Ok(held.filter(|_| same))
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor lives as long as self.
        unsafe { BorrowedFd::borrow_raw(self.fd.as_raw_fd()) }
    }

    /// Send `signal`; false when the process has ended (or the kernel refused).
    pub fn signal(&self, signal: libc::c_int) -> bool {
        send(self.fd.as_raw_fd(), signal)
    }

    /// Whether the process has ended (a pidfd reads as ready then).
    pub fn ended(&self) -> bool {
        ended(self.fd.as_raw_fd())
    }
}

/// The soft open-files limit raised to the hard one; whether it rose.
fn raise_to_hard() -> bool {
    // SAFETY: getrlimit and setrlimit read and write only the struct passed.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max && {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0
        }
    }
}

/// pidfd_send_signal on a raw descriptor (the watchdog holds them so).
pub(crate) fn send(fd: i32, signal: libc::c_int) -> bool {
    // SAFETY: pidfd_send_signal with no siginfo; on a descriptor that is no pidfd it fails.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd,
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        ) == 0
    }
}

/// Whether the process a pidfd holds has ended, without waiting.
pub(crate) fn ended(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd we own, no timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & libc::POLLIN != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_process_is_signalled_until_it_ends_and_never_after() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let start = crate::procs::stat(child.id()).unwrap().start;
        assert!(
            Pidfd::open_as(child.id(), start + 1).unwrap().is_none(),
            "another start is another process"
        );
        let held = Pidfd::open_as(child.id(), start).unwrap().unwrap();
        assert!(!held.ended());
        assert!(held.signal(libc::SIGKILL));
        child.wait().unwrap();
        assert!(held.ended());
        assert!(
            !held.signal(libc::SIGKILL),
            "an ended process takes no signal"
        );
    }
}
