//! A running server: started in a run directory of its own (a fresh datadir or a copy of a
//! template), launched contained, ready once an authenticated query answers, refused if its
//! family's readiness checks fail (anonymous accounts), then verified axis by axis. What the
//! server's family does its own way is asked of it (`adapters`). How it ends is in `stop`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bakeoff_driver::{ConnectOptions, Endpoint, Secret};

mod stop;

use crate::adapters::{default_binary, family_of, Bounds, Family, Launch};
use crate::launch::{scrub_env, spawn_contained, unprivileged_user_of, Placement};
use crate::random::new_secret;
use crate::rundir::RunDir;
use crate::spec::ServerSpec;
use crate::template::copy_tree;
use crate::variant::{self, Check, Variant};
use crate::ServerError;

/// The error log's name in the run directory.
const LOG: &str = "error.log";

/// A running server. Dropping it stops the server and removes its run directory.
pub struct Server {
    child: Option<Child>,
    /// What this kind of server does its own way (see `adapters`).
    family: Arc<dyn Family>,
    rundir: RunDir,
    socket: PathBuf,
    log: PathBuf,
    port: u16,
    /// The address it listens on for TCP.
    bind: std::net::IpAddr,
    /// The certificate it presents over TCP, when it listens for client hosts.
    tls: Option<crate::ServerTls>,
    user: String,
    database: String,
    password: Secret,
    version: String,
    stop_timeout: Duration,
    checks: Vec<Check>,
    binary: PathBuf,
}

/// The binary a spec runs: its own, else its engine's default; a binary that is not the
/// engine asked for, by its own `--version`, is refused before anything starts.
fn spec_binary(spec: &ServerSpec) -> Result<PathBuf, ServerError> {
    let binary = match (&spec.binary, spec.engine) {
        (Some(b), _) if !crate::binary::is_executable(b) => {
            return Err(ServerError::NotFound(format!(
                "{}: no such executable file here; name a server binary that is installed",
                b.display()
            )))
        }
        (Some(b), _) => b.clone(),
        (None, Some(e)) => e.default_binary()?,
        (None, None) => default_binary()?,
    };
    if let Some(asked) = spec.engine {
        if let Some(why) = asked.refuses_binary(&binary, spec.binary.is_some()) {
            return Err(ServerError::Refused(why));
        }
    }
    Ok(binary)
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
        let binary = spec_binary(spec)?;
        let family = family_of(&binary);
        family.refuse_exposure(spec)?;
        // The port is free when chosen, but another process may bind it before the server does
        // (two bakeoffs starting at once, a test suite): then try again with another one.
        let own_port = !spec
            .options
            .iter()
            .any(|o| o.trim_start_matches('-').starts_with("port"));
        let mut attempts = 0;
        loop {
            attempts += 1;
            match Server::start_once(spec, &binary, &family, abandon) {
                Err(ServerError::ExitedAtStart { log_tail, .. })
                    if own_port && attempts < 3 && log_tail.contains("Address already in use") => {}
                other => return other,
            }
        }
    }

    fn start_once(
        spec: &ServerSpec,
        binary: &Path,
        family: &Arc<dyn Family>,
        abandon: &AtomicBool,
    ) -> Result<Server, ServerError> {
        // Before anything is created: a variant that cannot be set up here is a usage error.
        let library = variant::preflight(&spec.variant).map_err(ServerError::Variant)?;
        let run_as = unprivileged_user_of(family.accounts());
        let rundir = RunDir::create(run_as)?;
        let dir = rundir.path().to_path_buf();
        match &spec.datadir_from {
            Some(from) => copy_tree(from, &rundir, run_as).map_err(|e| ServerError::RunDir {
                path: from.clone(),
                source: e,
            })?,
            None => {
                let bounds = Bounds {
                    limit: spec.start_timeout,
                    abandon,
                };
                family.initialise(binary, &rundir, run_as, bounds)?
            }
        }
        let password = new_secret()?;
        let bind = spec
            .listen
            .as_ref()
            .map_or(std::net::IpAddr::from([127, 0, 0, 1]), |l| l.address);
        let port = free_port(bind)?;
        let socket = dir.join(family.socket_name(port));
        let log = dir.join(LOG);
        let mut cmd = family.command(&Launch {
            spec,
            binary,
            rundir: &rundir,
            run_as,
            bind,
            port,
            socket: &socket,
            log: &log,
            password: &password,
        })?;
        scrub_env(&mut cmd);
        if let Some(lib) = &library {
            cmd.env("LD_PRELOAD", &lib.path);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
        if family.logs_to_stderr() {
            // Made anew through the run directory's descriptor: the server's account owns the
            // directory by now (its initializer ran there) and may have put a link under
            // this name to a file of root's, which opening by path would truncate and fill.
            cmd.stderr(rundir.create_file(LOG, 0o600, None)?);
        } else {
            cmd.stderr(Stdio::null());
        }
        let placement = Placement::of(&spec.variant);
        let child = spawn_contained(cmd, run_as, placement).map_err(|e| ServerError::Spawn {
            what: binary.display().to_string(),
            detail: e.to_string(),
        })?;
        let mut server = Server {
            child: Some(child),
            family: family.clone(),
            rundir,
            socket,
            log,
            port,
            bind,
            tls: spec.tls.clone(),
            user: spec.user.clone(),
            database: spec.database.clone(),
            password,
            version: String::new(),
            stop_timeout: spec.stop_timeout,
            checks: Vec::new(),
            binary: binary.to_path_buf(),
        };
        server.version = server.wait_ready(spec.start_timeout, abandon)?;
        server.family.check_ready(&server.connect_options())?;
        server.checks = server.verify(&spec.variant, library.as_ref());
        Ok(server)
    }

    /// A file with the load account's password (mode 0600, in the run directory), so a user
    /// can connect without it on a command line: MySQL's `[client]` option file
    /// (`mariadb --defaults-file=F`), or for PostgreSQL a password file (`PGPASSFILE=F psql`).
    pub fn write_client_file(&self) -> Result<PathBuf, ServerError> {
        if self.family.protocol() == bakeoff_driver::Protocol::Postgres {
            let dir = self.rundir.path().display();
            let (port, user, db) = (self.port, &self.user, &self.database);
            let pw = self.password.expose();
            let text =
                format!("{dir}:{port}:{db}:{user}:{pw}\n127.0.0.1:{port}:{db}:{user}:{pw}\n");
            return self.rundir.write_private("pgpass", &text, None);
        }
        let text = format!(
            "[client]\nuser={}\npassword={}\nsocket={}\ndatabase={}\n",
            self.user,
            self.password.expose(),
            self.socket.display(),
            self.database
        );
        self.rundir.write_private("client.cnf", &text, None)
    }

    /// The last `n` lines of the error log (the run directory goes when the server stops).
    pub fn error_log_tail(&self, n: usize) -> String {
        self.rundir.tail(LOG, n)
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
            Some(pid) => self
                .family
                .check_process(&self.connect_options(), pid, v, library),
            None => Vec::new(),
        };
        if !v.settings.is_empty() {
            let opts = self.connect_options();
            checks.extend(self.family.check_settings(&opts, &v.settings));
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
        o.protocol = self.family.protocol();
        o
    }

    /// Over TCP, at the address the server listens on (loopback unless `listen` said); with
    /// TLS checked against this run's CA when it listens for client hosts.
    pub fn tcp_connect_options(&self) -> ConnectOptions {
        let mut o = self.connect_options();
        o.endpoint = Endpoint::Tcp {
            host: self.bind.to_string(),
            port: self.port,
        };
        if let Some(t) = &self.tls {
            o.tls = t.client();
        }
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
    /// The protocol its clients speak.
    pub fn protocol(&self) -> bakeoff_driver::Protocol {
        self.family.protocol()
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
                    log_tail: self.rundir.tail(LOG, 25),
                });
            }
            match self.family.probe(&opts) {
                Ok(version) => return Ok(version),
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(ServerError::NotReady {
            secs: timeout.as_secs(),
            last,
            log: self.log.clone(),
            log_tail: self.rundir.tail(LOG, 25),
        })
    }
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
