//! A script, what the command line gave it, and its commands run outside `run`: the body,
//! `help`, `prepare`, `cleanup` or a command it declares (in every thread when it says
//! PARALLEL_COMMAND).

use std::path::PathBuf;
use std::sync::Arc;

use bakeoff_driver::ConnectOptions;
use mlua::{Function, Lua, Table, Value};

use super::api::{self, Env};
use super::error::{failed_in, ScriptError};
use super::options;
use super::rand::{self, RandOptions};

use super::sql::{Ignore, SqlOptions};
use crate::Unique;

/// A script and what the command line gave it.
#[derive(Debug, Clone)]
pub struct Script {
    /// The path as given (sysbench's name for the script in messages).
    pub path: PathBuf,
    /// The script's text, read once: a script from standard input has no file.
    pub text: Arc<str>,
    /// Options as given (names with dashes; the last one given wins).
    pub options: Vec<(String, Option<String>)>,
    /// The command the line names (`sysbench.cmdline.command`).
    pub command: Option<String>,
    /// What `sysbench.sql.driver():connect()` reaches and which errors restart an event.
    pub sql: SqlOptions,
    pub rand: RandOptions,
    /// `sysbench.rand.unique`'s sequence, shared by every state of the run.
    pub unique: Arc<Unique>,
    /// The call that keeps the script's states off the reactor, a client thread each (see
    /// `blocking.rs`); none: they run on fibers, many on each client thread.
    pub waits_in_c: Option<String>,
}

/// How a command ended: its output went to stdout as the script printed it.
#[derive(Debug, PartialEq, Eq)]
pub enum Ran {
    /// The body ran; no command was asked.
    Loaded,
    /// The command's function ran.
    Command,
    /// A command the script declares returned false: sysbench exits 1, saying nothing.
    CommandFailed,
}

impl Script {
    /// A script read from `path` (`text`), for a line with these options, command and servers.
    pub fn new(
        path: PathBuf,
        text: String,
        options: Vec<(String, Option<String>)>,
        command: Option<String>,
        endpoints: Vec<ConnectOptions>,
    ) -> Result<Script, String> {
        let rand = RandOptions::from_options(&options)?;
        let ignore = match options
            .iter()
            .rev()
            .find(|(n, _)| n == "mysql-ignore-errors")
        {
            Some((_, Some(v))) => Ignore::parse(v)?,
            _ => Ignore::sysbench_default(),
        };
        let unique = Arc::new(Unique::new(rand.seed));
        let silent = options
            .iter()
            .rev()
            .find(|(n, _)| n == "verbosity")
            .is_some_and(|(_, v)| v.as_deref() == Some("0"));
        // sysbench's --mysql-dry-run: statements succeed without a server (the client alone).
        let dry_run = options
            .iter()
            .rev()
            .find(|(n, _)| n == "mysql-dry-run")
            .is_some_and(|(_, v)| {
                v.as_deref()
                    .is_none_or(|v| matches!(v, "on" | "true" | "1" | "yes"))
            });
        let waits_in_c = self::waits_in_c(&text);
        Ok(Script {
            waits_in_c,
            path,
            text: text.into(),
            options,
            command,
            sql: SqlOptions {
                endpoint: endpoints.into_iter().next(),
                ignore,
                say_refusals: !silent,
                dry_run,
            },
            rand,
            unique,
        })
    }

    /// The script's name as sysbench says it in messages: the path as given.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn short_name(&self) -> String {
        self.path
            .file_name()
            .map_or_else(|| self.name(), |n| n.to_string_lossy().into_owned())
    }

    /// Load the script (its body runs) and run `command`, if any, in this thread; a command
    /// the script declares with `PARALLEL_COMMAND` runs in `threads` threads, each with a
    /// state of its own (`sysbench.tid` 0..threads), after `starting_threads` is called.
    /// `general`: whether a name is one of sysbench's own options (checked against what a
    /// script declares, as sysbench does).
    pub fn run_command(
        &self,
        command: Option<&str>,
        general: &dyn Fn(&str) -> bool,
        threads: u32,
        starting_threads: &dyn Fn(),
    ) -> Result<Ran, ScriptError> {
        let lua = self.state(0)?;
        if let Some((name, _)) = options::undeclared(&lua, &self.options, general)?.first() {
            return Err(ScriptError::InvalidOption(name.clone()));
        }
        let Some(command) = command else {
            return Ok(Ran::Loaded);
        };
        let globals = lua.globals();
        let function: Option<Function> = match declared_command(&lua, command)? {
            // With one thread, sysbench runs even a parallel command here, in the main state.
            Some((_, true)) if threads > 1 => {
                drop(globals);
                drop(lua);
                starting_threads();
                return self.in_threads(command, threads);
            }
            Some((f, _)) => {
                // sysbench.cmdline.call_command: anything but a false return is success.
                let rc = f.call::<Value>(()).map_err(|e| {
                    ScriptError::Lua(failed_in("sysbench.cmdline.call_command", &e))
                })?;
                return Ok(match rc {
                    Value::Boolean(false) => Ran::CommandFailed,
                    _ => Ran::Command,
                });
            }
            None => match globals.get::<Value>(command)? {
                Value::Function(f) if matches!(command, "help" | "prepare" | "cleanup") => Some(f),
                _ => None,
            },
        };
        match function {
            Some(f) => {
                f.call::<()>(())
                    .map_err(|e| ScriptError::Lua(failed_in(command, &e)))?;
                Ok(Ran::Command)
            }
            None if command == "help" && options::has_options(&lua)? => {
                options::print_options(&lua, &self.short_name())?;
                Ok(Ran::Command)
            }
            None if matches!(command, "help" | "prepare" | "cleanup") => {
                Err(ScriptError::NoCommand {
                    test: self.short_name(),
                    command: command.to_string(),
                })
            }
            None => Err(ScriptError::Unknown(command.to_string())),
        }
    }

    /// A fresh state for thread `tid`: the standard libraries (ffi included, as sysbench's),
    /// sysbench's API, sysbench's module path (the working directory, LUA_PATH), then the
    /// script's body.
    pub(super) fn state(&self, tid: u32) -> Result<Lua, ScriptError> {
        // SAFETY: scripts are the user's own code, run as sysbench runs them, ffi included;
        // the unsafe constructor is what makes LuaJIT's ffi library loadable.
        let lua = unsafe { Lua::unsafe_new() };
        rand::seed_thread(self.rand.seed, tid);
        let env = Env {
            name: self.name(),
            command: self.command.as_deref(),
            rand: &self.rand,
            unique: self.unique.clone(),
            sql: &self.sql,
        };
        api::install(&lua, &env, tid)?;
        // The options first: a body may read them as it loads (the script's own are strings
        // until it has declared them).
        options::read_options(&lua, &self.options)?;
        let package: Table = lua.globals().get("package")?;
        let (path, cpath) = module_paths();
        package.set("path", path)?;
        package.set("cpath", cpath)?;
        // A `#!` line (scripts made executable) is not Lua: keep the line, as a comment, so
        // line numbers in messages stay the file's.
        let body = match self.text.strip_prefix("#!") {
            Some(rest) => format!("--{rest}"),
            None => self.text.to_string(),
        };
        // '@': Lua names the chunk by its path in messages, as sysbench's do.
        lua.load(body)
            .set_name(format!("@{}", self.name()))
            .exec()?;
        // Then the options the body declared, typed; for a 0.5 script, as globals too.
        options::read_options(&lua, &self.options)?;
        options::export_globals(&lua)?;
        Ok(lua)
    }
}

/// `package.path` and `package.cpath` as Debian's sysbench 1.0.20 sets them in every state:
/// the working directory, `./src/lua`, the user's luarocks tree, the system's Lua directories
/// and sysbench's own (its scripts in /usr/share/sysbench, so `require "oltp_common"` finds
/// sysbench's, not a file beside the script). `LUA_PATH` / `LUA_CPATH` replace them, `;;`
/// standing for the default, as in Lua itself.
fn module_paths() -> (String, String) {
    let home = std::env::var("HOME").ok();
    let rocks = |tails: &[&str]| -> String {
        home.as_ref().map_or_else(String::new, |h| {
            tails
                .iter()
                .map(|t| format!("{h}/.luarocks/{t};"))
                .collect()
        })
    };
    let path = format!(
        "./?.lua;./?/init.lua;./src/lua/?.lua;{}/usr/local/share/lua/5.1/?.lua;/usr/share/lua/5.1/?.lua;/usr/share/sysbench/?.lua;",
        rocks(&["share/lua/5.1/?.lua", "share/lua/5.1/?/init.lua", "share/lua/?.lua", "share/lua/?/init.lua"])
    );
    let cpath = format!(
        "./?.so;{}/usr/local/lib/lua/5.1/?.so;/usr/lib/lua/5.1/?.so;/usr/lib/{}-linux-gnu/sysbench;",
        rocks(&["lib/lua/5.1/?.so", "lib/lua/?.so"]),
        std::env::consts::ARCH
    );
    let from_env = |var: &str, default: String| match std::env::var(var) {
        Ok(given) => given.replace(";;", &format!(";{default};")),
        Err(_) => default,
    };
    (from_env("LUA_PATH", path), from_env("LUA_CPATH", cpath))
}

/// The call that keeps a script's states off the reactor, a client thread each, if any (see
/// `blocking.rs`): from its text and the modules it requires.
pub fn waits_in_c(text: &str) -> Option<String> {
    super::blocking::waits_in_c(text, &find_module)
}

/// What `require NAME` loads, looked up as Lua looks it up (`package.path`, then
/// `package.cpath`, as `module_paths` sets them).
fn find_module(name: &str) -> Option<super::blocking::Module> {
    use super::blocking::Module;
    let (path, cpath) = module_paths();
    let file = name.replace('.', "/");
    let on = |patterns: &str| {
        patterns
            .split(';')
            .filter(|p| p.contains('?'))
            .map(|p| p.replace('?', &file))
            .find(|p| std::path::Path::new(p).is_file())
    };
    if let Some(p) = on(&path) {
        return std::fs::read_to_string(p).ok().map(Module::Lua);
    }
    on(&cpath).map(Module::C)
}

/// A command the script declares in `sysbench.cmdline.commands` (`name = {function,
/// sysbench.cmdline.PARALLEL_COMMAND}`), and whether it runs in every thread.
fn declared_command(lua: &Lua, name: &str) -> Result<Option<(Function, bool)>, ScriptError> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let cmdline: Table = sysbench.get("cmdline")?;
    let Value::Table(commands) = cmdline.get::<Value>("commands")? else {
        return Ok(None);
    };
    Ok(match commands.get::<Value>(name)? {
        Value::Table(t) => match t.get::<Option<Function>>(1)? {
            Some(f) => Some((f, t.get::<Value>(2)?.as_boolean() == Some(true))),
            None => None,
        },
        Value::Function(f) => Some((f, false)),
        _ => None,
    })
}

impl Script {
    /// A parallel command: each thread loads the script into a state of its own and calls
    /// the command's function; the first failure is the command's.
    fn in_threads(&self, command: &str, threads: u32) -> Result<Ran, ScriptError> {
        let results: Vec<Result<(), ScriptError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|tid| {
                    s.spawn(move || -> Result<(), ScriptError> {
                        let lua = self.state(tid)?;
                        if let Some((f, _)) = declared_command(&lua, command)? {
                            f.call::<()>(tid).map_err(|e| {
                                ScriptError::Lua(failed_in("sysbench.cmdline.call_command", &e))
                            })?;
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(ScriptError::Lua(format!("a '{command}' thread panicked")))
                    })
                })
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>, _>>()?;
        Ok(Ran::Command)
    }
}
