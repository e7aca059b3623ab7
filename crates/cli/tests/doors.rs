//! The lab's doors on test hosts (network namespaces with a real sshd, see
//! bakeoff_testkit::hosts): a slow server start is waited for, a start abandoned by a lost link
//! leaves nothing behind, and a damaged or cut-off copy of the agent is never run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bakeoff_testkit::hosts::{Hosts, Kind};
use bakeoff_testkit::wait_for;

const BAKEOFF: &str = env!("CARGO_BIN_EXE_bakeoff");

fn scratch(name: &str) -> PathBuf {
    let dir = bakeoff_testkit::scratch::dir(&format!("doors-{name}"));
    dir
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A server binary that waits `seconds` before it becomes mariadbd (but answers --version at
/// once, as bakeoff reads the server's family from it).
fn slow_server(dir: &Path, seconds: u32) -> PathBuf {
    let real = ["/usr/sbin/mariadbd", "/usr/bin/mariadbd"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("no mariadbd in /usr/sbin or /usr/bin: apt-get install mariadb-server");
    let bin = dir.join("slow");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.join("mariadbd");
    executable(
        &path,
        &format!("#!/bin/sh\n[ \"$1\" = --version ] || sleep {seconds}\nexec {real} \"$@\"\n"),
    );
    path
}

#[test]
fn a_server_that_takes_15_s_to_start_on_the_server_host_ends_in_an_ok_cell() {
    let hosts = Hosts::new(&[("a", Kind::Full)]);
    let dir = scratch("slow");
    let slow = slow_server(&dir, 15);
    let file = dir.join("slow.toml");
    std::fs::write(
        &file,
        format!(
            "duration = 2\nthreads = [1]\n[hosts]\nserver = \"{}\"\n[dataset]\ntable_size = 200\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"slow\"\nbinary = \"{}\"\n",
            hosts.url("a"),
            slow.display()
        ),
    )
    .unwrap();
    let o = hosts
        .local_command(BAKEOFF)
        .args(["study", "run", file.to_str().unwrap(), "--db"])
        .arg(dir.join("slow.db"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("1 ok, 0 failed"), "{err}");
    assert!(!hosts.runs("a", "mariadbd"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_start_abandoned_when_the_link_goes_leaves_nothing_on_the_host() {
    let hosts = Hosts::new(&[("a", Kind::Full)]);
    let dir = scratch("abandoned");
    let slow = slow_server(&dir, 60);
    let child = hosts
        .local_command(BAKEOFF)
        .args(["run", "oltp_point_select", "--time=2", "--server-host"])
        .arg(hosts.url("a"))
        .arg("--server-binary")
        .arg(&slow)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The slow server's script is running in host a: its run directory is in its datadir.
    let mut rundir = None;
    wait_for(
        Duration::from_secs(60),
        || "the slow server never started in host a".into(),
        || {
            rundir = hosts
                .command_lines("a", "mariadbd")
                .into_iter()
                .flatten()
                .find_map(|a| a.strip_prefix("--datadir=").map(PathBuf::from))
                .and_then(|d| d.parent().map(Path::to_path_buf));
            rundir.is_some()
        },
    );
    let rundir = rundir.unwrap();
    assert!(rundir.exists());
    hosts.cut("a");
    // sshd there drops the session within ~12 s, the agent hears nothing for 10 s: either way
    // the start is abandoned well before the script would have become a server.
    wait_for(
        Duration::from_secs(30),
        || {
            format!(
                "30 s after the link was cut, host a still has {:?} and {} exists: {}",
                hosts.processes("a"),
                rundir.display(),
                rundir.exists()
            )
        },
        || {
            !hosts.runs("a", "mariadbd")
                && !hosts.runs("a", "sleep")
                && !hosts
                    .processes("a")
                    .iter()
                    .any(|p| p.starts_with("bakeoff"))
                && !rundir.exists()
        },
    );
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // No server, nothing measured: bakeoff run's environment error, naming the host.
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&hosts.url("a")), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_or_cut_off_agent_copy_is_removed_and_sent_again() {
    let hosts = Hosts::with_own_agent_cache(&[("a", Kind::Full)]);
    let dir = scratch("upload");
    let cache = hosts.agent_cache().unwrap();
    let sha = bakeoff_server::file_sha256(Path::new(BAKEOFF)).unwrap();
    let cached = cache.join(format!("bakeoff-{}", &sha[..16]));
    // A copy that a dropped link cut short, left where a bakeoff before this one put it.
    let binary = std::fs::read(BAKEOFF).unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    executable(&cached, "");
    std::fs::write(&cached, &binary[..1 << 20]).unwrap();
    // ssh as bakeoff runs it, but the first upload's link "drops" after 1 MB.
    let count = dir.join("uploads");
    let ssh = dir.join("ssh");
    executable(
        &ssh,
        &format!(
            "#!/bin/sh\ncase \"$*\" in *.upload.*)\n  n=$(( $(cat {c} 2>/dev/null || echo 0) + 1 )); echo $n > {c}\n  if [ $n = 1 ]; then head -c 1000000 | {ssh} \"$@\"; exit $?; fi;;\nesac\nexec {ssh} \"$@\"\n",
            c = count.display(),
            ssh = hosts.bakeoff_ssh()
        ),
    );
    let o = hosts
        .local_command(BAKEOFF)
        .env("BAKEOFF_SSH", &ssh)
        .args(["run", "oltp_point_select", "--time=1", "--table-size=100"])
        .arg("--server-host")
        .arg(hosts.url("a"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(&count).unwrap().trim(),
        "2",
        "the cut-off upload was sent again, once"
    );
    assert_eq!(
        bakeoff_server::file_sha256(&cached).as_deref(),
        Some(sha.as_str()),
        "the cached copy is bakeoff"
    );
    let left: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".upload"))
        .collect();
    assert!(left.is_empty(), "partial uploads left: {left:?}");
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the cache is private");
    let _ = std::fs::remove_dir_all(&dir);
}
