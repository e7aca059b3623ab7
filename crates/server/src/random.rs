//! The lab's secrets, from the kernel's randomness (`bakeoff_driver::random_hex`).

use bakeoff_driver::{random_hex, Secret};

use crate::ServerError;

/// A password for a throwaway account, from the kernel's randomness; a start fails without it.
pub(crate) fn new_secret() -> Result<Secret, ServerError> {
    random_hex(16)
        .map(Secret::new)
        .map_err(|e| ServerError::Spawn {
            what: "making the load account's password".into(),
            detail: e.to_string(),
        })
}
