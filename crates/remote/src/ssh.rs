//! Running commands on another machine with the user's own OpenSSH: `ssh`, or what
//! `BAKEOFF_SSH` says (run through `sh -c`, as git runs GIT_SSH_COMMAND), so keys, agent,
//! ~/.ssh/config and jump hosts all apply. bakeoff adds only options that make a tool out of
//! it: no password prompts (BatchMode), a connect timeout, keepalives that notice a dead link
//! within seconds, and nothing the session does not need: no terminal (-T), no agent, X11 or
//! port forwarding, no shared master connection (options on the command line win over
//! ~/.ssh/config).

use std::process::{Command, Stdio};

use crate::url::HostUrl;
use crate::RemoteError;

/// Seconds ssh waits for a host to answer before giving up.
pub const CONNECT_TIMEOUT_S: u32 = 15;

const OPTIONS: &[&str] = &[
    "-T",
    // No X11 forwarding, and no shared connection: a user's ControlMaster would carry
    // bakeoff's sessions over a master another process opened (and may hold open).
    "-x",
    "-o",
    "ForwardX11=no",
    "-o",
    "ControlMaster=no",
    "-o",
    "ControlPath=none",
    "-o",
    "BatchMode=yes",
    "-o",
    "ForwardAgent=no",
    "-o",
    "ClearAllForwardings=yes",
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",
];

/// The ssh command that runs `remote` (one shell command line) on `host`.
pub fn command(host: &HostUrl, remote: &str) -> Command {
    let ssh = std::env::var("BAKEOFF_SSH")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "ssh".into());
    command_with(&ssh, host, remote)
}

/// [`command`] with `ssh` as the ssh command line.
fn command_with(ssh: &str, host: &HostUrl, remote: &str) -> Command {
    let mut cmd = Command::new("sh");
    // exec: the child bakeoff holds (and signals) is ssh itself, not a shell waiting on it.
    cmd.arg("-c")
        .arg(format!("exec {ssh} \"$@\""))
        .arg("bakeoff-ssh");
    cmd.args(OPTIONS);
    cmd.arg("-o")
        .arg(format!("ConnectTimeout={CONNECT_TIMEOUT_S}"));
    if let HostUrl::Ssh { port: Some(p), .. } = host {
        cmd.arg("-p").arg(p.to_string());
    }
    // "--" keeps a destination from being read as an option (HostUrl refuses those anyway).
    cmd.arg("--")
        .arg(host.destination().unwrap_or_default())
        .arg(remote);
    cmd
}

/// Run `remote` on `host` with `input` on its stdin; its stdout, or an error naming the host
/// and, from ssh's own words, what to do.
pub fn output(host: &HostUrl, remote: &str, input: Option<&[u8]>) -> Result<String, RemoteError> {
    use std::io::Write;
    let mut cmd = command(host, remote);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| RemoteError::Ssh {
        host: host.to_string(),
        what: format!("could not start ssh ({e}); install OpenSSH's client or set BAKEOFF_SSH"),
    })?;
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        // A failed write shows up as ssh's exit status below.
        let _ = stdin.write_all(data);
    }
    let out = child.wait_with_output().map_err(|e| RemoteError::Ssh {
        host: host.to_string(),
        what: e.to_string(),
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(failure(host, out.status.code(), &stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What a failed ssh means for the user. Exit status 255 is ssh's own failure (the link or the
/// login); anything else is the remote command's.
pub fn failure(host: &HostUrl, code: Option<i32>, stderr: &str) -> RemoteError {
    let said = last_lines(stderr, 3);
    let h = host.to_string();
    if code != Some(255) {
        return RemoteError::Ssh {
            host: h,
            what: format!(
                "the command there failed ({}): {said}",
                code.map_or("killed".into(), |c| format!("exit status {c}"))
            ),
        };
    }
    let what = if said.contains("Permission denied") || said.contains("Too many authentication") {
        format!("refused the ssh login ({said}); bakeoff never asks for a password (BatchMode): put your public key in that user's ~/.ssh/authorized_keys or load it into ssh-agent, and check that `ssh {}` logs in", host.destination().unwrap_or_default())
    } else if said.contains("Host key verification failed") {
        format!("its host key is unknown or changed ({said}); connect once with `ssh {}` to check and accept it", host.destination().unwrap_or_default())
    } else if said.is_empty() {
        "the ssh link failed without saying why".to_string()
    } else {
        format!("could not be reached over ssh ({said}); check the address, that sshd runs there and that this machine may connect (ssh gives up after {CONNECT_TIMEOUT_S} s)")
    };
    RemoteError::Ssh { host: h, what }
}

/// The last `n` non-empty lines of `s`, joined with "; ".
pub fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("; ")
}

/// `s` quoted for a POSIX shell.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_failures_say_what_to_do() {
        let h = HostUrl::parse("ssh://bench@db1").unwrap();
        let e = failure(&h, Some(255), "bench@db1: Permission denied (publickey).\n").to_string();
        assert!(
            e.contains("ssh://bench@db1") && e.contains("authorized_keys"),
            "{e}"
        );
        let e = failure(
            &h,
            Some(255),
            "ssh: connect to host db1 port 22: Connection timed out\n",
        )
        .to_string();
        assert!(
            e.contains("could not be reached") && e.contains("timed out"),
            "{e}"
        );
        let e = failure(&h, Some(3), "boom\n").to_string();
        assert!(e.contains("exit status 3") && e.contains("boom"), "{e}");
    }

    #[test]
    fn ssh_runs_as_the_child_itself_with_no_terminal_and_no_forwarding() {
        let h = HostUrl::parse("ssh://bench@db1:2222").unwrap();
        let cmd = command_with("ssh", &h, "true");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args[1].starts_with("exec ssh "), "{args:?}");
        let line = args.join(" ");
        for want in [
            " -T ",
            "-o ForwardAgent=no",
            "-o ClearAllForwardings=yes",
            "-o BatchMode=yes",
            " -x ",
            "-o ForwardX11=no",
            "-o ControlMaster=no",
            "-o ControlPath=none",
            "-p 2222 -- bench@db1 true",
        ] {
            assert!(line.contains(want), "{want} missing from {line}");
        }
        // What bakeoff holds (and kills) is the ssh program, not sh.
        let mut child = command_with("sleep 5 #", &h, "true").spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(comm.trim(), "sleep");
    }

    #[test]
    fn quoting_survives_the_remote_shell() {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote("it's $HOME")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $HOME");
    }
}
