//! The hand-off between a state's calls and the reactor, for a state that shares its client
//! thread with others (issue 75). LuaJIT can yield from Lua frames, not from inside a C call
//! (a Rust callback, an ffi function), so a call that would wait on the server does not wait:
//! it puts its I/O here ([`Yielder::hand`]) and returns a pending mark, `false` (an ffi
//! execute returns 2). The prelude then yields; the session takes the I/O, awaits it on the
//! thread's reactor while the thread's other states run, and resumes the state with what the
//! call would have returned. The I/O is the call's own async code, the same the blocking
//! calls drive to their end: the post-processing (counts, the result set, sysbench's lines,
//! the reconnect on a lost server) is not written twice.
//!
//! The I/O is boxed: one allocation a statement, beside the round trip it waits for. An enum
//! of the calls would save it, at the price of this file naming every call's types (and
//! those files naming this one back).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use mlua::Value;

use super::reply::Reply;

/// A call's I/O and what it answers, as the prelude reads the call's values.
pub(crate) type Io = Pin<Box<dyn Future<Output = Reply>>>;

/// A state's hand-off: the I/O its last call left for the session, if any. One per state,
/// in its app data (`raw.connect` finds it there) and in each of its connections.
#[derive(Default)]
pub(crate) struct Yielder {
    pending: RefCell<Option<Io>>,
}

/// What a call returns when it handed its I/O over: the prelude yields on it.
const PENDING: Reply = (Value::Boolean(false), Value::Nil, Value::Nil, Value::Nil);

impl Yielder {
    /// Leave `io` for the session; the pending mark for the prelude.
    pub(crate) fn hand(&self, io: impl Future<Output = Reply> + 'static) -> Reply {
        *self.pending.borrow_mut() = Some(Box::pin(io));
        PENDING
    }

    /// The I/O the state yielded for; none when it yielded for another reason (an event's
    /// end) or finished.
    pub(crate) fn take(&self) -> Option<Io> {
        self.pending.borrow_mut().take()
    }
}
