//! Other machines, reached with the user's own OpenSSH.
//!
//! bakeoff starts `bakeoff agent` on a host over ssh and talks to it through that session's
//! stdin and stdout ([`wire`]): no daemon, no port, no credentials of its own. A host of the
//! same OS and architecture gets this very binary, cached there by hash ([`session`]). An agent
//! whose stdin closes or goes silent stops everything it started (the agent itself lives in
//! the study crate, `bakeoff_study::agent`, since it runs studies).
//!
//! - [`HostUrl`]: `local` or `ssh://[user@]host[:port]`.
//!
//! - [`server::RemoteServer`]: a server variant on another host, driven from this one
//!   (`bakeoff run --server-host`).
//!
//! A run's load spread over several client hosts is driven from the study crate
//! (`bakeoff_study::spread`), over the `Load` / `Go` / `LoadTick` / `Loaded` exchange here.

pub mod server;
pub mod session;
pub mod ssh;
mod url;
pub mod watched;
pub mod wire;

pub use url::HostUrl;

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// ssh could not log in or run a command there.
    #[error("host {host} {what}")]
    Ssh { host: String, what: String },
    #[error("host {host} runs bakeoff {theirs}; this is bakeoff {ours}: install the same version there (bakeoff copies itself only to machines of its own OS and architecture)")]
    Version {
        host: String,
        theirs: String,
        ours: String,
    },
    /// The agent's output ended before its work did.
    #[error("lost the link to host {host} ({said}); the agent there stops its servers when the link goes")]
    Lost { host: String, said: String },
    /// The agent could not do what was asked (no server binary there, ...).
    #[error("host {host}: {what}")]
    Refused { host: String, what: String },
}
