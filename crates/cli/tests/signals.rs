//! However bakeoff ends, nothing it started outlives it. A study of two PostgreSQL variants
//! taking turns (the idle server frozen: a cgroup of its own as root, SIGSTOP to each process
//! as another user) is ended mid-turn by SIGTERM, SIGHUP or SIGKILL; 15 s later no process,
//! cgroup or run directory of it is left. SIGTERM and SIGHUP count as a first Ctrl-C (a clean
//! stop, exit 130, what was measured kept); SIGKILL leaves the work to the watchdog.
//!
//! The tests run bakeoff as root (CI does) and, as the same root, as the `nobody` account:
//! each way of freezing is tried. They need root to do both, and fail without it.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STUDY: &str = "engine = \"postgresql\"\nduration = 60\nthreads = [4]\nrepetitions = 2\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nsettings = [{ synchronous_commit = \"on\" }, { synchronous_commit = \"off\" }]\n";

/// A study on the embedded MariaDB, for what bakeoff leaves while it makes a datadir.
const MARIADB_STUDY: &str = "duration = 2\nthreads = [2]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nallocator = [\"glibc\", \"jemalloc\"]\n";

struct Trial {
    dir: PathBuf,
    as_nobody: bool,
}

impl Trial {
    fn new(name: &str, as_nobody: bool) -> Trial {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "these tests run bakeoff as root and as nobody: run them as root (CI does)"
        );
        let dir = bakeoff_testkit::scratch::dir(name);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::write(dir.join("study.toml"), STUDY).unwrap();
        if as_nobody {
            for p in [dir.clone(), dir.join("tmp"), dir.join("study.toml")] {
                std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
            }
        }
        Trial { dir, as_nobody }
    }

    fn start(&self) -> Child {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
        c.args(["study", "run"])
            .arg(self.dir.join("study.toml"))
            .env("TMPDIR", self.dir.join("tmp"))
            .env("HOME", &self.dir)
            .env_remove("BAKEOFF_DB")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.join("stderr")).unwrap());
        if self.as_nobody {
            c.uid(65534).gid(65534);
        }
        c.spawn().expect("spawn bakeoff study run")
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    /// Processes of this trial: whose command line names its directory or a run directory
    /// of bakeoff process `bakeoff` (bakeoff, its watchdog, initializers, postmasters) or that
    /// work in one (every PostgreSQL process works in its datadir), with their state.
    fn processes(&self, bakeoff: u32) -> Vec<String> {
        let marks = [
            self.dir.display().to_string(),
            format!("/bakeoff-{bakeoff}-"),
        ];
        bakeoff_testkit::procs::living()
            .iter()
            .filter(|p| {
                marks
                    .iter()
                    .any(|m| p.cmdline.contains(m) || p.cwd.contains(m))
            })
            .map(|p| p.line())
            .collect()
    }

    /// Bakeoff process `bakeoff`'s run directories, in TMPDIR or /tmp (where a socket path
    /// too long for TMPDIR sends them).
    fn rundirs(&self, bakeoff: u32) -> Vec<String> {
        let prefix = format!("bakeoff-{bakeoff}-");
        [self.dir.join("tmp"), PathBuf::from("/tmp")]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path().display().to_string())
            .collect()
    }
}

/// The cgroups bakeoff process `pid` made.
fn groups_of(pid: u32) -> Vec<PathBuf> {
    // Where bakeoff, this test's child, makes its groups.
    let Some(parent) = bakeoff_server::cgroup::own_v2_dir() else {
        return Vec::new();
    };
    let prefix = format!("bakeoff-{pid}-");
    std::fs::read_dir(parent)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// What is frozen now: the cgroups of bakeoff's that read frozen, and the trial's processes
/// stopped by a signal.
fn frozen(trial: &Trial, bakeoff: u32) -> (usize, usize) {
    let groups = groups_of(bakeoff)
        .iter()
        .filter(|g| {
            std::fs::read_to_string(g.join("cgroup.events"))
                .is_ok_and(|e| e.lines().any(|l| l == "frozen 1"))
        })
        .count();
    let stopped = trial
        .processes(bakeoff)
        .iter()
        .filter(|p| p.split(' ').nth(1) == Some("T"))
        .count();
    (groups, stopped)
}

/// Start the study, wait until a server is frozen, send `signal`, and check that 15 s later
/// nothing of it is left.
fn end_mid_turn(name: &str, signal: libc::c_int, as_nobody: bool) {
    let trial = Trial::new(name, as_nobody);
    let mut child = trial.start();
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(180);
    while frozen(&trial, pid) == (0, 0) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("bakeoff ended before a turn ({status}): {}", trial.stderr());
        }
        assert!(
            Instant::now() < until,
            "no server frozen in 180 s: {}\n{:?}",
            trial.stderr(),
            trial.processes(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // What the check after the signal looks for is there now, so its absence later says
    // something: frozen the way this account freezes, the servers' processes and their run
    // directories seen.
    let (groups, stopped) = frozen(&trial, pid);
    let way = if as_nobody {
        assert!(
            groups == 0 && stopped > 0,
            "as nobody, frozen by SIGSTOP: {groups} groups, {stopped} stopped"
        );
        "as nobody: SIGSTOP"
    } else {
        assert!(
            groups > 0,
            "as root, frozen as a cgroup: {groups} groups, {stopped} stopped"
        );
        "as root: cgroups"
    };
    let postgres = trial
        .processes(pid)
        .iter()
        .filter(|p| p.contains("postgres"))
        .count();
    assert!(
        postgres >= 10,
        "two servers' processes seen: {:#?}",
        trial.processes(pid)
    );
    let dirs = trial.rundirs(pid);
    assert!(
        dirs.len() >= 2,
        "the servers' run directories seen: {dirs:?}"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, signal) };
    let status = child.wait().unwrap();
    if signal == libc::SIGKILL {
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
    } else {
        // A clean stop, as for Ctrl-C: interrupted, and said so.
        assert_eq!(status.code(), Some(130), "{way}: {}", trial.stderr());
        assert!(
            trial.stderr().contains("stopping cleanly, as for Ctrl-C"),
            "{}",
            trial.stderr()
        );
    }
    let until = Instant::now() + Duration::from_secs(15);
    let left = || (trial.processes(pid), groups_of(pid), trial.rundirs(pid));
    while left() != (vec![], vec![], vec![]) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (procs, cgroups, dirs) = left();
    assert!(
        procs.is_empty() && cgroups.is_empty() && dirs.is_empty(),
        "{way}, 15 s after signal {signal}: processes {procs:#?}, cgroups {cgroups:?}, run directories {dirs:?} in {}\nstderr: {}",
        trial.dir.display(),
        trial.stderr()
    );
}

#[test]
fn sigterm_as_root_stops_cleanly_and_leaves_nothing() {
    end_mid_turn("term-root", libc::SIGTERM, false);
}

#[test]
fn sighup_as_root_stops_cleanly_and_leaves_nothing() {
    end_mid_turn("hup-root", libc::SIGHUP, false);
}

#[test]
fn sigquit_as_root_stops_cleanly_and_leaves_nothing() {
    end_mid_turn("quit-root", libc::SIGQUIT, false);
}

#[test]
fn sigkill_as_root_leaves_nothing_the_watchdog_ends_it_all() {
    end_mid_turn("kill-root", libc::SIGKILL, false);
}

#[test]
fn sigterm_as_another_user_stops_cleanly_and_leaves_nothing() {
    end_mid_turn("term-nobody", libc::SIGTERM, true);
}

#[test]
fn sighup_as_another_user_stops_cleanly_and_leaves_nothing() {
    end_mid_turn("hup-nobody", libc::SIGHUP, true);
}

#[test]
fn sigkill_as_another_user_leaves_nothing_the_watchdog_ends_it_all() {
    end_mid_turn("kill-nobody", libc::SIGKILL, true);
}

#[test]
fn sigkill_while_a_datadir_is_made_leaves_no_initializer_running() {
    // mariadb-install-db is a script whose bootstrap server runs in its process group, and
    // outlives the script the parent-death signal kills: the watchdog ends the group.
    let trial = Trial::new("kill-init", false);
    std::fs::write(trial.dir.join("study.toml"), MARIADB_STUDY).unwrap();
    let mut child = trial.start();
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(60);
    while !trial
        .processes(pid)
        .iter()
        .any(|p| p.contains("--bootstrap"))
    {
        assert!(
            Instant::now() < until,
            "no initializer seen: {}",
            trial.stderr()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(15);
    let left = || (trial.processes(pid), trial.rundirs(pid));
    while left() != (vec![], vec![]) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left(), (vec![], vec![]), "15 s after SIGKILL");
}
