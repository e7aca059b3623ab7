//! sysbench's Lua API in a state: `print` on bakeoff's stdout, the `sysbench` table
//! (`tid`, `version`, `opt`, `cmdline`, `rand`, `sql`, `hooks`, reports), the Rust halves
//! from `options`, `rand` and `sql`, then the Lua half (`prelude.lua`).

use mlua::{Lua, Table, Value, Variadic};

use std::sync::Arc;

use super::event_loop;
use super::options;
use super::rand;
use super::rand::RandOptions;
use super::sql;
use super::sql::SqlOptions;
use crate::Unique;

/// What a state's API is made of: the script's name, the command, and the run's options.
pub(super) struct Env<'a> {
    /// The script's path as given (`sysbench.cmdline.script_path`).
    pub name: String,
    pub command: Option<&'a str>,
    pub rand: &'a RandOptions,
    /// `sysbench.rand.unique`'s sequence, shared by every state of the run.
    pub unique: Arc<Unique>,
    pub sql: &'a SqlOptions,
}

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

/// The version scripts read (`sysbench.version`): the sysbench bakeoff speaks.
pub const SYSBENCH_VERSION: &str = "1.0.20";

const PRELUDE: &str = include_str!("prelude.lua");

/// Set up `print` and the `sysbench` table for state `tid`.
pub(super) fn install(lua: &Lua, script: &Env, tid: u32) -> mlua::Result<()> {
    let g = lua.globals();
    // Lua's own print writes through C's stdio, whose buffer Rust's stdout does not share;
    // this one writes where bakeoff's lines go, in order with them.
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
    sysbench.set("tid", tid)?;
    sysbench.set("version", SYSBENCH_VERSION)?;
    sysbench.set("version_string", format!("sysbench {SYSBENCH_VERSION}"))?;
    sysbench.set("cmdline", cmdline(lua, script)?)?;
    sysbench.set("sql", lua.create_table()?)?;
    rand::install(lua, &sysbench, script.rand, script.unique.clone())?;
    g.set("sysbench", sysbench)?;
    let raw = lua.create_table()?;
    let types = lua.create_table()?;
    for (name, n) in sql::TYPES {
        types.set(*name, *n)?;
    }
    raw.set("types", types)?;
    // The C functions an event calls most, for the prelude to cast and call through ffi.
    let fast = lua.create_table()?;
    let functions = rand::fast_functions()
        .into_iter()
        .chain(sql::param_functions())
        .chain(sql::stmt_functions())
        .chain(event_loop::fast_functions());
    for (name, signature, address) in functions {
        let entry = lua.create_table()?;
        entry.raw_set(1, signature)?;
        entry.raw_set(2, address as f64)?;
        fast.set(name, entry)?;
    }
    raw.set("fast", fast)?;
    let opts = script.sql.clone();
    raw.set(
        "connect",
        lua.create_function(move |lua, ()| sql::connect(lua, &opts))?,
    )?;
    lua.load(PRELUDE).set_name("=sysbench").call::<()>(raw)?;
    // io.write (sysbench's JSON reports use it) goes through C's stdio: a line at a time,
    // so it keeps its place among print's lines.
    lua.load(r#"io.stdout:setvbuf("line")"#).exec()
}

/// `sysbench.cmdline`: option types, `script_path`, `command`, `argv` and the options' help.
fn cmdline(lua: &Lua, script: &Env) -> mlua::Result<Table> {
    let cmdline = lua.create_table()?;
    for (name, v) in ARG_TYPES {
        cmdline.set(*name, *v)?;
    }
    cmdline.set("PARALLEL_COMMAND", true)?;
    cmdline.set("script_path", script.name.as_str())?;
    if let Some(c) = script.command {
        cmdline.set("command", c)?;
    }
    // sysbench's argv: the program as invoked, then the line.
    let argv = lua.create_table()?;
    for (i, a) in std::env::args().enumerate() {
        argv.raw_set(i, a)?;
    }
    cmdline.set("argv", argv)?;
    cmdline.set(
        "print_test_options",
        lua.create_function(|lua, ()| {
            print!("{}\n", options::options_help(lua)?);
            Ok(())
        })?,
    )?;
    Ok(cmdline)
}
