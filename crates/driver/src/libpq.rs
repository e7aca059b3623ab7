//! Where a PostgreSQL client connects, by libpq's rules, for every way bakeoff is told:
//! what the caller gives (a URL's parts, pgbench's -h/-p/-U and database name) wins; what it
//! leaves out comes from its service (`service=`, else PGSERVICE, a section of
//! pg_service.conf), then the PG* variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE,
//! PGSSLROOTCERT, PGCHANNELBINDING, PGREQUIREAUTH), then libpq's defaults (the socket directory, 5432, the login name). The
//! password: the service's, else PGPASSWORD, else the password file (`crate::pgpass`).

use std::path::PathBuf;

use crate::pgpass::{pgpass_for, DEFAULT_SOCKET_DIR};
use crate::{ConnectOptions, Endpoint, Protocol, Secret, SslMode};

/// What the caller was given; None: not given (the service, environment or default decides).
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
    pub dbname: Option<String>,
    pub sslmode: Option<String>,
    pub sslrootcert: Option<String>,
    pub sslcert: Option<String>,
    pub sslkey: Option<String>,
    pub channel_binding: Option<String>,
    pub require_auth: Option<String>,
    /// A service of pg_service.conf (PGSERVICE when None).
    pub service: Option<String>,
}

/// Where to connect, and the service's password if it has one (libpq reads `password`
/// from a service as from a connection string).
#[derive(Debug)]
pub struct Resolved {
    pub options: ConnectOptions,
    /// The host as named (a socket directory for a unix socket): what a certificate is
    /// checked against.
    pub host: String,
    pub service_password: Option<Secret>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// libpq's sslmode word as bakeoff's TLS mode.
pub fn sslmode(word: &str) -> Option<SslMode> {
    Some(match word {
        "disable" => SslMode::Disabled,
        "allow" | "prefer" => SslMode::Preferred,
        "require" => SslMode::Required,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyIdentity,
        _ => return None,
    })
}

/// A port as libpq reads it (parse_int_param, then the range): blanks around an integer,
/// which must be 1-65535; its two messages for the two ways to be wrong.
fn port_number(text: &str) -> Result<u16, String> {
    let n: i32 = text
        .trim_matches(|c: char| c.is_ascii_whitespace())
        .parse()
        .map_err(|_| format!("invalid integer value \"{text}\" for connection option \"port\""))?;
    u16::try_from(n)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("invalid port number: \"{text}\""))
}

/// Resolve `g` as libpq would; `default_db` when nothing names a database (libpq's own
/// default, the user name, when None). Errors are libpq's words.
pub fn resolve(g: &Given, default_db: Option<&str>) -> Result<Resolved, String> {
    let service = match g.service.clone().or_else(|| env("PGSERVICE")) {
        Some(name) => crate::pgservice::service(&name)?,
        None => Default::default(),
    };
    // A setting: the caller's, else the service's, else the environment's.
    let setting = |given: &Option<String>, key: &str, var: &str| {
        given
            .clone()
            .or_else(|| service.get(key).cloned())
            .or_else(|| env(var))
    };
    let host = setting(&g.host, "host", "PGHOST").unwrap_or_else(|| DEFAULT_SOCKET_DIR.into());
    let port_text = setting(&g.port, "port", "PGPORT").unwrap_or_else(|| "5432".into());
    let port = port_number(&port_text)?;
    let user = setting(&g.user, "user", "PGUSER")
        .or_else(|| env("USER"))
        .unwrap_or_else(|| "postgres".into());
    let database = setting(&g.dbname, "dbname", "PGDATABASE")
        .unwrap_or_else(|| default_db.map_or_else(|| user.clone(), str::to_string));
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
    // libpq speaks TLS over TCP only.
    if !socket {
        o.tls.mode = match setting(&g.sslmode, "sslmode", "PGSSLMODE") {
            None => SslMode::Preferred,
            Some(w) => sslmode(&w).ok_or_else(|| format!("invalid sslmode value: \"{w}\""))?,
        };
        let files = TlsFiles {
            root: setting(&g.sslrootcert, "sslrootcert", "PGSSLROOTCERT"),
            cert: setting(&g.sslcert, "sslcert", "PGSSLCERT"),
            key: setting(&g.sslkey, "sslkey", "PGSSLKEY"),
        };
        let home = env("HOME").map(|h| PathBuf::from(h).join(".postgresql"));
        files.apply(&mut o.tls, home.as_deref())?;
    }
    o.application_name = setting(&None, "application_name", "PGAPPNAME");
    o.server_options = setting(&None, "options", "PGOPTIONS");
    if let Some(w) = setting(&g.channel_binding, "channel_binding", "PGCHANNELBINDING") {
        o.auth.channel_binding = crate::ChannelBinding::parse(&w)?;
    }
    if let Some(w) = setting(&g.require_auth, "require_auth", "PGREQUIREAUTH") {
        o.auth.require_auth = Some(crate::RequireAuth::parse(&w)?);
    }
    Ok(Resolved {
        options: o,
        host,
        service_password: service.get("password").map(Secret::new),
    })
}

/// Where the system's trusted roots are (Debian's ca-certificates): `sslrootcert=system`.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The certificate files as given (None: not given), before libpq's defaults.
struct TlsFiles {
    root: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

impl TlsFiles {
    /// libpq's defaults and rules onto `tls`, with `home` its `~/.postgresql`: the root
    /// certificate defaults to `root.crt` there, which makes `require` verify as `verify-ca`
    /// (and a verifying mode without one an error in libpq's words); `system` is the system's
    /// trusted roots, with `verify-full` only; the client's certificate and key default to
    /// `postgresql.crt` and `postgresql.key` there when both exist.
    fn apply(self, tls: &mut crate::Tls, home: Option<&std::path::Path>) -> Result<(), String> {
        let in_home = |name: &str| home.map(|h| h.join(name)).filter(|p| p.is_file());
        match self.root.as_deref() {
            Some("system") => {
                if tls.mode != SslMode::VerifyIdentity {
                    return Err(format!(
                        "weak sslmode \"{}\" may not be used with sslrootcert=system (use \"verify-full\")",
                        crate::adapters::pgsql::libpq_name(tls.mode)
                    ));
                }
                tls.ca = Some(PathBuf::from(SYSTEM_ROOTS));
            }
            Some(path) => tls.ca = Some(PathBuf::from(path)),
            None if tls.mode >= SslMode::Required => {
                tls.ca = in_home("root.crt");
                if tls.ca.is_none() && tls.mode >= SslMode::VerifyCa {
                    let file = home.map_or("~/.postgresql/root.crt".into(), |h| {
                        h.join("root.crt").display().to_string()
                    });
                    return Err(format!(
                        "root certificate file \"{file}\" does not exist\nEither provide the file, use the system's trusted roots with sslrootcert=system, or change sslmode to disable server certificate verification."
                    ));
                }
                // require with a root certificate checks it, as verify-ca.
                if tls.ca.is_some() && tls.mode == SslMode::Required {
                    tls.mode = SslMode::VerifyCa;
                }
            }
            None => {}
        }
        let (cert, key) = match (self.cert, self.key) {
            (None, None) => (in_home("postgresql.crt"), in_home("postgresql.key")),
            (c, k) => (c.map(PathBuf::from), k.map(PathBuf::from)),
        };
        if cert.is_some() && key.is_some() {
            tls.cert = cert;
            tls.key = key;
        }
        Ok(())
    }
}

/// The password for `o` when nothing else gave one: the service's, else PGPASSWORD, else
/// the password file's line for where `o` connects; with the warning libpq says when it
/// ignores the file.
pub fn password(o: &ConnectOptions, service: Option<&Secret>) -> (Secret, Option<String>) {
    if let Some(p) = service {
        return (p.clone(), None);
    }
    if let Some(p) = env("PGPASSWORD") {
        return (Secret::new(p), None);
    }
    let found = pgpass_for(o);
    (
        Secret::new(found.password.unwrap_or_default()),
        found.warning,
    )
}

#[cfg(test)]
mod port_tests {
    use super::{port_number, TlsFiles, SYSTEM_ROOTS};
    use crate::SslMode;
    use std::path::PathBuf;

    #[test]
    fn certificate_files_default_as_libpqs() {
        let home = std::env::temp_dir().join(format!("bakeoff-libpq-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        let files = |root: Option<&str>| TlsFiles {
            root: root.map(str::to_string),
            cert: None,
            key: None,
        };
        let tls = |mode| crate::Tls::new(mode);
        // No root.crt: require checks nothing, verify-ca is refused in libpq's words.
        let mut t = tls(SslMode::Required);
        files(None).apply(&mut t, Some(&home)).unwrap();
        assert_eq!((t.mode, t.ca.clone()), (SslMode::Required, None));
        let e = files(None)
            .apply(&mut tls(SslMode::VerifyCa), Some(&home))
            .unwrap_err();
        assert!(
            e.contains("root.crt\" does not exist") && e.contains("sslrootcert=system"),
            "{e}"
        );
        // With one: require becomes verify-ca, prefer stays as it was.
        std::fs::write(home.join("root.crt"), "x").unwrap();
        let mut t = tls(SslMode::Required);
        files(None).apply(&mut t, Some(&home)).unwrap();
        assert_eq!(
            (t.mode, t.ca.clone()),
            (SslMode::VerifyCa, Some(home.join("root.crt")))
        );
        let mut t = tls(SslMode::Preferred);
        files(None).apply(&mut t, Some(&home)).unwrap();
        assert_eq!(t.ca, None);
        // system: the system's roots, verify-full only.
        let mut t = tls(SslMode::VerifyIdentity);
        files(Some("system")).apply(&mut t, Some(&home)).unwrap();
        assert_eq!(t.ca, Some(PathBuf::from(SYSTEM_ROOTS)));
        let e = files(Some("system"))
            .apply(&mut tls(SslMode::Required), Some(&home))
            .unwrap_err();
        assert_eq!(e, "weak sslmode \"require\" may not be used with sslrootcert=system (use \"verify-full\")");
        // The client's pair, when both are there.
        std::fs::write(home.join("postgresql.crt"), "x").unwrap();
        let mut t = tls(SslMode::Preferred);
        files(None).apply(&mut t, Some(&home)).unwrap();
        assert_eq!(t.cert, None, "a certificate without its key is not used");
        std::fs::write(home.join("postgresql.key"), "x").unwrap();
        files(None).apply(&mut t, Some(&home)).unwrap();
        assert_eq!(t.key, Some(home.join("postgresql.key")));
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_port_reads_as_libpq_reads_it() {
        assert_eq!(port_number("5432"), Ok(5432));
        assert_eq!(port_number(" 6432 "), Ok(6432));
        assert_eq!(
            port_number("abc"),
            Err("invalid integer value \"abc\" for connection option \"port\"".into())
        );
        assert_eq!(port_number("0"), Err("invalid port number: \"0\"".into()));
        assert_eq!(
            port_number("99999"),
            Err("invalid port number: \"99999\"".into())
        );
    }
}
