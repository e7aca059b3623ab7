//! A script's `run`: its main state ([`Main`]: `init`, `done`, the report hooks, in the
//! thread that runs the run) and one [`Session`] per connection (`thread_init`, `event`,
//! `thread_done`, or the script's own `thread_run`), as sysbench calls them. A session alone
//! on its client thread calls them here, its calls blocking the thread; one that shares it
//! calls them on a fiber of its own on the thread's reactor (`fiber.rs`), its calls
//! suspending the fiber while they wait.

use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::rc::Rc;
use std::sync::Arc;

use bakeoff_driver::DriverError;
use mlua::{Function, Lua, Table};

use super::counts;
use super::error::{failed_in, message, ScriptError};
use super::event_loop::{counted, Paced};
use super::fiber::{Command, Fiber};
use super::options;
use super::rand::Stream;
use super::script::Script;
use super::sql::Yielder;
use crate::scripting::{EventError, Events, Pace, Source, StmtCounts};

/// What a report hook is given (sysbench's sb_stat_t, as its Lua API hands it over).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stat {
    pub threads_running: u32,
    /// Seconds this report covers, and since the run started.
    pub time_interval: f64,
    pub time_total: f64,
    /// The run's percentile of latency in this report, in seconds.
    pub latency_pct: f64,
    pub events: u64,
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub errors: u64,
    pub reconnects: u64,
    /// Cumulative reports only: latency min, max, average and sum, in seconds.
    pub latency: Option<[f64; 4]>,
}

/// The script's main state for a run: its body, `init` before the threads start, `done`
/// after, and the report hooks between.
pub struct Main {
    lua: Lua,
}

impl Script {
    /// sysbench's main state: the body runs, then the options are checked against what it
    /// declares (see [`Script::run_command`]).
    pub fn main(&self, general: &dyn Fn(&str) -> bool) -> Result<Main, ScriptError> {
        let lua = self.state(0)?;
        if let Some((name, _)) = options::undeclared(&lua, &self.options, general)?.first() {
            return Err(ScriptError::InvalidOption(name.clone()));
        }
        Ok(Main { lua })
    }
}

impl Main {
    fn global(&self, name: &str) -> mlua::Result<Option<Function>> {
        self.lua.globals().get::<Option<Function>>(name)
    }

    fn hook(&self, name: &str) -> mlua::Result<Option<Function>> {
        let sysbench: Table = self.lua.globals().get("sysbench")?;
        let hooks: Table = sysbench.get("hooks")?;
        hooks.get::<Option<Function>>(name)
    }

    /// Whether the script defines an `event` function (or runs its threads itself).
    pub fn has_events(&self) -> Result<bool, ScriptError> {
        Ok(self.global("event")?.is_some() || self.global("thread_run")?.is_some())
    }

    /// Whether the script runs each thread itself (`thread_run`), its events not the engine's.
    pub fn runs_its_threads(&self) -> Result<bool, ScriptError> {
        Ok(self.global("thread_run")?.is_some())
    }

    /// The main state's functions the script defines (`init`, `done`) and the report hooks it
    /// sets (`sysbench.hooks.report_intermediate`, `report_cumulative`), by name.
    pub fn main_hooks(&self) -> Vec<String> {
        let mut out = Vec::new();
        for name in ["init", "done"] {
            if self.global(name).ok().flatten().is_some() {
                out.push(format!("{name}()"));
            }
        }
        for name in ["report_intermediate", "report_cumulative"] {
            if self.hook(name).ok().flatten().is_some() {
                out.push(format!("sysbench.hooks.{name}"));
            }
        }
        out
    }

    /// `init()`, if the script has one; the statements it ran (sysbench counts them in the
    /// run's totals and its first interval).
    pub fn init(&self) -> Result<StmtCounts, ScriptError> {
        counts::take();
        if let Some(f) = self.global("init")? {
            f.call::<()>(())
                .map_err(|e| ScriptError::Lua(failed_in("init", &e)))?;
        }
        Ok(counts::take())
    }

    /// `done()`, if the script has one; then the reports it opened are closed.
    pub fn done(&self) -> Result<(), ScriptError> {
        if let Some(f) = self.global("done")? {
            f.call::<()>(())
                .map_err(|e| ScriptError::Lua(failed_in("done", &e)))?;
        }
        self.close_reports()
    }

    fn close_reports(&self) -> Result<(), ScriptError> {
        let sysbench: Table = self.lua.globals().get("sysbench")?;
        sysbench
            .get::<Function>("__close_reports")?
            .call::<()>(())?;
        Ok(())
    }

    /// Whether the script replaces the intermediate (or the cumulative) report.
    pub fn reports(&self, cumulative: bool) -> Result<bool, ScriptError> {
        let name = match cumulative {
            true => "report_cumulative",
            false => "report_intermediate",
        };
        Ok(self.hook(name)?.is_some())
    }

    /// Call the script's report hook with `stat`; false when it has none.
    pub fn report(&self, stat: &Stat, cumulative: bool) -> Result<bool, ScriptError> {
        let name = match cumulative {
            true => "report_cumulative",
            false => "report_intermediate",
        };
        let Some(hook) = self.hook(name)? else {
            return Ok(false);
        };
        if cumulative {
            // sysbench reports the run from another state than the intervals: a JSON array
            // of intervals is closed before the run's own.
            self.close_reports()?;
        }
        hook.call::<()>(stat_table(&self.lua, stat)?)
            .map_err(|e| ScriptError::Lua(failed_in(name, &e)))?;
        Ok(true)
    }
}

fn stat_table(lua: &Lua, s: &Stat) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("threads_running", s.threads_running)?;
    t.set("time_interval", s.time_interval)?;
    t.set("time_total", s.time_total)?;
    t.set("latency_pct", s.latency_pct)?;
    t.set("events", s.events)?;
    t.set("reads", s.reads)?;
    t.set("writes", s.writes)?;
    t.set("other", s.other)?;
    t.set("errors", s.errors)?;
    t.set("reconnects", s.reconnects)?;
    if let Some([min, max, avg, sum]) = s.latency {
        t.set("latency_min", min)?;
        t.set("latency_max", max)?;
        t.set("latency_avg", avg)?;
        t.set("latency_sum", sum)?;
    }
    Ok(t)
}

impl Source for Script {
    /// As sysbench: every thread's thread_init runs, and each failure is said.
    fn opens_every_connection(&self) -> bool {
        true
    }

    /// Every state's `thread_init` runs at once, as sysbench's threads start together.
    fn opens_side_by_side(&self) -> bool {
        true
    }

    /// A script whose calls wait inside C blocks its thread (`blocking.rs`); any other runs
    /// its states on fibers, many on each client thread.
    fn blocks(&self) -> bool {
        self.waits_in_c.is_some()
    }

    type Session = Session;

    /// A state for connection `tid`: the body, `sysbench.tid`, then the script's
    /// `thread_init(tid)`.
    async fn open(
        self: Arc<Self>,
        tid: u32,
        _seed: u64,
        blocking: bool,
    ) -> Result<Session, EventError> {
        if !blocking && !self.blocks() {
            return self.open_on_reactor(tid).await;
        }
        let failed = |e: ScriptError| EventError::Script(e.to_string());
        let lua = self.state(tid).map_err(failed)?;
        let thread_init = lua
            .globals()
            .get::<Option<Function>>("thread_init")
            .map_err(|e| EventError::Script(message(&e)))?;
        if let Some(f) = thread_init {
            f.call::<()>(tid)
                .map_err(|e| EventError::Script(failed_in("thread_init", &e)))?;
        }
        let step = self.step(&lua)?;
        // Seeded for this tid by `state`, drawn from by thread_init: the state's from now on.
        let stream = Stream::take();
        Ok(Session::new(lua, step, tid, stream, None))
    }
}

impl Script {
    /// What a state's events call once its `thread_init` has run: the script's own
    /// `thread_run`, else the prelude's `__event` around its `event`. A script with neither
    /// fails as sysbench's does.
    fn step(&self, lua: &Lua) -> Result<Step, EventError> {
        let failed = |e: mlua::Error| EventError::Script(message(&e));
        let globals = lua.globals();
        let lookup = |name: &str| globals.get::<Option<Function>>(name).map_err(failed);
        if let Some(f) = lookup("thread_run")? {
            return Ok(Step::ThreadRun(f));
        }
        if lookup("event")?.is_none() {
            return Err(EventError::Script(format!(
                "cannot find the event() function in {}",
                self.name()
            )));
        }
        let sysbench: Table = globals.get("sysbench").map_err(failed)?;
        Ok(Step::Event(
            sysbench.get::<Function>("__event").map_err(failed)?,
        ))
    }
}

/// A session's part on the reactor: the fiber its calls run on.
pub(super) struct OnReactor {
    yielder: Rc<Yielder>,
    fiber: Fiber,
    /// What the body and `thread_init` ran, counted with the first event, as on a thread of
    /// its own.
    carried: StmtCounts,
}

impl Script {
    /// A state for connection `tid` on the reactor: the body, then `thread_init(tid)` on the
    /// state's fiber.
    async fn open_on_reactor(&self, tid: u32) -> Result<Session, EventError> {
        let lua = self
            .state(tid)
            .map_err(|e| EventError::Script(e.to_string()))?;
        // Seeded for this tid by `state`: the state's from now on, before another state
        // runs on this thread.
        let mut stream = Stream::take();
        let yielder = Rc::new(Yielder::default());
        lua.set_app_data(yielder.clone());
        let mut fiber = Fiber::new(yielder.clone(), tid)
            .map_err(|e| EventError::Script(format!("cannot make a stack for a state: {e}")))?;
        let mut carried = counts::take();
        let thread_init = lua
            .globals()
            .get::<Option<Function>>("thread_init")
            .map_err(|e| EventError::Script(message(&e)))?;
        if let Some(f) = thread_init {
            let init = fiber.run(Command::Run(f), &mut stream).await;
            carried.add(&init.counts);
            init.code
                .map_err(|e| EventError::Script(failed_in("thread_init", &e)))?;
        }
        let step = self.step(&lua)?;
        let reactor = OnReactor {
            yielder,
            fiber,
            carried,
        };
        Ok(Session::new(lua, step, tid, stream, Some(reactor)))
    }
}

impl Session {
    /// One event on the state's fiber. 0 done, 2 restart, anything else the script ended
    /// its thread.
    async fn event_on_reactor(&mut self, c: &mut StmtCounts) -> Result<i64, EventError> {
        let Some(on) = self.reactor.as_mut() else {
            return Ok(1);
        };
        c.add(&std::mem::take(&mut on.carried));
        let command = match &self.step {
            Step::Event(f) => Command::Code(f.clone()),
            Step::ThreadRun(f) => Command::Run(f.clone()),
        };
        let done = on.fiber.run(command, &mut self.stream).await;
        c.add(&done.counts);
        let code = done
            .code
            .map_err(|e| EventError::Script(failed_in("thread_run", &e)))?;
        if !on.yielder.did_io() {
            // An event that did no I/O (a dry run's, or one that only computes) gave the
            // thread's other states no turn: give them one now, or they would never run.
            tokio::task::yield_now().await;
        }
        Ok(match self.step {
            // The script's own loop, run once to its end: its events have then ended,
            // whatever it returned.
            Step::ThreadRun(_) => 1,
            Step::Event(_) => code,
        })
    }

    /// sysbench's loop on the state's fiber.
    async fn run_events_on_reactor(
        &mut self,
        run: Function,
        pace: &mut dyn Pace,
    ) -> Result<i64, mlua::Error> {
        let on = self.reactor.as_mut().expect("on the reactor");
        on.yielder.carry(&std::mem::take(&mut on.carried));
        let mut paced = Paced {
            pace,
            on: Some(&on.yielder),
        };
        let address = paced.address() as *mut c_void;
        let done = on
            .fiber
            .run(Command::Loop(run, address), &mut self.stream)
            .await;
        // 1, or a failure: an event began and was not done; what it ran still counts.
        if !matches!(done.code, Ok(0)) {
            paced.pace.abandon(&done.counts);
        }
        done.code
    }

    /// `thread_done(tid)` on the state's fiber, if the script has one.
    async fn finish_on_reactor(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let Some(on) = self.reactor.as_mut() else {
            return Ok(());
        };
        c.add(&std::mem::take(&mut on.carried));
        let failed = |e: mlua::Error| EventError::Script(failed_in("thread_done", &e));
        let Some(f) = self
            .lua
            .globals()
            .get::<Option<Function>>("thread_done")
            .map_err(failed)?
        else {
            return Ok(());
        };
        let done = on.fiber.run(Command::Run(f), &mut self.stream).await;
        c.add(&done.counts);
        done.code.map(|_| ()).map_err(failed)
    }
}

/// What a session's events call.
pub(super) enum Step {
    /// sysbench's loop: the prelude's `__event`, which calls `event` and reads its outcome.
    Event(Function),
    /// The script runs its thread itself: called once, then its events have ended.
    ThreadRun(Function),
}

/// One connection's Lua state.
pub struct Session {
    /// On the reactor: its fiber. None: alone on its thread. Dropped before the state.
    reactor: Option<OnReactor>,
    /// Dropped by hand (`Drop`): not at all where its fiber was abandoned mid-call.
    lua: ManuallyDrop<Lua>,
    step: Step,
    tid: u32,
    /// Its random stream, swapped in while it runs (see `rand::Stream`).
    stream: Stream,
}

impl Session {
    pub(super) fn new(
        lua: Lua,
        step: Step,
        tid: u32,
        stream: Stream,
        reactor: Option<OnReactor>,
    ) -> Session {
        Session {
            reactor,
            lua: ManuallyDrop::new(lua),
            step,
            tid,
            stream,
        }
    }

    /// Run `f` with this state's random stream on the thread.
    fn running<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.stream.swap();
        let out = f(self);
        self.stream.swap();
        out
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let abandoned = self.reactor.as_ref().is_some_and(|on| on.fiber.abandoned());
        // The fiber first: between commands it leaves, dropping what it holds.
        drop(self.reactor.take());
        if abandoned {
            // Frozen in mid-call (its future dropped while its I/O was pending, as at a
            // runtime's teardown): collecting it would run its finalizers on a stack that
            // will never resume, and LuaJIT's collector does not finish on a state stopped
            // inside a compiled trace's C call. Its memory is left, as the fiber's is.
            return;
        }
        // SAFETY: dropped once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.lua) }
    }
}

/// What the state counted since last time, added to `c`.
fn take_counts(c: &mut StmtCounts) {
    c.add(&counts::take());
}

impl Events for Session {
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let code = match self.reactor.is_some() {
            true => self.event_on_reactor(c).await?,
            false => {
                let r = self.running(|s| match &s.step {
                    Step::Event(f) => f.call::<i64>(s.tid),
                    Step::ThreadRun(f) => f.call::<()>(s.tid).map(|()| 1),
                });
                take_counts(c);
                r.map_err(|e| EventError::Script(failed_in("thread_run", &e)))?
            }
        };
        match code {
            0 => Ok(()),
            2 => Err(EventError::Restart),
            _ => Err(EventError::Ended),
        }
    }

    /// sysbench's loop (`sysbench.__loop`), for a script with an `event` function.
    async fn run_events(&mut self, pace: &mut dyn Pace) -> Option<Result<(), EventError>> {
        let Step::Event(_) = &self.step else {
            return None;
        };
        let run = self
            .lua
            .globals()
            .get::<Table>("sysbench")
            .and_then(|s| s.get::<Function>("__loop"));
        let r = match (run, self.reactor.is_some()) {
            (Err(e), _) => Err(e),
            (Ok(run), true) => self.run_events_on_reactor(run, pace).await,
            (Ok(run), false) => {
                let mut paced = Paced { pace, on: None };
                let tid = self.tid;
                let r = self.running(|_| run.call::<i64>((tid, paced.address() as f64)));
                // 1, or a failure: an event began and was not done; what it ran still counts.
                let left = counted();
                if !matches!(r, Ok(0)) {
                    paced.pace.abandon(&left);
                }
                r
            }
        };
        Some(
            r.map(|_| ())
                .map_err(|e| EventError::Script(failed_in("thread_run", &e))),
        )
    }

    async fn reconnect(&mut self) -> Result<(), DriverError> {
        // The script owns its connections; the API reconnects them (sql.rs).
        Ok(())
    }

    async fn finish(mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        if self.reactor.is_some() {
            return self.finish_on_reactor(c).await;
        }
        let done = self.lua.globals().get::<Option<Function>>("thread_done");
        let r = self.running(|s| match done {
            Ok(Some(f)) => f.call::<()>(s.tid),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        });
        take_counts(c);
        r.map_err(|e| EventError::Script(failed_in("thread_done", &e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where servers take turns, one client thread holds a state per server for the same
    /// `tid`: each must draw what it would draw alone (the same keys in the same order on
    /// every server), not take turns at one stream.
    #[test]
    fn each_state_draws_its_own_stream_whichever_states_share_its_thread() {
        let text =
            "seq = {}\nfunction event() seq[#seq + 1] = sysbench.rand.uniform(1, 1000000000) end\n";
        let seed = vec![("rand-seed".to_string(), Some("7".to_string()))];
        let script =
            Arc::new(Script::new("t.lua".into(), text.into(), seed, None, Vec::new()).unwrap());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let event = |s: &mut Session| {
            rt.block_on(s.event(&mut StmtCounts::default())).unwrap();
        };
        let drawn = |s: &Session| s.lua.globals().get::<Vec<i64>>("seq").unwrap();
        // Both ways a state runs: blocking calls on a thread, or on a fiber on the reactor.
        for blocking in [true, false] {
            let open = || rt.block_on(script.clone().open(0, 0, blocking)).unwrap();
            let mut alone = open();
            for _ in 0..4 {
                event(&mut alone);
            }
            let (mut a, mut b) = (open(), open());
            for _ in 0..4 {
                event(&mut a);
                event(&mut b);
            }
            let alone = drawn(&alone);
            assert_eq!(alone.len(), 4, "blocking {blocking}");
            assert_eq!(drawn(&a), alone, "blocking {blocking}");
            assert_eq!(drawn(&b), alone, "blocking {blocking}");
        }
    }
}
