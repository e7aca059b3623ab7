//! bakeoff's side of an agent: put bakeoff on the host if needed, start `bakeoff agent` there
//! over ssh, check it speaks our protocol, keep the link alive, then exchange lines.
//!
//! The copy of bakeoff cached on a host is trusted only while its SHA-256 is this binary's:
//! an upload is checked there before it is moved into place (a copy cut off by a dropped link
//! is removed and sent again), and the cached file is checked again before each start.

use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ssh::{self, quote};
use crate::url::HostUrl;
use crate::wire::{line, read_line, Reply, Request, MAX_LINE, PROTOCOL};
use crate::RemoteError;

/// A running agent.
pub struct Agent {
    pub host: HostUrl,
    child: Child,
    tx: Sender,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
    /// Set when this side is done with the agent: the keepalive stops.
    done: Arc<std::sync::atomic::AtomicBool>,
    /// The line being read (kept to reuse its allocation).
    buf: Vec<u8>,
    /// The agent's hostname, from its hello.
    pub hostname: String,
    /// The ends of the ssh session as that host sees them, from its hello: the address this
    /// machine came from, and the host's own (the one its load reaches a server from).
    pub peer: Option<std::net::IpAddr>,
    pub address: Option<std::net::IpAddr>,
}

/// Writes requests to an agent; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Sender(Arc<Mutex<Option<ChildStdin>>>);

impl Sender {
    pub fn send(&self, r: &Request) -> std::io::Result<()> {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_mut() {
            Some(w) => {
                w.write_all(line(r).as_bytes())?;
                w.flush()
            }
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Close the agent's stdin: it finishes and exits.
    pub fn close(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

impl Agent {
    /// Start an agent on `host` (this machine's own binary for `local`).
    pub fn start(host: &HostUrl) -> Result<Agent, RemoteError> {
        let mut cmd = match host {
            HostUrl::Local => {
                let mut c = Command::new(own_binary(host)?);
                c.arg("agent");
                c
            }
            HostUrl::Ssh { .. } => ssh::command(host, &install(host)?),
        };
        // Its own process group: Ctrl-C at the terminal reaches bakeoff, which tells the agents
        // to stop after their run, rather than killing ssh and losing that run.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Recorded: abandoning (a second Ctrl-C) kills the agent's group with the servers'.
        let mut child = bakeoff_server::abandon::spawn_tracked(|| cmd.spawn()).map_err(|e| {
            RemoteError::Ssh {
                host: host.to_string(),
                what: format!("could not start the agent ({e})"),
            }
        })?;
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(mut err) = child.stderr.take() {
            let keep = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut k = keep.lock().unwrap_or_else(|p| p.into_inner());
                    k.push_str(&String::from_utf8_lossy(&buf[..n]));
                    let cut = k.len().saturating_sub(4096);
                    if cut > 0 {
                        let at = (cut..k.len()).find(|&i| k.is_char_boundary(i)).unwrap_or(0);
                        k.drain(..at);
                    }
                }
            });
        }
        let tx = Sender(Arc::new(Mutex::new(child.stdin.take())));
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut agent = Agent {
            host: host.clone(),
            child,
            tx,
            stdout,
            stderr,
            done: Arc::default(),
            buf: Vec::new(),
            hostname: String::new(),
            peer: None,
            address: None,
        };
        agent.hello()?;
        // From here on, whatever the agent is asked to do: a server that takes long to start
        // or a long load must not read as silence (see wire::SILENCE_S).
        keep_alive(agent.tx.clone(), agent.done.clone());
        Ok(agent)
    }

    fn hello(&mut self) -> Result<(), RemoteError> {
        let ours = env!("CARGO_PKG_VERSION");
        let _ = self.tx.send(&Request::Hello {
            protocol: PROTOCOL,
            version: ours.into(),
        });
        match self.recv()? {
            Some(Reply::Hello {
                protocol,
                version,
                hostname,
                peer,
                address,
                ..
            }) => {
                if protocol != PROTOCOL || version != ours {
                    return Err(RemoteError::Version {
                        host: self.host.to_string(),
                        theirs: format!("{version} (agent protocol {protocol})"),
                        ours: format!("{ours} (agent protocol {PROTOCOL})"),
                    });
                }
                self.hostname = hostname;
                (self.peer, self.address) = (peer, address);
                Ok(())
            }
            Some(other) => Err(RemoteError::Ssh {
                host: self.host.to_string(),
                what: format!("the agent answered {other:?} to hello"),
            }),
            None => Err(self.lost()),
        }
    }

    pub fn sender(&self) -> Sender {
        self.tx.clone()
    }

    /// The next reply; None when the agent's output ended (see [`Agent::lost`]).
    pub fn recv(&mut self) -> Result<Option<Reply>, RemoteError> {
        loop {
            match read_line(&mut self.stdout, &mut self.buf, MAX_LINE) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    self.tx.close();
                    return Err(RemoteError::Ssh {
                        host: self.host.to_string(),
                        what: format!("the agent sent {e}; the link was closed"),
                    });
                }
                Err(_) => return Ok(None),
            }
            let l = String::from_utf8_lossy(&self.buf);
            match serde_json::from_str::<Reply>(l.trim()) {
                Ok(r) => return Ok(Some(r)),
                // A reply of a later protocol (it said the same number in hello, so a field
                // this bakeoff does not know): skip it rather than end the study.
                Err(_) if l.trim_start().starts_with('{') || l.trim_start().starts_with('"') => {
                    continue
                }
                Err(_) => {
                    return Err(RemoteError::Ssh {
                        host: self.host.to_string(),
                        what: format!(
                            "the agent wrote something that is not the protocol: {}; is a login script printing on stdout?",
                            l.trim()
                        ),
                    })
                }
            }
        }
    }

    /// Why the agent's output ended early: ssh's last words, once it has exited. Before the
    /// agent said hello, a failed login or link; after, a lost one.
    pub fn lost(&mut self) -> RemoteError {
        self.tx.close();
        let code = wait_a_little(&mut self.child, Duration::from_secs(5));
        let said = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        if self.hostname.is_empty() && code == Some(255) {
            return ssh::failure(&self.host, code, &said);
        }
        let mut said = ssh::last_lines(&said, 3);
        if said.is_empty() {
            said = match code {
                Some(255) => "ssh ended without a message: the link went down or timed out".into(),
                Some(c) => format!("the agent exited with status {c}"),
                None => "no answer".into(),
            };
        }
        RemoteError::Lost {
            host: self.host.to_string(),
            said,
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        self.tx.close();
        if wait_a_little(&mut self.child, Duration::from_secs(30)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Ping the agent every `PING_EVERY_S` until `done` (or the link goes): an agent that hears
/// nothing for `SILENCE_S` takes the link as lost, and work between requests (a slow server
/// start, loading tables, a long run elsewhere) can take longer than that.
fn keep_alive(tx: Sender, done: Arc<std::sync::atomic::AtomicBool>) {
    std::thread::spawn(move || {
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            if tx.send(&Request::Ping).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(crate::wire::PING_EVERY_S));
        }
    });
}

/// The exit code if the child ends within `limit`.
fn wait_a_little(child: &mut Child, limit: Duration) -> Option<i32> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn own_binary(host: &HostUrl) -> Result<PathBuf, RemoteError> {
    std::env::current_exe().map_err(|e| RemoteError::Ssh {
        host: host.to_string(),
        what: format!("cannot find bakeoff's own binary to start an agent ({e})"),
    })
}

/// The hash of bakeoff's own binary, read once: a study with a server host starts an agent
/// for every series, and the binary does not change under a running process.
fn own_sha256(me: &std::path::Path) -> Option<String> {
    static SHA: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    SHA.get_or_init(|| bakeoff_server::file_sha256(me)).clone()
}

/// Where a host keeps its copies of bakeoff (a shell word, expanded there).
const CACHE_DIR: &str = r#""${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/bin""#;
/// The exit status of a remote command that found a copy whose hash is not bakeoff's.
const DAMAGED: i32 = 86;

/// Make sure `host` can run this bakeoff's agent; the command line that starts it. The same
/// OS and architecture get this very binary, copied once and cached by its hash; others must
/// have bakeoff on their PATH (its version is checked in hello).
fn install(host: &HostUrl) -> Result<String, RemoteError> {
    let me = own_binary(host)?;
    let sha = own_sha256(&me).ok_or_else(|| RemoteError::Ssh {
        host: host.to_string(),
        what: format!("cannot read bakeoff's own binary {}", me.display()),
    })?;
    let file = format!("{CACHE_DIR}/bakeoff-{}", &sha[..16]);
    let check = hash_check(&file, &sha);
    // A cached copy whose hash is wrong (cut off, damaged, replaced) is removed at once.
    let probe = format!(
        r#"uname -s; uname -m; command -v sha256sum >/dev/null || echo no-sha256sum; if [ ! -e {file} ]; then echo missing; elif {check}; then echo cached; else rm -f {file}; echo damaged; fi; command -v bakeoff || echo none"#
    );
    let said = ssh::output(host, &probe, None)?;
    let mut lines: Vec<&str> = said.lines().map(str::trim).collect();
    let no_sha = lines.contains(&"no-sha256sum");
    lines.retain(|l| *l != "no-sha256sum");
    let [os, arch, cached, on_path, ..] = lines.as_slice() else {
        return Err(RemoteError::Ssh {
            host: host.to_string(),
            what: format!("unexpected answer to a probe of its OS: {said:?}; is a login script printing on stdout?"),
        });
    };
    let same = os.eq_ignore_ascii_case(std::env::consts::OS) && *arch == std::env::consts::ARCH;
    if same {
        if no_sha {
            return Err(RemoteError::Ssh {
                host: host.to_string(),
                what: "it has no sha256sum, which bakeoff needs to check the copy of itself it keeps there: install coreutils".into(),
            });
        }
        if *cached != "cached" {
            upload(host, &me, &file, &sha)?;
        }
        // Checked again right before it runs: the cache is only as good as its last check.
        return Ok(format!(
            "if {check}; then exec {file} agent; else rm -f {file}; echo 'the copy of bakeoff cached at '{file}' does not match its hash; it was removed: run again to send a new one' >&2; exit {DAMAGED}; fi"
        ));
    }
    if *on_path == "none" {
        return Err(RemoteError::Ssh {
            host: host.to_string(),
            what: format!(
                "it is {os} {arch} and this bakeoff is built for {} {}, so it cannot copy itself there, and it has no bakeoff on its PATH: install bakeoff {} there",
                std::env::consts::OS,
                std::env::consts::ARCH,
                env!("CARGO_PKG_VERSION")
            ),
        });
    }
    Ok(format!("exec {} agent", quote(on_path)))
}

/// A shell test, true when `file`'s SHA-256 is `sha`.
fn hash_check(file: &str, sha: &str) -> String {
    format!(r#"[ "$(sha256sum < {file} | cut -c1-64)" = {sha} ]"#)
}

/// Send bakeoff to `file` on `host`: into a private temporary file, checked against `sha`
/// there, and only then moved into place. A copy that arrives cut short or damaged is removed
/// and sent once more; twice damaged is an error.
fn upload(host: &HostUrl, me: &std::path::Path, file: &str, sha: &str) -> Result<(), RemoteError> {
    let data = std::fs::read(me).map_err(|e| RemoteError::Ssh {
        host: host.to_string(),
        what: format!("reading {} to copy it: {e}", me.display()),
    })?;
    let tmp = format!("{CACHE_DIR}/.upload.$$");
    let check = hash_check(&tmp, sha);
    // Copies of other builds unused for a week go: each is the size of bakeoff.
    let copy = format!(
        "umask 077 && mkdir -p {CACHE_DIR} && chmod 700 {CACHE_DIR} && cat > {tmp} && if {check}; then chmod 700 {tmp} && mv -f {tmp} {file} && {{ find {CACHE_DIR} \\( -name 'bakeoff-*' -atime +7 -o -name '.upload.*' -mmin +60 \\) -delete 2>/dev/null || true; }}; else echo \"arrived with $(wc -c < {tmp}) bytes\" >&2; rm -f {tmp}; exit {DAMAGED}; fi"
    );
    let mut said = String::new();
    for _ in 0..2 {
        match ssh::output(host, &copy, Some(&data)) {
            Ok(_) => return Ok(()),
            Err(RemoteError::Ssh { what, .. })
                if what.contains(&format!("exit status {DAMAGED}")) =>
            {
                said = what;
            }
            Err(e) => return Err(e),
        }
    }
    Err(RemoteError::Ssh {
        host: host.to_string(),
        what: format!(
            "the copy of bakeoff ({} bytes) arrived damaged twice and was removed ({said}); check the link and the disk space there",
            data.len()
        ),
    })
}
