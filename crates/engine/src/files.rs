//! Room in this process's open-files limit for the clients a run builds. Every path that
//! builds clients (`bakeoff run`, sysbench's grammar, a study's runs, a client host's share,
//! `bakeoff pgbench`) reaches the engine's `run_sampled` or `run_turns`, which check here
//! before anything is built per client; a command that starts servers checks earlier too,
//! with [`raise_open_files`], so the servers inherit the raised limit and a refusal comes
//! before hours of loading.

use crate::{EngineError, RunSpec};

/// This process's open-files limit: (soft, hard). `RLIM_INFINITY` reads as `u64::MAX`.
pub fn open_files_limit() -> Result<(u64, u64), String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(format!(
            "reading the open-files limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// Make sure this process may open `needed` files: raise the soft limit up to the hard one,
/// or say what to change. Returns the limit now in force. Servers started afterwards inherit it
/// (mariadbd lowers max_connections quietly when its limit is too low).
pub fn raise_open_files(needed: u64) -> Result<u64, String> {
    let (soft, hard) = open_files_limit()?;
    if soft >= needed {
        return Ok(soft);
    }
    if hard < needed {
        return Err(format!(
            "this run needs about {needed} open files, but the limit here is {soft} (hard {hard}); raise it (ulimit -n {needed} as root, or LimitNOFILE= in a systemd unit) or use fewer connections"
        ));
    }
    let raised = libc::rlimit {
        rlim_cur: needed,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(format!(
            "raising the open-files limit to {needed}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(needed)
}

/// The files a run of `connections` over `threads` client threads holds at once: what this
/// process has open now, a socket per connection, each thread's runtime (its epoll and its
/// waker), and a few to spare (the sampler's /proc reads, a script's own files).
pub fn clients_need(connections: u64, threads: u32) -> u64 {
    let open_now = std::fs::read_dir("/proc/self/fd").map_or(16, |d| d.count() as u64);
    open_now + connections + 2 * u64::from(threads) + 32
}

/// Raise the limit for the run's clients, each holding a connection to each of `servers`
/// (servers taking turns), or refuse the run, before any client is built.
pub(crate) fn room_for_clients(spec: &RunSpec, servers: usize) -> Result<(), EngineError> {
    let threads = spec.client_threads.clamp(1, spec.connections.max(1));
    let connections = u64::from(spec.connections.max(1)) * servers.max(1) as u64;
    raise_open_files(clients_need(connections, threads))
        .map(drop)
        .map_err(|reason| EngineError::OpenFiles {
            connections,
            reason,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_limit_is_enough_for_a_few_files_and_a_huge_need_is_refused_with_numbers() {
        assert!(raise_open_files(16).unwrap() >= 16);
        let e = raise_open_files(u64::MAX / 2).unwrap_err();
        assert!(
            e.contains("open-files limit") || e.contains("open files"),
            "{e}"
        );
    }

    #[test]
    fn a_run_needs_a_file_per_connection_and_is_refused_before_its_clients_when_they_do_not_fit() {
        assert!(clients_need(1000, 4) > 1008);
        let spec = RunSpec {
            connections: u32::MAX,
            client_threads: 4,
            ..RunSpec::default()
        };
        let e = room_for_clients(&spec, 1).unwrap_err().to_string();
        assert!(
            e.starts_with("4294967295 connections: this run needs about")
                && e.contains("use fewer connections"),
            "{e}"
        );
        // Servers taking turns: each client holds a connection to each of them.
        let spec = RunSpec {
            connections: 1_000_000,
            ..RunSpec::default()
        };
        let e = room_for_clients(&spec, 1_000_000).unwrap_err().to_string();
        assert!(e.starts_with("1000000000000 connections:"), "{e}");
    }
}
