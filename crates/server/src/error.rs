use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    NotFound(String),
    /// The variant cannot be set up here (allocator missing, CPUs or nodes not available).
    #[error("{0}")]
    Variant(String),
    #[error("could not prepare the run directory {path}: {source}")]
    RunDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} failed: {detail}")]
    Spawn { what: String, detail: String },
    #[error("initializing the datadir with {tool} failed ({status}):\n{log_tail}")]
    Initialize {
        tool: String,
        status: String,
        log_tail: String,
    },
    #[error(
        "the server exited during startup ({status}); last lines of its error log:\n{log_tail}"
    )]
    ExitedAtStart {
        status: String,
        log: PathBuf,
        log_tail: String,
    },
    #[error("the server did not become ready within {secs} s, the server start timeout (server_start_timeout in a study file, --server-start-timeout for bakeoff run; last attempt: {last}); last lines of its error log:\n{log_tail}")]
    NotReady {
        secs: u64,
        last: String,
        log: PathBuf,
        log_tail: String,
    },
    /// What was asked would open the server to others (see `exposure`, `accounts`).
    #[error("{0}")]
    Refused(String),
    /// The start was given up half-way (see `Server::start_watched`); nothing is left of it.
    #[error("the server start was abandoned (nobody waits for it any more); what it had launched was stopped and removed")]
    Abandoned,
}
