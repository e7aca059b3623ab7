//! A server the user runs, named by URL:
//! `mysql://[user@]host[:port][/database][?option=value&...]`.
//!
//! The options are the MySQL client's names: `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key`,
//! `ssl-cipher`, `socket` (a unix socket; the host is then only a label), `connect-timeout`
//! (seconds), `get-server-public-key`, `server-public-key-path`, `enable-cleartext-plugin`
//! and `compress`. A password is refused: a URL is written into study files,
//! results and reports, so the password comes from elsewhere (`crate::password`).

use std::path::PathBuf;
use std::time::Duration;

use crate::{ConnectOptions, Endpoint, Secret, SslMode, Tls};

/// A parsed server URL. `text` is the URL as given (it holds no password), for manifests
/// and reports.
#[derive(Debug, Clone)]
pub struct ServerUrl {
    pub text: String,
    pub endpoint: Endpoint,
    /// The host named, also for a unix socket (what VERIFY_IDENTITY checks over TCP).
    pub host: String,
    pub user: Option<String>,
    pub database: Option<String>,
    pub tls: Tls,
    pub auth: crate::AuthOptions,
    pub connect_timeout: Option<Duration>,
    /// The compressed protocol (`compress=true`).
    pub compress: bool,
    /// mysql:// or postgresql:// (postgres://).
    pub protocol: crate::Protocol,
    /// A postgresql:// URL's service's password (pg_service.conf), never shown.
    pub service_password: Option<Secret>,
    /// bakeoff's own key (`max-packet=16M`, `max_packet=16M` in a postgresql:// URL): the
    /// longest message the server may send, for every way of giving a server a URL.
    pub max_packet: Option<usize>,
}

const OPTIONS: &str = "ssl-mode, ssl-ca, ssl-cert, ssl-key, ssl-cipher, socket, connect-timeout, get-server-public-key, server-public-key-path, enable-cleartext-plugin, compress and max-packet (bakeoff's own)";

/// `max-packet`'s value, in the words `--max-packet` uses.
fn size(key: &str, v: &str) -> Result<usize, String> {
    crate::parse_max_packet(v).map_err(|e| format!("{key}={v}: {e}"))
}

impl ServerUrl {
    pub fn parse(text: &str) -> Result<ServerUrl, String> {
        let shown = masked(text);
        let bad = |why: String| format!("server URL '{shown}': {why}");
        let (protocol, rest) = match text.split_once("://") {
            Some(("mysql", rest)) => (crate::Protocol::MySql, rest),
            Some(("postgresql" | "postgres", rest)) => (crate::Protocol::Postgres, rest),
            _ => return Err(bad(
                "it must start with mysql:// (mysql://user@host:3306/sbtest?ssl-mode=REQUIRED) or postgresql:// (postgresql://user@host:5432/sbtest?sslmode=verify-full)"
                    .into(),
            )),
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if userinfo.is_some_and(|u| u.contains(':')) {
            let instead = match protocol {
                crate::Protocol::MySql => "MYSQL_PWD, a MySQL option file (defaults_file)",
                crate::Protocol::Postgres => "PGPASSWORD",
            };
            return Err(bad(format!("a password in the URL would be kept in the study file, the results and every report: give it in {instead} or a password_command")));
        }
        let user = userinfo.map(decode).transpose().map_err(bad)?;
        if protocol == crate::Protocol::Postgres {
            return pg_url(text, user, hostport, path, query).map_err(bad);
        }
        let (host, port) = host_port(hostport, 3306).map_err(bad)?;
        let database = match decode(path).map_err(bad)? {
            d if d.is_empty() => None,
            d => Some(d),
        };
        let mut url = ServerUrl {
            text: text.to_string(),
            endpoint: Endpoint::Tcp {
                host: host.clone(),
                port,
            },
            host,
            user,
            database,
            tls: Tls::default(),
            auth: crate::AuthOptions::default(),
            connect_timeout: None,
            compress: false,
            protocol,
            service_password: None,
            max_packet: None,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v).map_err(bad)?;
            url.option(&k.replace('_', "-"), &v).map_err(bad)?;
        }
        if url.tls.mode == SslMode::Disabled
            && (url.tls.ca.is_some() || url.tls.cert.is_some() || url.tls.key.is_some())
        {
            return Err(bad(
                "ssl-ca, ssl-cert and ssl-key need TLS: add ssl-mode=VERIFY_CA (or REQUIRED, VERIFY_IDENTITY)".into(),
            ));
        }
        url.tls.check().map_err(bad)?;
        Ok(url)
    }

    fn option(&mut self, key: &str, v: &str) -> Result<(), String> {
        let flag = || match v.to_ascii_lowercase().as_str() {
            "" | "1" | "true" | "on" | "yes" => Ok(true),
            "0" | "false" | "off" | "no" => Ok(false),
            _ => Err(format!("{key}={v}: use true or false")),
        };
        match key {
            "ssl-mode" | "sslmode" => {
                self.tls.mode = SslMode::parse(v).ok_or_else(|| {
                    format!("ssl-mode={v}: use DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY")
                })?
            }
            "ssl-ca" => self.tls.ca = Some(PathBuf::from(v)),
            "ssl-cert" => self.tls.cert = Some(PathBuf::from(v)),
            "ssl-key" => self.tls.key = Some(PathBuf::from(v)),
            "ssl-cipher" => self.tls.cipher = Some(v.to_string()),
            "socket" => self.endpoint = Endpoint::Unix(PathBuf::from(v)),
            "connect-timeout" => {
                let s: u64 = v
                    .parse()
                    .ok()
                    .filter(|s| (1..=3600).contains(s))
                    .ok_or_else(|| format!("connect-timeout={v}: seconds, 1 to 3600"))?;
                self.connect_timeout = Some(Duration::from_secs(s));
            }
            "get-server-public-key" => self.auth.get_server_public_key = flag()?,
            "server-public-key-path" => self.auth.server_public_key = Some(PathBuf::from(v)),
            "enable-cleartext-plugin" => self.auth.cleartext = flag()?,
            "compress" | "compression" => self.compress = flag()?,
            "max-packet" => self.max_packet = Some(size(key, v)?),
            "password" => return Err("a password in the URL would be kept in the study file, the results and every report: give it in MYSQL_PWD, a MySQL option file (defaults_file) or a password_command".into()),
            _ => return Err(format!("unknown option '{key}': the URL takes {OPTIONS}")),
        }
        Ok(())
    }

    /// How to connect with the password `found` (a fixed one, or a command for every
    /// connect). The user is the URL's, else the option file's, else the MySQL client's
    /// default (this process's `USER`); the database the URL's, else `sbtest`.
    pub fn connect_options(&self, found: crate::Found) -> ConnectOptions {
        let user = self
            .user
            .clone()
            .or(found.user)
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "root".into());
        let found_in_file = found.from_option_file;
        let mut o = ConnectOptions::new(self.endpoint.clone(), &user, "");
        o.password = found.password;
        o.password_command = found.command;
        o.database = Some(self.database.clone().unwrap_or_else(|| "sbtest".into()));
        o.tls = self.tls.clone();
        o.auth = self.auth.clone();
        o.compress = self.compress;
        o.protocol = self.protocol;
        if let Some(t) = self.connect_timeout {
            o.connect_timeout = t;
        }
        if let Some(bytes) = self.max_packet {
            o.limits.max_packet = bytes;
        }
        // libpq's order, after a password command, for where `o` now connects (the password
        // file matches its database); MYSQL_PWD is MySQL's.
        if self.protocol == crate::Protocol::Postgres && !found_in_file {
            o.password = Secret::default();
            if o.password_command.is_none() {
                o.password = crate::libpq::password(&o, self.service_password.as_ref()).0;
            }
        }
        o
    }
}

/// The URL with any password in it replaced by `***`, for the message that refuses it.
fn masked(text: &str) -> String {
    let (head, query) = text.split_once('?').unwrap_or((text, ""));
    let head = match head.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest
                .split_once('/')
                .map_or((rest, None), |(a, p)| (a, Some(p)));
            let authority = match authority.rsplit_once('@') {
                Some((user, host)) if user.contains(':') => {
                    format!("{}:***@{host}", user.split(':').next().unwrap_or(""))
                }
                _ => authority.to_string(),
            };
            match path {
                Some(p) => format!("{scheme}://{authority}/{p}"),
                None => format!("{scheme}://{authority}"),
            }
        }
        None => head.to_string(),
    };
    if query.is_empty() {
        return head;
    }
    let query: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => p.to_string(),
        })
        .collect();
    format!("{head}?{}", query.join("&"))
}

/// A postgresql:// URL: its parts and options as libpq's connection keywords, what they
/// leave out resolved by libpq's rules (`crate::libpq`: the service, the PG* variables, the
/// defaults), the database `sbtest` when nothing names one.
fn pg_url(
    text: &str,
    user: Option<String>,
    hostport: &str,
    path: &str,
    query: &str,
) -> Result<ServerUrl, String> {
    let mut g = crate::libpq::Given {
        user,
        ..Default::default()
    };
    if !hostport.is_empty() {
        let (host, port) = host_port(hostport, 0)?;
        g.host = Some(host);
        g.port = (port != 0).then(|| port.to_string());
    }
    g.dbname = Some(decode(path)?).filter(|d| !d.is_empty());
    let mut connect_timeout = None;
    let mut max_packet = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = decode(v)?;
        let slot = match k {
            "host" => &mut g.host,
            "port" => &mut g.port,
            "user" => &mut g.user,
            "dbname" => &mut g.dbname,
            "sslmode" => {
                if crate::libpq::sslmode(&v).is_none() {
                    return Err(format!("sslmode={v}: use disable, allow, prefer, require, verify-ca or verify-full"));
                }
                &mut g.sslmode
            }
            "sslrootcert" => &mut g.sslrootcert,
            "sslcert" => &mut g.sslcert,
            "sslkey" => &mut g.sslkey,
            "channel_binding" => &mut g.channel_binding,
            "require_auth" => &mut g.require_auth,
            "service" => &mut g.service,
            "connect_timeout" => {
                let s: u64 = v.parse().ok().filter(|s| (1..=3600).contains(s)).ok_or_else(|| format!("connect_timeout={v}: seconds, 1 to 3600"))?;
                connect_timeout = Some(Duration::from_secs(s));
                continue;
            }
            "max_packet" => {
                max_packet = Some(size(k, &v)?);
                continue;
            }
            "password" => return Err("a password in the URL would be kept in the study file, the results and every report: give it in PGPASSWORD, ~/.pgpass or a password_command".into()),
            _ => return Err(format!("unknown option '{k}': a postgresql:// URL takes sslmode, sslrootcert, sslcert, sslkey, channel_binding, require_auth, host (a name or a socket directory), port, user, dbname, service, connect_timeout and max_packet (bakeoff's own)")),
        };
        *slot = Some(v);
    }
    let r = crate::libpq::resolve(&g, Some("sbtest"))?;
    let o = r.options;
    let url = ServerUrl {
        text: text.to_string(),
        endpoint: o.endpoint,
        host: r.host,
        user: Some(o.user),
        database: o.database,
        tls: o.tls,
        auth: o.auth,
        connect_timeout,
        compress: false,
        protocol: crate::Protocol::Postgres,
        service_password: r.service_password,
        max_packet,
    };
    url.tls.check()?;
    Ok(url)
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; the port defaults to the protocol's.
fn host_port(s: &str, default_port: u16) -> Result<(String, u16), String> {
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("'{s}': an IPv6 address needs its closing ]"))?;
        (h, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return Err("no host: mysql://user@HOST:3306/database".into());
    }
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("port '{p}' is not a port number (1 to 65535)"))?,
    };
    Ok((host.to_string(), port))
}

/// Percent-decoding (`%2F` is `/`), as URLs carry paths and user names.
fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("'{s}': % must be followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{s}' does not decode to UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_url_names_everything() {
        let u = ServerUrl::parse(
            "mysql://bench@db1.internal:3307/sb%20test?ssl-mode=REQUIRED&connect-timeout=5",
        )
        .unwrap();
        assert_eq!(
            u.endpoint,
            Endpoint::Tcp {
                host: "db1.internal".into(),
                port: 3307
            }
        );
        assert_eq!(u.user.as_deref(), Some("bench"));
        assert_eq!(u.database.as_deref(), Some("sb test"));
        assert_eq!(u.tls.mode, SslMode::Required);
        assert_eq!(u.connect_timeout, Some(Duration::from_secs(5)));
        let o = u.connect_options(crate::Found::default());
        assert_eq!(
            (o.user.as_str(), o.database.as_deref()),
            ("bench", Some("sb test"))
        );
    }

    #[test]
    fn defaults_and_sockets_and_ipv6() {
        let u = ServerUrl::parse("mysql://[fe80::1]").unwrap();
        assert_eq!(
            u.endpoint,
            Endpoint::Tcp {
                host: "fe80::1".into(),
                port: 3306
            }
        );
        assert!(u.user.is_none() && u.database.is_none());
        let s =
            ServerUrl::parse("mysql://root@localhost/sbtest?socket=%2Frun%2Fmysqld.sock").unwrap();
        assert_eq!(s.endpoint, Endpoint::Unix("/run/mysqld.sock".into()));
    }

    #[test]
    fn postgres_urls_take_libpqs_names_and_defaults() {
        let u = ServerUrl::parse("postgresql://bench@db1/bench?sslmode=require").unwrap();
        assert_eq!(u.protocol, crate::Protocol::Postgres);
        let port = 5432;
        assert_eq!(
            u.endpoint,
            Endpoint::Tcp {
                host: "db1".into(),
                port
            }
        );
        assert_eq!(u.tls.mode, SslMode::Required);
        // sslrootcert is read at once, as ssl-ca is: a missing file is said by name.
        let e = ServerUrl::parse(
            "postgresql://db1/?sslmode=verify-ca&sslrootcert=/nonexistent/root.crt",
        );
        assert!(e.unwrap_err().contains("/nonexistent/root.crt"));
        // libpq's default is prefer over TCP, and no TLS on a unix socket; a socket
        // directory (host=, which wins over the URL's host) names the port's socket in it.
        assert_eq!(
            ServerUrl::parse("postgresql://db1").unwrap().tls.mode,
            SslMode::Preferred
        );
        let s = ServerUrl::parse("postgres://bench@localhost:6543/?host=/run/pg").unwrap();
        assert_eq!(s.tls.mode, SslMode::Disabled);
        assert_eq!(s.endpoint, Endpoint::Unix("/run/pg/.s.PGSQL.6543".into()));
        assert_eq!(
            s.connect_options(crate::Found::default()).protocol,
            crate::Protocol::Postgres
        );
    }

    #[test]
    fn passwords_and_unknown_options_are_refused_by_name() {
        for (url, says) in [
            ("mysql://bench:hunter2@db1/sbtest", "MYSQL_PWD"),
            ("mysql://db1/?password=hunter2", "password_command"),
            ("mysql://db1/?ssl-mod=REQUIRED", "unknown option 'ssl-mod'"),
            ("mysql://db1/?ssl-mode=STRICT", "ssl-mode=STRICT"),
            ("mysql://db1:99999/", "port '99999'"),
            ("http://db1/", "must start with mysql://"),
            ("postgresql://bench:hunter2@db1/sbtest", "PGPASSWORD"),
            ("postgresql://db1/?password=hunter2", "PGPASSWORD"),
            (
                "postgresql://db1/?ssl-mode=REQUIRED",
                "unknown option 'ssl-mode'",
            ),
            ("postgresql://db1/?sslmode=strict", "sslmode=strict"),
            ("mysql://db1/?ssl-ca=/x.pem", "need TLS"),
            (
                "mysql://db1/?ssl-mode=VERIFY_CA&ssl-ca=/nonexistent/ca.pem",
                "/nonexistent/ca.pem",
            ),
        ] {
            let e = ServerUrl::parse(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }
}
