//! The process listening on a TCP port of this host: how a server bakeoff did not start is
//! found, to sample it (`/proc/net/tcp` and `tcp6` give the listening socket's inode, a
//! process's `/proc/PID/fd` the socket that is it). Seeing another user's descriptors needs
//! that user or root; otherwise the server stays unknown, and the reason says so.

use std::path::Path;

/// The pid and command name of the process listening on `port` (any address), or why none
/// was found.
pub fn listening_process(port: u16) -> Result<(u32, String), String> {
    let inodes = listening_inodes(Path::new("/proc/net"), port);
    if inodes.is_empty() {
        return Err(format!("nothing listens on TCP port {port} on this host"));
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let procs = super::procfs::process_ids().map_err(|e| format!("/proc: {e}"))?;
    for pid in procs {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if wanted.iter().any(|w| target.as_os_str() == w.as_str()) {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                return Ok((pid, comm.trim().to_string()));
            }
        }
    }
    Err(format!(
        "a socket listens on TCP port {port}, but its process is not visible to this user (uid {}): run bakeoff there as root or as the server's own user",
        // SAFETY: getuid has no failure mode and touches no memory.
        unsafe { libc::getuid() }
    ))
}

/// The inodes of the sockets in LISTEN state (0A) on `port`, from `tcp` and `tcp6` under
/// `net` (`/proc/net`).
fn listening_inodes(net: &Path, port: u16) -> Vec<u64> {
    let port_hex = format!("{port:04X}");
    let mut out = Vec::new();
    for file in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(net.join(file)) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let listening_here = *state == "0A" && local.rsplit(':').next() == Some(&port_hex);
            if let (true, Ok(i)) = (listening_here, inode.parse::<u64>()) {
                out.push(i);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_found_listening_and_a_free_port_is_said_to_be_free() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (pid, _) = listening_process(port).unwrap();
        assert_eq!(pid, std::process::id());
        drop(l);
        let e = listening_process(port).unwrap_err();
        assert!(e.contains("nothing listens"), "{e}");
    }

    #[test]
    fn the_tables_are_read_by_state_and_port() {
        let dir = std::env::temp_dir().join(format!("bakeoff-nettcp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("tcp"),
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000   106        0 4242 1\n   1: 0100007F:0CEA 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   106        0 4343 1\n",
        )
        .unwrap();
        assert_eq!(listening_inodes(&dir, 3306), vec![4242]);
        assert!(listening_inodes(&dir, 3307).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
