//! One module per database family's wire protocol, each implementing
//! [`Connection`](crate::Connection): MySQL/MariaDB and PostgreSQL.

pub mod mysql;
pub mod pgsql;
