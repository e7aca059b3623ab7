//! Workload sources: where a run's events come from. The engine drives any [`Source`]; the
//! native sysbench workloads ([`native`]) are one, sysbench Lua scripts are the next.
//!
//! The seam costs the hot path nothing: the engine is generic over the source, so each
//! event is a direct call into the source's own session type (static dispatch).

use std::future::Future;
use std::sync::Arc;

use bakeoff_driver::{is_lost_code, DriverError, ServerError};

pub mod lua;
pub mod native;

/// A workload as the engine sees it: something that opens sessions, one per connection.
/// Sessions live on one client thread each (their futures need not be `Send`: a scripting
/// language's state seldom is).
pub trait Source: Send + Sync + 'static {
    type Session: Events;

    /// Connect and prepare what session `tid`'s events need (sysbench's thread_init).
    /// `blocking`: the session is alone on its thread in closed loop, so blocking socket I/O
    /// saves an epoll round per statement.
    fn open(
        self: Arc<Self>,
        tid: u32,
        seed: u64,
        blocking: bool,
    ) -> impl Future<Output = Result<Self::Session, EventError>>;
}

/// One connection's events.
pub trait Events {
    /// One event (sysbench's event()), its statements counted into `c` as they complete, so
    /// statements before a failure stay counted as sysbench counts them.
    fn event(&mut self, c: &mut StmtCounts) -> impl Future<Output = Result<(), EventError>>;

    /// After a lost connection: a new connection with everything prepared again.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), DriverError>>;

    /// End of the run (sysbench's thread_done): send what is still buffered, then leave.
    fn finish(self, c: &mut StmtCounts) -> impl Future<Output = Result<(), EventError>>;
}

/// Statements by outcome, sysbench's way: a result set is a read, a statement that changed
/// rows a write, anything else (BEGIN, COMMIT, an UPDATE that matched nothing) other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StmtCounts {
    pub reads: u64,
    pub writes: u64,
    pub others: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// The server refused a statement; the engine decides (restart the event or stop).
    #[error("statement '{sql}' failed: {error}")]
    Server { error: ServerError, sql: String },
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// A script's event raised an error (Lua's message, with its traceback).
    #[error("{0}")]
    Script(String),
}

impl EventError {
    pub fn is_connection_lost(&self) -> bool {
        match self {
            EventError::Driver(e) => e.is_connection_lost(),
            EventError::Server { error, .. } => is_lost_code(error.code),
            EventError::Script(_) => false,
        }
    }
}
