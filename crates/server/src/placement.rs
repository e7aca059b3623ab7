//! Where the client runs beside the servers: the CPUs this machine has, the CPUs bakeoff was
//! started on, pinning a thread, and the rule that keeps the load off the servers' CPUs.
//!
//! The load threads inherit their CPU set from the thread that spawns them, so the caller pins
//! itself ([`pin_this_thread`]) before a phase and every thread started after follows. Servers
//! never inherit it: each is given its variant's CPUs, or the CPUs bakeoff was started on
//! ([`launch_cpus`]), between fork and exec.

use std::io;
use std::sync::OnceLock;

pub use crate::variant::online_cpus;
use crate::variant::CpuList;

/// The CPUs bakeoff was started on (taskset's set, else all): recorded before bakeoff pins any
/// thread of its own, so a server without a CPU list of its own runs where bakeoff was allowed
/// to, never on the client's CPUs.
pub fn launch_cpus() -> CpuList {
    static LAUNCH: OnceLock<CpuList> = OnceLock::new();
    LAUNCH
        .get_or_init(|| {
            thread_cpus()
                .or_else(|_| online_cpus())
                .unwrap_or_else(|_| CpuList::single(0))
        })
        .clone()
}

/// The calling thread's CPU set (sched_getaffinity).
pub fn thread_cpus() -> io::Result<CpuList> {
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the size is that of the set we pass.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET reads the set we own, with indexes below its size.
    let cpus = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) });
    CpuList::from_cpus(cpus.map(|c| c as u32)).ok_or_else(|| io::Error::other("empty CPU set"))
}

/// Pin the calling thread to `cpus`; threads it starts afterwards inherit the set.
pub fn pin_this_thread(cpus: &CpuList) -> io::Result<()> {
    launch_cpus(); // record where bakeoff started before the first change
    let set = cpus.to_cpu_set();
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The union of the CPU sets of process `pid`'s threads (taskset -a pins each thread): a
/// server's CPUs when bakeoff did not start it. None when /proc does not say.
pub fn process_cpus(pid: u32) -> Option<CpuList> {
    let mut all: Option<CpuList> = None;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        // A thread that ended meanwhile has nothing to add.
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        let Some(list) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(|v| v.trim().parse::<CpuList>().ok())
        else {
            continue;
        };
        all = Some(all.map_or_else(|| list.clone(), |a| a.union(&list)));
    }
    all
}

/// How the client's CPUs were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Chosen {
    /// `--client-cpus` / `client_cpus`.
    Given,
    /// The CPUs outside every server's set.
    OutsideServers,
    /// Nothing was placed: client and servers share bakeoff's CPUs.
    Everywhere,
}

/// Where the load runs, and whether it shares CPUs with a server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClientPlacement {
    pub cpus: CpuList,
    pub chosen: Chosen,
    /// CPUs the client shares with a server, when CPUs were placed at all.
    pub shared: Option<CpuList>,
    /// Every server's CPUs are known and the client's are none of them: the client may keep
    /// its CPUs busy without taking the server's.
    pub apart: bool,
}

impl ClientPlacement {
    /// Place the client. `given`: the CPUs asked for; `servers`: each server's CPU list (None:
    /// the server runs on all of `own`); `own`: the CPUs bakeoff was started on.
    pub fn choose(given: Option<&CpuList>, servers: &[Option<&CpuList>], own: &CpuList) -> Self {
        let server_cpus = union_of(servers, own);
        match given {
            Some(g) => {
                let shared = server_cpus.as_ref().and_then(|s| g.intersection(s));
                ClientPlacement {
                    cpus: g.clone(),
                    chosen: Chosen::Given,
                    apart: server_cpus.is_some() && shared.is_none(),
                    shared,
                }
            }
            None if !servers.iter().any(Option::is_some) => ClientPlacement::unplaced(&[], own),
            None => match server_cpus.as_ref().and_then(|s| own.difference(s)) {
                Some(rest) => ClientPlacement {
                    cpus: rest,
                    chosen: Chosen::OutsideServers,
                    shared: None,
                    apart: true,
                },
                None => ClientPlacement::unplaced(servers, own),
            },
        }
    }

    /// The client left on `own`, bakeoff's CPUs: it shares them with every pinned server
    /// among `servers` (a run with no server pinned warns about nothing).
    pub fn unplaced(servers: &[Option<&CpuList>], own: &CpuList) -> Self {
        let placed = servers.iter().any(Option::is_some);
        ClientPlacement {
            cpus: own.clone(),
            chosen: Chosen::Everywhere,
            shared: union_of(servers, own)
                .filter(|_| placed)
                .and_then(|s| own.intersection(&s)),
            apart: false,
        }
    }

    /// How many CPUs the client has: its threads' default count.
    pub fn cpu_count(&self) -> u32 {
        self.cpus.len().max(1) as u32
    }

    /// Whether bakeoff must pin its load threads (nothing to do when it runs everywhere).
    pub fn pins(&self) -> bool {
        self.chosen != Chosen::Everywhere
    }

    /// One line for the user on where the client runs, when it was placed.
    pub fn note(&self) -> Option<String> {
        match self.chosen {
            Chosen::Given => Some(format!("the client runs on CPUs {}", self.cpus)),
            Chosen::OutsideServers => Some(format!(
                "the client runs on CPUs {}, the ones outside the server's",
                self.cpus
            )),
            Chosen::Everywhere => None,
        }
    }

    /// The warning when client and server share CPUs, so the curve measures the mix.
    pub fn warning(&self) -> Option<String> {
        self.shared
            .as_ref()
            .map(|s| format!("client shares CPUs {s} with the server"))
    }
}

/// Every CPU the servers may run on (an unpinned one: all of `own`); None without servers.
fn union_of(servers: &[Option<&CpuList>], own: &CpuList) -> Option<CpuList> {
    servers
        .iter()
        .map(|s| s.unwrap_or(own))
        .fold(None, |acc: Option<CpuList>, s| {
            Some(acc.map_or_else(|| s.clone(), |a| a.union(s)))
        })
}

/// What placing the client does when the kernel refuses its pin (CPUs this machine lacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenRefused {
    /// Fail: the user asked for these CPUs on this machine (`bakeoff run --client-cpus`).
    Fail,
    /// Leave the load on bakeoff's own CPUs, recorded as such (a study whose file names CPUs
    /// of another machine; `study check` says which).
    RunEverywhere,
}

/// Choose where the client runs beside servers on `servers` (each server's CPU list, None for
/// an unpinned one) and pin the calling thread there, so every load thread started after it
/// (load, warmup, runs) inherits the set. `bakeoff run` and a study's series both place their
/// client here.
pub fn place_this_thread(
    given: Option<&CpuList>,
    servers: &[Option<&CpuList>],
    refused: WhenRefused,
) -> io::Result<ClientPlacement> {
    let own = launch_cpus();
    let placement = ClientPlacement::choose(given, servers, &own);
    // Unpinned, the thread goes back to bakeoff's CPUs: an earlier series' pin must not stay.
    let target = if placement.pins() {
        &placement.cpus
    } else {
        &own
    };
    match pin_this_thread(target) {
        Ok(()) => Ok(placement),
        Err(e) if refused == WhenRefused::Fail && placement.pins() => Err(e),
        Err(_) => {
            let _ = pin_this_thread(&own);
            Ok(ClientPlacement::unplaced(servers, &own))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> CpuList {
        s.parse().unwrap()
    }

    #[test]
    fn the_client_takes_the_cpus_the_servers_leave() {
        let p = ClientPlacement::choose(None, &[Some(&l("0-11"))], &l("0-15"));
        assert_eq!(
            (p.cpus.to_string(), p.chosen),
            ("12-15".into(), Chosen::OutsideServers)
        );
        assert_eq!(p.warning(), None);
        assert!(p.apart);
        // Two instances: the client avoids both.
        let p = ClientPlacement::choose(None, &[Some(&l("0-3")), Some(&l("4-7"))], &l("0-15"));
        assert_eq!(p.cpus.to_string(), "8-15");
    }

    #[test]
    fn nothing_left_means_sharing_with_a_warning() {
        let p = ClientPlacement::choose(None, &[Some(&l("0-1"))], &l("0-1"));
        assert_eq!(p.chosen, Chosen::Everywhere);
        assert_eq!(
            p.warning().as_deref(),
            Some("client shares CPUs 0-1 with the server")
        );
        assert!(!p.pins());
    }

    #[test]
    fn a_given_set_is_kept_and_an_overlap_is_named() {
        let p = ClientPlacement::choose(Some(&l("2-5")), &[Some(&l("0-3"))], &l("0-7"));
        assert_eq!(p.cpus.to_string(), "2-5");
        assert_eq!(
            p.warning().as_deref(),
            Some("client shares CPUs 2-3 with the server")
        );
        assert!(!p.apart);
        let p = ClientPlacement::choose(Some(&l("1")), &[Some(&l("0"))], &l("0-1"));
        assert_eq!(p.warning(), None);
        assert!(p.apart);
        // An unpinned server runs everywhere, so a pinned client shares with it.
        let p = ClientPlacement::choose(Some(&l("1")), &[None], &l("0-1"));
        assert_eq!(
            p.warning().as_deref(),
            Some("client shares CPUs 1 with the server")
        );
        assert!(!p.apart);
        // A server whose CPUs are not known: the client is not known to be apart from it.
        let p = ClientPlacement::choose(Some(&l("1")), &[], &l("0-1"));
        assert!(!p.apart && p.warning().is_none());
    }

    #[test]
    fn a_client_left_unplaced_beside_a_pinned_server_is_warned_about() {
        let p = ClientPlacement::unplaced(&[Some(&l("0"))], &l("0-1"));
        assert_eq!(p.chosen, Chosen::Everywhere);
        assert_eq!(
            p.warning().as_deref(),
            Some("client shares CPUs 0 with the server")
        );
        assert!(!p.pins());
    }

    #[test]
    fn an_unplaced_run_is_left_alone() {
        let p = ClientPlacement::choose(None, &[None], &l("0-1"));
        assert_eq!((p.chosen, p.warning()), (Chosen::Everywhere, None));
        let p = ClientPlacement::choose(None, &[], &l("0-1"));
        assert_eq!(p.chosen, Chosen::Everywhere);
    }

    #[test]
    fn a_process_cpus_are_its_threads_sets() {
        let pid = std::process::id();
        let one = CpuList::single(launch_cpus().iter().next().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        let pinned = one.clone();
        let t = std::thread::spawn(move || {
            pin_this_thread(&pinned).unwrap();
            tx.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(200));
        });
        rx.recv().unwrap();
        // One pinned thread among unpinned ones: the process may run on all of them.
        assert_eq!(process_cpus(pid), Some(launch_cpus()));
        t.join().unwrap();
        // A process pinned as a whole (taskset): its set.
        let mut child = std::process::Command::new("taskset")
            .args(["-c", &one.to_string(), "sleep", "5"])
            .spawn()
            .expect("taskset (util-linux)");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while process_cpus(child.id()) != Some(one.clone()) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(process_cpus(child.id()), Some(one));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(process_cpus(u32::MAX), None);
    }

    #[test]
    fn pinning_is_read_back() {
        let own = thread_cpus().unwrap();
        let one = CpuList::single(own.iter().next().unwrap());
        std::thread::spawn(move || {
            pin_this_thread(&one).unwrap();
            assert_eq!(thread_cpus().unwrap(), one);
            // A thread started now inherits the set.
            let child = std::thread::spawn(thread_cpus).join().unwrap().unwrap();
            assert_eq!(child, one);
        })
        .join()
        .unwrap();
        assert_eq!(launch_cpus(), own);
    }
}
