//! A script's states as coroutines on the client thread's reactor (issue 75): many states
//! share each client thread, as the native workloads' connections do, instead of a thread
//! (and a context switch per query) each. Each state keeps its own connection and Lua state,
//! as in sysbench; its `thread_init`, events and `thread_done` run in coroutines of it, which
//! yield whenever a call hands its I/O over (`sql/reactor.rs`) and are resumed with the
//! answer once the reactor has it.
//!
//! What the thread's states share is theirs in turn: the statement counters are taken after
//! every stretch a state runs, and its random stream is swapped in for each stretch.

use std::rc::Rc;

use mlua::{Function, IntoLuaMulti, Table, Thread};

use super::counts;
use super::error::{failed_in, message, ScriptError};
use super::rand::Stream;
use super::script::Script;
use super::session::{OnReactor, Session, Step};
use super::sql::Yielder;
use crate::scripting::{EventError, StmtCounts};

/// Run `co` from `args` until it yields without handing I/O over (an event's end) or
/// finishes; each I/O it hands over is awaited meanwhile. What it yielded or returned last.
async fn drive(
    yielder: &Yielder,
    co: &Thread,
    args: impl IntoLuaMulti,
    stream: &mut Stream,
    c: &mut StmtCounts,
) -> mlua::Result<Option<i64>> {
    let mut stretch = run_stretch(stream, c, || co.resume::<Option<i64>>(args));
    loop {
        let out = match stretch {
            Ok(out) => out,
            Err(e) => {
                // A call that handed I/O over and could not yield (a C frame between it
                // and the coroutine): nothing waits for that I/O.
                yielder.take();
                return Err(e);
            }
        };
        let Some(io) = yielder.take() else {
            return Ok(out);
        };
        let answer = io.await;
        c.add(&counts::take());
        stretch = run_stretch(stream, c, || co.resume::<Option<i64>>(answer));
    }
}

/// One stretch of a state between two yields: its stream in, what it counted out.
fn run_stretch<T>(stream: &mut Stream, c: &mut StmtCounts, f: impl FnOnce() -> T) -> T {
    stream.swap();
    let out = f();
    stream.swap();
    c.add(&counts::take());
    out
}

/// Whether a call's error is one sysbench reports (Lua's message), as `Source::open` says it.
fn script_failed(e: ScriptError) -> EventError {
    EventError::Script(e.to_string())
}

impl Script {
    /// A state for connection `tid` on the reactor: the body, then `thread_init(tid)` in a
    /// coroutine.
    pub(super) async fn open_on_reactor(&self, tid: u32) -> Result<Session, EventError> {
        let lua = self.state(tid).map_err(script_failed)?;
        // Seeded for this tid by `state`: the state's from now on, before another state
        // runs on this thread.
        let mut stream = Stream::take();
        let yielder = Rc::new(Yielder::default());
        lua.set_app_data(yielder.clone());
        let mut carried = counts::take();
        let globals = lua.globals();
        let lookup = |name: &str| {
            globals
                .get::<Option<Function>>(name)
                .map_err(|e| EventError::Script(message(&e)))
        };
        if let Some(f) = lookup("thread_init")? {
            let co = lua
                .create_thread(f)
                .map_err(|e| EventError::Script(message(&e)))?;
            drive(&yielder, &co, tid, &mut stream, &mut carried)
                .await
                .map_err(|e| EventError::Script(failed_in("thread_init", &e)))?;
        }
        let step = match lookup("thread_run")? {
            Some(f) => Step::ThreadRun(f),
            None if lookup("event")?.is_none() => {
                return Err(EventError::Script(format!(
                    "cannot find the event() function in {}",
                    self.name()
                )))
            }
            None => {
                let sysbench: Table = globals
                    .get("sysbench")
                    .map_err(|e| EventError::Script(message(&e)))?;
                Step::Event(
                    sysbench
                        .get::<Function>("__events")
                        .map_err(|e| EventError::Script(message(&e)))?,
                )
            }
        };
        drop(globals);
        let reactor = OnReactor {
            yielder,
            events: None,
            carried,
        };
        Ok(Session::new(lua, step, tid, stream, Some(reactor)))
    }
}

impl Session {
    /// One event on the reactor: the events' coroutine resumed until the event ends. 0 done,
    /// 2 restart, anything else the script ended its thread.
    pub(super) async fn event_on_reactor(&mut self, c: &mut StmtCounts) -> Result<i64, EventError> {
        let (lua, step, tid, stream, on) = self.parts();
        let Some(on) = on else {
            return Ok(1);
        };
        c.add(&std::mem::take(&mut on.carried));
        let failed = |e: mlua::Error| EventError::Script(failed_in("thread_run", &e));
        let out = match step {
            Step::Event(f) => match &on.events {
                Some(co) => drive(&on.yielder, co, (), stream, c).await,
                None => {
                    let co = lua.create_thread(f.clone()).map_err(failed)?;
                    let out = drive(&on.yielder, &co, tid, stream, c).await;
                    on.events = Some(co);
                    out
                }
            },
            // The script's own loop, run once to its end: its events have then ended.
            Step::ThreadRun(f) => {
                let co = lua.create_thread(f.clone()).map_err(failed)?;
                drive(&on.yielder, &co, tid, stream, c)
                    .await
                    .map(|_| Some(1))
            }
            Step::None => Ok(Some(1)),
        };
        Ok(out.map_err(failed)?.unwrap_or(1))
    }

    /// `thread_done(tid)` on the reactor, if the script has one.
    pub(super) async fn finish_on_reactor(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let (lua, _, tid, stream, on) = self.parts();
        let Some(on) = on else {
            return Ok(());
        };
        c.add(&std::mem::take(&mut on.carried));
        let failed = |e: mlua::Error| EventError::Script(failed_in("thread_done", &e));
        let Some(f) = lua
            .globals()
            .get::<Option<Function>>("thread_done")
            .map_err(failed)?
        else {
            return Ok(());
        };
        let co = lua.create_thread(f).map_err(failed)?;
        drive(&on.yielder, &co, tid, stream, c)
            .await
            .map(|_| ())
            .map_err(failed)
    }
}
