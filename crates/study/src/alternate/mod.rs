//! Alternation: a block's servers taking turns, fractions of a second apart.
//!
//! A block used to start each variant's server in turn and run it for a few seconds, so its
//! ratio carried everything the machine did between those seconds; on a shared cloud VM,
//! whose CPUs change speed by up to 2x in spells of seconds, that is most of it. Here a block
//! starts every variant's server at once (the A/A twin too), warms each, and for each
//! workload and thread count lets the engine drive one server at a time in slices of
//! 50 ms, the order shuffled every round (`bakeoff_engine::run_turns`). Each variant's run
//! in the block is stored as usual, its throughput its events over its slices' seconds:
//! every variant has a slice in every round, so a spell that slows a round scales all of
//! them alike and cancels in their ratio, and the paired blocks and verdicts above apply as
//! they are.
//!
//! - `plan`: where it cannot run (the study then runs in blocks, and `study check` and
//!   `study plan` say why);
//! - `block`: one block (servers up, every cell measured in turns, its runs kept together);
//! - `fits`: whether the block's servers fit in memory together.

mod block;
mod fits;
mod idle;
pub(crate) mod plan;

pub(crate) use block::BlockRun;
pub use plan::{caveat, mode_line, why_not};
