//! The consistency conditions of clause 3.3.2 on a server, and how each finding reads.

use anyhow::Result;
use bakeoff_driver::ConnectOptions;
use bakeoff_workload::tpcc::check::{check_at, Finding};

/// The consistency conditions on `opts`'s server (all of them with `all`), each said to
/// `each` as it is found.
pub(crate) fn check_on(
    opts: &ConnectOptions,
    all: bool,
    each: &mut dyn FnMut(&Finding),
) -> Result<Vec<Finding>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(rt.block_on(check_at(opts, all, each))?)
}

/// One finding as a line: the condition, what it says, and what breaks it.
pub(crate) fn finding_line(f: &Finding) -> String {
    match f.holds() {
        true => format!("  3.3.2.{:<2} {:<55} ok", f.number, f.says),
        false => format!(
            "  3.3.2.{:<2} {:<55} FAILED: {} {}",
            f.number, f.says, f.violations, f.counts
        ),
    }
}
