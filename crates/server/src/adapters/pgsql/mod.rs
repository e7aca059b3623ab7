//! PostgreSQL: initdb in the run directory, the postmaster launched with its settings as
//! `-c name=value`, logins decided by a pg_hba.conf of the lab's own, a fast shutdown by
//! SIGINT (PostgreSQL has no SQL to stop a server).
//!
//! Accounts: initdb's superuser is `bakeoff`, let in without a password only over the unix
//! socket, which lies in the 0700 run directory (only the server's user and root reach it).
//! The load account (`sbtest`) is an ordinary role that owns the load database; it logs in
//! with SCRAM-SHA-256 over the socket and loopback, and with TLS from the client hosts a
//! listening server admits, nothing else.

mod binary;
mod hba;
mod queries;

use std::path::Path;
use std::process::Command;

use bakeoff_driver::ConnectOptions;

pub use binary::{find_postgres_binary, is_postgres, setting_names, PG_INSTALL_HINT};
pub use queries::settings;

use crate::adapters::family::{runtime, Bounds, Family, Launch};
use crate::launch::RunAs;
use crate::rundir::RunDir;
use crate::variant::{Check, Setting};
use crate::{ServerError, ServerSpec};

/// Settings every lab server gets before the spec's own: room for thousands of connections
/// (a backend each) and a buffer pool of the size the MariaDB lab gives InnoDB.
pub(crate) const LAB_DEFAULTS: &[&str] = &[
    "max_connections=2100",
    "shared_buffers=512MB",
    // Log to stderr, which the lab points at the run directory's error.log.
    "logging_collector=off",
    "log_destination=stderr",
];

/// Settings the lab owns: where the server listens, who may log in, its TLS.
const LAB_OWNED: &[&str] = &[
    "listen_addresses",
    "port",
    "unix_socket_directories",
    "unix_socket_permissions",
    "unix_socket_group",
    "hba_file",
    "ident_file",
    "config_file",
    "data_directory",
    "ssl",
    "ssl_cert_file",
    "ssl_key_file",
    "ssl_ca_file",
];

pub(crate) struct Postgres;

impl Family for Postgres {
    fn refuse_exposure(&self, spec: &ServerSpec) -> Result<(), ServerError> {
        let named = spec
            .options
            .iter()
            .map(|o| o.as_str())
            .chain(spec.variant.settings.iter().map(|s| s.name.as_str()));
        for o in named {
            let name = o.trim_start_matches('-').split('=').next().unwrap_or("");
            let name = name.replace('-', "_").to_ascii_lowercase();
            if LAB_OWNED.contains(&name.as_str()) {
                return Err(ServerError::Refused(format!(
                    "{name} is the lab's to set on PostgreSQL (where it listens, who logs in, its TLS): leave it out of the server's options and settings"
                )));
            }
        }
        if spec.listen.is_some() && spec.tls.is_none() {
            return Err(ServerError::Refused(
                "a PostgreSQL server that listens for client hosts needs the lab's certificate (its load account then requires TLS)".into(),
            ));
        }
        Ok(())
    }

    fn initialise(
        &self,
        binary: &Path,
        rundir: &RunDir,
        run_as: Option<RunAs>,
        bounds: Bounds<'_>,
    ) -> Result<(), ServerError> {
        let initdb = binary::find_initdb(binary)?;
        let args = vec![
            format!("--pgdata={}", rundir.path().join("data").display()),
            format!("--username={}", queries::ADMIN),
            // Replaced by the lab's own pg_hba.conf at every start (see `hba.rs`).
            "--auth=trust".into(),
            "--encoding=UTF8".into(),
            "--locale=C".into(),
            // A throwaway datadir: a crash loses nothing worth an fsync per file.
            "--no-sync".into(),
        ];
        crate::adapters::initializer::run(&initdb, &args, rundir, run_as, bounds)
    }

    fn command(&self, l: &Launch<'_>) -> Result<Command, ServerError> {
        let (spec, dir) = (l.spec, l.rundir.path());
        let hba = l
            .rundir
            .write_private("pg_hba.conf", &hba::rules(spec, l.bind), l.run_as)?;
        let mut settings: Vec<String> = vec![
            format!("listen_addresses={}", l.bind),
            format!("port={}", l.port),
            format!("unix_socket_directories={}", dir.display()),
            "unix_socket_permissions=0700".into(),
            format!("hba_file={}", hba.display()),
        ];
        if let Some(t) = &spec.tls {
            settings.push("ssl=on".into());
            for (file, pem, setting) in [
                ("ca.pem", &t.ca_pem, "ssl_ca_file"),
                ("server-cert.pem", &t.cert_pem, "ssl_cert_file"),
                ("server-key.pem", &t.key_pem, "ssl_key_file"),
            ] {
                let path = l.rundir.write_private(file, pem, l.run_as)?;
                settings.push(format!("{setting}={}", path.display()));
            }
        }
        let mut cmd = Command::new(l.binary);
        cmd.arg("-D").arg(dir.join("data"));
        let all = LAB_DEFAULTS
            .iter()
            .map(|s| s.to_string())
            .chain(settings)
            .chain(
                spec.options
                    .iter()
                    .map(|o| o.trim_start_matches('-').to_string()),
            )
            .chain(
                spec.variant
                    .settings
                    .iter()
                    .map(|s| format!("{}={}", s.name, s.value)),
            );
        for s in all {
            cmd.arg("-c").arg(s);
        }
        Ok(cmd)
    }

    fn protocol(&self) -> bakeoff_driver::Protocol {
        bakeoff_driver::Protocol::Postgres
    }

    fn socket_name(&self, port: u16) -> String {
        format!(".s.PGSQL.{port}")
    }

    fn accounts(&self) -> &'static [&'static str] {
        &["postgres", "nobody"]
    }

    fn logs_to_stderr(&self) -> bool {
        true
    }

    fn probe(&self, opts: &ConnectOptions) -> Result<String, String> {
        runtime().block_on(queries::probe(opts))
    }

    /// The accounts are the lab's own (initdb's superuser and the role `probe` made): there
    /// are no anonymous ones to refuse, and pg_hba.conf admits only those two.
    fn check_ready(&self, _opts: &ConnectOptions) -> Result<(), ServerError> {
        Ok(())
    }

    /// In a backend, where the queries run: the connection's own, read while it is open.
    /// (Backends are forked from the postmaster without an exec, so they inherit its
    /// preload, CPU set and memory policy; this checks that they did.) The postmaster's
    /// own when no backend can be reached.
    fn check_process(
        &self,
        opts: &ConnectOptions,
        pid: u32,
        v: &crate::Variant,
        lib: Option<&crate::variant::Library>,
    ) -> Vec<Check> {
        let checked = runtime().block_on(async {
            let mut c = bakeoff_driver::PgConn::connect_pinned(opts).await.ok()?;
            let said = c.query_value("SELECT pg_backend_pid()").await.ok()??;
            let backend: u32 = said.parse().ok()?;
            // A pid in the server's own word: checked to be the postmaster's child.
            if parent_of(backend) != Some(pid) {
                return None;
            }
            let mut checks = crate::variant::check_process(backend, v, lib);
            c.quit().await;
            for c in &mut checks {
                c.seen = format!("{} (in backend {backend})", c.seen);
            }
            Some(checks)
        });
        checked.unwrap_or_else(|| crate::variant::check_process(pid, v, lib))
    }

    fn check_settings(&self, opts: &ConnectOptions, settings: &[Setting]) -> Vec<Check> {
        runtime().block_on(queries::check_settings(opts, settings))
    }

    /// A fast shutdown: SIGINT to the postmaster, which ends the backends, writes a
    /// checkpoint and exits.
    fn ask_shutdown(&self, _opts: &ConnectOptions, child: &std::process::Child) -> bool {
        crate::launch::signal(child, libc::SIGINT);
        true
    }
}

/// A process's parent, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
