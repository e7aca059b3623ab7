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

mod param;
mod result;
mod stmt;

pub(super) use param::fast_functions as param_functions;
pub(super) use stmt::fast_functions as stmt_functions;

use std::cell::RefCell;
use std::rc::Rc;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Outcome, ServerError};
use mlua::{Lua, UserData, UserDataMethods, Value};

use super::counts;
use result::{ResultSet, Results};
use stmt::RawStmt;

/// sysbench's bulk inserts send a statement when the next value would pass 512 KiB.
const BULK_PACKET_SIZE: usize = 512 * 1024;
/// What libmysqlclient says when the server goes away mid-statement (CR_SERVER_LOST).
const SERVER_LOST: u16 = 2013;

/// The server errors a run ignores (`--mysql-ignore-errors`): the event restarts.
#[derive(Debug, Clone)]
pub enum Ignore {
    All,
    Codes(Vec<u16>),
}

impl Ignore {
    /// sysbench's default: deadlock, "record has changed", lock wait timeout.
    pub fn sysbench_default() -> Ignore {
        Ignore::Codes(vec![1213, 1020, 1205])
    }

    /// `--mysql-ignore-errors`'s value: `all` or a comma-separated list of codes.
    pub fn parse(v: &str) -> Result<Ignore, String> {
        if v.trim() == "all" {
            return Ok(Ignore::All);
        }
        v.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim().parse().map_err(|_| {
                    format!("Invalid value for --mysql-ignore-errors: '{v}' (error codes or 'all')")
                })
            })
            .collect::<Result<_, _>>()
            .map(Ignore::Codes)
    }

    fn contains(&self, code: u16) -> bool {
        match self {
            Ignore::All => true,
            Ignore::Codes(c) => c.contains(&code),
        }
    }
}

/// What `sysbench.sql.driver():connect()` reaches and how its errors are judged.
#[derive(Debug, Clone)]
pub struct SqlOptions {
    pub endpoint: Option<ConnectOptions>,
    pub ignore: Ignore,
}

/// One connection as its statements share it.
struct Link {
    conn: Option<Conn>,
    opts: ConnectOptions,
    /// A bulk insert under way.
    bulk: Option<Bulk>,
    /// Bumped on each reconnect: statements prepared before it are gone with the old session.
    generation: u32,
    /// The connection's result set, refilled by each statement (as sysbench's driver refills
    /// its connection's one): no allocation per statement on the hot path.
    result: Results,
}

/// What a method hands the Lua half: a value (`true`, or a statement; a result set is the
/// connection's, `con.rs`), or `nil` and the server's error number, state and message, or
/// `nil, nil, nil` and why the API refused.
/// A tuple, not a `MultiValue`: mlua pushes it without allocating.
type Reply = (Value, Value, Value, Value);

const NOTHING: Reply = (Value::Nil, Value::Nil, Value::Nil, Value::Nil);

fn reply(v: Value) -> Reply {
    (v, Value::Nil, Value::Nil, Value::Nil)
}

type Shared = Rc<RefCell<Link>>;

/// A bulk insert: the statement bulk_insert_init gave, and the one being filled with values.
struct Bulk {
    head: String,
    sql: String,
    has_value: bool,
}

/// A statement's failure as the Lua half reads it: `nil, errno, sqlstate, message`.
fn refused(lua: &Lua, e: &ServerError) -> mlua::Result<Reply> {
    Ok((
        Value::Nil,
        Value::Integer(e.code.into()),
        Value::String(lua.create_string(&e.sql_state)?),
        Value::String(lua.create_string(&e.message)?),
    ))
}

/// A misuse of the API (a closed connection, a bulk insert not begun) as the Lua half reads
/// it: `nil, nil, nil, message`, raised from the script's line there.
fn api(lua: &Lua, r: mlua::Result<Reply>) -> mlua::Result<Reply> {
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
fn api_unit(r: mlua::Result<()>) -> mlua::Result<Option<String>> {
    match r {
        Ok(()) => Ok(None),
        Err(mlua::Error::RuntimeError(m)) => Ok(Some(m)),
        Err(e) => Err(e),
    }
}

impl Link {
    fn conn(&mut self) -> mlua::Result<&mut Conn> {
        self.conn
            .as_mut()
            .ok_or_else(|| mlua::Error::runtime("attempt to use an already closed connection"))
    }

    /// The server lost or a socket error: as a server error with libmysqlclient's code, after
    /// reconnecting when that code is ignorable (sysbench's driver reconnects then too).
    fn lost(&mut self, e: DriverError, ignore: &Ignore) -> mlua::Result<ServerError> {
        if !e.is_connection_lost() {
            return Err(mlua::Error::runtime(e.to_string()));
        }
        let code = e.server_code().unwrap_or(SERVER_LOST);
        if ignore.contains(code) {
            self.reconnect()?;
        }
        Ok(ServerError {
            code,
            sql_state: "HY000".into(),
            message: e.to_string(),
        })
    }

    fn reconnect(&mut self) -> mlua::Result<()> {
        if let Some(old) = self.conn.take() {
            bakeoff_driver::complete(old.quit());
        }
        let conn = Conn::connect_blocking(&self.opts)
            .map_err(|e| mlua::Error::runtime(format!("reconnect failed: {e}")))?;
        self.conn = Some(conn);
        self.generation += 1;
        counts::add(counts::RECONNECT, 0);
        Ok(())
    }
}

/// A connection's Rust half (`con.raw` in the prelude).
pub(super) struct RawConn {
    link: Shared,
    ignore: Ignore,
}

/// Open a connection to the run's server.
pub(super) fn connect(opts: &SqlOptions) -> mlua::Result<RawConn> {
    let Some(endpoint) = &opts.endpoint else {
        return Err(mlua::Error::runtime(
            "connection creation failed: no server given (--mysql-socket or --mysql-host)",
        ));
    };
    let conn = Conn::connect_blocking(endpoint)
        .map_err(|e| mlua::Error::runtime(format!("connection creation failed: {e}")))?;
    Ok(RawConn {
        link: Rc::new(RefCell::new(Link {
            conn: Some(conn),
            opts: endpoint.clone(),
            bulk: None,
            generation: 0,
            result: Results::default(),
        })),
        ignore: opts.ignore.clone(),
    })
}

/// Count a statement's outcome the way sysbench does.
fn count(outcome: &Outcome) {
    counts::add(
        match outcome {
            Outcome::Rows(_) => counts::READ,
            Outcome::Ok(ok) if ok.affected_rows > 0 => counts::WRITE,
            _ => counts::OTHER,
        },
        0,
    );
}

impl RawConn {
    fn query(&self, lua: &Lua, sql: &str) -> mlua::Result<Reply> {
        let mut link = self.link.borrow_mut();
        let answer = bakeoff_driver::complete(link.conn()?.query_result(sql));
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return refused(lua, &link.lost(e, &self.ignore)?),
        };
        count(&answer.outcome);
        let nrows = match &answer.outcome {
            Outcome::Err(e) => return refused(lua, e),
            Outcome::Rows(n) => *n,
            Outcome::Ok(ok) => ok.affected_rows,
        };
        link.result.set(ResultSet {
            nrows,
            nfields: answer.columns,
            rows: answer.rows.into_iter(),
        });
        Ok(reply(Value::Boolean(true)))
    }

    fn prepare(&self, lua: &Lua, sql: &str) -> mlua::Result<Reply> {
        let mut link = self.link.borrow_mut();
        let prepared = bakeoff_driver::complete(link.conn()?.prepare(sql));
        let stmt = match prepared {
            Ok(s) => s,
            Err(DriverError::Server(e)) => return refused(lua, &e),
            Err(e) => return refused(lua, &link.lost(e, &self.ignore)?),
        };
        let generation = link.generation;
        drop(link);
        let stmt = RawStmt::new(self.link.clone(), self.ignore.clone(), stmt, generation);
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
        m.add_method("ignorable", |_, this, code: u16| {
            Ok(this.ignore.contains(code))
        });
        m.add_method("count_error", |_, _, code: u16| {
            counts::add(counts::ERROR, code);
            Ok(())
        });
        m.add_method("bulk_insert_init", |_, this, sql: String| {
            let mut link = this.link.borrow_mut();
            api_unit(link.conn().map(|_| ()))?;
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
            Ok(match link.conn.take() {
                Some(c) => {
                    bakeoff_driver::complete(c.quit());
                    None::<&str>
                }
                None => {
                    // sysbench only alerts: closing twice harms nothing.
                    println!("ALERT: attempt to close an already closed connection");
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
