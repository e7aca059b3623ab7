//! The family trait: what the lab asks of each kind of server, and what it gives it.

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bakeoff_driver::{ConnectOptions, Secret};

use crate::launch::RunAs;
use crate::rundir::RunDir;
use crate::variant::{Check, Setting};
use crate::{ServerError, ServerSpec};

/// How long a step of a start may take, and the flag that gives it up early.
pub(crate) struct Bounds<'a> {
    pub limit: Duration,
    pub abandon: &'a AtomicBool,
}

/// Where and how one server is to run, decided by the lab.
pub(crate) struct Launch<'a> {
    pub spec: &'a ServerSpec,
    pub binary: &'a Path,
    pub rundir: &'a RunDir,
    pub run_as: Option<RunAs>,
    pub bind: IpAddr,
    pub port: u16,
    pub socket: &'a Path,
    pub log: &'a Path,
    /// The load account's password.
    pub password: &'a Secret,
}

pub(crate) trait Family: Send + Sync {
    /// Refuse, before anything starts, a spec whose options would undo the lab's network
    /// settings (listen everywhere, skip authentication).
    fn refuse_exposure(&self, spec: &ServerSpec) -> Result<(), ServerError>;

    /// Make a fresh datadir in `rundir`'s `data`, within `bounds`.
    fn initialise(
        &self,
        binary: &Path,
        rundir: &RunDir,
        run_as: Option<RunAs>,
        bounds: Bounds<'_>,
    ) -> Result<(), ServerError>;

    /// Write what the server reads at its first start (accounts) and build its command line.
    fn command(&self, launch: &Launch<'_>) -> Result<Command, ServerError>;

    /// The protocol its clients speak.
    fn protocol(&self) -> bakeoff_driver::Protocol {
        bakeoff_driver::Protocol::MySql
    }

    /// The socket's file name in the run directory (PostgreSQL's names the port).
    fn socket_name(&self, port: u16) -> String;

    /// The accounts to run the server as when bakeoff is root, the first that exists.
    fn accounts(&self) -> &'static [&'static str] {
        &["mysql", "nobody"]
    }

    /// Whether the server writes its log to stderr (the lab then points stderr at the log
    /// file) rather than to a file its command line names.
    fn logs_to_stderr(&self) -> bool {
        false
    }

    /// Ready means an authenticated query answered: the server's version then.
    fn probe(&self, opts: &ConnectOptions) -> Result<String, String>;

    /// Checks once ready, before anyone else connects: fail closed on what would let others in.
    fn check_ready(&self, opts: &ConnectOptions) -> Result<(), ServerError>;

    /// The process axes of the variant (allocator, CPUs, NUMA) against the server's process
    /// `pid`: where the work is done.
    fn check_process(
        &self,
        _opts: &ConnectOptions,
        pid: u32,
        v: &crate::Variant,
        lib: Option<&crate::variant::Library>,
    ) -> Vec<Check> {
        crate::variant::check_process(pid, v, lib)
    }

    /// Each setting against the value the server runs with.
    fn check_settings(&self, opts: &ConnectOptions, settings: &[Setting]) -> Vec<Check>;

    /// Ask the server (the lab's own `child`) to shut down, bounded; true if it took the
    /// request. MySQL is asked over SQL, PostgreSQL by a signal (it has no SQL for it).
    fn ask_shutdown(&self, opts: &ConnectOptions, child: &std::process::Child) -> bool;
}

/// Families ask servers over SQL from blocking lab code; each call gets its own small runtime.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
}
