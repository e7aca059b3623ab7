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

use mlua::{Function, IntoLuaMulti, Thread, Value};

use super::counts;
use super::error::{failed_in, message, ScriptError};
use super::rand::Stream;
use super::script::Script;
use super::session::{OnReactor, Session, Step};
use super::sql::Yielder;
use crate::scripting::{EventError, StmtCounts};

/// How a drive ended: what the coroutine yielded or returned first (an event's outcome), and
/// whether it waited on the reactor on the way.
struct Driven {
    value: Value,
    waited: bool,
}

/// Run `co` from `args` until it yields for another reason than I/O (an event's end) or
/// finishes; each I/O it hands over is awaited meanwhile. The prelude yields `false` for
/// I/O, after its call handed the I/O over; anything else is not I/O, and an I/O handed by a
/// call that could not yield (a C frame between it and the coroutine, its error caught by
/// the script) is dropped unrun.
async fn drive(
    yielder: &Yielder,
    co: &Thread,
    args: impl IntoLuaMulti,
    stream: &mut Stream,
    c: &mut StmtCounts,
) -> mlua::Result<Driven> {
    let mut stretch = run_stretch(stream, c, || co.resume::<Value>(args));
    let mut waited = false;
    loop {
        let value = match stretch {
            Ok(v) => v,
            Err(e) => {
                yielder.take();
                return Err(e);
            }
        };
        let io = match (&value, co.is_resumable()) {
            (Value::Boolean(false), true) => yielder.take(),
            _ => None,
        };
        let Some(io) = io else {
            yielder.take();
            return Ok(Driven { value, waited });
        };
        let answer = io.await;
        waited = true;
        c.add(&counts::take());
        stretch = run_stretch(stream, c, || co.resume::<Value>(answer));
    }
}

/// An event's outcome as `__event` yields it: 0 done, 2 restart, 1 (or anything else) the
/// script ended its thread.
fn outcome(v: &Value) -> i64 {
    match v {
        Value::Integer(n) => *n,
        Value::Number(n) => *n as i64,
        _ => 1,
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
        let thread_init = lua
            .globals()
            .get::<Option<Function>>("thread_init")
            .map_err(|e| EventError::Script(message(&e)))?;
        if let Some(f) = thread_init {
            let co = lua
                .create_thread(f)
                .map_err(|e| EventError::Script(message(&e)))?;
            drive(&yielder, &co, tid, &mut stream, &mut carried)
                .await
                .map_err(|e| EventError::Script(failed_in("thread_init", &e)))?;
        }
        let step = self.step(&lua, "__events")?;
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
        let driven = match step {
            Step::Event(f) => match &on.events {
                Some(co) => drive(&on.yielder, co, (), stream, c).await,
                None => {
                    let co = lua.create_thread(f.clone()).map_err(failed)?;
                    let out = drive(&on.yielder, &co, tid, stream, c).await;
                    on.events = Some(co);
                    out
                }
            },
            // The script's own loop, run once to its end: its events have then ended,
            // whatever it returned.
            Step::ThreadRun(f) => {
                let co = lua.create_thread(f.clone()).map_err(failed)?;
                let mut driven = drive(&on.yielder, &co, tid, stream, c).await;
                if let Ok(d) = &mut driven {
                    d.value = Value::Integer(1);
                }
                driven
            }
        }
        .map_err(failed)?;
        if !driven.waited {
            // An event that never waited (a dry run's, or one that only computes) gave the
            // thread's other states no turn: give them one now, or they would never run.
            tokio::task::yield_now().await;
        }
        Ok(outcome(&driven.value))
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
