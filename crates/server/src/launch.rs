//! Spawning server processes so that they can never outlive bakeoff.
//!
//! Linux sends the parent-death signal when the *thread* that forked the child exits, not the
//! process. Test harnesses and async runtimes end threads all the time, so every server is
//! forked by one spawner thread that lives as long as the process.

use std::ffi::CString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};

/// The unprivileged account servers run as when bakeoff runs as root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// `None` when bakeoff is not root (servers then run as the current user); otherwise the
/// first of `names` that exists (a family's own accounts: Debian's server packages create
/// `mysql` and `postgres`; `nobody` last).
pub fn unprivileged_user_of(names: &[&str]) -> Option<RunAs> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    names.iter().find_map(|name| lookup_user(name))
}

fn lookup_user(name: &str) -> Option<RunAs> {
    let cname = CString::new(name).ok()?;
    // SAFETY: getpwnam returns NULL or a pointer to static storage that we read at once; bakeoff
    // does not call getpw* from other threads while servers are being set up.
    let pw = unsafe { libc::getpwnam(cname.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: pw is non-null and points to a valid passwd record.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Some(RunAs { uid, gid })
}

type Job = (Command, Sender<io::Result<Child>>);

fn spawner() -> &'static Mutex<Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("bakeoff-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawning a thread at startup");
        Mutex::new(tx)
    })
}

/// Where the child runs and allocates: a CPU set (taskset) and a NUMA memory policy (numactl),
/// both set between fork and exec so they hold from the server's first instruction.
#[derive(Default)]
pub struct Placement {
    pub cpus: Option<libc::cpu_set_t>,
    pub numa: Option<(i32, [u64; 16])>,
}

impl Placement {
    /// The variant's CPUs, else the CPUs bakeoff was started on: a server never inherits the
    /// CPU set bakeoff gave its own load threads.
    pub fn of(v: &crate::variant::Variant) -> Placement {
        let cpus = v.cpus.clone().unwrap_or_else(crate::placement::launch_cpus);
        Placement {
            cpus: Some(cpus.to_cpu_set()),
            numa: v.numa.syscall_args(),
        }
    }
}

/// Spawn `cmd` in its own process group, as `run_as` when given, killed if bakeoff dies.
pub fn spawn_contained(
    mut cmd: Command,
    run_as: Option<RunAs>,
    placement: Placement,
) -> io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // Own process group: a Ctrl-C in the terminal reaches bakeoff only, which then stops the
    // server in order instead of the server dying mid-run.
    cmd.process_group(0);
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (setgroups, setgid, setuid, prctl, getppid, sched_setaffinity,
    // set_mempolicy); the CPU set and node mask were built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(r) = run_as {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(r.gid) != 0
                    || libc::setuid(r.uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            // After setuid: a credential change clears the parent-death signal.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::other("bakeoff exited while starting the server"));
            }
            if let Some(set) = &placement.cpus {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some((mode, mask)) = &placement.numa {
                crate::variant::apply_numa(*mode, mask)?;
            }
            Ok(())
        });
    }
    let child = crate::abandon::spawn_tracked(|| {
        let (tx, rx) = mpsc::channel();
        spawner()
            .lock()
            .map_err(|_| io::Error::other("spawner lock poisoned"))?
            .send((cmd, tx))
            .map_err(|_| io::Error::other("spawner thread is gone"))?;
        rx.recv()
            .map_err(|_| io::Error::other("spawner thread is gone"))?
    })?;
    // The watchdog kills it if bakeoff is killed (the parent-death signal does too, but only
    // once the spawner thread is gone, and not a child that changed its credentials).
    if let Ok(Some(held)) = crate::pidfd::Pidfd::open(child.id()) {
        crate::watchdog::hold([held.fd()]);
    }
    Ok(child)
}

/// Send `sig` to a child we spawned (never to a PID read from anywhere else).
pub fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions; the pid is our own unreaped child, so it
    // cannot have been recycled for another process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

/// Send `sig` to the process group of a child we spawned (each server leads its own group, see
/// [`spawn_contained`]): a wrapper script and whatever it started go too.
pub fn signal_group(child: &Child, sig: libc::c_int) {
    // SAFETY: as in `signal`; the group's id is our unreaped child's pid, so it names no one else.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), sig);
    }
}

/// Only what a server needs: the user's environment (MYSQL_HOME, LD_PRELOAD...) must not
/// change a run.
pub(crate) fn scrub_env(cmd: &mut Command) {
    cmd.env_clear().env(
        "PATH",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    );
    if let Ok(tz) = std::env::var("TZ") {
        cmd.env("TZ", tz);
    }
}
