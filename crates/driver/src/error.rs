use std::io;

use bakeoff_proto::{ProtoError, ServerError};

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The socket failed or closed: the connection is gone and must be re-established.
    #[error("connection to {endpoint} lost during {op}: {source}")]
    Io {
        endpoint: String,
        op: &'static str,
        source: io::Error,
    },
    /// The connect itself failed. Refused, or no socket at the path: nothing listens there,
    /// which no timeout or server setting changes, so the message asks what a user can check.
    #[error("{}", connect_said(endpoint, source))]
    Connect { endpoint: String, source: io::Error },
    /// The connect timeout ran out, while the server did not answer or its listen queue
    /// stayed full.
    #[error(
        "timed out connecting to {endpoint} after {secs} s ({attempts} attempt(s); last: {last})"
    )]
    ConnectTimeout {
        endpoint: String,
        secs: f64,
        attempts: u32,
        last: String,
    },
    #[error("protocol error from {endpoint}: {source}")]
    Proto {
        endpoint: String,
        source: ProtoError,
    },
    /// TLS could not be set up: the options, the server's offer, or its certificate.
    #[error("TLS with {endpoint} failed: {reason}")]
    Tls { endpoint: String, reason: String },
    #[error("authentication as '{user}' failed: {reason}")]
    Auth { user: String, reason: String },
    /// No answer within the read timeout, outside the timed run.
    #[error("{endpoint} did not answer within {secs} s during {op}: the read timeout for statements outside the timed run (--read-timeout; --ddl-timeout for DDL and loads)")]
    ReadTimeout {
        endpoint: String,
        op: &'static str,
        secs: f64,
    },
    /// A statement of the run that the server did not answer within `--stall-timeout`. Not
    /// a lost connection: a reconnect would only wait again; the run ends.
    #[error("{endpoint} did not answer a statement of the run within {secs} s (--stall-timeout): the server stalled")]
    Stalled { endpoint: String, secs: f64 },
    /// A result set with more rows than a caller keeps.
    #[error("{endpoint} sent more than {max} rows for one result set, the most bakeoff keeps (--max-rows)")]
    TooManyRows { endpoint: String, max: usize },
    /// COPY FROM STDIN answered with anything but COPY IN or an error (libpq's "unexpected
    /// copy in result").
    #[error("{endpoint} answered COPY FROM STDIN with something other than COPY IN")]
    NotCopyIn { endpoint: String },
    /// A COPY OUT (or COPY BOTH) where no statement asked for one: rows the other way for as
    /// long as the server likes, which nothing can stop but hanging up; the connection is
    /// given up.
    #[error("{endpoint} answered with a COPY OUT, which bakeoff does not read: the connection is given up")]
    CopyOut { endpoint: String },
    /// A batch for `execute_many` longer than it takes, or than the buffers given for it: the
    /// caller's mistake, refused before anything is sent.
    #[error(
        "a batch of {len} statements with {outs} result buffers: at most {max}, a buffer each"
    )]
    Batch { len: usize, outs: usize, max: usize },
    /// An error answer to an admin call (connect, prepare, query_rows).
    #[error("server {0}")]
    Server(ServerError),
}

impl DriverError {
    /// A blocking login's wait that ran out (the thread's deadline), said as the connect
    /// timeout it is; anything else as it was.
    pub(crate) fn at_login(self, endpoint: &str, limit: std::time::Duration) -> DriverError {
        match self {
            DriverError::Io { source, .. } if source.kind() == io::ErrorKind::TimedOut => {
                DriverError::ConnectTimeout {
                    endpoint: endpoint.to_string(),
                    secs: limit.as_secs_f64(),
                    attempts: 1,
                    last: "no answer to the login".into(),
                }
            }
            other => other,
        }
    }

    /// True when the connection is unusable and a reconnect is the remedy.
    pub fn is_connection_lost(&self) -> bool {
        matches!(
            self,
            DriverError::Io { .. }
                | DriverError::ReadTimeout { .. }
                | DriverError::TooManyRows { .. }
                | DriverError::NotCopyIn { .. }
                | DriverError::CopyOut { .. }
        ) || matches!(self, DriverError::Server(e) if is_lost_code(e.code))
    }

    /// The server error code, if the server answered with one.
    pub fn server_code(&self) -> Option<u16> {
        match self {
            DriverError::Server(e) => Some(e.code),
            _ => None,
        }
    }
}

/// Client error codes for a lost connection (CR_SERVER_GONE_ERROR, CR_SERVER_LOST,
/// CR_TCP_CONNECTION, CR_SERVER_LOST_EXTENDED), and the server's shutdown codes
/// (ER_SERVER_SHUTDOWN 1053, ER_CONNECTION_KILLED 1927 in MariaDB).
pub fn is_lost_code(code: u16) -> bool {
    matches!(code, 2006 | 2013 | 2011 | 2055 | 1053 | 1927)
}

fn connect_said(endpoint: &str, source: &io::Error) -> String {
    match (source.kind(), endpoint.starts_with("unix:")) {
        (io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound, true) => format!(
            "nothing is listening at {endpoint}: {source}; is the server running, is that its socket?"
        ),
        (io::ErrorKind::ConnectionRefused, false) => format!(
            "nothing is listening at {endpoint}: {source}; is the server running, is that the port?"
        ),
        _ => format!("could not connect to {endpoint}: {source}"),
    }
}
