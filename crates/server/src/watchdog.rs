//! What ends what bakeoff started when bakeoff cannot: SIGKILL, a crash, the OOM killer. A
//! signal bakeoff can catch stops it cleanly (the CLI's handlers); these leave no code of
//! bakeoff's running, and the parent-death signal reaches only a server's first process, not
//! a PostgreSQL backend stopped between turns, which would never notice its postmaster died.
//!
//! So bakeoff forks a small watchdog at its start, while it is still one thread (the child
//! may then allocate and use the standard library safely), in a session of its own (a
//! terminal's Ctrl-C or hangup, or a kill of bakeoff's group, does not reach it). The two hold
//! the ends of a socket: bakeoff sends it a pidfd of every process it starts or freezes, and
//! when bakeoff's end closes, as it does however bakeoff ends, the watchdog kills every
//! process it holds (SIGKILL ends a stopped process too), ends bakeoff's cgroups
//! (`cgroup.kill`, frozen or not), waits until they are gone, removes bakeoff's run
//! directories, and exits. After a clean end it finds nothing left, and exits.
//!
//! Where no watchdog runs (a library's test binary, which is many threads before its first
//! test), [`hold`] does nothing: the parent-death signal and the sweeps at the next start
//! remain.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// bakeoff's end of the socket, once the watchdog runs.
static LINK: OnceLock<OwnedFd> = OnceLock::new();

/// Descriptors one message carries at most (the kernel's SCM_MAX_FD is 253).
const PER_MESSAGE: usize = 200;
/// How long the watchdog waits for what it killed to be gone before removing directories.
const WAIT_FOR_GONE: Duration = Duration::from_secs(10);

/// Fork the watchdog. Call once, first thing in `main`: refused once the process has a
/// second thread, since a child forked then could block for ever on a lock another thread
/// held at the fork.
pub fn start() -> Result<(), String> {
    if LINK.get().is_some() {
        return Ok(());
    }
    if threads() != Some(1) {
        return Err("the watchdog is forked only while bakeoff is one thread".into());
    }
    let (ours, theirs) = link_pair().map_err(|e| format!("socketpair: {e}"))?;
    // SAFETY: getpid has no preconditions.
    let owner = unsafe { libc::getpid() } as u32;
    // SAFETY: one thread (checked above), so the child inherits no lock another thread holds.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            drop(ours);
            watch(theirs, owner)
        }
        _ => {
            drop(theirs);
            let _ = LINK.set(ours);
            Ok(())
        }
    }
}

/// The two ends of a link: message boundaries kept (one message, one batch of descriptors),
/// neither end inherited by a program bakeoff starts.
fn link_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into `fds`.
    let made = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if made != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just made and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Give the watchdog these processes to kill if bakeoff ends without stopping them.
pub(crate) fn hold<'a>(pidfds: impl IntoIterator<Item = BorrowedFd<'a>>) {
    let Some(link) = LINK.get() else {
        return;
    };
    let fds: Vec<RawFd> = pidfds.into_iter().map(|f| f.as_raw_fd()).collect();
    for chunk in fds.chunks(PER_MESSAGE) {
        // Never blocking a turn's switch for long: a watchdog that does not read for a
        // second (stopped, or gone) cannot be helped; the sweeps at the next start remain.
        let until = Instant::now() + Duration::from_secs(1);
        while let Err(e) = send_fds(link.as_raw_fd(), chunk) {
            if e.kind() != std::io::ErrorKind::WouldBlock || Instant::now() > until {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The watchdog's life: hold what comes, and act when bakeoff's end closes.
fn watch(link: OwnedFd, owner: u32) -> ! {
    detach(&link);
    // Whether bakeoff is gone is asked of bakeoff itself when the link fails otherwise than
    // by closing: nothing of a live bakeoff's is ever killed.
    // SAFETY: getppid has no preconditions.
    let owner_held = (unsafe { libc::getppid() } as u32 == owner)
        .then(|| crate::pidfd::Pidfd::open(owner).ok().flatten())
        .flatten();
    // Each process with the pid it had when it came (a process group outlives its leader).
    let mut held: Vec<(Option<u32>, OwnedFd)> = Vec::new();
    let mut pruned_at = 0;
    loop {
        match recv_fds(3) {
            Ok(Some(fds)) => held.extend(fds.into_iter().map(|f| (pid_of(f.as_raw_fd()), f))),
            Ok(None) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) if owner_held.as_ref().is_some_and(|o| !o.ended()) => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            Err(_) => break,
        }
        // Processes that ended need no holding: forget them now and then, so a long study
        // holds what is alive, not everything it ever froze.
        if held.len() > 2 * pruned_at + 64 {
            held.retain(|(_, f)| !crate::pidfd::ended(f.as_raw_fd()));
            pruned_at = held.len();
        }
    }
    let groups = kill_all(&held);
    crate::cgroup::end_groups_of(owner);
    let until = Instant::now() + WAIT_FOR_GONE;
    let gone = || {
        let s = crate::procs::stats();
        held.iter().all(|(_, f)| crate::pidfd::ended(f.as_raw_fd()))
            && !s
                .values()
                .any(|p| groups.contains(&p.group) && p.state != 'Z')
    };
    while !gone() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::fence::remove_owners_rundirs(owner);
    // SAFETY: _exit ends this process; it shares nothing with bakeoff that needs flushing.
    unsafe { libc::_exit(0) }
}

/// Kill every process held, and the rest of the process group each that bakeoff spawned
/// leads (a datadir initializer's script leaves its server running in its group when it
/// dies): the groups killed.
fn kill_all(held: &[(Option<u32>, OwnedFd)]) -> Vec<i32> {
    let stats = crate::procs::stats();
    let mut groups = Vec::new();
    for (pid, f) in held {
        let fd = f.as_raw_fd();
        let ended = crate::pidfd::ended(fd);
        crate::pidfd::send(fd, libc::SIGKILL);
        let Some(pid) = *pid else {
            continue;
        };
        // A group keeps its leader's id while any member lives, and no process can take
        // that id meanwhile. So the id still names the group bakeoff spawned while the
        // leader held is alive, or, once it ended, while no process has its pid.
        let members = stats.values().any(|s| s.group == pid as i32);
        let ours = match stats.get(&pid) {
            Some(s) => !ended && s.group == pid as i32,
            None => members,
        };
        if ours {
            groups.push(pid as i32);
        }
    }
    for &g in &groups {
        // SAFETY: kill has no memory preconditions; `g` names a group bakeoff spawned (above).
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    groups
}

/// The pid a pidfd holds (its fdinfo's `Pid:` line; -1 there once the process was reaped).
fn pid_of(fd: RawFd) -> Option<u32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("Pid:"))?
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|&p| p > 0)
        .map(|p| p as u32)
}

/// Out of bakeoff's way: a session of its own, deaf to the signals that end bakeoff, holding
/// none of its descriptors (a pipe a caller reads bakeoff's output from must close when
/// bakeoff exits) but the link, as descriptor 3.
fn detach(link: &OwnedFd) {
    // SAFETY: each call below is a plain system call on this process's own state; the link
    // is valid; /dev/null is opened with a literal path.
    unsafe {
        libc::setsid();
        // Holding no directory in use: bakeoff's working directory may be unmounted or
        // removed while the watchdog waits.
        libc::chdir(c"/".as_ptr());
        libc::prctl(libc::PR_SET_NAME, c"bakeoff-watch".as_ptr());
        for signal in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(signal, libc::SIG_IGN);
        }
        // It may hold as many processes as bakeoff opens connections for.
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
        libc::dup2(link.as_raw_fd(), 3);
        libc::close_range(4, u32::MAX, 0);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 3 {
                libc::close(null);
            }
        }
    }
}

/// A message of one byte with room for `fds` descriptors, handed to `f` (the buffers live
/// on this frame for the call).
fn with_message<R>(fds: usize, f: impl FnOnce(&mut libc::msghdr) -> R) -> R {
    let mut byte = [b'p'];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE((fds * std::mem::size_of::<RawFd>()) as u32) } as usize;
    // u64s: a control buffer aligned as its headers need.
    let mut control = vec![0u64; space.div_ceil(8)];
    // SAFETY: an all-zero msghdr is valid; its fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    f(&mut msg)
}

fn send_fds(link: RawFd, fds: &[RawFd]) -> std::io::Result<()> {
    let sent = with_message(fds.len(), |msg| {
        // SAFETY: the control buffer has room for one header and `fds`.
        unsafe {
            let h = libc::CMSG_FIRSTHDR(msg);
            (*h).cmsg_level = libc::SOL_SOCKET;
            (*h).cmsg_type = libc::SCM_RIGHTS;
            (*h).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(h).cast(), fds.len());
            // SAFETY: msg points at live buffers for the duration of the call.
            libc::sendmsg(link, msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
        }
    });
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// One message's descriptors; None at the end (bakeoff's end closed).
fn recv_fds(link: RawFd) -> std::io::Result<Option<Vec<OwnedFd>>> {
    with_message(PER_MESSAGE, |msg| {
        // SAFETY: msg points at live buffers for the duration of the call.
        let n = unsafe { libc::recvmsg(link, msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(None);
        }
        Ok(Some(received(msg)))
    })
}

/// The descriptors a message received carries.
fn received(msg: &libc::msghdr) -> Vec<OwnedFd> {
    let mut out = Vec::new();
    // SAFETY: walking the control messages the kernel wrote, within msg_controllen.
    unsafe {
        let mut h = libc::CMSG_FIRSTHDR(msg);
        while !h.is_null() {
            if (*h).cmsg_level == libc::SOL_SOCKET && (*h).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(h).cast::<RawFd>();
                let count =
                    ((*h).cmsg_len - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    out.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            h = libc::CMSG_NXTHDR(msg, h);
        }
    }
    out
}

/// This process's threads, from /proc.
fn threads() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pidfd_sent_over_the_link_arrives_naming_its_process_and_a_closed_end_reads_as_the_end() {
        let (ours, theirs) = link_pair().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let held = crate::pidfd::Pidfd::open(child.id()).unwrap().unwrap();
        send_fds(
            ours.as_raw_fd(),
            &[held.fd().as_raw_fd(), held.fd().as_raw_fd()],
        )
        .unwrap();
        let got = recv_fds(theirs.as_raw_fd()).unwrap().unwrap();
        assert_eq!(got.len(), 2);
        for f in &got {
            assert_eq!(pid_of(f.as_raw_fd()), Some(child.id()));
        }
        assert!(crate::pidfd::send(got[0].as_raw_fd(), libc::SIGKILL));
        child.wait().unwrap();
        assert!(crate::pidfd::ended(got[1].as_raw_fd()));
        drop(ours);
        assert!(recv_fds(theirs.as_raw_fd()).unwrap().is_none(), "the end");
    }
}
