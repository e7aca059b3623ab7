//! The hand-off between a state's calls and the reactor, for a state that shares its client
//! thread with others (issue 75). LuaJIT can yield from Lua frames, not from inside a C call
//! (a Rust callback, an ffi function), so a call that would wait on the server does not wait:
//! it puts its I/O here ([`Yielder::hand`]) and returns a pending mark, `false` (an ffi
//! execute returns 2). The prelude then yields; the session takes the I/O, awaits it on the
//! thread's reactor while the thread's other states run ([`Io::run`]), and resumes the state
//! with what the call would have returned. The post-processing (counts, the result set,
//! sysbench's lines, the reconnect on a lost server) is the same code the blocking calls run.
//!
//! The I/O is an enum, not a boxed future: awaiting it allocates nothing per statement.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Lua, Value};

use super::link::{api, reply, Reply, SqlOptions, NOTHING};
use super::stmt::StmtInner;
use super::RawConn;
use crate::scripting::lua::error::message;

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
    pub(crate) fn hand(&self, io: Io) -> Reply {
        *self.pending.borrow_mut() = Some(io);
        PENDING
    }

    /// The I/O the state yielded for; none when it yielded for another reason (an event's
    /// end) or finished.
    pub(crate) fn take(&self) -> Option<Io> {
        self.pending.borrow_mut().take()
    }
}

/// A call's I/O, with what it needs to finish the call.
pub(crate) enum Io {
    Connect(Rc<SqlOptions>, Rc<Yielder>),
    Query(RawConn, String),
    Prepare(RawConn, String),
    BulkNext(RawConn, String),
    BulkDone(RawConn),
    /// PostgreSQL's rollback after an ignorable error.
    Recover(RawConn),
    Reconnect(RawConn),
    Disconnect(RawConn),
    Execute(Rc<StmtInner>),
    /// PostgreSQL's parse at bind time.
    Declare(Rc<StmtInner>),
    Close(Rc<StmtInner>),
}

impl Io {
    /// Do it, on the reactor: the values the call's Lua half reads, as the blocking call
    /// returns them. An error the blocking call raises comes back as the API's message
    /// (`nil, nil, nil, why`), which the prelude raises from the script's line.
    pub(crate) async fn run(self, lua: &Lua) -> Reply {
        let done = match self {
            Io::Connect(opts, y) => super::connect_on_reactor(lua, &opts, y).await,
            Io::Query(c, sql) => c.query(lua, &sql).await,
            Io::Prepare(c, sql) => c.prepare(lua, &sql).await,
            Io::BulkNext(c, value) => c.bulk_next(lua, &value).await,
            Io::BulkDone(c) => c.bulk_done(lua).await,
            Io::Recover(c) => {
                c.recover().await;
                Ok(NOTHING)
            }
            Io::Reconnect(c) => unit_reply(lua, c.reconnect().await),
            Io::Disconnect(c) => unit_reply(lua, c.disconnect().await),
            Io::Execute(s) => {
                let code = s.keep(s.run().await);
                Ok(reply(Value::Integer(code.into())))
            }
            Io::Declare(s) => {
                s.declare().await;
                Ok(NOTHING)
            }
            Io::Close(s) => {
                s.close().await;
                Ok(NOTHING)
            }
        };
        match api(lua, done) {
            Ok(r) => r,
            Err(e) => {
                let why = lua
                    .create_string(message(&e))
                    .map_or(Value::Nil, Value::String);
                (Value::Nil, Value::Nil, Value::Nil, why)
            }
        }
    }
}

/// A call that answers nothing when it goes well: nothing, or why not as its first value (the
/// prelude's `checked`).
pub(super) fn unit_reply(lua: &Lua, r: mlua::Result<()>) -> mlua::Result<Reply> {
    match r {
        Ok(()) => Ok(NOTHING),
        Err(mlua::Error::RuntimeError(m)) => Ok(reply(Value::String(lua.create_string(m)?))),
        Err(e) => Err(e),
    }
}
