//! MariaDB and MySQL: one family, two flavours (they initialise datadirs differently and MySQL
//! has an X plugin port and a root account to lock).

mod accounts;
mod binary;
mod datadir;
mod exposure;
mod queries;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bakeoff_driver::{Conn, ConnectOptions};

pub use binary::INSTALL_HINT;
pub use binary::{find_server_binary, refuses_option, setting_names};
pub use queries::global_variables;

use crate::adapters::family::{runtime, Bounds, Family, Launch};
use crate::launch::RunAs;
use crate::random::new_secret;
use crate::rundir::RunDir;
use crate::variant::{Check, Setting};
use crate::{ServerError, ServerSpec};
pub(crate) use datadir::{flavor_of, Flavor};

/// Options every lab server gets before the spec's own: sized for thousands of connections,
/// each with a full set of prepared statements (sysbench's read_write needs 2 + 9 x tables),
/// and a listen queue as long as the connections allowed, so a storm of connects is queued
/// rather than refused (the kernel caps it at net.core.somaxconn).
pub(crate) const LAB_DEFAULTS: &[&str] = &[
    "max-connections=5000",
    "back-log=5000",
    "max-prepared-stmt-count=1048576",
    "innodb-buffer-pool-size=512M",
    "skip-name-resolve",
];

pub(crate) struct MySql {
    flavor: Flavor,
}

impl MySql {
    pub(crate) fn of(binary: &Path) -> MySql {
        MySql {
            flavor: datadir::flavor(binary),
        }
    }
}

impl Family for MySql {
    fn refuse_exposure(&self, spec: &ServerSpec) -> Result<(), ServerError> {
        exposure::check(spec)
    }

    fn initialise(
        &self,
        binary: &Path,
        rundir: &RunDir,
        run_as: Option<RunAs>,
        bounds: Bounds<'_>,
    ) -> Result<(), ServerError> {
        datadir::initialize(self.flavor, binary, rundir, run_as, bounds)
    }

    /// The init file makes the accounts (see `accounts.rs`); the command line is hermetic
    /// (`--no-defaults`), the lab's defaults first and the spec's options and settings after,
    /// so theirs win.
    fn command(&self, l: &Launch<'_>) -> Result<Command, ServerError> {
        let (spec, dir) = (l.spec, l.rundir.path());
        let sql = accounts::init_sql(
            spec,
            l.password,
            self.flavor,
            &accounts::hostname(),
            &new_secret()?,
        );
        let init = l.rundir.write_private("init.sql", &sql, l.run_as)?;
        // A server for client hosts presents this run's certificate; its files are in the
        // 0700 run directory, readable by the server's own user only.
        let mut tls = Vec::new();
        if let Some(t) = &spec.tls {
            for (file, pem, option) in [
                ("ca.pem", &t.ca_pem, "ssl-ca"),
                ("server-cert.pem", &t.cert_pem, "ssl-cert"),
                ("server-key.pem", &t.key_pem, "ssl-key"),
            ] {
                let path = l.rundir.write_private(file, pem, l.run_as)?;
                tls.push(format!("--{option}={}", path.display()));
            }
        }
        let mut cmd = Command::new(l.binary);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--socket={}", l.socket.display()))
            .arg(format!("--port={}", l.port))
            .arg(format!("--bind-address={}", l.bind))
            .arg(format!("--log-error={}", l.log.display()))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .arg(format!("--tmpdir={}", l.rundir.tmp().display()))
            // MySQL's X plugin listens on 33060 by default: two servers would collide.
            .args((self.flavor == Flavor::MySql).then_some("--mysqlx=OFF"))
            .arg(format!("--init-file={}", init.display()))
            .args(tls)
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
        Ok(cmd)
    }

    fn socket_name(&self, _port: u16) -> String {
        "mysqld.sock".into()
    }

    fn probe(&self, opts: &ConnectOptions) -> Result<String, String> {
        runtime().block_on(queries::probe(opts))
    }

    /// Fail closed on anonymous accounts: the init file drops the ones initializers make, and
    /// one that is still there (another host name, a copied datadir) lets anyone log in.
    fn check_ready(&self, opts: &ConnectOptions) -> Result<(), ServerError> {
        let found = runtime().block_on(async {
            let mut c = Conn::connect(opts).await.map_err(|e| e.to_string())?;
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

    fn check_settings(&self, opts: &ConnectOptions, settings: &[Setting]) -> Vec<Check> {
        runtime().block_on(queries::check_settings(opts, settings))
    }

    fn ask_shutdown(&self, opts: &ConnectOptions, _child: &std::process::Child) -> bool {
        let asked = runtime().block_on(async {
            tokio::time::timeout(Duration::from_secs(5), async {
                let mut c = Conn::connect(opts).await?;
                c.query("SHUTDOWN").await
            })
            .await
        });
        matches!(asked, Ok(Ok(_)))
    }
}
