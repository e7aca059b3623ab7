//! Prepared statements (`con:prepare()`): bound parameters, execute, close. Execute is also
//! a C function for the prelude's ffi (`bk_stmt_execute`): the hot path of a script's event.

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::rc::Rc;

use bakeoff_driver::{Outcome, Param, ServerError};

use super::db::DbStmt;
use mlua::{AnyUserData, Lua, UserData, UserDataMethods, Value, Variadic};

use super::link::{count, say_refused, Link, Shared, SqlOptions};
use super::param::{Kind, LuaParam, ParamSlot};
use super::reactor::drive;
use super::reply::{refused, reply, Reply};
use super::result::ResultSet;
use crate::scripting::lua::error::message;

/// Parameters bound without allocating per execute; statements with more allocate.
const INLINE_PARAMS: usize = 8;

/// A prepared statement's Rust half (`stmt.raw` in the prelude).
pub(super) struct RawStmt(Rc<StmtInner>);

pub(super) struct StmtInner {
    link: Shared,
    opts: Rc<SqlOptions>,
    /// The statement's text, for sysbench's line when the server refuses it.
    query: String,
    stmt: Cell<Option<DbStmt>>,
    generation: u32,
    params: RefCell<Vec<LuaParam>>,
    /// Why the last execute failed, for the prelude to ask (`raw:failure()`).
    failure: RefCell<Option<Failure>>,
}

enum Failure {
    /// The server refused it: the Lua half judges the error.
    Refused(ServerError),
    /// The API was misused (closed statement or connection), or the link broke for good.
    Api(String),
}

impl RawStmt {
    pub fn new(
        link: Shared,
        opts: Rc<SqlOptions>,
        stmt: DbStmt,
        generation: u32,
        query: &str,
    ) -> RawStmt {
        RawStmt(Rc::new(StmtInner {
            link,
            opts,
            query: query.to_string(),
            stmt: Cell::new(Some(stmt)),
            generation,
            params: RefCell::new(Vec::new()),
            failure: RefCell::new(None),
        }))
    }
}

impl StmtInner {
    /// Execute with the parameters' current values; the connection's result set says how
    /// many rows. Rows of a prepared statement are not kept (sysbench's MySQL driver does not
    /// fetch them either). The hot path of a script's event: its I/O waits on the state's
    /// fiber where it has one (`reactor.rs`), else blocks.
    fn run(&self) -> Result<(), Failure> {
        let mut link = self.link.borrow_mut();
        let Some(stmt) = self.ready(&mut link)? else {
            return Ok(());
        };
        let on = link.yielder();
        let on = on.as_deref();
        let conn = link.conn().map_err(|e| Failure::Api(message(&e)))?;
        let params = self.params.borrow();
        // Each execute's future built where it is driven (see `driver::complete`).
        let done = if params.len() <= INLINE_PARAMS {
            // The common case, without allocating: the slots borrowed in place (plain loops:
            // `array::from_fn`'s closures stayed calls here, 50 instructions an execute).
            let mut slots: [Option<std::cell::Ref<ParamSlot>>; INLINE_PARAMS] = Default::default();
            for (slot, p) in slots.iter_mut().zip(params.iter()) {
                *slot = Some(p.0.borrow());
            }
            let mut values = [Param::Null; INLINE_PARAMS];
            for (v, slot) in values.iter_mut().zip(slots.iter().flatten()) {
                *v = slot.param();
            }
            drive(on, conn.execute(&stmt, &values[..params.len()]))
        } else {
            let slots: Vec<_> = params.iter().map(|p| p.0.borrow()).collect();
            let values: Vec<Param> = slots.iter().map(|s| s.param()).collect();
            drive(on, conn.execute(&stmt, &values))
        };
        drop(params);
        let ignore = &self.opts.ignore;
        let done = match done {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(e)) => Err(lost(drive(on, link.lost(e, ignore)).and_then(|r| r))),
            Err(outside) => Err(Failure::Api(message(&outside))),
        };
        self.finish(&mut link, stmt, done)
    }

    /// The statement to execute; None where the execute is done already (a dry run's).
    /// Inlined, as `finish`: out of line, they cost the blocking execute a fifth more
    /// instructions (callgrind), moving the outcome in and out.
    #[inline(always)]
    fn ready(&self, link: &mut Link) -> Result<Option<DbStmt>, Failure> {
        let stmt = self
            .stmt
            .get()
            .ok_or_else(|| Failure::Api("attempt to execute a closed statement".into()))?;
        if link.dry {
            link.dry_done();
            return Ok(None);
        }
        if link.generation != self.generation {
            return Err(Failure::Api(
                "the statement was prepared on a connection since reconnected: prepare it again"
                    .into(),
            ));
        }
        Ok(Some(stmt))
    }

    /// An execute's end: counted, a refusal said, the result set filled.
    #[inline(always)]
    fn finish(
        &self,
        link: &mut Link,
        stmt: DbStmt,
        done: Result<Outcome, Failure>,
    ) -> Result<(), Failure> {
        let outcome = done?;
        count(&outcome);
        let is_set = matches!(outcome, Outcome::Rows(_));
        let nrows = match outcome {
            Outcome::Err(e) => {
                say_refused(&self.opts, "mysql_stmt_execute()", &e, &self.query);
                return Err(Failure::Refused(e));
            }
            Outcome::Rows(n) => n,
            Outcome::Ok(ok) => ok.affected_rows,
        };
        link.result.set(ResultSet {
            nrows,
            nfields: stmt.columns(),
            rows: Vec::new().into_iter(),
            is_set,
        });
        Ok(())
    }

    /// PostgreSQL: parse the statement now, typed as its bound parameters' kinds, as
    /// sysbench's driver does at bind time: a script binds in thread_init, so each backend's
    /// parse happens while connecting, not in the run's first second. Whatever goes wrong is
    /// left for the first execute to meet and report.
    async fn declare(&self) {
        let Some(stmt) = self.stmt.get() else {
            return;
        };
        let mut link = self.link.borrow_mut();
        if link.dry || link.generation != self.generation {
            return;
        }
        let sample: Vec<Param> = self
            .params
            .borrow()
            .iter()
            .map(|p| p.0.borrow().sample())
            .collect();
        if let Some(conn) = link.conn.as_mut() {
            let _ = conn.declare(&stmt, &sample).await;
        }
    }

    /// `close()`: the server forgets the statement (unless its session is gone).
    async fn close(&self) {
        if let Some(stmt) = self.stmt.take() {
            let mut link = self.link.borrow_mut();
            if link.generation == self.generation {
                if let Some(c) = link.conn.as_mut() {
                    let _ = c.close_stmt(&stmt).await;
                }
            }
        }
    }

    /// A call that waits and answers nothing: on the state's fiber, or blocking.
    fn waits(&self, io: impl std::future::Future<Output = ()>) {
        let on = self.link.borrow().yielder();
        // Outside the state's events (a finalizer) it cannot wait: the statement's parse or
        // close is left undone, as for a connection already gone.
        let _ = drive(on.as_deref(), io);
    }

    /// Run, keeping why it failed for `failure()`: 0 done, 1 failed.
    fn execute(&self) -> c_int {
        self.keep(self.run())
    }

    /// An execute's end: 0 done, 1 failed, why kept for `failure()`.
    fn keep(&self, done: Result<(), Failure>) -> c_int {
        match done {
            Ok(()) => 0,
            Err(f) => {
                *self.failure.borrow_mut() = Some(f);
                1
            }
        }
    }

    fn failure(&self, lua: &Lua) -> mlua::Result<Reply> {
        match self.failure.borrow_mut().take() {
            Some(Failure::Refused(e)) => refused(lua, &e),
            Some(Failure::Api(m)) => Ok((
                Value::Nil,
                Value::Nil,
                Value::Nil,
                Value::String(lua.create_string(m)?),
            )),
            None => Ok(reply(Value::Boolean(true))),
        }
    }
}

/// A lost connection's failure: the server's error (after reconnecting, when ignorable), or
/// the link broken for good.
fn lost(r: mlua::Result<ServerError>) -> Failure {
    match r {
        Ok(refusal) => Failure::Refused(refusal),
        Err(e) => Failure::Api(message(&e)),
    }
}

/// `stmt:execute()` for the prelude's ffi: 0 done, 1 failed (`raw:failure()` says why).
extern "C" fn bk_stmt_execute(s: *const StmtInner) -> c_int {
    // SAFETY: the prelude passes only addresses from `ptr`, of statements its objects keep
    // alive while the call runs (on the state's fiber too: the call's frame holds them
    // while it is suspended); each state runs on one thread.
    match unsafe { s.as_ref() } {
        Some(s) => s.execute(),
        None => 1,
    }
}

/// The statement functions for the prelude: name, C signature, address.
pub(crate) fn fast_functions() -> Vec<(&'static str, &'static str, usize)> {
    vec![(
        "stmt_execute",
        "int (*)(void *)",
        bk_stmt_execute as *const () as usize,
    )]
}

impl UserData for RawStmt {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        // The address `bk_stmt_execute` takes: valid while this userdata lives (the prelude's
        // statement object holds both).
        m.add_method("ptr", |_, this, ()| Ok(Rc::as_ptr(&this.0) as usize));
        m.add_method(
            "bind_create",
            |lua, _, (t, max_len): (i64, Option<usize>)| {
                let Some((kind, max_len)) = Kind::of(t, max_len) else {
                    let why = lua.create_string(format!("Unsupported argument type: {t}"))?;
                    return Ok((Value::Nil, Value::String(why)));
                };
                let p = lua.create_userdata(LuaParam::new(kind, max_len))?;
                Ok((Value::UserData(p), Value::Nil))
            },
        );
        m.add_method("bind_param", |_, this, ps: Variadic<AnyUserData>| {
            *this.0.params.borrow_mut() = ps
                .iter()
                .map(|u| u.borrow::<LuaParam>().map(|p| p.clone()))
                .collect::<mlua::Result<_>>()?;
            this.0.waits(this.0.declare());
            Ok(())
        });
        m.add_method("failure", |lua, this, ()| this.0.failure(lua));
        m.add_method("close", |_, this, ()| {
            this.0.waits(this.0.close());
            Ok(())
        });
    }
}
