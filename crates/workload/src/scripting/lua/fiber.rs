//! A script's states as fibers on the client thread's reactor (issue 75): many states share
//! each client thread, as the native workloads' connections do, instead of a thread (and a
//! context switch per query) each. Each state keeps its own connection and Lua state, as in
//! sysbench, and runs its `thread_init`, its events and `thread_done` on a stack of its own,
//! suspended whenever a call waits on the server (`sql/reactor.rs`).
//!
//! Why a stack per state rather than Lua coroutines: LuaJIT cannot yield from inside a C call,
//! and a yield in Lua ends the trace being compiled. With a yield per query, the script's loop
//! ran interpreted and every query paid the coroutine's resume and a boxed hand-off: 2.5 times
//! the instructions per query of a state alone on its thread (callgrind, point select at 64
//! connections). On a fiber the query is a C call that returns later, and the script's loop
//! runs compiled as it does alone on a thread.
//!
//! What the thread's states share is theirs in turn: each stretch a state runs between two
//! suspends has its random stream swapped in, and moves what it counted to its own tally as it
//! suspends (`Yielder::wait`).

use std::ffi::c_void;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Context, Poll};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};
use mlua::Function;

use super::rand::Stream;
use super::sql::{Cx, Suspender, Yielder};
use crate::scripting::StmtCounts;

/// Each state's stack: a client thread's (Rust's default), so a script has the room on a
/// fiber that it has on a thread of its own. A C call into Lua can take 8 KiB of it a level
/// (`string.gsub`'s buffer): 1 MiB ran out at 130 nested callbacks. Address space only: the
/// pages a state touches are what it costs. Running out is a crash (the guard page), as on a
/// thread.
const STACK: usize = 2 << 20;

/// What a state's fiber is asked to run: a function of the state, given its `tid`.
pub(super) enum Command {
    /// Called for nothing back (`thread_init`, `thread_done`, a script's own `thread_run`):
    /// the code is 0.
    Run(Function),
    /// Called for its code (`sysbench.__event`: an event's outcome).
    Code(Function),
    /// sysbench's loop (`sysbench.__loop`), paced by the `Paced` at this address.
    Loop(Function, *mut c_void),
}

/// What a command answered: its code (an event's outcome; 0 for the others) and what it
/// counted.
pub(super) struct Answer {
    pub code: mlua::Result<i64>,
    pub counts: StmtCounts,
}

/// How a fiber is resumed: the reactor's context for this poll, and a command where one
/// starts.
type Input = (Cx, Option<Command>);
/// What it suspends with: `None` while its I/O is pending, else the command's answer.
type Out = Option<Answer>;
type Co = corosensei::Yielder<Input, Out>;

impl Suspender for Co {
    fn pending(&self) -> Cx {
        self.suspend(None).0
    }
}

/// A state's fiber.
pub(super) struct Fiber {
    co: Option<Coroutine<Input, Out, (), DefaultStack>>,
    /// A command is under way: its poll was pending last.
    busy: bool,
}

impl Fiber {
    /// A fiber for the state of connection `tid`, its calls waiting through `yielder`.
    pub(super) fn new(yielder: Rc<Yielder>, tid: u32) -> std::io::Result<Fiber> {
        let stack = DefaultStack::new(STACK)?;
        let co = Coroutine::with_stack(stack, move |co: &Co, (cx, first): Input| {
            // None: asked to leave (the state is being dropped) before any command.
            let Some(mut command) = first else {
                return;
            };
            let me: *const dyn Suspender = co;
            // However the fiber ends (returning, or a panic carried out of it), the state's
            // calls no longer find it.
            let _idle = Idle(&yielder);
            yielder.running(me, cx);
            loop {
                let code = match command {
                    Command::Run(f) => f.call::<()>(tid).map(|()| 0),
                    Command::Code(f) => f.call::<i64>(tid),
                    Command::Loop(f, pace) => f.call::<i64>((tid, pace as usize as f64)),
                };
                let counts = yielder.counted();
                yielder.idle();
                let (cx, next) = co.suspend(Some(Answer { code, counts }));
                // None: asked to leave.
                let Some(next) = next else {
                    return;
                };
                yielder.running(me, cx);
                command = next;
            }
        });
        Ok(Fiber {
            co: Some(co),
            busy: false,
        })
    }

    /// Whether a command was left under way (its poll dropped while pending): the state is
    /// frozen in mid-call, and must not be run or collected again.
    pub(super) fn abandoned(&self) -> bool {
        self.busy && self.co.as_ref().is_some_and(|co| !co.done())
    }

    /// Run `command` to its end, the fiber resumed by the reactor whenever its I/O is ready;
    /// `stream` is swapped in for each stretch.
    pub(super) async fn run(&mut self, command: Command, stream: &mut Stream) -> Answer {
        if self.busy {
            return ended("the state's last call was abandoned before it ended");
        }
        let mut command = Some(command);
        poll_fn(|cx: &mut Context<'_>| {
            let Some(co) = self.co.as_mut().filter(|co| !co.done()) else {
                return Poll::Ready(ended("the state has ended"));
            };
            let cx = cx as *mut Context<'_> as Cx;
            stream.swap();
            let r = co.resume((cx, command.take()));
            stream.swap();
            match r {
                CoroutineResult::Yield(None) => {
                    self.busy = true;
                    Poll::Pending
                }
                CoroutineResult::Yield(Some(a)) => {
                    self.busy = false;
                    Poll::Ready(a)
                }
                CoroutineResult::Return(()) => {
                    self.busy = false;
                    Poll::Ready(ended("the state has ended"))
                }
            }
        })
        .await
    }
}

/// Clears the state's fiber from its yielder when dropped.
struct Idle<'a>(&'a Yielder);

impl Drop for Idle<'_> {
    fn drop(&mut self) {
        self.0.idle();
    }
}

fn ended(why: &str) -> Answer {
    Answer {
        code: Err(mlua::Error::runtime(why)),
        counts: StmtCounts::default(),
    }
}

impl Drop for Fiber {
    fn drop(&mut self) {
        let Some(mut co) = self.co.take() else {
            return;
        };
        if !co.started() || co.done() {
            return;
        }
        if self.busy {
            // Dropped mid-call (the run's future dropped while its I/O was pending, as at a
            // runtime's teardown): unwinding the stack would cross LuaJIT's frames and the ffi
            // calls', which cannot unwind, and freeing it unwound would free futures the
            // reactor still points at. Its stack and what it holds are left as they are.
            std::mem::forget(co);
            return;
        }
        // Between commands: the fiber leaves on its own, dropping what it holds.
        let _ = co.resume((std::ptr::null_mut(), None));
    }
}
