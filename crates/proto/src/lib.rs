//! MySQL/MariaDB client/server protocol, sans-IO.
//!
//! Nothing here touches a socket or a clock: commands are encoded into a caller's `Vec<u8>`
//! and responses are decoded from complete packet payloads the caller hands in. That keeps
//! the hot path allocation-free (the driver reuses its buffers) and makes every codec
//! testable with byte literals.
//!
//! Main types:
//! - [`packet`]: the 4-byte frame header (length + sequence id) and splitting a byte stream.
//! - [`Handshake`] / [`HandshakeResponse`]: connection phase, with the auth scrambles in [`auth`].
//! - [`command`]: COM_QUERY, COM_STMT_PREPARE/EXECUTE/CLOSE, COM_PING, COM_QUIT encoders.
//! - [`ResponseReader`]: a state machine fed one packet at a time that tells a result set
//!   (and each of its rows) from an OK or an ERR, for text and binary protocols alike.
//! - [`RowBuf`], [`binary_row`], [`column_type`]: a result set's values kept as text in one
//!   reusable buffer, for the workloads that read what they select (TPC-C).
//!
//! What it must not do: allocate per statement on the success path, or interpret row values
//! unasked (the engine only counts rows, as sysbench's read classification needs;
//! [`text_row`] decodes text rows for the few admin queries that read values, [`binary_row`]
//! a prepared statement's rows for a caller that keeps them).

pub mod auth;
mod binary;
pub mod codec;
pub mod command;
mod error;
mod handshake;
pub mod packet;
mod response;
mod rowbuf;
mod text;

pub use binary::{binary_row, column_type, types, ColumnType, UNSIGNED_FLAG};
pub use error::{PgFields, ProtoError, ServerError};
pub use handshake::{parse_auth_switch, Handshake, HandshakeResponse};
pub use response::{
    parse_err, parse_ok, text_row, Fed, OkPacket, Outcome, PrepareOk, PrepareReader, PrepareStep,
    ResponseReader, Step,
};
pub use rowbuf::RowBuf;
pub use text::{printable, printable_lines};

/// Capability flags (protocol "Capabilities Flags" page).
pub mod caps {
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 2;
    pub const LONG_FLAG: u32 = 4;
    pub const CONNECT_WITH_DB: u32 = 8;
    /// The compressed protocol, after the handshake.
    pub const COMPRESS: u32 = 0x20;
    pub const LOCAL_FILES: u32 = 0x80;
    pub const PROTOCOL_41: u32 = 0x200;
    /// CLIENT_SSL: the server offers TLS; the client asks for it (SSLRequest).
    pub const SSL: u32 = 0x800;
    pub const TRANSACTIONS: u32 = 0x2000;
    pub const SECURE_CONNECTION: u32 = 0x8000;
    pub const MULTI_STATEMENTS: u32 = 0x1_0000;
    pub const MULTI_RESULTS: u32 = 0x2_0000;
    pub const PS_MULTI_RESULTS: u32 = 0x4_0000;
    pub const PLUGIN_AUTH: u32 = 0x8_0000;
    pub const PLUGIN_AUTH_LENENC_DATA: u32 = 0x20_0000;
    pub const DEPRECATE_EOF: u32 = 0x100_0000;

    /// What bakeoff asks for. Like sysbench (drv_mysql.c) it does not set FOUND_ROWS, so an
    /// UPDATE's affected rows are rows actually changed, which decides write vs other.
    /// DEPRECATE_EOF stays off: classic EOF packets are understood by every server version.
    /// LOCAL_FILES lets `prepare` stream rows with LOAD DATA LOCAL; the driver answers a file
    /// request only to its own `load_local`, with data from memory, never a file.
    pub const CLIENT: u32 = LONG_PASSWORD
        | LOCAL_FILES
        | LONG_FLAG
        | PROTOCOL_41
        | TRANSACTIONS
        | SECURE_CONNECTION
        | MULTI_STATEMENTS
        | MULTI_RESULTS
        | PS_MULTI_RESULTS
        | PLUGIN_AUTH
        | PLUGIN_AUTH_LENENC_DATA;
}

/// MariaDB's extended capabilities (the high half of its 64-bit set, bit 32 = 1 here).
pub mod mariadb_caps {
    /// MARIADB_CLIENT_CACHE_METADATA (10.6+): a prepared statement's column definitions are
    /// not sent again with every execution unless they changed. Connector/C asks for it, so
    /// sysbench's executions cost the server less than a client sending them every time;
    /// every column count then carries a "metadata follows" byte.
    pub const CACHE_METADATA: u32 = 1 << 4;
    /// What bakeoff asks for when the server offers it.
    pub const CLIENT: u32 = CACHE_METADATA;
}

/// Server status flag: another result follows this one (multi-statement or CALL).
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
