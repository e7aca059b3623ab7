//! Where a state's calls wait when it shares its client thread with others (issue 75). Each
//! such state runs on a fiber of its own (`lua/fiber.rs`): a stack of its own, on the thread's
//! reactor. A call that would wait polls its I/O with the reactor's context and, while the
//! I/O is pending, suspends the fiber ([`Yielder::wait`]); the thread's other states run
//! meanwhile, and the reactor resumes the fiber when the I/O is ready. To the Lua state the
//! call is a plain C call that returned later: nothing yields in Lua, so LuaJIT keeps the
//! script's loop and its calls in one compiled trace, and a call made where Lua cannot yield
//! (a `string.gsub` callback, a script's own coroutine) waits as any other.
//!
//! The I/O is the call's own async code, the same that a state alone on its thread drives to
//! its end with blocking sockets (`driver::complete`): no call is written twice.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};

use crate::scripting::lua::counts;
use crate::scripting::StmtCounts;

/// The context of the reactor's poll that resumed a fiber: valid until the fiber suspends.
pub(crate) type Cx = *mut Context<'static>;

/// A state's way to wait: the fiber it runs on, while it runs.
#[derive(Default)]
pub(crate) struct Yielder {
    /// The fiber's own suspend point (corosensei's yielder, on the fiber's stack for the
    /// fiber's whole life), set when the fiber starts; null before.
    suspend: Cell<Option<*const dyn Suspender>>,
    /// The context of the poll that last resumed the fiber.
    cx: Cell<Option<Cx>>,
    /// What the state counted in its stretches since the last take: the thread's counters
    /// are shared by every state on it, so each stretch's are moved here as it suspends.
    counted: Cell<StmtCounts>,
    /// Whether the state did I/O since this was last cleared (`did_io`).
    io: Cell<bool>,
}

/// A fiber's suspend, whatever it answers (`fiber.rs`).
pub(crate) trait Suspender {
    /// Suspend as pending; the context of the poll that resumes it.
    fn pending(&self) -> Cx;
}

impl Yielder {
    /// Set by the fiber as a command starts.
    pub(crate) fn running(&self, suspend: *const dyn Suspender, cx: Cx) {
        self.suspend.set(Some(suspend));
        self.cx.set((!cx.is_null()).then_some(cx));
    }

    /// Cleared as a command ends, and on every way out of the fiber: the context was the
    /// poll's, gone once it returns, and the suspender is on the fiber's stack. A call made
    /// between commands (a finalizer that runs SQL as the state is collected) finds no
    /// fiber, and fails (`outside`): its connection's sockets are the reactor's, which no one
    /// polls while it would wait.
    pub(crate) fn idle(&self) {
        self.suspend.set(None);
        self.cx.set(None);
    }

    /// Drive `io` to its end, the fiber suspended while it is pending; None when not on the
    /// fiber (between commands). Inlined, as `driver::complete`: the future is built in the
    /// caller's frame, not copied here.
    ///
    /// Each poll spends a unit of the task's tokio budget, as tokio's own I/O does: the
    /// driver's reads do not, and a state whose replies were all ready when it read (the
    /// server answering on the send's wake-up) would otherwise run event after event while
    /// the thread's other states wait. Past the budget, the fiber suspends once.
    #[inline(always)]
    pub(crate) fn wait<F: Future>(&self, io: F) -> Option<F::Output> {
        self.io.set(true);
        let mut io = pin!(io);
        loop {
            let (Some(suspend), Some(cx)) = (self.suspend.get(), self.cx.get()) else {
                return None;
            };
            // SAFETY: `cx` is the context of the poll now resuming this fiber (set at each
            // resume, before the fiber's code runs, cleared as its command ends); it outlives
            // this call's use of it.
            let cx = unsafe { &mut *cx };
            if let Poll::Ready(coop) = tokio::task::coop::poll_proceed(cx) {
                if let Poll::Ready(out) = io.as_mut().poll(cx) {
                    coop.made_progress();
                    return Some(out);
                }
            }
            let mut c = self.counted.take();
            c.add(&counts::take());
            self.counted.set(c);
            // SAFETY: the suspender lives on the fiber's stack while the fiber runs, and
            // this is the fiber's code.
            let cx = unsafe { &*suspend }.pending();
            self.cx.set(Some(cx));
        }
    }

    /// Whether the state did I/O since the last ask. One that did spent the task's budget
    /// (`wait`), so it gives the thread's other states their turns when that runs out.
    pub(crate) fn did_io(&self) -> bool {
        self.io.replace(false)
    }

    /// Give the thread's other states a turn, for one that ran a while without waiting.
    pub(crate) fn give_turn(&self) {
        let _ = self.wait(tokio::task::yield_now());
        self.io.set(false);
    }

    /// Counts from before the state's first event (its `thread_init`'s), for the first
    /// event's tally, as alone on a thread.
    pub(crate) fn carry(&self, c: &StmtCounts) {
        let mut mine = self.counted.take();
        mine.add(c);
        self.counted.set(mine);
    }

    /// What the state counted since the last take: its earlier stretches, and this one.
    pub(crate) fn counted(&self) -> StmtCounts {
        let mut c = self.counted.take();
        c.add(&counts::take());
        c
    }
}

/// Drive `io` as the state's connection says: on its fiber, or to its end here with blocking
/// sockets.
#[inline(always)]
pub(crate) fn drive<F: Future>(on: Option<&Yielder>, io: F) -> mlua::Result<F::Output> {
    match on {
        Some(y) => y.wait(io).ok_or_else(outside),
        None => Ok(bakeoff_driver::complete(io)),
    }
}

/// Why a call could not wait: its state shares a client thread and the call ran outside the
/// state's events.
pub(crate) fn outside() -> mlua::Error {
    mlua::Error::runtime(
        "a call that waits on the server ran outside the script's functions (in a finalizer?): \
         where states share a client thread, it can only wait inside thread_init, event, \
         thread_run or thread_done",
    )
}
