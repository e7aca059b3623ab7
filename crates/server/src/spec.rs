//! What to launch: a [`ServerSpec`] is plain data, validated by the start.

use std::path::PathBuf;
use std::time::Duration;

use crate::variant::Variant;

/// What to launch. Plain data; [`Server::start`] does the work.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The engine asked for: its default binary when `binary` is None, and a `binary` of
    /// another engine is refused. None: the binary's engine (MariaDB's when none is named).
    pub engine: Option<crate::Engine>,
    /// `None`: the engine's default (`mariadbd`, else `mysqld`, from PATH or /usr/sbin).
    pub binary: Option<PathBuf>,
    /// Extra server options, `name=value` or a bare `name` (dashes or underscores).
    pub options: Vec<String>,
    /// How long a launched server may take to answer an authenticated `SELECT 1`, and a new
    /// datadir's initializer to finish (each gets this long): [`DEFAULT_START_TIMEOUT`] unless
    /// a study's `server_start_timeout` or `--server-start-timeout` says.
    pub start_timeout: Duration,
    pub stop_timeout: Duration,
    /// The account and database created for the load (sysbench's defaults).
    pub user: String,
    pub database: String,
    /// Allocator, CPUs, NUMA policy and settings, verified after start.
    pub variant: Variant,
    /// Start from a copy of this prepared datadir (see [`Server::stop_into_template`]) instead
    /// of a fresh one. It must come from the same server binary.
    pub datadir_from: Option<PathBuf>,
    /// Listen for the load on this address rather than loopback, with the load's account
    /// limited to `clients` (the addresses the load comes from): a server on a host of its
    /// own, driven from others. Never an unspecified address (0.0.0.0, ::), and options that
    /// would undo it are refused (see `exposure`).
    pub listen: Option<Listen>,
    /// The certificate a listening server presents (see `lab_tls`): its load account over
    /// TCP then requires TLS. A listening server without one is refused.
    pub tls: Option<crate::ServerTls>,
}

/// The server start timeout when nothing says otherwise, in seconds: a cold MariaDB on a
/// loaded machine starts in a few seconds, a large buffer pool or a slow disk takes longer.
pub const DEFAULT_START_TIMEOUT_S: u64 = 60;
/// [`DEFAULT_START_TIMEOUT_S`] as a duration.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(DEFAULT_START_TIMEOUT_S);

/// Where a server driven from other hosts listens, and whom its load account admits.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listen {
    pub address: std::net::IpAddr,
    pub clients: Vec<std::net::IpAddr>,
}

impl Default for ServerSpec {
    fn default() -> Self {
        ServerSpec {
            engine: None,
            binary: None,
            options: Vec::new(),
            start_timeout: DEFAULT_START_TIMEOUT,
            stop_timeout: Duration::from_secs(30),
            user: "sbtest".into(),
            database: "sbtest".into(),
            variant: Variant::default(),
            datadir_from: None,
            listen: None,
            tls: None,
        }
    }
}
