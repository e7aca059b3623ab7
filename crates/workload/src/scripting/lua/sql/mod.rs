//! `sysbench.sql`'s connections, statements, parameters and result sets, the Rust half. Each
//! method here answers with values (a result set, or `nil` and the server's error) and never
//! raises for a statement the server refused: the Lua half (`prelude.lua`) decides, as
//! sysbench's API does, whether that error restarts the event (ignorable, or the
//! `sql_error_ignorable` hook says so) or ends the run, and raises it from the script's line.
//!
//! Connections use blocking sockets driven without a runtime (`driver::complete`): a
//! script's calls block its thread, as in sysbench.
//!
//! What an event calls most (a statement's execute, a parameter's set) is also reachable
//! through LuaJIT's ffi, as plain C functions the prelude is handed the addresses of
//! (`fast_functions`): compiled traces call them directly, where a userdata method costs a
//! metamethod lookup and mlua's callback machinery per call.

mod db;
mod link;
mod param;
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
use link::{api, api_unit, count, refused, reply, Bulk, Link, Reply, Shared, NOTHING};
pub use link::{Ignore, SqlOptions};
use result::{ResultSet, Results};
pub use say::log as sysbench_log;
use stmt::RawStmt;

/// sysbench's bulk inserts send a statement when the next value would pass 512 KiB.
const BULK_PACKET_SIZE: usize = 512 * 1024;
/// A connection's Rust half (`con.raw` in the prelude).
pub(super) struct RawConn {
    link: Shared,
    opts: Rc<SqlOptions>,
}

/// Open a connection to the run's server.
pub(super) fn connect(opts: &SqlOptions) -> mlua::Result<RawConn> {
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
    let Some(endpoint) = &opts.endpoint else {
        return Err(mlua::Error::runtime(
            "connection creation failed: no server given (--mysql-socket or --mysql-host)",
        ));
    };
    // A script's connections are sysbench's: several statements in one query allowed.
    let endpoint = ConnectOptions {
        multi_statements: true,
        ..endpoint.clone()
    };
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
            })),
            opts: Rc::new(opts.clone()),
        }
    }

    fn query(&self, lua: &Lua, sql: &str) -> mlua::Result<Reply> {
        let mut link = self.link.borrow_mut();
        if link.dry {
            link.dry_done();
            return Ok(reply(Value::Boolean(true)));
        }
        let answer = bakeoff_driver::complete(link.conn()?.query_result(sql));
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return refused(lua, &link.lost(e, &self.opts.ignore)?),
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

    fn prepare(&self, lua: &Lua, sql: &str) -> mlua::Result<Reply> {
        let mut link = self.link.borrow_mut();
        let prepared = match link.dry {
            true => Ok(DbStmt::none()),
            false => bakeoff_driver::complete(link.conn()?.prepare(sql)),
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
            Err(e) => return refused(lua, &link.lost(e, &self.opts.ignore)?),
        };
        let generation = link.generation;
        drop(link);
        let stmt = RawStmt::new(self.link.clone(), self.opts.clone(), stmt, generation, sql);
        Ok(reply(Value::UserData(lua.create_userdata(stmt)?)))
    }

    /// Add `value` to the bulk insert; send the statement first when it is full.
    fn bulk_next(&self, lua: &Lua, value: &str) -> mlua::Result<Reply> {
        let full = match &self.link.borrow().bulk {
            Some(b) => b.has_value && b.sql.len() + value.len() + 2 > BULK_PACKET_SIZE,
            None => {
                return Err(mlua::Error::runtime(
                    "attempt to call bulk_insert_next() before bulk_insert_init()",
                ))
            }
        };
        if full {
            let sent = self.bulk_send(lua)?;
            if sent != NOTHING {
                return Ok(sent);
            }
        }
        if let Some(b) = &mut self.link.borrow_mut().bulk {
            if b.has_value {
                b.sql.push(',');
            }
            b.sql.push_str(value);
            b.has_value = true;
        }
        Ok(NOTHING)
    }

    /// Send the bulk statement if it holds a value, keeping its head for the next values.
    /// Nothing back when it went well, the refusal otherwise.
    fn bulk_send(&self, lua: &Lua) -> mlua::Result<Reply> {
        let sql = match &mut self.link.borrow_mut().bulk {
            Some(b) if b.has_value => {
                b.has_value = false;
                std::mem::replace(&mut b.sql, b.head.clone())
            }
            _ => return Ok(NOTHING),
        };
        let sent = self.query(lua, &sql)?;
        match sent.0 {
            Value::Nil => Ok(sent),
            _ => Ok(NOTHING),
        }
    }
}

impl UserData for RawConn {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("query", |lua, this, sql: mlua::LuaString| {
            api(lua, this.query(lua, &sql.to_str()?))
        });
        m.add_method("prepare", |lua, this, sql: String| {
            api(lua, this.prepare(lua, &sql))
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
                let ignorable = this.opts.ignore.covers(&e);
                if ignorable && code == 0 {
                    // sysbench's pgsql driver rolls back after an ignorable error.
                    let mut link = this.link.borrow_mut();
                    if let Some(c) = link.conn.as_mut() {
                        let _ = bakeoff_driver::complete(c.recover());
                    }
                }
                Ok(ignorable)
            },
        );

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
            api(lua, this.bulk_next(lua, &v))
        });
        m.add_method("bulk_insert_done", |lua, this, ()| {
            let sent = api(lua, this.bulk_send(lua));
            this.link.borrow_mut().bulk = None;
            sent
        });
        m.add_method("reconnect", |_, this, ()| {
            api_unit(this.link.borrow_mut().reconnect())
        });
        m.add_method("disconnect", |_, this, ()| {
            let mut link = this.link.borrow_mut();
            if std::mem::take(&mut link.dry) {
                return Ok(None);
            }
            Ok(match link.conn.take() {
                Some(c) => {
                    bakeoff_driver::complete(c.quit());
                    None::<&str>
                }
                None => {
                    // sysbench only alerts: closing twice harms nothing.
                    say::log("ALERT: attempt to close an already closed connection".into());
                    None
                }
            })
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
