//! Server families: what one kind of database server does its own way (initialise a datadir,
//! the command line that launches it, how it says it is ready, how its settings and accounts
//! are read back, how it is asked to stop). The lab around them (run directories, containment,
//! CPU and NUMA placement, allocators, the stop escalation, verifying the process) is the same
//! for every family.
//!
//! MariaDB/MySQL ([`mysql`]) and PostgreSQL ([`pgsql`]).
//! Nothing here is on the load's hot path, so a family is a trait object.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ServerError;

pub(crate) mod family;
pub(crate) mod initializer;
pub(crate) mod mysql;
pub(crate) mod pgsql;

pub(crate) use family::{Bounds, Family, Launch};

/// The family of the server binary `binary` (which also tells MariaDB from MySQL).
pub(crate) fn family_of(binary: &Path) -> Arc<dyn Family> {
    if pgsql::is_postgres(binary) {
        return Arc::new(pgsql::Postgres);
    }
    Arc::new(mysql::MySql::of(binary))
}

/// The binary to run when the spec names none.
pub(crate) fn default_binary() -> Result<PathBuf, ServerError> {
    mysql::find_server_binary()
}
