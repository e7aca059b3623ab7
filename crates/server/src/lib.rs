//! The server lab: start `mariadbd` in a throwaway datadir on loopback and a unix socket as a
//! [`Variant`] (allocator, CPUs, NUMA policy, settings), wait until an authenticated `SELECT 1`
//! works, verify that the variant took effect, stop it.
//!
//! Main types: [`ServerSpec`] (what to launch, validated plain data) -> [`Server`] (a running
//! server; dropping it stops the server and removes its run directory; [`Server::checks`]
//! says, per axis of the variant, what was asked and what the process really has).
//!
//! Promises kept here (see shared/reference/safety-and-reliability.md):
//! - servers die with bakeoff: own process group, parent-death signal set by a spawner thread
//!   that lives as long as the process (the signal follows the *thread* that forked), and a
//!   watchdog that kills what bakeoff started or froze when bakeoff is killed (`watchdog`);
//! - mysqld never runs as root: as root, bakeoff starts it as the `mysql` user (or `nobody`);
//! - hermetic: `--no-defaults`, a scrubbed environment, loopback only;
//! - least privilege: run directories 0700, full rights only on the socket, the TCP account
//!   on the load database only, no anonymous accounts, passwords from getrandom;
//! - only directories bakeoff created and marked are ever deleted;
//! - every wait is bounded; shutdown escalates SHUTDOWN -> SIGTERM -> SIGKILL.
//!
//! Layout: `adapters/` holds what each server family does its own way (MariaDB/MySQL today:
//! datadir initialisers, command line, accounts, SQL checks); the rest is the lab, the same for
//! every family.
//!
//! What it must not do: print, or exit the process.

pub mod abandon;
mod adapters;
mod binary;
pub mod cgroup;
pub mod engine;
mod error;
mod fence;
pub mod freeze;
pub mod identity;
pub mod lab_tls;
mod launch;
mod leaving;
pub mod pidfd;
pub mod placement;
pub mod preflight;
mod procs;
mod random;
mod rundir;
mod server;
mod spec;
mod template;
pub mod value_kind;
pub mod variant;
pub mod watchdog;

pub use adapters::mysql::{find_server_binary, global_variables, INSTALL_HINT};
pub use adapters::pgsql::{find_postgres_binary, PG_INSTALL_HINT};
pub use bakeoff_driver::random_hex;
pub use binary::file_sha256;
pub use engine::{Catalog, Engine};
pub use error::ServerError;
pub use lab_tls::{lab_ca, ServerTls};
pub use server::Server;
pub use spec::{Listen, ServerSpec, DEFAULT_START_TIMEOUT, DEFAULT_START_TIMEOUT_S};
pub use template::Template;
pub use variant::{Check, Variant};
