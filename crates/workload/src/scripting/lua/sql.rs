//! `sysbench.sql`'s connections, statements, parameters and result sets, the Rust half. Each
//! method here answers with values (a result set, or `nil` and the server's error) and never
//! raises for a statement the server refused: the Lua half (`prelude.lua`) decides, as
//! sysbench's API does, whether that error restarts the event (ignorable, or the
//! `sql_error_ignorable` hook says so) or ends the run, and raises it from the script's line.
//!
//! Connections use blocking sockets driven without a runtime (`driver::complete`): a
//! script's calls block its thread, as in sysbench.

use std::cell::RefCell;
use std::rc::Rc;

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Outcome, Param, ServerError, Stmt};
use mlua::{
    AnyUserData, Lua, MultiValue, Table, UserData, UserDataFields, UserDataMethods, Value, Variadic,
};

use super::counts;

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
}

type Shared = Rc<RefCell<Link>>;

/// A bulk insert: the statement bulk_insert_init gave, and the one being filled with values.
struct Bulk {
    head: String,
    sql: String,
    has_value: bool,
}

/// A statement's failure as the Lua half reads it: `nil, errno, sqlstate, message`.
fn refused(lua: &Lua, e: &ServerError) -> mlua::Result<MultiValue> {
    (
        Value::Nil,
        e.code,
        lua.create_string(&e.sql_state)?,
        lua.create_string(&e.message)?,
    )
        .into_lua_multi(lua)
}

use mlua::IntoLuaMulti;

/// A misuse of the API (a closed connection, a bulk insert not begun) as the Lua half reads
/// it: `nil, nil, nil, message`, raised from the script's line there.
fn api(lua: &Lua, r: mlua::Result<MultiValue>) -> mlua::Result<MultiValue> {
    match r {
        Err(mlua::Error::RuntimeError(m)) => {
            (Value::Nil, Value::Nil, Value::Nil, m).into_lua_multi(lua)
        }
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
    fn query(&self, lua: &Lua, sql: &str) -> mlua::Result<MultiValue> {
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
        let rs = ResultSet {
            nrows,
            nfields: answer.columns,
            rows: answer.rows.into_iter(),
        };
        lua.create_userdata(rs)?.into_lua_multi(lua)
    }

    fn prepare(&self, lua: &Lua, sql: &str) -> mlua::Result<MultiValue> {
        let mut link = self.link.borrow_mut();
        let prepared = bakeoff_driver::complete(link.conn()?.prepare(sql));
        let stmt = match prepared {
            Ok(s) => s,
            Err(DriverError::Server(e)) => return refused(lua, &e),
            Err(e) => return refused(lua, &link.lost(e, &self.ignore)?),
        };
        let generation = link.generation;
        drop(link);
        lua.create_userdata(RawStmt {
            link: self.link.clone(),
            ignore: self.ignore.clone(),
            stmt: Some(stmt),
            generation,
            params: Vec::new(),
        })?
        .into_lua_multi(lua)
    }

    /// Add `value` to the bulk insert; send the statement first when it is full.
    fn bulk_next(&self, lua: &Lua, value: &str) -> mlua::Result<MultiValue> {
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
            if !sent.is_empty() {
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
        Ok(MultiValue::new())
    }

    /// Send the bulk statement if it holds a value, keeping its head for the next values.
    /// Nothing back when it went well, the refusal otherwise.
    fn bulk_send(&self, lua: &Lua) -> mlua::Result<MultiValue> {
        let sql = match &mut self.link.borrow_mut().bulk {
            Some(b) if b.has_value => {
                b.has_value = false;
                std::mem::replace(&mut b.sql, b.head.clone())
            }
            _ => return Ok(MultiValue::new()),
        };
        let sent = self.query(lua, &sql)?;
        match sent.front() {
            Some(Value::Nil) => Ok(sent),
            _ => Ok(MultiValue::new()),
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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Double,
    Text,
}

/// A bound parameter: its kind, the most bytes it takes, and its value.
struct ParamSlot {
    kind: Kind,
    max_len: usize,
    value: Slot,
}

#[derive(Debug, Clone)]
enum Slot {
    Null,
    Int(i64),
    Double(f64),
    Text(Vec<u8>),
}

/// A parameter as the script holds it (`stmt:bind_create()`).
#[derive(Clone)]
pub(super) struct LuaParam(Rc<RefCell<ParamSlot>>);

impl UserData for LuaParam {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("set", |_, this, v: Value| {
            let mut p = this.0.borrow_mut();
            p.value = match (&v, p.kind) {
                (Value::Nil, _) => Slot::Null,
                (_, Kind::Int) => Slot::Int(number(&v)? as i64),
                (_, Kind::Double) => Slot::Double(number(&v)?),
                (Value::String(s), Kind::Text) => {
                    let b = s.as_bytes();
                    Slot::Text(b[..b.len().min(p.max_len)].to_vec())
                }
                (Value::Integer(_) | Value::Number(_), Kind::Text) => {
                    let s = v.to_string()?;
                    Slot::Text(s.as_bytes()[..s.len().min(p.max_len)].to_vec())
                }
                _ => return Err(mlua::Error::runtime("cannot bind this value")),
            };
            Ok(())
        });
        m.add_method("set_rand_str", |lua, this, fmt: mlua::LuaString| {
            let mut p = this.0.borrow_mut();
            if p.kind != Kind::Text {
                return Err(mlua::Error::runtime("Unsupported argument type"));
            }
            let rand: Table = lua
                .globals()
                .get::<Table>("sysbench")?
                .get::<Table>("rand")?;
            let s: mlua::LuaString = rand.get::<mlua::Function>("string")?.call(fmt)?;
            let b = s.as_bytes();
            p.value = Slot::Text(b[..b.len().min(p.max_len)].to_vec());
            Ok(())
        });
        m.add_meta_method("__tostring", |_, _, ()| Ok("<sql_param>"));
    }
}

fn number(v: &Value) -> mlua::Result<f64> {
    match v {
        Value::Integer(i) => Ok(*i as f64),
        Value::Number(n) => Ok(*n),
        Value::String(s) => s
            .to_str()?
            .trim()
            .parse()
            .map_err(|_| mlua::Error::runtime("a number is expected")),
        _ => Err(mlua::Error::runtime("a number is expected")),
    }
}

/// A prepared statement's Rust half (`stmt.raw` in the prelude).
pub(super) struct RawStmt {
    link: Shared,
    ignore: Ignore,
    stmt: Option<Stmt>,
    generation: u32,
    params: Vec<LuaParam>,
}

impl RawStmt {
    fn execute(&self, lua: &Lua) -> mlua::Result<MultiValue> {
        let stmt = self
            .stmt
            .ok_or_else(|| mlua::Error::runtime("attempt to execute a closed statement"))?;
        let mut link = self.link.borrow_mut();
        if link.generation != self.generation {
            return Err(mlua::Error::runtime(
                "the statement was prepared on a connection since reconnected: prepare it again",
            ));
        }
        let slots: Vec<std::cell::Ref<ParamSlot>> =
            self.params.iter().map(|p| p.0.borrow()).collect();
        let params: Vec<Param> = slots
            .iter()
            .map(|s| match &s.value {
                Slot::Null => Param::Null,
                Slot::Int(i) => Param::Int(*i),
                Slot::Double(d) => Param::Double(*d),
                Slot::Text(t) => Param::Str(t),
            })
            .collect();
        let done = bakeoff_driver::complete(link.conn()?.execute(&stmt, &params));
        drop(params);
        drop(slots);
        let outcome = match done {
            Ok(o) => o,
            Err(e) => return refused(lua, &link.lost(e, &self.ignore)?),
        };
        count(&outcome);
        let nrows = match &outcome {
            Outcome::Err(e) => return refused(lua, e),
            Outcome::Rows(n) => *n,
            Outcome::Ok(ok) => ok.affected_rows,
        };
        // Rows of a prepared statement are not kept (sysbench's MySQL driver does not
        // fetch them either): the result set says how many there were.
        let rs = ResultSet {
            nrows,
            nfields: stmt.columns as u32,
            rows: Vec::new().into_iter(),
        };
        lua.create_userdata(rs)?.into_lua_multi(lua)
    }
}

impl UserData for RawStmt {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method(
            "bind_create",
            |lua, _, (t, max_len): (i64, Option<usize>)| {
                let (kind, max_len) = match t {
                    1..=4 => (Kind::Int, 8),
                    5 | 6 => (Kind::Double, 8),
                    11 | 12 => (Kind::Text, max_len.unwrap_or(0)),
                    other => {
                        return (Value::Nil, format!("Unsupported argument type: {other}"))
                            .into_lua_multi(lua)
                    }
                };
                let p = LuaParam(Rc::new(RefCell::new(ParamSlot {
                    kind,
                    max_len,
                    value: Slot::Null,
                })));
                lua.create_userdata(p)?.into_lua_multi(lua)
            },
        );
        m.add_method_mut("bind_param", |_, this, ps: Variadic<AnyUserData>| {
            this.params = ps
                .iter()
                .map(|u| u.borrow::<LuaParam>().map(|p| p.clone()))
                .collect::<mlua::Result<_>>()?;
            Ok(())
        });
        m.add_method("execute", |lua, this, ()| api(lua, this.execute(lua)));
        m.add_method_mut("close", |_, this, ()| {
            if let Some(stmt) = this.stmt.take() {
                let mut link = this.link.borrow_mut();
                if link.generation == this.generation {
                    if let Some(c) = link.conn.as_mut() {
                        let _ = bakeoff_driver::complete(c.close_stmt(&stmt));
                    }
                }
            }
            Ok(())
        });
    }
}

/// A statement's result: its row count (rows read, or rows changed) and, for a text query,
/// its rows to fetch.
pub(super) struct ResultSet {
    nrows: u64,
    nfields: u32,
    rows: std::vec::IntoIter<Vec<Option<String>>>,
}

impl UserData for ResultSet {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("nrows", |_, this| Ok(this.nrows));
        f.add_field_method_get("nfields", |_, this| Ok(this.nfields));
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("fetch_row", |lua, this, ()| {
            let Some(row) = this.rows.next() else {
                return Ok(Value::Nil);
            };
            let t = lua.create_table_with_capacity(row.len(), 0)?;
            for (i, v) in row.into_iter().enumerate() {
                if let Some(v) = v {
                    t.raw_set(i + 1, v)?;
                }
            }
            Ok(Value::Table(t))
        });
        m.add_method_mut("free", |_, this, ()| {
            this.rows = Vec::new().into_iter();
            Ok(())
        });
        m.add_meta_method("__tostring", |_, _, ()| Ok("<sql_result>"));
    }
}
