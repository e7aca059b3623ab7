//! libpq's password file: `~/.pgpass` (or `PGPASSFILE`), lines of
//! `hostname:port:database:username:password`, `*` matching anything, `\:` and `\\` escaped,
//! the first line that matches winning. A connection over the default socket directory
//! matches `localhost`, another socket directory its own path, as libpq's do. A file readable by group or others is ignored with libpq's warning.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// What the lookup found, and a warning to say (a file ignored for its permissions).
#[derive(Debug, Default)]
pub struct PgPass {
    pub password: Option<String>,
    pub warning: Option<String>,
}

/// The password file libpq would read.
pub fn pgpass_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PGPASSFILE") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass"))
}

/// The password for this host (as the caller matches it), port, database and user.
pub fn pgpass_lookup(host: &str, port: u16, database: &str, user: &str) -> PgPass {
    let Some(path) = pgpass_path() else {
        return PgPass::default();
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return PgPass::default();
    };
    if !meta.is_file() {
        return PgPass {
            password: None,
            warning: Some(format!(
                "WARNING: password file \"{}\" is not a plain file",
                path.display()
            )),
        };
    }
    if meta.mode() & 0o077 != 0 {
        return PgPass {
            password: None,
            warning: Some(format!(
                "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
                path.display()
            )),
        };
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return PgPass::default();
    };
    PgPass {
        password: lookup_in(&text, host, &port.to_string(), database, user),
        warning: None,
    }
}

/// The password file's line for where `o` connects: its host (a socket's directory, which
/// is `localhost` when it is libpq's default one), port, database and user.
pub fn pgpass_for(o: &crate::ConnectOptions) -> PgPass {
    let (mut host, port) = host_and_port(&o.endpoint);
    if matches!(o.endpoint, crate::Endpoint::Unix(_)) && host == DEFAULT_SOCKET_DIR {
        host = "localhost".into();
    }
    let db = o.database.clone().unwrap_or_else(|| o.user.clone());
    pgpass_lookup(&host, port, &db, &o.user)
}

/// Where `endpoint` is as libpq's PQhost and PQport say it: a host and port, or for a unix
/// socket its directory and the port its name (`.s.PGSQL.PORT`) carries.
pub fn host_and_port(endpoint: &crate::Endpoint) -> (String, u16) {
    match endpoint {
        crate::Endpoint::Tcp { host, port } => (host.clone(), *port),
        crate::Endpoint::Unix(path) => {
            let dir = path
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            let port = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(".s.PGSQL."))
                .and_then(|p| p.parse().ok())
                .unwrap_or(5432);
            (dir, port)
        }
    }
}

/// Where Debian's libpq looks for a server's socket by default.
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// The first matching line's password.
pub fn lookup_in(text: &str, host: &str, port: &str, database: &str, user: &str) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_fields(line);
        if fields.len() < 5 {
            continue;
        }
        let matches = |f: &str, v: &str| f == "*" || f == v;
        if matches(&fields[0], host)
            && matches(&fields[1], port)
            && matches(&fields[2], database)
            && matches(&fields[3], user)
        {
            return Some(fields[4..].join(":"));
        }
    }
    None
}

/// Fields split at unescaped colons, escapes removed.
fn split_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().expect("one field at least").push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().expect("one field at least").push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let file = "# comment\nother:5432:*:*:nope\nlocalhost:5432:db\\:x:alice:p\\:w\\\\d\n*:*:*:alice:fallback\n";
        assert_eq!(
            lookup_in(file, "localhost", "5432", "db:x", "alice").as_deref(),
            Some("p:w\\d")
        );
        assert_eq!(
            lookup_in(file, "db.example", "6432", "x", "alice").as_deref(),
            Some("fallback")
        );
        assert_eq!(lookup_in(file, "localhost", "5432", "x", "bob"), None);
    }
}
