//! `sysbench.sql`'s connections, statements, parameters and result sets, the Rust half. Each
//! method here answers with values (a result set, or `nil` and the server's error) and never
//! raises for a statement the server refused: the Lua half (`prelude.lua`) decides, as
//! sysbench's API does, whether that error restarts the event (ignorable, or the
//! `sql_error_ignorable` hook says so) or ends the run, and raises it from the script's line.
//!
//! A connection's calls are written once, as async functions over the connection. A state
//! that runs alone on its thread uses blocking sockets and drives them without a runtime
//! (`driver::complete`), as sysbench blocks its thread. A state that shares its thread with
//! others runs on a fiber: its connections are on the thread's reactor, and a call that would
//! wait suspends the fiber until its I/O is done (`reactor.rs`).
//!
//! What an event calls most (a statement's execute, a parameter's set) is also reachable
//! through LuaJIT's ffi, as plain C functions the prelude is handed the addresses of
//! (`fast_functions`): compiled traces call them directly, where a userdata method costs a
//! metamethod lookup and mlua's callback machinery per call.

// A connection's borrows are held across its I/O on purpose: only its own state's calls reach
// a connection, and that state is suspended until the I/O ends (its fiber suspended, or its
// thread blocked in the call), so nothing else borrows it meanwhile.
#![allow(clippy::await_holding_refcell_ref)]

mod db;
mod link;
mod param;
mod reactor;
mod reply;
mod result;
mod say;
mod stmt;

pub(super) use param::fast_functions as param_functions;
pub(super) use stmt::fast_functions as stmt_functions;

use std::cell::RefCell;
use std::rc::Rc;

use bakeoff_driver::{ConnectOptions, DriverError, Outcome};
use db::{Db, DbStmt};
use mlua::{Lua, UserData, UserDataMethods, Value};

use super::counts;
use link::{count, Bulk, Link, Shared};
pub use link::{Ignore, SqlOptions};
pub(crate) use reactor::{Cx, Suspender, Yielder};
use reply::{api, api_unit, refused, reply, unit_reply, Reply, NOTHING};
use result::{ResultSet, Results};
pub use say::log as sysbench_log;
use stmt::RawStmt;

/// sysbench's bulk inserts send a statement when the next value would pass 512 KiB.
const BULK_PACKET_SIZE: usize = 512 * 1024;
/// A connection's Rust half (`con.raw` in the prelude); a clone is the same connection.
#[derive(Clone)]
pub(super) struct RawConn {
    link: Shared,
    opts: Rc<SqlOptions>,
}

/// `raw.connect()`: a connection to the run's server, on the state's fiber where it has one
/// (the connection then on the thread's reactor), else with blocking sockets.
pub(super) fn connect(lua: &Lua, opts: &SqlOptions) -> mlua::Result<Value> {
    let yielder = lua.app_data_ref::<Rc<Yielder>>().map(|y| y.clone());
    let raw = match yielder {
        Some(y) if !opts.dry_run => {
            let endpoint = endpoint(opts)?;
            let conn = y
                .wait(Db::connect(&endpoint))
                .ok_or_else(reactor::outside)?
                .map_err(|e| mlua::Error::runtime(format!("connection creation failed: {e}")))?;
            let raw = RawConn::new(Some(conn), endpoint, opts);
            raw.link.borrow_mut().reactor = Some(y);
            raw
        }
        _ => connect_blocking(opts)?,
    };
    Ok(Value::UserData(lua.create_userdata(raw)?))
}

/// The endpoint a script's connections reach: sysbench's, several statements in one query
/// allowed.
fn endpoint(opts: &SqlOptions) -> mlua::Result<ConnectOptions> {
    let Some(endpoint) = &opts.endpoint else {
        return Err(mlua::Error::runtime(
            "connection creation failed: no server given (--mysql-socket or --mysql-host)",
        ));
    };
    Ok(ConnectOptions {
        multi_statements: true,
        ..endpoint.clone()
    })
}

/// Open a connection to the run's server with blocking sockets.
fn connect_blocking(opts: &SqlOptions) -> mlua::Result<RawConn> {
    if opts.dry_run {
        let nowhere = bakeoff_driver::ConnectOptions::new(
            bakeoff_driver::Endpoint::Tcp {
                host: "localhost".into(),
                port: 3306,
            },
            "sbtest",
            "",
        );
        let endpoint = opts.endpoint.clone().unwrap_or(nowhere);
        return Ok(RawConn::new(None, endpoint, opts));
    }
    let endpoint = endpoint(opts)?;
    let conn = Db::connect_blocking(&endpoint)
        .map_err(|e| mlua::Error::runtime(format!("connection creation failed: {e}")))?;
    Ok(RawConn::new(Some(conn), endpoint, opts))
}

impl RawConn {
    /// A connection to `endpoint`; none (`conn` None) is a dry run's.
    fn new(conn: Option<Db>, endpoint: ConnectOptions, opts: &SqlOptions) -> RawConn {
        RawConn {
            link: Rc::new(RefCell::new(Link {
                dry: conn.is_none(),
                conn,
                opts: endpoint,
                bulk: None,
                generation: 0,
                result: Results::new(opts.say_refusals),
                reactor: None,
            })),
            opts: Rc::new(opts.clone()),
        }
    }

    /// Run a call that may wait (`io`, over this connection): on the state's fiber where it
    /// has one, else with the connection's blocking sockets.
    fn waits<F>(&self, lua: &Lua, io: F) -> mlua::Result<Reply>
    where
        F: std::future::Future<Output = mlua::Result<Reply>>,
    {
        let on = self.link.borrow().yielder();
        api(lua, reactor::drive(on.as_deref(), io).and_then(|r| r))
    }

    async fn query(&self, lua: &Lua, sql: &str) -> mlua::Result<Reply> {
        let mut link = self.link.borrow_mut();
        if link.dry {
            link.dry_done();
            return Ok(reply(Value::Boolean(true)));
        }
        let answer = link.conn()?.query_result(sql).await;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return refused(lua, &link.lost(e, &self.opts.ignore).await?),
        };
        count(&answer.outcome);
        let nrows = match &answer.outcome {
            Outcome::Err(e) => {
                link::say_refused(&self.opts, "mysql_drv_query()", e, sql);
                return refused(lua, e);
            }
            Outcome::Rows(n) => *n,
            Outcome::Ok(ok) => ok.affected_rows,
        };
        link.result.set(ResultSet {
            nrows,
            nfields: answer.columns,
            rows: answer.rows.into_iter(),
            is_set: matches!(answer.outcome, Outcome::Rows(_)),
        });
        Ok(reply(Value::Boolean(true)))
    }

    async fn prepare(&self, lua: &Lua, sql: &str) -> mlua::Result<Reply> {
        let mut link = self.link.borrow_mut();
        let prepared = match link.dry {
            true => Ok(DbStmt::none()),
            false => link.conn()?.prepare(sql).await,
        };
        let stmt = match prepared {
            Ok(s) => s,
            Err(DriverError::Server(e)) => {
                // sysbench's driver says why and its API raises its own error.
                if self.opts.say_refusals && e.code == 0 {
                    // libpq's message ends in a newline, and sysbench's log adds its own.
                    let said = bakeoff_driver::libpq_error(sql, &e);
                    say::log(format!("FATAL: PQprepare() failed: {said}\n"));
                } else if self.opts.say_refusals {
                    say::log("FATAL: mysql_stmt_prepare() failed".into());
                    say::log(format!("FATAL: MySQL error: {} \"{}\"", e.code, e.message));
                }
                return Err(mlua::Error::runtime(link::API_ERROR));
            }
            Err(e) => return refused(lua, &link.lost(e, &self.opts.ignore).await?),
        };
        let generation = link.generation;
        drop(link);
        let stmt = RawStmt::new(self.link.clone(), self.opts.clone(), stmt, generation, sql);
        Ok(reply(Value::UserData(lua.create_userdata(stmt)?)))
    }

    /// Add `value` to the bulk insert; send the statement first when it is full.
    async fn bulk_next(&self, lua: &Lua, value: &str) -> mlua::Result<Reply> {
        if self.bulk_full(value)? {
            let sent = self.bulk_send(lua).await?;
            if sent != NOTHING {
                return Ok(sent);
            }
        }
        self.bulk_append(value);
        Ok(NOTHING)
    }

    /// Whether `value` must wait for the statement so far to be sent.
    fn bulk_full(&self, value: &str) -> mlua::Result<bool> {
        match &self.link.borrow().bulk {
            Some(b) => Ok(b.has_value && b.sql.len() + value.len() + 2 > BULK_PACKET_SIZE),
            None => Err(mlua::Error::runtime(
                "attempt to call bulk_insert_next() before bulk_insert_init()",
            )),
        }
    }

    fn bulk_append(&self, value: &str) {
        if let Some(b) = &mut self.link.borrow_mut().bulk {
            if b.has_value {
                b.sql.push(',');
            }
            b.sql.push_str(value);
            b.has_value = true;
        }
    }

    /// Send the bulk statement if it holds a value, keeping its head for the next values.
    /// Nothing back when it went well, the refusal otherwise.
    async fn bulk_send(&self, lua: &Lua) -> mlua::Result<Reply> {
        let sql = match &mut self.link.borrow_mut().bulk {
            Some(b) if b.has_value => {
                b.has_value = false;
                std::mem::replace(&mut b.sql, b.head.clone())
            }
            _ => return Ok(NOTHING),
        };
        let sent = self.query(lua, &sql).await?;
        match sent.0 {
            Value::Nil => Ok(sent),
            _ => Ok(NOTHING),
        }
    }

    /// `bulk_insert_done`: what is left sent, the bulk insert over.
    async fn bulk_done(&self, lua: &Lua) -> mlua::Result<Reply> {
        let sent = self.bulk_send(lua).await;
        self.link.borrow_mut().bulk = None;
        sent
    }

    /// PostgreSQL: after an ignorable error, roll back as sysbench's pgsql driver does.
    async fn recover(&self) {
        let mut link = self.link.borrow_mut();
        if let Some(c) = link.conn.as_mut() {
            let _ = c.recover().await;
        }
    }

    async fn reconnect(&self) -> mlua::Result<()> {
        self.link.borrow_mut().reconnect().await
    }

    async fn disconnect(&self) -> mlua::Result<()> {
        let mut link = self.link.borrow_mut();
        if std::mem::take(&mut link.dry) {
            return Ok(());
        }
        match link.conn.take() {
            Some(c) => c.quit().await,
            // sysbench only alerts: closing twice harms nothing.
            None => say::log("ALERT: attempt to close an already closed connection".into()),
        }
        Ok(())
    }
}

impl UserData for RawConn {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("query", |lua, this, sql: mlua::LuaString| {
            let sql = sql.to_str()?;
            this.waits(lua, this.query(lua, &sql))
        });
        m.add_method("prepare", |lua, this, sql: String| {
            this.waits(lua, this.prepare(lua, &sql))
        });
        m.add_method("result", |_, this, ()| {
            Ok(this.link.borrow().result.handle())
        });
        m.add_method(
            "ignorable",
            |_, this, (code, state): (u16, Option<String>)| {
                let e = bakeoff_driver::ServerError {
                    code,
                    sql_state: state.unwrap_or_default(),
                    message: String::new(),
                    position: 0,
                    pg: None,
                };
                Ok(this.opts.ignore.covers(&e))
            },
        );
        m.add_method("recover", |lua, this, ()| {
            this.waits(lua, async {
                this.recover().await;
                Ok(NOTHING)
            })
        });
        m.add_method("count_error", |_, _, code: u16| {
            counts::add(counts::ERROR, code);
            Ok(())
        });
        m.add_method("bulk_insert_init", |_, this, sql: String| {
            let mut link = this.link.borrow_mut();
            if !link.dry {
                api_unit(link.conn().map(|_| ()))?;
            }
            link.bulk = Some(Bulk {
                head: sql.clone(),
                sql,
                has_value: false,
            });
            Ok(None::<String>)
        });
        m.add_method("bulk_insert_next", |lua, this, v: String| {
            this.waits(lua, this.bulk_next(lua, &v))
        });
        m.add_method("bulk_insert_done", |lua, this, ()| {
            this.waits(lua, this.bulk_done(lua))
        });
        m.add_method("reconnect", |lua, this, ()| {
            this.waits(lua, async { unit_reply(lua, this.reconnect().await) })
        });
        m.add_method("disconnect", |lua, this, ()| {
            this.waits(lua, async { unit_reply(lua, this.disconnect().await) })
        });
    }
}

/// sysbench.sql.type: the binding types, numbered as sysbench's sql_bind_type_t.
pub(super) const TYPES: &[(&str, i64)] = &[
    ("NONE", 0),
    ("TINYINT", 1),
    ("SMALLINT", 2),
    ("INT", 3),
    ("BIGINT", 4),
    ("FLOAT", 5),
    ("DOUBLE", 6),
    ("TIME", 7),
    ("DATE", 8),
    ("DATETIME", 9),
    ("TIMESTAMP", 10),
    ("CHAR", 11),
    ("VARCHAR", 12),
];
