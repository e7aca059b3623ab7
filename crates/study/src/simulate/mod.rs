//! Studies simulated through the code that runs and judges real ones: the study's own block
//! orders (`matrix`), the runner's pilot and cap (`sizing`), the runs stored as rows, and the
//! report's pairing, families and verdicts (`bakeoff_report::judge_runs`). Only the engine is
//! replaced, by a model of the machine (`machine`) and of the variants' true throughput and
//! CPU per transaction, so that error rates can be counted against a known truth.

mod lab;
mod machine;
mod rates;

pub use lab::{trial, truth_of, Mode, Trial, Truth};
pub use machine::Machine;
pub use rates::{rates, Rates};
