//! The async runtime the blocking commands drive the driver with.

use anyhow::Result;

/// A current-thread runtime: the commands that use it drive one connection at a time.
pub(crate) fn rt() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
