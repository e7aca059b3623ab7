//! What every family's connection talks over: the plain socket (reactor or blocking waits),
//! TLS on it (rustls, sans-IO, with its own waits), and the certificate checks behind
//! sysbench's and libpq's TLS modes. MySQL starts TLS inside its handshake, PostgreSQL before
//! its startup message; both hand the same [`transport::Stream`] over.

pub(crate) mod der;
pub(crate) mod habit;
pub(crate) mod stream;
pub(crate) mod tls;
pub(crate) mod transport;
pub(crate) mod x509;
mod x509_chain;
