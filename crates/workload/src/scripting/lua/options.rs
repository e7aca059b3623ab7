//! `sysbench.opt` and `sysbench.cmdline.options`: the options a script declares, their help
//! as sysbench prints it, and their values typed from the command line; sysbench's own
//! general options are in `sysbench.opt` too, as scripts read `sysbench.opt.threads`.

use std::fmt::Write;

use mlua::{Lua, Table, Value};

use super::error::ScriptError;

/// sysbench's own options as scripts see them in `sysbench.opt` (and, for a script that
/// declares none, as globals): name, type (sysbench's numbering: 1 flag, 2 integer, 3 size,
/// 4 number, 5 string, 6 list), default. Debian's sysbench 1.0.20 has these, its driver's
/// included; options naming files (`--config-file`, the TLS files) it leaves out, and so do
/// we. `warmup_time` and `thread_init_timeout` are 1.0.20's upstream options bakeoff takes.
const GENERAL: &[(&str, i64, &str)] = &[
    ("threads", 2, "1"),
    ("events", 2, "0"),
    ("time", 2, "10"),
    ("forced_shutdown", 5, "off"),
    ("thread_stack_size", 3, "64K"),
    ("rate", 2, "0"),
    ("report_interval", 2, "0"),
    ("report_checkpoints", 6, ""),
    ("debug", 1, "off"),
    ("validate", 1, "off"),
    ("help", 1, "off"),
    ("version", 1, "off"),
    ("tx_rate", 2, "0"),
    ("max_requests", 2, "0"),
    ("max_time", 2, "0"),
    ("num_threads", 2, "1"),
    ("warmup_time", 2, "0"),
    ("thread_init_timeout", 2, "30"),
    ("percentile", 2, "95"),
    ("histogram", 1, "off"),
    ("verbosity", 2, "3"),
    ("rand_type", 5, "special"),
    ("rand_seed", 2, "0"),
    ("rand_spec_iter", 2, "12"),
    ("rand_spec_pct", 4, "1"),
    ("rand_spec_res", 4, "75"),
    ("rand_pareto_h", 4, "0.2"),
    ("db_driver", 5, "mysql"),
    ("db_ps_mode", 5, "auto"),
    ("db_debug", 1, "off"),
    ("mysql_host", 6, "localhost"),
    ("mysql_port", 6, "3306"),
    ("mysql_socket", 6, ""),
    ("mysql_user", 5, "sbtest"),
    ("mysql_password", 5, ""),
    ("mysql_db", 5, "sbtest"),
    ("mysql_ssl", 1, "off"),
    ("mysql_ssl_cipher", 5, ""),
    ("mysql_compression", 1, "off"),
    ("mysql_debug", 1, "off"),
    ("mysql_ignore_errors", 6, "1213,1020,1205"),
    ("mysql_dry_run", 1, "off"),
    ("pgsql_host", 5, "localhost"),
    ("pgsql_port", 2, "5432"),
    ("pgsql_user", 5, "sbtest"),
    ("pgsql_password", 5, ""),
    ("pgsql_db", 5, "sbtest"),
];

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

/// sysbench checks a script's option table in Lua, in its module `sysbench.cmdline.lua`; the
/// same check runs here as a chunk of that name, so a bad table is refused with the words and
/// the place sysbench's message has (`[string "sysbench.cmdline.lua"]:N: wrong table ...`).
const CHECK_STRUCTURE: &str = r#"local options = ...
for name, def in pairs(options) do
  assert(type(name) == "string" and type(def) == "table",
         "wrong table structure in sysbench.cmdline.options")
end
"#;

fn check_structure(lua: &Lua, options: &Table) -> mlua::Result<()> {
    let checked = lua
        .load(CHECK_STRUCTURE)
        .set_name("sysbench.cmdline.lua")
        .call::<()>(options.clone());
    checked.map_err(|e| {
        let why = match e {
            mlua::Error::RuntimeError(m) => m,
            e => e.to_string(),
        };
        let why = why.lines().next().unwrap_or_default().to_string();
        mlua::Error::runtime(format!(
            "`sysbench.cmdline.read_cmdline_options' function failed: {why}"
        ))
    })
}

fn declared_options(lua: &Lua) -> mlua::Result<Vec<Declared>> {
    let Some(t) = declared(lua)? else {
        return Ok(Vec::new());
    };
    check_structure(lua, &t)?;
    let mut out = Vec::new();
    for pair in t.pairs::<Value, Value>() {
        let (Value::String(name), Value::Table(spec)) = pair? else {
            continue; // check_structure refused these
        };
        let name = name.to_str()?.to_string();
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
pub(super) fn options_help(lua: &Lua) -> mlua::Result<String> {
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

/// Fill `sysbench.opt`: sysbench's general options, then each declared option at its default
/// or the value given, converted to its type; a script that declares none gets every other
/// option given, as a string.
pub(super) fn read_options(
    lua: &Lua,
    options: &[(String, Option<String>)],
) -> Result<(), ScriptError> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let opt: Table = sysbench.get("opt")?;
    let key = |n: &str| n.replace('-', "_");
    let found = |name: &str| options.iter().rev().find(|(n, _)| key(n) == key(name));
    let given = |name: &str| found(name).map(|(_, v)| v.clone());
    for (name, kind, default) in GENERAL {
        let v = given(name).unwrap_or_else(|| Some(default.to_string()));
        // sysbench checks its own options' values before the script's; one bakeoff takes
        // beyond sysbench's type (--mysql-ssl=REQUIRED) is kept as it was written.
        let value = match typed(lua, *kind, v.as_deref())? {
            Some(value) => value,
            None => Value::String(lua.create_string(v.unwrap_or_default())?),
        };
        opt.set(*name, value)?;
    }
    // A 0.5 alias in use stands for its new name, as sysbench copies it (sb_opt_copy).
    for (old, new, floor) in ALIASES {
        if let Some(Value::Integer(v)) =
            given(old).and_then(|v| typed(lua, 2, v.as_deref()).ok().flatten())
        {
            if v > floor {
                opt.set(new, v)?;
            }
        }
    }
    let declared = declared_options(lua)?;
    if declared.is_empty() {
        // Undeclared, every option given is a string (a bare `--name`: empty).
        for (name, value) in options {
            if opt.get::<Value>(key(name))?.is_nil() {
                opt.set(key(name), value.clone().unwrap_or_default())?;
            }
        }
        return Ok(());
    }
    for o in declared {
        let value = match (given(&o.name), &o.default) {
            (Some(v), _) => typed(lua, o.kind, v.as_deref())?.ok_or_else(|| {
                let as_given = found(&o.name).map_or(&o.name, |(n, _)| n);
                ScriptError::InvalidOption(as_given.clone())
            })?,
            (None, Value::Nil) => empty(lua, o.kind)?,
            (None, d) => d.clone(),
        };
        opt.set(key(&o.name), value)?;
    }
    Ok(())
}

/// sysbench 0.5's option names: (old, new, the value above which the old one is in use).
const ALIASES: [(&str, &str, i64); 4] = [
    ("num_threads", "threads", 1),
    ("max_requests", "events", 0),
    ("max_time", "time", 0),
    ("tx_rate", "rate", 0),
];

/// For a script that declares no options, sysbench 1.0 sets every option as a global too (its
/// 0.5 API: `num_threads`, `oltp_tables_count`), except where the script has a function of
/// that name (`help`). Called once the script's body has run, as sysbench exports them.
pub(super) fn export_globals(lua: &Lua) -> mlua::Result<()> {
    if has_options(lua)? {
        return Ok(());
    }
    let globals = lua.globals();
    let sysbench: Table = globals.get("sysbench")?;
    let opt: Table = sysbench.get("opt")?;
    for pair in opt.pairs::<Value, Value>() {
        let (name, value) = pair?;
        if !matches!(globals.raw_get::<Value>(name.clone())?, Value::Function(_)) {
            globals.raw_set(name, value)?;
        }
    }
    Ok(())
}

/// The options given that neither sysbench nor the script declares (`general`: the names
/// sysbench itself knows, with dashes). Only a script that declares options is checked, as
/// sysbench checks them.
pub(super) fn undeclared<'a>(
    lua: &Lua,
    options: &'a [(String, Option<String>)],
    general: &dyn Fn(&str) -> bool,
) -> mlua::Result<Vec<&'a (String, Option<String>)>> {
    let declared = declared_options(lua)?;
    if declared.is_empty() {
        return Ok(Vec::new());
    }
    let key = |n: &str| n.replace('-', "_");
    Ok(options
        .iter()
        .filter(|(n, _)| !general(n) && !declared.iter().any(|d| key(&d.name) == key(n)))
        .collect())
}

/// A declared option given no default and no value, as sysbench leaves it: an empty string,
/// list or zero, and a flag on.
fn empty(lua: &Lua, kind: i64) -> mlua::Result<Value> {
    Ok(match kind {
        1 => Value::Boolean(true),
        2 | 3 => Value::Integer(0),
        4 => Value::Number(0.0),
        6 => Value::Table(lua.create_table()?),
        _ => Value::String(lua.create_string("")?),
    })
}

/// A command-line value as its declared type; None when it is not one (sysbench: "invalid
/// option").
fn typed(lua: &Lua, kind: i64, v: Option<&str>) -> mlua::Result<Option<Value>> {
    let text = v.unwrap_or("on");
    Ok(match kind {
        1 => match text {
            "on" | "true" | "1" => Some(Value::Boolean(true)),
            "off" | "false" | "0" => Some(Value::Boolean(false)),
            _ => None,
        },
        2 => text.parse::<i64>().ok().map(Value::Integer),
        3 => size(text).map(Value::Integer),
        4 => text.parse::<f64>().ok().map(Value::Number),
        6 => {
            let t = lua.create_table()?;
            for (i, item) in text.split(',').filter(|s| !s.is_empty()).enumerate() {
                t.set(i + 1, item)?;
            }
            Some(Value::Table(t))
        }
        _ => Some(Value::String(lua.create_string(text)?)),
    })
}

/// A size as sysbench reads one: a number with an optional unit, K/M/G/T (powers of 1024).
fn size(text: &str) -> Option<i64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, unit) = text.split_at(split);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    n.parse::<i64>().ok()?.checked_mul(1 << shift)
}
