//! Where pgbench connects, by libpq's rules (`bakeoff_driver::libpq`): -h/-p/-U and the
//! database name, else PGSERVICE's service, else the PG* variables, else libpq's defaults
//! (the database: the user's name); the password from the service, PGPASSWORD, else the
//! password file (~/.pgpass).

use bakeoff_driver::libpq::{password, resolve, Given};
use bakeoff_driver::{ConnectOptions, DriverError};

use super::args::PgbenchArgs;

pub fn options(a: &PgbenchArgs) -> Result<ConnectOptions, String> {
    let given = Given {
        host: a.host.clone(),
        port: a.port.clone(),
        user: a.username.clone(),
        dbname: a.dbname.clone(),
        ..Given::default()
    };
    let r = resolve(&given, None)?;
    let mut o = r.options;
    // pgbench's fallback_application_name: its own name where nothing sets one.
    o.application_name.get_or_insert_with(|| "pgbench".into());
    let (found, warning) = password(&o, r.service_password.as_ref());
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    o.password = found;
    if let Some(bytes) = a.max_packet {
        o.limits.max_packet = bytes;
    }
    o.limits.stall_timeout = a.stall_timeout.map(std::time::Duration::from_secs);
    Ok(o)
}

/// A failed connect to `o`'s server in libpq's words (PQerrorMessage): where, then why, be it
/// the server's refusal (FATAL:  database "x" does not exist) or the socket's.
pub fn said(e: &DriverError, o: &ConnectOptions) -> String {
    use bakeoff_driver::Endpoint;
    let (at, tail) = match &o.endpoint {
        Endpoint::Unix(path) => (
            format!("on socket \"{}\"", path.display()),
            "\tIs the server running locally and accepting connections on that socket?",
        ),
        // libpq: `at "HOST", port PORT` (an address it resolved a name to is not known here).
        Endpoint::Tcp { host, port } => (
            format!("at \"{host}\", port {port}"),
            "\tIs the server running on that host and accepting TCP/IP connections?",
        ),
    };
    match e {
        DriverError::Server(se) => format!(
            "connection to server {at} failed: {}",
            bakeoff_driver::libpq_error("", se)
        ),
        DriverError::Connect { source, .. } => {
            // A name that does not resolve: libpq says so, and no more.
            if let (Endpoint::Tcp { host, .. }, Some(why)) = (
                &o.endpoint,
                source
                    .to_string()
                    .strip_prefix("failed to lookup address information: "),
            ) {
                return format!("could not translate host name \"{host}\" to address: {why}");
            }
            format!(
                "connection to server {at} failed: {}\n{tail}",
                super::report::os_error(source)
            )
        }
        other => other.to_string(),
    }
}

/// `-d`'s first line: where the run connects, as libpq's PQhost and PQport say it (a socket's
/// directory for a unix socket), how many clients, and for how long.
pub fn described(a: &PgbenchArgs, o: &ConnectOptions) -> String {
    let (host, port) = bakeoff_driver::pgpass::host_and_port(&o.endpoint);
    let length = match a.time {
        Some(t) => format!("duration: {t}"),
        None => format!("nxacts: {}", a.transactions.unwrap_or(10)),
    };
    format!(
        "pghost: {host} pgport: {port} nclients: {} {length} dbName: {}",
        a.clients,
        o.database.as_deref().unwrap_or("")
    )
}
