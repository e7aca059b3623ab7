//! The part of sysbench's Lua API a script's commands use: `print` on bakeoff's stdout,
//! `sysbench.opt` and `sysbench.cmdline` (declared options, their help, commands), and
//! `sysbench.sql.driver():connect()` with `query`, `query_row` and `disconnect`.

use std::fmt::Write;

use bakeoff_driver::{Conn, ConnectOptions, Outcome};
use mlua::{Lua, Table, UserData, UserDataMethods, Value, Variadic};

/// sysbench.cmdline's option types (sysbench's sb_arg_type_t order).
const ARG_TYPES: &[(&str, i64)] = &[
    ("ARG_NONE", 0),
    ("ARG_BOOL", 1),
    ("ARG_INT", 2),
    ("ARG_SIZE", 3),
    ("ARG_DOUBLE", 4),
    ("ARG_STRING", 5),
    ("ARG_LIST", 6),
    ("ARG_FILE", 7),
];

/// Set up `print` and the `sysbench` table; connections reach `endpoint`.
pub(super) fn install(lua: &Lua, endpoint: Option<ConnectOptions>) -> mlua::Result<()> {
    let g = lua.globals();
    // Lua's print writes through C's stdio, whose buffer Rust's stdout does not share: lines
    // would come out of order with bakeoff's own.
    g.set(
        "print",
        lua.create_function(|lua, args: Variadic<Value>| {
            let tostring: mlua::Function = lua.globals().get("tostring")?;
            let mut line = String::new();
            for (i, v) in args.into_iter().enumerate() {
                if i > 0 {
                    line.push('\t');
                }
                line += &tostring.call::<String>(v)?;
            }
            println!("{line}");
            Ok(())
        })?,
    )?;
    let sysbench = lua.create_table()?;
    sysbench.set("opt", lua.create_table()?)?;
    sysbench.set("tid", 0)?;
    let cmdline = lua.create_table()?;
    for (name, v) in ARG_TYPES {
        cmdline.set(*name, *v)?;
    }
    cmdline.set("PARALLEL_COMMAND", true)?;
    cmdline.set(
        "print_test_options",
        lua.create_function(|lua, ()| {
            print!("{}", options_help(lua)?);
            Ok(())
        })?,
    )?;
    sysbench.set("cmdline", cmdline)?;
    let sql = lua.create_table()?;
    sql.set(
        "driver",
        lua.create_function(move |lua, _name: Option<String>| {
            let driver = lua.create_table()?;
            driver.set("name", lua.create_function(|_, _: Value| Ok("mysql"))?)?;
            let endpoint = endpoint.clone();
            driver.set(
                "connect",
                lua.create_function(move |_, _: Value| match &endpoint {
                    Some(opts) => Connection::open(opts),
                    None => Err(mlua::Error::runtime(
                        "no server to connect to: give --mysql-socket or --mysql-host",
                    )),
                })?,
            )?;
            Ok(driver)
        })?,
    )?;
    sysbench.set("sql", sql)?;
    g.set("sysbench", sysbench)
}

/// Whether the script declares options (`sysbench.cmdline.options`).
pub(super) fn has_options(lua: &Lua) -> mlua::Result<bool> {
    Ok(matches!(declared(lua)?, Some(t) if t.pairs::<Value, Value>().next().is_some()))
}

/// `SCRIPT help` for a script without a help function: its options, as sysbench prints them.
pub(super) fn print_options(lua: &Lua, name: &str) -> mlua::Result<()> {
    print!("{name} options:\n{}\n", options_help(lua)?);
    Ok(())
}

fn declared(lua: &Lua) -> mlua::Result<Option<Table>> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let cmdline: Table = sysbench.get("cmdline")?;
    Ok(match cmdline.get::<Value>("options")? {
        Value::Table(t) => Some(t),
        _ => None,
    })
}

/// One declared option: name (underscores, as the script wrote it), type, default, help.
struct Declared {
    name: String,
    kind: i64,
    default: Value,
    help: String,
}

fn declared_options(lua: &Lua) -> mlua::Result<Vec<Declared>> {
    let Some(t) = declared(lua)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for pair in t.pairs::<String, Table>() {
        let (name, spec) = pair.map_err(|_| {
            mlua::Error::runtime("wrong table structure in sysbench.cmdline.options")
        })?;
        let help: String = spec.get::<Option<String>>(1)?.unwrap_or_default();
        let default: Value = spec.get(2)?;
        let kind = match spec.get::<Option<i64>>(3)? {
            Some(k) => k,
            None => match &default {
                Value::Boolean(_) => 1,
                Value::Integer(_) => 2,
                Value::Number(n) if n.fract() == 0.0 => 2,
                Value::Number(_) => 4,
                Value::Table(_) => 6,
                _ => 5,
            },
        };
        out.push(Declared {
            name,
            kind,
            default,
            help,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The declared options as sysbench's help lists them.
fn options_help(lua: &Lua) -> mlua::Result<String> {
    let opts = declared_options(lua)?;
    let shown: Vec<String> = opts
        .iter()
        .map(|o| {
            let kind = match o.kind {
                1 => "[=on|off]",
                6 => "=[LIST,...]",
                5 => "=STRING",
                3 => "=SIZE",
                7 => "=FILENAME",
                _ => "=N",
            };
            format!("--{}{kind}", o.name)
        })
        .collect();
    let width = shown.iter().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (s, o) in shown.iter().zip(&opts) {
        let default = match &o.default {
            Value::Nil => String::new(),
            Value::Boolean(b) => format!(" [{}]", if *b { "on" } else { "off" }),
            Value::Table(t) => {
                let items: Vec<String> = t.sequence_values::<String>().flatten().collect();
                format!(" [{}]", items.join(","))
            }
            Value::Number(n) => format!(" [{n}]"),
            Value::Integer(n) => format!(" [{n}]"),
            v => format!(" [{}]", v.to_string().unwrap_or_default()),
        };
        let _ = writeln!(out, "  {s:width$} {}{default}", o.help);
    }
    Ok(out)
}

/// Fill `sysbench.opt`: each declared option at its default or the value given, converted to
/// its type; a script that declares none gets every option given, as a string.
pub(super) fn read_declared_options(
    lua: &Lua,
    options: &[(String, Option<String>)],
) -> mlua::Result<()> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let opt: Table = sysbench.get("opt")?;
    let given = |name: &str| {
        options
            .iter()
            .rev()
            .find(|(n, _)| n.replace('-', "_") == name.replace('-', "_"))
            .map(|(_, v)| v.clone())
    };
    let declared = declared_options(lua)?;
    if declared.is_empty() {
        for (name, value) in options {
            opt.set(
                name.replace('-', "_"),
                value.clone().unwrap_or_else(|| "on".into()),
            )?;
        }
        return Ok(());
    }
    for o in declared {
        let key = o.name.replace('-', "_");
        let value = match given(&o.name) {
            Some(v) => typed(lua, o.kind, v.as_deref())?,
            None => o.default.clone(),
        };
        opt.set(key, value)?;
    }
    Ok(())
}

/// A command-line value as its declared type.
fn typed(lua: &Lua, kind: i64, v: Option<&str>) -> mlua::Result<Value> {
    let text = v.unwrap_or("on");
    Ok(match kind {
        1 => Value::Boolean(matches!(text, "on" | "true" | "1" | "yes")),
        2 => text
            .parse::<i64>()
            .map(Value::Integer)
            .unwrap_or(Value::Nil),
        4 => text.parse::<f64>().map(Value::Number).unwrap_or(Value::Nil),
        6 => {
            let t = lua.create_table()?;
            for (i, item) in text.split(',').enumerate() {
                t.set(i + 1, item)?;
            }
            Value::Table(t)
        }
        _ => Value::String(lua.create_string(text)?),
    })
}

/// A connection made by the script: blocking socket I/O, driven without a runtime, so a
/// script's calls work alike on the main thread (its commands) and on a client thread (its
/// events). Statements are counted sysbench's way into the state's [`Counts`].
struct Connection {
    conn: Option<Conn>,
}

/// Statements the state's connections ran since the engine last took them.
#[derive(Default)]
pub(super) struct Counts(pub(super) std::cell::Cell<crate::StmtCounts>);

impl Connection {
    fn open(opts: &ConnectOptions) -> mlua::Result<Connection> {
        let conn = Conn::connect_blocking(opts)
            .map_err(|e| mlua::Error::runtime(format!("connection failed: {e}")))?;
        Ok(Connection { conn: Some(conn) })
    }

    fn conn(&mut self) -> mlua::Result<&mut Conn> {
        self.conn
            .as_mut()
            .ok_or_else(|| mlua::Error::runtime("the connection was closed"))
    }

    fn query(&mut self, lua: &Lua, sql: &str) -> mlua::Result<Outcome> {
        let outcome = bakeoff_driver::complete(self.conn()?.query(sql))
            .map_err(|e| mlua::Error::runtime(e.to_string()))?;
        count(lua, &outcome);
        match outcome {
            Outcome::Err(e) => Err(mlua::Error::runtime(format!(
                "SQL error, errno = {}, state = '{}': {}",
                e.code, e.sql_state, e.message
            ))),
            ok => Ok(ok),
        }
    }

    fn rows(&mut self, lua: &Lua, sql: &str) -> mlua::Result<Vec<Vec<Option<String>>>> {
        let rows = bakeoff_driver::complete(self.conn()?.query_rows(sql))
            .map_err(|e| mlua::Error::runtime(e.to_string()))?;
        count(lua, &Outcome::Rows(rows.len() as u64));
        Ok(rows)
    }
}

/// sysbench's classes: a result set is a read, changed rows a write, anything else other.
fn count(lua: &Lua, outcome: &Outcome) {
    if let Some(counts) = lua.app_data_ref::<Counts>() {
        let mut c = counts.0.get();
        match outcome {
            Outcome::Rows(_) => c.reads += 1,
            Outcome::Ok(ok) if ok.affected_rows > 0 => c.writes += 1,
            _ => c.others += 1,
        }
        counts.0.set(c);
    }
}

impl UserData for Connection {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("query", |lua, this, sql: String| {
            this.query(lua, &sql)?;
            Ok(Value::Nil)
        });
        m.add_method_mut("query_row", |lua, this, sql: String| {
            let rows = this.rows(lua, &sql)?;
            let Some(first) = rows.first() else {
                return Ok(Variadic::new());
            };
            first
                .iter()
                .map(|v| match v {
                    Some(s) => lua.create_string(s).map(Value::String),
                    None => Ok(Value::Nil),
                })
                .collect::<mlua::Result<Variadic<Value>>>()
        });
        m.add_method_mut("disconnect", |_, this, ()| {
            if let Some(c) = this.conn.take() {
                bakeoff_driver::complete(c.quit());
            }
            Ok(())
        });
    }
}
