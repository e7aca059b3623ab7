//! sysbench-compatible OLTP workloads.
//!
//! Main types:
//! - [`Rng`] (xoroshiro128+, as sysbench) and [`Distribution`] (uniform, gaussian, special,
//!   pareto, zipfian, with sysbench 1.0.20's exact formulas);
//! - [`WorkloadKind`] (oltp_read_write ... bulk_insert) and [`OltpOptions`] (sysbench's
//!   option set), combined into a validated [`WorkloadSpec`];
//! - [`scripting`]: the seam between workloads and the engine, a [`Source`] of sessions
//!   whose [`Events`] the engine drives and whose errors it judges; the native source is
//!   [`SessionContext`] with its [`Session`] (one connection, its prepared statements, its
//!   RNG and the event body);
//! - [`tpcc`]: TPC-C's tables, population, five transactions, consistency checks and audit,
//!   its terminals sessions of the same native source;
//! - [`dataset`]: prepare (parallel load, secondary index after the load) and cleanup (drops
//!   only the tables bakeoff recorded in its marker table).
//!
//! What it must not do: time anything, retry, or print. Timing and policy are the engine's
//! (pgbench's clients excepted where pgbench's semantics time and retry: see [`pgbench`]).

pub mod dataset;
mod dist;
mod kind;
pub mod pgbench;
mod rng;
pub mod scripting;
mod statements;
mod strings;
mod tables;
pub mod tpcc;

pub use dist::{Distribution, RandType};
pub use kind::{OltpOptions, PsMode, WorkloadKind, WorkloadSpec, OPTION_NAMES};
pub use rng::{Rng, Unique};
pub use scripting::native::{Session, SessionContext};
pub use scripting::{EventError, Events, Pace, Source, StmtCounts, Terminal};
pub use strings::{fill_c, fill_pad, C_LEN, PAD_LEN};
pub use tables::{cleanup_tables, prepare_tables};
