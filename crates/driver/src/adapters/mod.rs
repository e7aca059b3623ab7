//! One module per database family's wire protocol. MySQL/MariaDB is the one today; a
//! PostgreSQL driver is a new module here implementing [`Connection`](crate::Connection).

pub mod mysql;
