use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp { host, port } => write!(f, "{host}:{port}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// The servers a sysbench command line names: its sockets, or else every host x port pair
/// (sysbench's MySQL driver takes them round-robin, a connection each).
pub fn endpoints(sockets: &[std::path::PathBuf], hosts: &[String], ports: &[u16]) -> Vec<Endpoint> {
    if !sockets.is_empty() {
        return sockets.iter().cloned().map(Endpoint::Unix).collect();
    }
    hosts
        .iter()
        .flat_map(|host| {
            ports.iter().map(move |&port| Endpoint::Tcp {
                host: host.clone(),
                port,
            })
        })
        .collect()
}

use crate::Secret;

/// Which wire protocol a server speaks: which member of the driver family connects to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// MySQL's and MariaDB's client/server protocol.
    #[default]
    MySql,
    /// PostgreSQL's protocol 3.0.
    Postgres,
}

impl Protocol {
    /// sysbench's driver name for it (`--db-driver`).
    pub fn driver_name(self) -> &'static str {
        match self {
            Protocol::MySql => "mysql",
            Protocol::Postgres => "pgsql",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Which driver connects: the server's protocol.
    pub protocol: Protocol,
    pub endpoint: Endpoint,
    pub user: String,
    pub password: Secret,
    pub database: Option<String>,
    pub connect_timeout: Duration,
    /// TLS: none unless asked for (sysbench's default, and the embedded server's socket).
    pub tls: Tls,
    /// Run at every connect for the password, in place of `password` (IAM tokens).
    pub password_command: Option<crate::PasswordCommand>,
    /// What the auth plugins that need more than a password may do.
    pub auth: AuthOptions,
    /// The compressed protocol (zlib), as sysbench's --mysql-compression=on asks.
    pub compress: bool,
    /// CLIENT_MULTI_STATEMENTS: several statements in one query string. Off for bakeoff's
    /// own connections (a value that slipped past quoting cannot start a second statement);
    /// on where sysbench has it on (a script's connections, sysbench's grammar).
    pub multi_statements: bool,
    /// What a server can make a connection hold or wait for.
    pub limits: Limits,
    /// PostgreSQL: the session's application_name (libpq's PGAPPNAME; None: "bakeoff") and
    /// its command-line options for the backend (libpq's PGOPTIONS, e.g.
    /// `-c default_transaction_isolation=serializable`).
    pub application_name: Option<String>,
    pub server_options: Option<String>,
}

/// Bounds on what a server can make bakeoff hold or wait for, each named in the error that
/// it ends a call with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest packet accepted, reassembled from its continuation frames, and the most a
    /// compressed frame may inflate to (`--max-packet`).
    pub max_packet: usize,
    /// The most rows an admin query or a script's result set keeps (`--max-rows`).
    pub max_rows: usize,
    /// How long an ordinary statement outside the timed run may wait for its answer
    /// (`--read-timeout`); None: for ever. The timed run's own statements have none: its
    /// clock and its events bound them.
    pub read_timeout: Option<Duration>,
    /// The same for DDL and loads, which take as long as the data (`--ddl-timeout`).
    pub ddl_timeout: Option<Duration>,
    /// How long a statement of the run may wait for its answer before the server counts as
    /// stalled and the run ends (`--stall-timeout`); None (the default): for ever, as
    /// sysbench and pgbench wait, since long statements are legitimate.
    pub stall_timeout: Option<Duration>,
}

impl Limits {
    /// MySQL's and MariaDB's largest `max_allowed_packet`: any real row fits.
    pub const MAX_PACKET: usize = 1 << 30;
    pub const MAX_ROWS: usize = 10_000_000;
    pub const READ_TIMEOUT: Duration = Duration::from_secs(600);
}

/// sysbench's sizes: a number with an optional K, M, G or T (powers of 1024), b optional.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().trim_end_matches(['b', 'B']);
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        Some('T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("'{s}' is not a size; write a number with K, M, G or T, e.g. 16K"))
}

/// `--max-packet` however it is given (an option, a URL key): a size of at least 1K, the
/// same words everywhere.
pub fn parse_max_packet(s: &str) -> Result<usize, String> {
    parse_size(s)
        .ok()
        .and_then(|b| usize::try_from(b).ok())
        .filter(|b| *b >= 1024)
        .ok_or_else(|| {
            format!("'{s}' is not a packet size: at least 1K, with K, M or G (e.g. 16M)")
        })
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_packet: Limits::MAX_PACKET,
            max_rows: Limits::MAX_ROWS,
            read_timeout: Some(Limits::READ_TIMEOUT),
            ddl_timeout: None,
            stall_timeout: None,
        }
    }
}

/// The MySQL client's options for the plugins that send the password itself or encrypt it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthOptions {
    /// `--get-server-public-key`: caching_sha2_password may ask the server for its RSA key
    /// (on a plain connection, where the password must be encrypted).
    pub get_server_public_key: bool,
    /// `--server-public-key-path`: the server's RSA public key (PEM), known beforehand; used
    /// by caching_sha2_password and sha256_password on plain connections.
    pub server_public_key: Option<PathBuf>,
    /// `--enable-cleartext-plugin`: answer mysql_clear_password (the password as is; only over
    /// TLS or a unix socket even then).
    pub cleartext: bool,
    /// PostgreSQL: libpq's `channel_binding` (prefer).
    pub channel_binding: crate::ChannelBinding,
    /// PostgreSQL: libpq 16's `require_auth`; None: any method the server asks for.
    pub require_auth: Option<crate::RequireAuth>,
}

/// The MySQL client's `--ssl-mode`s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum SslMode {
    /// Plain connections.
    #[default]
    Disabled,
    /// TLS when the server offers it, plain otherwise; the certificate is not checked.
    Preferred,
    /// TLS or no connection; the certificate is not checked (the MySQL client's meaning).
    Required,
    /// TLS with a certificate signed by the given CA, whatever names it has.
    VerifyCa,
    /// As VerifyCa, and the certificate must name the host connected to.
    VerifyIdentity,
}

impl SslMode {
    /// The MySQL client's names, any case, and sysbench 1.0.20's on/off (on: REQUIRED).
    pub fn parse(v: &str) -> Option<SslMode> {
        Some(match v.to_ascii_uppercase().replace('-', "_").as_str() {
            "DISABLED" | "OFF" | "0" | "FALSE" => SslMode::Disabled,
            "PREFERRED" => SslMode::Preferred,
            "REQUIRED" | "ON" | "1" | "TRUE" => SslMode::Required,
            "VERIFY_CA" => SslMode::VerifyCa,
            "VERIFY_IDENTITY" => SslMode::VerifyIdentity,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disabled => "DISABLED",
            SslMode::Preferred => "PREFERRED",
            SslMode::Required => "REQUIRED",
            SslMode::VerifyCa => "VERIFY_CA",
            SslMode::VerifyIdentity => "VERIFY_IDENTITY",
        }
    }
}

/// A CA certificate given as PEM text, and what messages call it.
#[derive(Debug, Clone)]
pub struct PemCa {
    pub name: String,
    pub pem: std::sync::Arc<str>,
}

/// TLS for a connection: the mode, the CA that signs the server's certificate, the client's
/// own certificate and key (for accounts that `REQUIRE X509`), and the cipher suites allowed
/// (OpenSSL's or IANA's names, `:`-separated).
#[derive(Debug, Clone, Default)]
pub struct Tls {
    pub mode: SslMode,
    pub ca: Option<PathBuf>,
    /// The CA as PEM text instead of a file: the lab's CA for this run, made in memory, or a
    /// CA file read on the machine that sent a client host its load.
    pub ca_pem: Option<PemCa>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub cipher: Option<String>,
    /// The client configuration made from the above, once for every connection that shares
    /// these options (reading and parsing the files per connect would cost a storm of them).
    pub(crate) config: crate::net::tls::ConfigCache,
}

impl Tls {
    pub fn new(mode: SslMode) -> Tls {
        Tls {
            mode,
            ..Tls::default()
        }
    }

    /// Whether the server's certificate is checked: a verifying mode, or a CA given (a CA
    /// given is a CA to check against, whatever the mode: libmariadb does so for sysbench's
    /// --mysql-ssl=on with its cacert.pem). REQUIRED alone encrypts and verifies nothing.
    pub fn verifies(&self) -> bool {
        matches!(self.mode, SslMode::VerifyCa | SslMode::VerifyIdentity)
            || self.ca.is_some()
            || self.ca_pem.is_some()
    }
}

impl ConnectOptions {
    pub fn new(endpoint: Endpoint, user: &str, password: &str) -> Self {
        ConnectOptions {
            protocol: Protocol::MySql,
            endpoint,
            user: user.to_string(),
            password: Secret::new(password),
            database: None,
            connect_timeout: Duration::from_secs(10),
            tls: Tls::default(),
            password_command: None,
            auth: AuthOptions::default(),
            compress: false,
            multi_statements: false,
            limits: Limits::default(),
            application_name: None,
            server_options: None,
        }
    }

    /// The password for a connect now: the command's output when there is one.
    pub fn password_now(&self) -> Result<Secret, String> {
        match &self.password_command {
            Some(c) => c.run(),
            None => Ok(self.password.clone()),
        }
    }

    /// A warning when these options send a login to a server on another machine whose
    /// identity nothing checks: no CA and no verifying mode, so whoever answers at that
    /// address (or sits in between) is given what the account's plugin sends. None on
    /// loopback, a unix socket, without a password, or with the certificate verified.
    pub fn unverified_login_warning(&self) -> Option<String> {
        let Endpoint::Tcp { host, port } = &self.endpoint else {
            return None;
        };
        let loopback = host == "localhost"
            || host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback());
        let password = !self.password.expose().is_empty() || self.password_command.is_some();
        let give = match self.protocol {
            Protocol::MySql => "--mysql-ssl-ca, or ssl-ca= in a server URL",
            Protocol::Postgres => {
                "sslrootcert= in the URL or PGSSLROOTCERT, with sslmode=verify-full"
            }
        };
        (!loopback && password && !self.tls.verifies()).then(|| format!(
            "warning: the password for '{}' goes to {host}:{port}, whose identity nothing checks: give the server's CA ({give}) so that only that server gets it",
            self.user
        ))
    }

    pub fn with_database(mut self, db: &str) -> Self {
        self.database = Some(db.to_string());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_to_another_machine_without_a_ca_is_warned_about() {
        let tcp = |host: &str| Endpoint::Tcp {
            host: host.into(),
            port: 3306,
        };
        let far = ConnectOptions::new(tcp("10.0.0.7"), "u", "pw");
        let w = far.unverified_login_warning().expect("a warning");
        assert!(
            w.contains("10.0.0.7:3306") && w.contains("--mysql-ssl-ca"),
            "{w}"
        );
        for quiet in [
            ConnectOptions::new(tcp("127.0.0.1"), "u", "pw"),
            ConnectOptions::new(tcp("::1"), "u", "pw"),
            ConnectOptions::new(tcp("localhost"), "u", "pw"),
            ConnectOptions::new(tcp("10.0.0.7"), "u", ""),
            ConnectOptions::new(Endpoint::Unix("/s".into()), "u", "pw"),
        ] {
            assert_eq!(
                quiet.unverified_login_warning(),
                None,
                "{:?}",
                quiet.endpoint
            );
        }
        let mut checked = far.clone();
        checked.tls = Tls::new(SslMode::Required);
        checked.tls.ca = Some("/ca.pem".into());
        assert_eq!(checked.unverified_login_warning(), None);
    }

    #[test]
    fn secrets_never_print() {
        let o = ConnectOptions::new(Endpoint::Unix("/s".into()), "u", "hunter2");
        assert!(!format!("{o:?}").contains("hunter2"));
        assert_eq!(o.password.expose(), "hunter2");
    }
}
