//! pgbench's side: its scripts and expression language, its built-in scripts, its clients
//! as a [`Source`](crate::Source) the engine drives, and `-i`'s tables.
//!
//! Unlike the sysbench workloads, a pgbench client reads the clock itself where pgbench's
//! semantics need it: per-command latencies (`-r`), a transaction's latency for its log
//! line (`-l`) and the retry accounting, and `\sleep`.

pub mod builtin;
mod ctext;
mod debug;
pub mod eval;
pub mod expr;
pub mod init;
mod outcomes;
pub mod prng;
pub mod script;
pub mod session;
mod shell;
mod sqltext;
mod statements;
pub mod stats;
pub mod value;

pub use ctext::c_ulong;
pub use session::{PgbenchSession, PgbenchSource, QueryMode};
pub use stats::{CommandStats, Live, Logged, ScriptStats};
