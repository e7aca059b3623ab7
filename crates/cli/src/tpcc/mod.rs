//! TPC-C's side of a run and its check: the server's new orders read around the measured
//! span (`watch.rs`), the report (`report.rs`), and the consistency conditions on a server.
//! The commands themselves are `tpcc_command.rs`'s.

mod check;
mod report;
mod watch;

pub(crate) use check::{check_on, finding_line};
pub(crate) use report::report;
pub(crate) use watch::run_cell_watched;
