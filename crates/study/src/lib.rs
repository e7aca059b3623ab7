//! Studies: one TOML file declares a whole bake-off.
//!
//! - [`parse`] reads a study file into a [`StudySpec`] (validated plain data), or returns
//!   every [`Problem`] at once, each at its line and column, unknown keys with the nearest
//!   known one.
//! - [`series`] expands it into the order the study runs in: one [`Series`] per server
//!   lifetime (variant x workload x repetition), interleaved or randomized so that drift and
//!   noise spread over the variants alike; [`estimate`] says how long that takes.
//!
//! What it must not do: print, start servers or touch a database. The runner does that.

mod file;
mod matrix;
mod reader;

pub use file::{parse, DatasetPolicy, NamedVariant, Order, Price, StudySpec, Workload, MAX_CELLS};
pub use matrix::{estimate, series, Series};
pub use reader::Problem;
