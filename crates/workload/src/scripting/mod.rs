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
pub mod sessions;
pub mod user;

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

    /// Whether every connection is opened even after another failed to: sysbench runs every
    /// thread's `thread_init` and says each failure. bakeoff's own workloads stop opening at
    /// the first failure (a thousand connections refused alike say nothing more).
    fn opens_every_connection(&self) -> bool {
        false
    }

    /// Whether the run's events come from paced terminals ([`Terminal`]) that hand their
    /// orders to whichever connection is free, rather than from each connection: known
    /// before any connection opens. TPC-C with keying and think time; no other workload.
    fn paced(&self) -> bool {
        false
    }

    /// Whether every connection's open runs at once rather than a few at a time: its open
    /// runs the user's own code (a script's `thread_init`), which may wait for the other
    /// connections' (sysbench starts every thread's at once).
    fn opens_side_by_side(&self) -> bool {
        false
    }

    /// Whether a session's events block its thread on each statement (a Lua script that
    /// waits inside C): the engine then gives each connection a client thread of its own.
    fn blocks(&self) -> bool {
        false
    }

    /// The paced terminals that connections `first_tid..first_tid + connections` of the run
    /// serve (a client host's share of a run spread over several; all of them on one), asked
    /// once the connections are open (a run's scale may be what the server's tables hold).
    fn terminals(&self, _first_tid: u32, _connections: u32) -> std::ops::Range<u32> {
        0..0
    }

    /// Paced terminal `id`, once the connections are open; None where there is none.
    fn terminal(&self, _id: u32, _seed: u64) -> Option<Box<dyn Terminal>> {
        None
    }
}

/// A terminal that is not a connection (TPC-C's clause 5.2.5): a user at a screen who keys
/// in a transaction, waits for its answer, and thinks before the next. Its state lives with
/// the engine's pacer; a connection gets only the order it submits ([`Events::take_order`]).
pub trait Terminal {
    /// The wait before the terminal's next order is submitted: the think time after the
    /// order it last submitted (of class `done`, as [`StmtCounts::class`]; 0 before its
    /// first), then the keying time of the next, which it chooses now.
    fn wait(&mut self, done: u8) -> std::time::Duration;
    /// The order chosen by the last [`wait`](Terminal::wait), with its inputs drawn now.
    fn order(&mut self) -> Box<dyn std::any::Any>;
}

/// One connection's events.
pub trait Events {
    /// One event (sysbench's event()), its statements counted into `c` as they complete, so
    /// statements before a failure stay counted as sysbench counts them.
    fn event(&mut self, c: &mut StmtCounts) -> impl Future<Output = Result<(), EventError>>;

    /// The next event's intended start, told before it begins: its arrival in open loop
    /// (--rate), now in closed loop. pgbench's clients measure their schedule lag from it.
    fn intended_start(&mut self, _at: std::time::Instant) {}

    /// A paced terminal's order (see [`Terminal`]), told before the event that runs it; the
    /// event runs that order instead of choosing its own.
    fn take_order(&mut self, _order: Box<dyn std::any::Any>) {}

    /// After a lost connection: a new connection with everything prepared again.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), DriverError>>;

    /// End of the run (sysbench's thread_done): send what is still buffered, then leave.
    fn finish(self, c: &mut StmtCounts) -> impl Future<Output = Result<(), EventError>>;

    /// Run the events in a loop of the session's own, calling `pace` around each, until
    /// `pace` ends it: for a closed loop. `None`: the session has no loop of its own, and
    /// the engine calls [`event`](Events::event) for each event. A script's loop is Lua
    /// code, so LuaJIT compiles it with the event into one trace, as sysbench's
    /// `thread_run` loop is compiled; an event entered from Rust each time runs partly
    /// interpreted.
    fn run_events(
        &mut self,
        _pace: &mut dyn Pace,
    ) -> impl Future<Output = Option<Result<(), EventError>>> {
        async { None }
    }
}

/// The engine's bookkeeping around each event of a loop a session runs itself
/// ([`Events::run_events`]). Called from compiled Lua through ffi: no method may panic.
pub trait Pace {
    /// Whether another event starts now; false when the run is over for this connection.
    fn begin(&mut self) -> bool;
    /// The event that began last ended, done: its statements are `c`.
    fn end(&mut self, c: &StmtCounts);
    /// The event that began last ended without being done (the script ended its thread, or
    /// failed): its statements `c` still count.
    fn abandon(&mut self, c: &StmtCounts);
    /// The event restarts after an ignorable error; false when the run is stopping.
    fn restart(&mut self) -> bool;
}

/// Tallies an event carries for its class (see [`StmtCounts::tally`]).
pub const TALLIES: usize = 4;

/// Statements by outcome, sysbench's way: a result set is a read, a statement that changed
/// rows a write, anything else (BEGIN, COMMIT, an UPDATE that matched nothing) other.
/// Errors and reconnects are counted here when the source counts them itself (a script's
/// ignorable errors, its `sb_counter_inc`); the engine counts the ones it handles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StmtCounts {
    pub reads: u64,
    pub writes: u64,
    pub others: u64,
    pub errors: u64,
    /// The server's code for the last of `errors` (0: the script counted it itself).
    pub error_code: u16,
    pub reconnects: u64,
    /// The event's class, for a source whose events are of several kinds (TPC-C's five
    /// transactions): 0 the event has none (every sysbench event), n class n-1. The engine
    /// records a done event's latency and `tally` under its class too.
    pub class: u8,
    /// Counts the source keeps per event of its class (what each means is the source's: a
    /// rolled-back New-Order, its remote order lines...), summed over the class's events.
    /// An event restarted after an ignorable error keeps what its attempts added.
    pub tally: [u32; TALLIES],
}

impl StmtCounts {
    pub const ZERO: StmtCounts = StmtCounts {
        reads: 0,
        writes: 0,
        others: 0,
        errors: 0,
        error_code: 0,
        reconnects: 0,
        class: 0,
        tally: [0; TALLIES],
    };

    /// Add `o`'s counts to these; `o`'s class, when it has one, is the class.
    pub fn add(&mut self, o: &StmtCounts) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.others += o.others;
        if o.errors > 0 {
            self.errors += o.errors;
            self.error_code = o.error_code;
        }
        self.reconnects += o.reconnects;
        if o.class != 0 {
            self.class = o.class;
        }
        for (t, n) in self.tally.iter_mut().zip(o.tally) {
            *t = t.saturating_add(n);
        }
    }
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
    /// The source counted an ignorable error and asks for the event again (sysbench's
    /// RESTART_EVENT); the engine restarts it without counting anything more.
    #[error("the event is restarted")]
    Restart,
    /// The source ended its connection's events (a script's event() returned a value, as
    /// sysbench's scripts stop a thread): not a failure, and that event is not counted.
    #[error("the script ended its thread's events")]
    Ended,
}

impl EventError {
    pub fn is_connection_lost(&self) -> bool {
        match self {
            EventError::Driver(e) => e.is_connection_lost(),
            EventError::Server { error, .. } => is_lost_code(error.code),
            EventError::Script(_) | EventError::Restart | EventError::Ended => false,
        }
    }
}
