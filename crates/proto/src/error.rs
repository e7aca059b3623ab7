use std::fmt;

/// An ERR packet from the server: the code decides what the engine does with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub code: u16,
    pub sql_state: String,
    pub message: String,
    /// PostgreSQL: where in the statement the error was found (1-based characters; 0: not
    /// said), for libpq's `LINE n:` lines.
    pub position: u32,
    /// PostgreSQL: the error's other fields, as libpq prints them.
    pub pg: Option<Box<PgFields>>,
}

/// A PostgreSQL error's fields beside its SQLSTATE and position: what libpq prints at its
/// default verbosity, each on a line of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgFields {
    /// ERROR, FATAL, PANIC (as the server localises it).
    pub severity: String,
    /// The primary message alone (`ServerError::message` has the detail folded in).
    pub primary: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    pub context: Option<String>,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // PostgreSQL's errors have no number, only their SQLSTATE.
        match self.code {
            0 => write!(f, "error {}: {}", self.sql_state, self.message),
            code => write!(f, "error {} ({}): {}", code, self.sql_state, self.message),
        }
    }
}

/// The bytes did not follow the protocol: a bug on one side, or not a MySQL server at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtoError {
    #[error("malformed {what} packet: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("unexpected packet 0x{first:02x} while {state}")]
    Unexpected { first: u8, state: &'static str },
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl ProtoError {
    pub(crate) fn malformed(what: &'static str, detail: impl Into<String>) -> Self {
        ProtoError::Malformed {
            what,
            detail: detail.into(),
        }
    }
}
