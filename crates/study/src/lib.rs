//! Studies: one TOML file declares a whole bake-off.
//!
//! - [`parse`] reads a study file into a [`StudySpec`] (validated plain data), or returns
//!   every [`Problem`] at once, each at its line and column, unknown keys with the nearest
//!   known one.
//! - [`series`] expands it into the order the study runs in: one [`Series`] per server
//!   lifetime (variant x workload x repetition), interleaved or randomized so that drift and
//!   noise spread over the variants alike; [`estimate`] says how long that takes.
//!
//! - [`run_study`] runs (or resumes) it: series after series, each run stored before the next
//!   starts; failures recorded with their reason, the study going on.
//!
//! One run: [`cell`] is `bakeoff run`, a study of one cell, whose set-up (servers, checks,
//! tables) a study's series shares; [`lab`] the servers it talks to; [`measure`] one measured
//! run; [`tables`] the commands on a given server's tables (prepare, prewarm, cleanup); a
//! study's variant on a server the user runs goes through `given`.
//!
//! Across machines: [`agent`] is what runs on another host over ssh; [`fleet`] runs a whole
//! study on each of several machines; [`spread::ClientHosts`] spreads one run's load over
//! several client hosts.
//!
//! What it must not do: print or exit. Progress goes to a [`StudyObserver`].

mod alternate;
mod file;
mod given;
mod manifest;
mod matrix;
mod merged;
mod reader;
mod record;
mod results;
mod run_spec;
mod runner;
mod series;
mod sizing;
mod tpcc;

pub mod agent;
pub mod cell;
pub mod fleet;
pub mod lab;
pub mod measure;
pub mod simulate;
pub mod spread;
pub mod steady;
pub mod tables;

pub use alternate::{
    caveat as alternation_caveat, mode_line as alternation_line, why_not as why_not_alternate,
};
pub use bakeoff_server::file_sha256;
pub use file::{
    lab_lines, parse, parse_in, setting_refused, Alternation, DatasetPolicy, GivenServer, Idle,
    NamedVariant, Order, Price, StudySpec, Workload, MAX_CELLS,
};
pub use manifest::{study_sha256, text_sha256};
pub use matrix::{estimate, series, Series};
pub use reader::{nearest, Problem};
pub use results::{Results, StoredStudy, StudyError, StudyObserver, StudyOutcome};
pub use runner::{pending, run_study};
