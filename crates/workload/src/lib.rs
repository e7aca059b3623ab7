//! sysbench-compatible OLTP workloads.
//!
//! Main types:
//! - [`Rng`] (xoroshiro128+, as sysbench) and [`Distribution`] (uniform, gaussian, special,
//!   pareto, zipfian, with sysbench 1.0.20's exact formulas);
//! - [`WorkloadKind`] (oltp_read_write ... bulk_insert) and [`OltpOptions`] (sysbench's
//!   option set), combined into a validated [`WorkloadSpec`];
//! - [`Session`]: one connection with its prepared statements, its RNG and the event body;
//!   the engine calls [`Session::event`] and decides what an error means;
//! - [`dataset`]: prepare (parallel load, secondary index after the load) and cleanup (drops
//!   only the tables bakeoff recorded in its marker table).
//!
//! What it must not do: time anything, retry, or print. Timing and policy are the engine's.

pub mod dataset;
mod dist;
mod kind;
mod rng;
mod session;
mod statements;
mod strings;

pub use dist::{Distribution, RandType};
pub use kind::{OltpOptions, PsMode, WorkloadKind, WorkloadSpec, OPTION_NAMES};
pub use rng::{Rng, Unique};
pub use session::{EventError, Session, SessionContext, StmtCounts};
pub use strings::{fill_c, fill_pad, C_LEN, PAD_LEN};
