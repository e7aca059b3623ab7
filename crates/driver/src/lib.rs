//! Database connections: the [`Connection`] family that workloads are written against, and
//! its members under [`adapters`] (MySQL/MariaDB: real socket I/O around the sans-IO
//! `bakeoff-proto`).
//!
//! [`Conn`] owns its socket and two reusable buffers, so executing a prepared statement
//! allocates nothing. `execute` counts a result's rows without decoding them;
//! `execute_into` keeps their values in a caller's reusable [`RowBuf`], for a workload that
//! reads what it selects. Statement-level server errors come back as data
//! ([`Outcome::Err`](bakeoff_proto::Outcome)) because during a measured run they are counted,
//! not raised; [`DriverError`] is for what ends the connection or the call (I/O, protocol,
//! authentication, a server error on an admin call).
//!
//! What it must not do: retry a statement, or reconnect on its own: policy belongs to the
//! engine. The one wait it makes is inside a connect, for room in a full listen queue, as
//! libmysqlclient's blocking connect does (`retry.rs`).

pub mod adapters;
mod connection;
mod error;
pub mod libpq;
mod net;
mod options;
mod password;
pub mod pgauth;
pub mod pgpass;
pub mod pgservice;
mod random;
mod secret;
mod url;

pub use adapters::mysql::{somaxconn, Answer, Conn, Stmt};
pub use adapters::pgsql::{
    libpq_error, PgConn, PgReply, PgRowSet, PgStmt, PgUntil, PgVia, TextParams, PG_IGNORABLE,
};
pub use bakeoff_proto::command::Param;
pub use bakeoff_proto::{printable, printable_lines, OkPacket, Outcome, RowBuf, ServerError};
pub(crate) use connection::batch_fits;
pub use connection::{Connection, MAX_BATCH};
pub use error::{is_lost_code, DriverError};
pub use net::stream::reads_on_this_thread;
pub use net::tls::TlsSession;
pub use options::{
    endpoints, parse_max_packet, parse_size, AuthOptions, ConnectOptions, Endpoint, Limits, PemCa,
    Protocol, SslMode, Tls,
};
pub use password::{Found, PasswordCommand, PasswordSource};
pub use pgauth::{AuthMethod, ChannelBinding, RequireAuth};
pub use random::random_hex;
pub use secret::{no_core_dumps, Secret};
pub use url::ServerUrl;

/// Drive a call on a blocking connection ([`Conn::connect_blocking`], or one made blocking) to
/// its end without a runtime: its socket waits inside the call, so the future is ready when
/// first polled. Code that cannot await (a script's callbacks) calls the driver through this.
/// Inlined so that the future is built where it is polled: called out of line, each call
/// copied the whole future (an execute's is kilobytes) into this frame, 150 instructions a
/// statement under callgrind.
#[inline(always)]
pub fn complete<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        // Only a reactor-backed connection gets here; yield rather than spin hot.
        std::thread::yield_now();
    }
}
