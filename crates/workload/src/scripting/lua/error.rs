//! How a script fails: sysbench's messages for it.

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script did not compile or raised an error: Lua's own message.
    #[error("{0}")]
    Lua(String),
    /// The script defines no function for the command (sysbench's words).
    #[error("'{test}' test does not implement the '{command}' command.")]
    NoCommand { test: String, command: String },
    /// Neither one of sysbench's commands nor one the script declares.
    #[error("Unknown command: {0}")]
    Unknown(String),
    /// An option neither sysbench nor the script declares (sysbench's words).
    #[error("invalid option: --{0}")]
    InvalidOption(String),
}

impl From<mlua::Error> for ScriptError {
    fn from(e: mlua::Error) -> Self {
        ScriptError::Lua(message(&e))
    }
}

/// Lua's message for an error, without mlua's wrapping ("runtime error: ", tracebacks of
/// Rust callbacks): what sysbench prints after "FATAL: ".
pub fn message(e: &mlua::Error) -> String {
    let m = match e {
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m.clone(),
        mlua::Error::CallbackError { cause, .. } => return message(cause),
        mlua::Error::WithContext { cause, .. } => return message(cause),
        other => other.to_string(),
    };
    match m.find("\nstack traceback:") {
        Some(at) => m[..at].to_string(),
        None => m,
    }
}

/// An error in one of the script's functions, as sysbench reports it.
pub(super) fn failed_in(function: &str, e: &mlua::Error) -> String {
    format!("`{function}' function failed: {}", message(e))
}
