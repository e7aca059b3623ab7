//! Where pgbench connects, by libpq's rules: -h/-p/-U and the database name, else PGHOST,
//! PGPORT, PGUSER, PGDATABASE, else the socket directory, 5432, the login name and the user
//! name; the password from PGPASSWORD, else the password file (~/.pgpass); TLS as
//! PGSSLMODE (prefer by default, over TCP), PGSSLROOTCERT. A service named by PGSERVICE
//! (pg_service.conf) stands between the command line and those variables, as in libpq.

use std::path::PathBuf;

use bakeoff_driver::pgpass::{pgpass_for, DEFAULT_SOCKET_DIR as SOCKET_DIR};
use bakeoff_driver::{ConnectOptions, DriverError, Endpoint, Protocol, Secret, SslMode};

use super::args::PgbenchArgs;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

pub fn options(a: &PgbenchArgs) -> Result<ConnectOptions, String> {
    let service = match env("PGSERVICE") {
        Some(name) => bakeoff_driver::pgservice::service(&name)?,
        None => Default::default(),
    };
    // A setting: the service's, else the environment's.
    let setting = |key: &str, var: &str| service.get(key).cloned().or_else(|| env(var));
    let host = a
        .host
        .clone()
        .or_else(|| setting("host", "PGHOST"))
        .unwrap_or_else(|| SOCKET_DIR.into());
    let port_text = a
        .port
        .clone()
        .or_else(|| setting("port", "PGPORT"))
        .unwrap_or_else(|| "5432".into());
    let port: u16 = port_text
        .parse()
        .map_err(|_| format!("invalid port number: \"{port_text}\""))?;
    let user = a
        .username
        .clone()
        .or_else(|| setting("user", "PGUSER"))
        .or_else(|| env("USER"))
        .unwrap_or_else(|| "postgres".into());
    let database = a
        .dbname
        .clone()
        .or_else(|| setting("dbname", "PGDATABASE"))
        .unwrap_or_else(|| user.clone());
    let socket = host.starts_with('/');
    let endpoint = match socket {
        true => Endpoint::Unix(PathBuf::from(&host).join(format!(".s.PGSQL.{port}"))),
        false => Endpoint::Tcp {
            host: host.clone(),
            port,
        },
    };
    let mut o = ConnectOptions::new(endpoint, &user, "");
    o.protocol = Protocol::Postgres;
    o.database = Some(database);
    o.password = match setting("password", "PGPASSWORD") {
        Some(p) => Secret::new(&p),
        None => {
            let found = pgpass_for(&o);
            if let Some(w) = found.warning {
                eprintln!("{w}");
            }
            Secret::new(&found.password.unwrap_or_default())
        }
    };
    if !socket {
        o.tls.mode = match setting("sslmode", "PGSSLMODE").as_deref() {
            None | Some("prefer") | Some("allow") => SslMode::Preferred,
            Some("disable") => SslMode::Disabled,
            Some("require") => SslMode::Required,
            Some("verify-ca") => SslMode::VerifyCa,
            Some("verify-full") => SslMode::VerifyIdentity,
            Some(other) => return Err(format!("invalid sslmode value: \"{other}\"")),
        };
        o.tls.ca = setting("sslrootcert", "PGSSLROOTCERT").map(PathBuf::from);
    }
    Ok(o)
}

/// A connection failure in libpq's words where they are known.
pub fn said(e: &DriverError) -> String {
    match e {
        DriverError::Connect { endpoint, source } => {
            let (what, tail) = match endpoint.starts_with('/') {
                true => (
                    format!("socket \"{endpoint}\""),
                    "\tIs the server running locally and accepting connections on that socket?",
                ),
                false => (
                    format!("\"{endpoint}\""),
                    "\tIs the server running on that host and accepting TCP/IP connections?",
                ),
            };
            format!(
                "connection to server on {what} failed: {}\n{tail}",
                super::report::os_error(source)
            )
        }
        DriverError::Server(se) => format!("ERROR:  {}", se.message),
        other => other.to_string(),
    }
}
