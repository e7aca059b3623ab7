//! sysbench's Lua scripts in an embedded LuaJIT (sysbench's own interpreter: shared scripts
//! use its ffi). This first part runs a script's commands in the calling thread: its body,
//! then `help`, `prepare`, `cleanup` or a command it declares, with the part of sysbench's
//! API they use (`sysbench.opt`, `sysbench.cmdline`, `sysbench.sql` connections and queries).
//!
//! For `run`, [`Script`] is a [`Source`]: each connection gets a Lua state of its own on the
//! engine's client thread, as sysbench gives each thread one, whose connections use blocking
//! sockets (ffi calls cannot yield, so a script's calls block its thread, as in sysbench);
//! run it with one connection per client thread.

mod api;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bakeoff_driver::{ConnectOptions, DriverError};
use mlua::{Function, Lua, Table, Value};

use super::{EventError, Events, Source, StmtCounts};

/// A script and what the command line gave it.
#[derive(Debug, Clone)]
pub struct Script {
    pub path: PathBuf,
    /// Options as given (names with dashes), for `sysbench.opt`.
    pub options: Vec<(String, Option<String>)>,
    /// The servers `sysbench.sql.driver():connect()` reaches (the first, today).
    pub endpoints: Vec<ConnectOptions>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script could not be read or did not compile or run: Lua's own message.
    #[error("{0}")]
    Lua(String),
    /// The script defines no function for the command (sysbench's words).
    #[error("'{test}' test does not implement the '{command}' command.")]
    NoCommand { test: String, command: String },
    /// Neither one of sysbench's commands nor one the script declares.
    #[error("Unknown command: {0}")]
    Unknown(String),
}

impl From<mlua::Error> for ScriptError {
    fn from(e: mlua::Error) -> Self {
        ScriptError::Lua(e.to_string())
    }
}

/// How a command ended: its output went to stdout as the script printed it.
#[derive(Debug, PartialEq, Eq)]
pub enum Ran {
    /// The body ran; no command was asked.
    Loaded,
    /// The command's function ran.
    Command,
}

impl Script {
    /// The script's name as sysbench says it in messages: the path as given.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// Load the script (its body runs) and run `command`, if any, in this thread.
    pub fn run_command(&self, command: Option<&str>) -> Result<Ran, ScriptError> {
        let lua = self.state()?;
        let Some(command) = command else {
            return Ok(Ran::Loaded);
        };
        let globals = lua.globals();
        let declared = declared_command(&lua, command)?;
        let function: Option<Function> = match declared {
            Some(f) => Some(f),
            None => match globals.get::<Value>(command)? {
                Value::Function(f) if matches!(command, "help" | "prepare" | "cleanup") => Some(f),
                _ => None,
            },
        };
        match function {
            Some(f) => {
                f.call::<()>(())?;
                Ok(Ran::Command)
            }
            None if command == "help" && api::has_options(&lua)? => {
                api::print_options(&lua, &self.short_name())?;
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

    fn short_name(&self) -> String {
        self.path
            .file_name()
            .map_or_else(|| self.name(), |n| n.to_string_lossy().into_owned())
    }

    /// A fresh state: the standard libraries (ffi included, as sysbench's), sysbench's API,
    /// the script's directory on the module path, then the script's body.
    fn state(&self) -> Result<Lua, ScriptError> {
        // SAFETY: scripts are the user's own code, run as sysbench runs them, ffi included;
        // the unsafe constructor is what makes LuaJIT's ffi library loadable.
        let lua = unsafe { Lua::unsafe_new() };
        api::install(&lua, self.endpoints.first().cloned())?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let package: Table = lua.globals().get("package")?;
        let path: String = package.get("path")?;
        package.set("path", format!("{}/?.lua;{path}", dir.display()))?;
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| ScriptError::Lua(format!("{}: {e}", self.name())))?;
        // A `#!` line (scripts made executable) is not Lua.
        let body = match text.strip_prefix("#!") {
            Some(rest) => format!("--{rest}"),
            None => text,
        };
        lua.load(body).set_name(self.name()).exec()?;
        api::read_declared_options(&lua, &self.options)?;
        Ok(lua)
    }
}

impl Source for Script {
    type Session = Session;

    /// A state for connection `tid`: the body, `sysbench.tid`, then the script's
    /// `thread_init(tid)`.
    async fn open(
        self: Arc<Self>,
        tid: u32,
        _seed: u64,
        _blocking: bool,
    ) -> Result<Session, EventError> {
        let failed = |e: ScriptError| EventError::Script(e.to_string());
        let lua = self.state().map_err(failed)?;
        lua.set_app_data(api::Counts::default());
        let init = || -> mlua::Result<Option<Function>> {
            let sysbench: Table = lua.globals().get("sysbench")?;
            sysbench.set("tid", tid)?;
            if let Some(f) = lua.globals().get::<Option<Function>>("thread_init")? {
                f.call::<()>(tid)?;
            }
            lua.globals().get::<Option<Function>>("event")
        };
        let event = init().map_err(|e| failed(e.into()))?.ok_or_else(|| {
            EventError::Script(format!(
                "{}: the script defines no event function",
                self.name()
            ))
        })?;
        Ok(Session { lua, event, tid })
    }
}

/// One connection's Lua state and its `event` function.
pub struct Session {
    lua: Lua,
    event: Function,
    tid: u32,
}

impl Session {
    /// Add what the state's connections ran since last time to `c`.
    fn take_counts(&self, c: &mut StmtCounts) {
        if let Some(counts) = self.lua.app_data_ref::<api::Counts>() {
            let n = counts.0.take();
            c.reads += n.reads;
            c.writes += n.writes;
            c.others += n.others;
        }
    }
}

impl Events for Session {
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let r = self.event.call::<()>(self.tid);
        self.take_counts(c);
        r.map_err(|e| EventError::Script(e.to_string()))
    }

    async fn reconnect(&mut self) -> Result<(), DriverError> {
        // The script owns its connections; it reconnects them itself.
        Ok(())
    }

    async fn finish(self, c: &mut StmtCounts) -> Result<(), EventError> {
        let done = self.lua.globals().get::<Option<Function>>("thread_done");
        let r = match done {
            Ok(Some(f)) => f.call::<()>(self.tid),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        self.take_counts(c);
        r.map_err(|e| EventError::Script(e.to_string()))
    }
}

/// A command the script declares in `sysbench.cmdline.commands` (`name = {function, ...}`).
fn declared_command(lua: &Lua, name: &str) -> Result<Option<Function>, ScriptError> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let cmdline: Table = sysbench.get("cmdline")?;
    let Value::Table(commands) = cmdline.get::<Value>("commands")? else {
        return Ok(None);
    };
    Ok(match commands.get::<Value>(name)? {
        Value::Table(t) => t.get::<Option<Function>>(1)?,
        Value::Function(f) => Some(f),
        _ => None,
    })
}
