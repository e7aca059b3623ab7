//! A running server: started in a run directory of its own (a fresh datadir or a copy of a
//! template), launched contained, ready once an authenticated `SELECT 1` answers, refused if it
//! has anonymous accounts, then verified axis by axis. How it ends is in `stop`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bakeoff_driver::{Conn, ConnectOptions, Endpoint, Secret};

mod stop;

use crate::accounts::{self, init_sql};
use crate::binary::find_server_binary;
use crate::datadir::{flavor, initialize, Bounds, Flavor};
use crate::launch::{scrub_env, spawn_contained, unprivileged_user, Placement, RunAs};
use crate::queries::{check_settings, probe, runtime};
use crate::rundir::{tail, RunDir};
use crate::spec::{ServerSpec, LAB_DEFAULTS};
use crate::template::copy_tree;
use crate::variant::{self, Check, Variant};
use crate::ServerError;

/// A running server. Dropping it stops the server and removes its run directory.
pub struct Server {
    child: Option<Child>,
    rundir: RunDir,
    socket: PathBuf,
    log: PathBuf,
    port: u16,
    /// The address it listens on for TCP.
    bind: std::net::IpAddr,
    user: String,
    database: String,
    password: Secret,
    version: String,
    stop_timeout: Duration,
    checks: Vec<Check>,
    binary: PathBuf,
}

impl Server {
    pub fn start(spec: &ServerSpec) -> Result<Server, ServerError> {
        static NEVER: AtomicBool = AtomicBool::new(false);
        Server::start_watched(spec, &NEVER)
    }

    /// [`Server::start`], given up as soon as `abandon` is set (by another thread: nobody waits
    /// for this server any more, say the agent's link is gone). The start then kills what it
    /// launched, removes its directories and returns [`ServerError::Abandoned`].
    pub fn start_watched(spec: &ServerSpec, abandon: &AtomicBool) -> Result<Server, ServerError> {
        crate::exposure::check(spec)?;
        // The port is free when chosen, but another process may bind it before the server does
        // (two bakeoffs starting at once, a test suite): then try again with another one.
        let own_port = !spec
            .options
            .iter()
            .any(|o| o.trim_start_matches('-').starts_with("port"));
        let mut attempts = 0;
        loop {
            attempts += 1;
            match Server::start_once(spec, abandon) {
                Err(ServerError::ExitedAtStart { log_tail, .. })
                    if own_port && attempts < 3 && log_tail.contains("Address already in use") => {}
                other => return other,
            }
        }
    }

    fn start_once(spec: &ServerSpec, abandon: &AtomicBool) -> Result<Server, ServerError> {
        let binary = match &spec.binary {
            Some(b) => b.clone(),
            None => find_server_binary()?,
        };
        // Before anything is created: a variant that cannot be set up here is a usage error.
        let library = variant::preflight(&spec.variant).map_err(ServerError::Variant)?;
        let run_as = unprivileged_user();
        let rundir = RunDir::create(run_as)?;
        let dir = rundir.path().to_path_buf();
        let flavor = flavor(&binary);
        match &spec.datadir_from {
            Some(from) => {
                copy_tree(from, &dir.join("data"), run_as).map_err(|e| ServerError::RunDir {
                    path: from.clone(),
                    source: e,
                })?
            }
            None => {
                let bounds = Bounds {
                    limit: spec.start_timeout,
                    abandon,
                };
                initialize(flavor, &binary, &rundir, run_as, bounds)?
            }
        }
        let password = new_secret()?;
        let init = dir.join("init.sql");
        let sql = init_sql(
            spec,
            &password,
            flavor,
            &accounts::hostname(),
            &new_secret()?,
        );
        write_private(&init, &sql, run_as)?;
        let bind = spec
            .listen
            .as_ref()
            .map_or(std::net::IpAddr::from([127, 0, 0, 1]), |l| l.address);
        let port = free_port(bind)?;
        let socket = dir.join("mysqld.sock");
        let log = dir.join("error.log");
        let mut cmd = Command::new(&binary);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--bind-address={bind}"))
            .arg(format!("--log-error={}", log.display()))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .arg(format!("--tmpdir={}", rundir.tmp().display()))
            // MySQL's X plugin listens on 33060 by default: two servers would collide.
            .args((flavor == Flavor::MySql).then_some("--mysqlx=OFF"))
            .arg(format!("--init-file={}", init.display()))
            .args(
                LAB_DEFAULTS
                    .iter()
                    .copied()
                    .map(str::to_string)
                    .chain(spec.options.iter().cloned())
                    .chain(
                        spec.variant
                            .settings
                            .iter()
                            .map(|s| format!("{}={}", s.name, s.value)),
                    )
                    .map(|o| format!("--{o}")),
            );
        scrub_env(&mut cmd);
        if let Some(lib) = &library {
            cmd.env("LD_PRELOAD", &lib.path);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let placement = Placement::of(&spec.variant);
        let child = spawn_contained(cmd, run_as, placement).map_err(|e| ServerError::Spawn {
            what: binary.display().to_string(),
            detail: e.to_string(),
        })?;
        let mut server = Server {
            child: Some(child),
            rundir,
            socket,
            log,
            port,
            bind,
            user: spec.user.clone(),
            database: spec.database.clone(),
            password,
            version: String::new(),
            stop_timeout: spec.stop_timeout,
            checks: Vec::new(),
            binary: binary.clone(),
        };
        server.version = server.wait_ready(spec.start_timeout, abandon)?;
        server.refuse_anonymous()?;
        server.checks = server.verify(&spec.variant, library.as_ref());
        Ok(server)
    }

    /// A `[client]` option file (mode 0600, in the run directory) for the load account, so a
    /// user can connect (`mariadb --defaults-file=F`) without the password on a command line.
    pub fn write_client_file(&self) -> Result<PathBuf, ServerError> {
        let path = self.rundir.path().join("client.cnf");
        let text = format!(
            "[client]\nuser={}\npassword={}\nsocket={}\ndatabase={}\n",
            self.user,
            self.password.expose(),
            self.socket.display(),
            self.database
        );
        write_private(&path, &text, None)?;
        Ok(path)
    }

    /// The last `n` lines of the error log (the run directory goes when the server stops).
    pub fn error_log_tail(&self, n: usize) -> String {
        tail(&self.log, n)
    }

    /// The exit status, if the server process has ended on its own.
    pub fn exited(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        child.try_wait().ok().flatten().map(|s| s.to_string())
    }

    /// Each axis of the variant: what was asked for and what the running process has.
    pub fn checks(&self) -> &[Check] {
        &self.checks
    }

    /// Why the variant did not take effect, if it did not (one line per failed axis).
    pub fn variant_problems(&self) -> Option<String> {
        let failed: Vec<String> = self
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| {
                format!(
                    "{} {}: {}",
                    c.axis,
                    c.wanted,
                    c.note.as_deref().unwrap_or("not in effect")
                )
            })
            .collect();
        (!failed.is_empty()).then(|| failed.join("\n"))
    }

    fn verify(&self, v: &Variant, library: Option<&variant::Library>) -> Vec<Check> {
        let mut checks = match self.pid() {
            Some(pid) => variant::check_process(pid, v, library),
            None => Vec::new(),
        };
        if !v.settings.is_empty() {
            let opts = self.connect_options();
            checks.extend(runtime().block_on(check_settings(&opts, &v.settings)));
        }
        checks
    }

    /// Unix socket connection as the load account, into the load database.
    pub fn connect_options(&self) -> ConnectOptions {
        let mut o = ConnectOptions::new(
            Endpoint::Unix(self.socket.clone()),
            &self.user,
            self.password.expose(),
        );
        o.database = Some(self.database.clone());
        o
    }

    /// The same over TCP on 127.0.0.1.
    /// Over TCP, at the address the server listens on (loopback unless `listen` said).
    pub fn tcp_connect_options(&self) -> ConnectOptions {
        let mut o = self.connect_options();
        o.endpoint = Endpoint::Tcp {
            host: self.bind.to_string(),
            port: self.port,
        };
        o
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn user(&self) -> &str {
        &self.user
    }
    pub fn password(&self) -> &Secret {
        &self.password
    }
    pub fn database(&self) -> &str {
        &self.database
    }
    /// The mariadbd/mysqld this server runs.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    pub fn version(&self) -> &str {
        &self.version
    }
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }
    pub fn error_log(&self) -> &Path {
        &self.log
    }

    /// Ready means an authenticated `SELECT 1` answered, not that a pid file or socket exists.
    fn wait_ready(
        &mut self,
        timeout: Duration,
        abandon: &AtomicBool,
    ) -> Result<String, ServerError> {
        let rt = runtime();
        let opts = ConnectOptions {
            connect_timeout: Duration::from_secs(2),
            ..self.connect_options()
        };
        let started = Instant::now();
        let mut last = String::from("no attempt yet");
        while started.elapsed() < timeout {
            if abandon.load(Ordering::Relaxed) {
                self.kill_now();
                return Err(ServerError::Abandoned);
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(ServerError::ExitedAtStart {
                    status: status.to_string(),
                    log: self.log.clone(),
                    log_tail: tail(&self.log, 25),
                });
            }
            match rt.block_on(probe(&opts)) {
                Ok(version) => return Ok(version),
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(ServerError::NotReady {
            secs: timeout.as_secs(),
            last,
            log: self.log.clone(),
            log_tail: tail(&self.log, 25),
        })
    }

    /// Fail closed on anonymous accounts: the init file drops the ones initializers make, and
    /// one that is still there (another host name, a copied datadir) lets anyone log in.
    fn refuse_anonymous(&mut self) -> Result<(), ServerError> {
        let opts = self.connect_options();
        let found = runtime().block_on(async {
            let mut c = Conn::connect(&opts).await.map_err(|e| e.to_string())?;
            let found = accounts::anonymous(&mut c).await;
            c.quit().await;
            found
        });
        match found {
            Ok(a) if a.is_empty() => Ok(()),
            Ok(a) => Err(ServerError::Refused(format!(
                "the server has anonymous accounts ({}), which let anyone log in without a password; drop them from the datadir it starts from",
                a.join(", ")
            ))),
            Err(e) => Err(ServerError::Refused(format!(
                "could not check the server for anonymous accounts: {e}"
            ))),
        }
    }
}

fn write_private(path: &Path, text: &str, run_as: Option<RunAs>) -> Result<(), ServerError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let err = |source| ServerError::RunDir {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(err)?;
    std::io::Write::write_all(&mut f, text.as_bytes()).map_err(err)?;
    if let Some(r) = run_as {
        std::os::unix::fs::chown(path, Some(r.uid), Some(r.gid)).map_err(err)?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)
}

/// Ask the kernel for a free port on `addr`. Another process could take it before the server
/// binds it; `Server::start` then tries again with a new one.
fn free_port(addr: std::net::IpAddr) -> Result<u16, ServerError> {
    let l = TcpListener::bind((addr, 0)).map_err(|e| ServerError::Spawn {
        what: "finding a free port".into(),
        detail: e.to_string(),
    })?;
    Ok(l.local_addr().map(|a| a.port()).unwrap_or(0))
}

/// A password for a throwaway account, from the kernel's randomness; a start fails without it.
fn new_secret() -> Result<Secret, ServerError> {
    crate::random::random_hex(16)
        .map(Secret::new)
        .map_err(|e| ServerError::Spawn {
            what: "making the load account's password".into(),
            detail: e.to_string(),
        })
}
