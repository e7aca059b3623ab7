//! bakeoff's side of an agent: put bakeoff on the host if needed, start `bakeoff agent` there
//! over ssh, check it speaks our protocol, then exchange lines.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ssh::{self, quote};
use crate::url::HostUrl;
use crate::wire::{line, Reply, Request, PROTOCOL};
use crate::RemoteError;

/// A running agent.
pub struct Agent {
    pub host: HostUrl,
    child: Child,
    tx: Sender,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
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
        let mut child = cmd.spawn().map_err(|e| RemoteError::Ssh {
            host: host.to_string(),
            what: format!("could not start the agent ({e})"),
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
            hostname: String::new(),
            peer: None,
            address: None,
        };
        agent.hello()?;
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
        let mut l = String::new();
        loop {
            l.clear();
            match self.stdout.read_line(&mut l) {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
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
        self.tx.close();
        if wait_a_little(&mut self.child, Duration::from_secs(30)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Ping the agent every `PING_EVERY_S` until `done` (or the link goes): an agent that hears
/// nothing for `SILENCE_S` takes the link as lost, and work between requests (loading tables,
/// a long run elsewhere) can take longer than that.
pub fn keep_alive(tx: Sender, done: Arc<std::sync::atomic::AtomicBool>) {
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

/// Make sure `host` can run this bakeoff's agent; the command line that starts it. The same
/// OS and architecture get this very binary, copied once and cached by its hash; others must
/// have bakeoff on their PATH (its version is checked in hello).
fn install(host: &HostUrl) -> Result<String, RemoteError> {
    let me = own_binary(host)?;
    let sha = own_sha256(&me).ok_or_else(|| RemoteError::Ssh {
        host: host.to_string(),
        what: format!("cannot read bakeoff's own binary {}", me.display()),
    })?;
    let file = format!("bakeoff-{}", &sha[..16]);
    let dir = r#""${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/bin""#;
    let probe = format!(
        r#"uname -s; uname -m; if [ -x {dir}/{file} ]; then echo cached; else echo missing; fi; command -v bakeoff || echo none"#
    );
    let said = ssh::output(host, &probe, None)?;
    let lines: Vec<&str> = said.lines().map(str::trim).collect();
    let [os, arch, cached, on_path, ..] = lines.as_slice() else {
        return Err(RemoteError::Ssh {
            host: host.to_string(),
            what: format!("unexpected answer to a probe of its OS: {said:?}; is a login script printing on stdout?"),
        });
    };
    let same = os.eq_ignore_ascii_case(std::env::consts::OS) && *arch == std::env::consts::ARCH;
    if same {
        if *cached != "cached" {
            let data = std::fs::read(&me).map_err(|e| RemoteError::Ssh {
                host: host.to_string(),
                what: format!("reading {} to copy it: {e}", me.display()),
            })?;
            let tmp = format!("{dir}/.{file}.$$");
            // Copies of other builds unused for a week go: each is the size of bakeoff.
            let copy = format!(
                "mkdir -p {dir} && cat > {tmp} && chmod 755 {tmp} && mv -f {tmp} {dir}/{file} && {{ find {dir} -name 'bakeoff-*' -atime +7 -delete 2>/dev/null || true; }}"
            );
            ssh::output(host, &copy, Some(&data))?;
        }
        return Ok(format!("exec {dir}/{file} agent"));
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
