//! How the Rust half answers the Lua half (`prelude.lua`): a call's values, a refusal, the
//! API's own errors.

use bakeoff_driver::ServerError;
use mlua::{Lua, Value};

/// What a method hands the Lua half: a value (`true`, or a statement; a result set is the
/// connection's, `con.rs`), or `nil` and the server's error number, state and message, or
/// `nil, nil, nil` and why the API refused.
/// A tuple, not a `MultiValue`: mlua pushes it without allocating.
pub(super) type Reply = (Value, Value, Value, Value);

pub(super) const NOTHING: Reply = (Value::Nil, Value::Nil, Value::Nil, Value::Nil);

pub(super) fn reply(v: Value) -> Reply {
    (v, Value::Nil, Value::Nil, Value::Nil)
}

/// A statement's failure as the Lua half reads it: `nil, errno, sqlstate, message`.
pub(super) fn refused(lua: &Lua, e: &ServerError) -> mlua::Result<Reply> {
    Ok((
        Value::Nil,
        Value::Integer(e.code.into()),
        Value::String(lua.create_string(&e.sql_state)?),
        Value::String(lua.create_string(&e.message)?),
    ))
}

/// A misuse of the API (a closed connection, a bulk insert not begun) as the Lua half reads
/// it: `nil, nil, nil, message`, raised from the script's line there.
pub(super) fn api(lua: &Lua, r: mlua::Result<Reply>) -> mlua::Result<Reply> {
    match r {
        Err(mlua::Error::RuntimeError(m)) => Ok((
            Value::Nil,
            Value::Nil,
            Value::Nil,
            Value::String(lua.create_string(m)?),
        )),
        r => r,
    }
}

/// The same for a method that answers nothing when it goes well: `nil` or the message.
pub(super) fn api_unit(r: mlua::Result<()>) -> mlua::Result<Option<String>> {
    match r {
        Ok(()) => Ok(None),
        Err(mlua::Error::RuntimeError(m)) => Ok(Some(m)),
        Err(e) => Err(e),
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
