//! sysbench's Lua scripts in an embedded LuaJIT (sysbench's own interpreter: shared scripts
//! use its ffi), with sysbench 1.0.20's Lua API.
//!
//! - [`Script::run_command`] runs a script's body and one of its commands (`help`,
//!   `prepare`, `cleanup`, or one it declares) in the calling thread.
//! - For `run`, [`Script::main`] is sysbench's main state (`init`, `done`, the report hooks)
//!   and [`Script`] is a [`Source`](super::Source): each connection gets a Lua state of its
//!   own, as sysbench gives each thread one. A state alone on its client thread uses
//!   blocking sockets, as sysbench's do. States that share a client thread run as fibers on
//!   its reactor (`fiber`, `sql/reactor.rs`): a call that would wait suspends the state's
//!   stack until the answer is in. A script whose calls wait inside C (`blocking`) keeps a
//!   client thread per connection.
//!
//! The API's Rust halves are in `api` (the tables), `options`, `rand`, `sql` and `counts`
//! (with `sb_counter_inc`, exported for ffi); its Lua half is `prelude.lua`.

mod api;
mod blocking;
mod counts;
mod error;
mod event_loop;
mod fiber;
mod options;
mod rand;
mod script;
mod session;
mod sql;

pub use api::SYSBENCH_VERSION;
pub use counts::exported_symbols;
pub use error::{message, ScriptError};
pub use rand::RandOptions;
pub use script::{waits_in_c, Ran, Script};
pub use session::{Main, Session, Stat};
pub use sql::{sysbench_log, Ignore, SqlOptions};
