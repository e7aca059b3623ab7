//! Each engine's statements for the ownership rules (`owner::Owner`), one file an engine.

pub(crate) mod mysql;
pub(crate) mod pgsql;
