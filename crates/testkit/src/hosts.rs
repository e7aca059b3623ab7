//! Test machines made on this one: a network namespace per host, joined by a bridge in a
//! namespace of its own, with link-local addresses (169.254.77.x) that exist only inside
//! them, a real OpenSSH sshd in each and a throwaway key. The "local" host (where bakeoff
//! runs) is a namespace too, so nothing is ever addressed outside these namespaces. Everything
//! is removed on drop, also when a test fails; leftovers of a killed test run are swept by
//! the next one.
//!
//! Needs root (CI runs as root), `ip` (iproute2) and OpenSSH's server and client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const PREFIX: &str = "bkt";

/// One test host.
pub struct TestHost {
    pub name: String,
    pub netns: String,
    pub addr: String,
}

/// How a host is made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// sshd and everything this machine has.
    Full,
    /// sshd, but no mariadbd or mysqld to be found (hidden by a private mount).
    NoServer,
}

pub struct Hosts {
    /// Keys, sshd configs and logs: a fresh directory with a random name, mode 0700.
    dir: PathBuf,
    /// Where the hosts' sessions keep bakeoff's agent copies (XDG_CACHE_HOME set by sshd),
    /// when the hosts have a cache of their own; None: root's own cache.
    cache: Option<PathBuf>,
    hub: String,
    local: TestHost,
    hosts: Vec<TestHost>,
    sshd: Vec<Child>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap_or_else(|e| {
        panic!("running `ip`: {e}; install iproute2 (apt-get install iproute2)")
    });
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn need_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert!(
        euid == 0,
        "these tests make network namespaces and start sshd, which needs root (CI runs as root): run `sudo bash scripts/test`"
    );
    assert!(
        Path::new("/usr/sbin/sshd").exists(),
        "no /usr/sbin/sshd: install OpenSSH's server (apt-get install openssh-server); scripts/test does"
    );
}

/// A new directory for keys and configs: a random name nobody could have made ahead of us (a
/// planted symlink or directory makes the creation fail), readable by root alone.
fn private_dir(tag: &str) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let random = bakeoff_server::random_hex(8).expect("randomness from the kernel");
    let dir = std::env::temp_dir().join(format!("bakeoff-hosts-{tag}-{random}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// Remove namespaces left by test processes that no longer exist.
fn sweep() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid: u32 = rest
            .split('-')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if pid != 0 && !Path::new(&format!("/proc/{pid}")).exists() {
            for p in pids_in(name) {
                // SAFETY: kill has no memory preconditions.
                unsafe { libc::kill(p as i32, libc::SIGKILL) };
            }
            let _ = Command::new("ip").args(["netns", "delete", name]).status();
        }
    }
}

fn pids_in(netns: &str) -> Vec<u32> {
    Command::new("ip")
        .args(["netns", "pids", netns])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

impl Hosts {
    /// Hosts named `names` (each with its kind), plus the local one.
    pub fn new(names: &[(&str, Kind)]) -> Hosts {
        Hosts::build(names, false)
    }

    /// [`Hosts::new`], whose ssh sessions keep bakeoff's agent copies in a cache of their own
    /// ([`Hosts::agent_cache`]) instead of root's: for tests that tamper with it.
    pub fn with_own_agent_cache(names: &[(&str, Kind)]) -> Hosts {
        Hosts::build(names, true)
    }

    fn build(names: &[(&str, Kind)], own_cache: bool) -> Hosts {
        need_root();
        sweep();
        static N: AtomicU32 = AtomicU32::new(0);
        let tag = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let dir = private_dir(&tag);
        let hub = format!("{tag}-hub");
        ip(&["netns", "add", &hub]);
        let cache = own_cache.then(|| dir.join("cache"));
        let mut hosts = Hosts {
            dir,
            cache,
            hub: hub.clone(),
            local: TestHost {
                name: "local".into(),
                netns: String::new(),
                addr: String::new(),
            },
            hosts: Vec::new(),
            sshd: Vec::new(),
        };
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &hub, "link", "set", "br0", "up"]);
        hosts.local = hosts.attach(&tag, "local", 1);
        for (i, (name, _)) in names.iter().enumerate() {
            let h = hosts.attach(&tag, name, i as u32 + 2);
            hosts.hosts.push(h);
        }
        hosts.keys();
        for (i, (_, kind)) in names.iter().enumerate() {
            let child = hosts.sshd(i, *kind);
            hosts.sshd.push(child);
        }
        for i in 0..names.len() {
            hosts.wait_for_sshd(i);
        }
        hosts
    }

    fn attach(&self, tag: &str, name: &str, n: u32) -> TestHost {
        let netns = format!("{tag}-{name}");
        ip(&["netns", "add", &netns]);
        let peer = format!("v{n}");
        ip(&[
            "link", "add", "eth0", "netns", &netns, "type", "veth", "peer", "name", &peer, "netns",
            &self.hub,
        ]);
        ip(&["-n", &self.hub, "link", "set", &peer, "master", "br0"]);
        ip(&["-n", &self.hub, "link", "set", &peer, "up"]);
        let addr = format!("169.254.77.{n}");
        ip(&[
            "-n",
            &netns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ]);
        ip(&["-n", &netns, "link", "set", "eth0", "up"]);
        ip(&["-n", &netns, "link", "set", "lo", "up"]);
        TestHost {
            name: name.into(),
            netns,
            addr,
        }
    }

    fn keys(&self) {
        for (file, what) in [("hostkey", "host key"), ("id", "client key")] {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "bakeoff-test", "-f"])
                .arg(self.dir.join(file))
                .status()
                .expect("ssh-keygen (install openssh-client)");
            assert!(st.success(), "ssh-keygen for the {what} failed");
        }
        std::fs::copy(self.dir.join("id.pub"), self.dir.join("authorized_keys")).unwrap();
        let cfg = format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            self.dir.join("id").display()
        );
        std::fs::write(self.ssh_config(), cfg).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
    }

    fn sshd(&self, i: usize, kind: Kind) -> Child {
        let h = &self.hosts[i];
        let d = self.dir.display();
        let cfg = self.dir.join(format!("sshd-{}.conf", h.name));
        std::fs::write(
            &cfg,
            format!(
                "ListenAddress {}\nPort 22\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile {d}/sshd-{}.pid\nClientAliveInterval 3\nClientAliveCountMax 3\n",
                h.addr, h.name
            ),
        )
        .unwrap();
        if let Some(c) = &self.cache {
            let mut text = std::fs::read_to_string(&cfg).unwrap();
            text += &format!("SetEnv XDG_CACHE_HOME={}\n", c.display());
            std::fs::write(&cfg, text).unwrap();
        }
        let log = std::fs::File::create(self.dir.join(format!("sshd-{}.log", h.name))).unwrap();
        let sshd = format!("exec /usr/sbin/sshd -D -e -f {}", cfg.display());
        let script = match kind {
            Kind::Full => sshd,
            // A private mount namespace where the server binaries are /dev/null.
            Kind::NoServer => format!(
                "for b in /usr/sbin/mariadbd /usr/sbin/mysqld /usr/bin/mariadbd; do [ -e $b ] && mount --bind /dev/null $b; done; {sshd}"
            ),
        };
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &h.netns]);
        if kind == Kind::NoServer {
            cmd.args(["unshare", "-m", "--propagation", "private"]);
        }
        cmd.args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd")
    }

    fn wait_for_sshd(&self, i: usize) {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let ok = self
                .local_command("ssh")
                .args(["-F"])
                .arg(self.ssh_config())
                .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=2"])
                .arg(format!("root@{}", self.hosts[i].addr))
                .arg("true")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(
                Instant::now() < until,
                "sshd on test host {} did not answer within 20 s; its log: {}",
                self.hosts[i].name,
                std::fs::read_to_string(self.dir.join(format!("sshd-{}.log", self.hosts[i].name)))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The directory the hosts keep bakeoff's agent copies in, for hosts made with
    /// [`Hosts::with_own_agent_cache`].
    pub fn agent_cache(&self) -> Option<PathBuf> {
        self.cache.as_ref().map(|c| c.join("bakeoff/bin"))
    }

    pub fn ssh_config(&self) -> PathBuf {
        self.dir.join("ssh_config")
    }

    /// The value for BAKEOFF_SSH.
    pub fn bakeoff_ssh(&self) -> String {
        format!("ssh -F {}", self.ssh_config().display())
    }

    fn host(&self, name: &str) -> &TestHost {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no test host {name}"))
    }

    /// Host `name`'s address on the test network.
    pub fn addr(&self, name: &str) -> &str {
        &self.host(name).addr
    }

    /// `ssh://root@ADDRESS` of host `name`.
    pub fn url(&self, name: &str) -> String {
        format!("ssh://root@{}", self.host(name).addr)
    }

    /// `program` run on the local test host, with BAKEOFF_SSH set.
    pub fn local_command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.local.netns])
            .arg(program)
            .env("BAKEOFF_SSH", self.bakeoff_ssh());
        cmd
    }

    /// `program` run in host `name`'s network namespace (as root, without ssh).
    pub fn exec_in(&self, name: &str, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.host(name).netns, program]);
        cmd
    }

    /// The process names living in host `name`'s network namespace.
    pub fn processes(&self, name: &str) -> Vec<String> {
        pids_in(&self.host(name).netns)
            .into_iter()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).ok())
            .map(|c| c.trim().to_string())
            .collect()
    }

    /// Whether a process named `comm` lives in host `name`'s network namespace.
    pub fn runs(&self, name: &str, comm: &str) -> bool {
        self.processes(name).iter().any(|p| p == comm)
    }

    /// The command lines of the processes named `comm` in host `name`'s namespace.
    pub fn command_lines(&self, name: &str, comm: &str) -> Vec<Vec<String>> {
        pids_in(&self.host(name).netns)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == comm)
            })
            .filter_map(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
            .map(|raw| {
                raw.split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .collect()
    }

    /// Cut host `name` off the bridge (its link goes down; nothing is sent or received).
    pub fn cut(&self, name: &str) {
        ip(&["-n", &self.host(name).netns, "link", "set", "eth0", "down"]);
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for c in &mut self.sshd {
            let _ = c.kill();
            let _ = c.wait();
        }
        for h in self.hosts.iter().chain(std::iter::once(&self.local)) {
            for p in pids_in(&h.netns) {
                // SAFETY: kill has no memory preconditions.
                unsafe { libc::kill(p as i32, libc::SIGKILL) };
            }
            let _ = Command::new("ip")
                .args(["netns", "delete", &h.netns])
                .status();
        }
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.hub])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hosts_directory_is_private_and_unpredictable() {
        use std::os::unix::fs::PermissionsExt;
        let (a, b) = (super::private_dir("t"), super::private_dir("t"));
        assert_ne!(a, b);
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let _ = (std::fs::remove_dir(&a), std::fs::remove_dir(&b));
    }
}
