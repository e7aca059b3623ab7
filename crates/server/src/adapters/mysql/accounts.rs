//! The accounts of a lab server, made by its init file before any client can connect.
//!
//! - The load account over the unix socket (`'sbtest'@'localhost'`) holds every privilege:
//!   bakeoff's own checks, sampling and SHUTDOWN go that way, and only processes on the
//!   server's host that may enter its 0700 run directory can reach the socket.
//! - The same account over TCP (loopback, or each client host of a server that listens for
//!   them) holds privileges on the load database only: what prepare, run and cleanup need.
//!   Someone who learns its password can touch that throwaway database, not the server.
//! - No anonymous account, whatever the initializer made: they are dropped here and their
//!   absence is checked once the server is up ([`anonymous`]).
//! - MySQL's `--initialize-insecure` root (no password) gets a random one it is never told,
//!   and is locked: nothing of bakeoff's logs in as root.

use bakeoff_driver::{Conn, Secret};

use super::datadir::Flavor;
use crate::ServerSpec;

/// Hosts an initializer may give anonymous accounts (older mysql_install_db made ''@localhost
/// and ''@<hostname>); `hostname` is added to these.
const ANONYMOUS_HOSTS: &[&str] = &["localhost", "%", "127.0.0.1", "::1"];

/// The init file's statements, one per line (the server reads an init file line by line).
pub(crate) fn init_sql(
    spec: &ServerSpec,
    password: &Secret,
    flavor: Flavor,
    hostname: &str,
    root_password: &Secret,
) -> String {
    let (user, db, pw) = (&spec.user, &spec.database, password.expose());
    let mut sql = format!("CREATE DATABASE IF NOT EXISTS `{db}`;\n");
    for host in ANONYMOUS_HOSTS.iter().copied().chain([hostname]) {
        sql += &format!("DROP USER IF EXISTS ''@'{}';\n", quoted(host));
    }
    if flavor == Flavor::MySql {
        sql += &format!(
            "ALTER USER 'root'@'localhost' IDENTIFIED BY '{}' ACCOUNT LOCK;\n",
            root_password.expose()
        );
    }
    // Full rights on the socket only; TCP (loopback or the load's hosts) on the database.
    let tcp_hosts: Vec<String> = match &spec.listen {
        Some(l) => l.clients.iter().map(|c| c.to_string()).collect(),
        None => vec!["127.0.0.1".into()],
    };
    let hosts = std::iter::once(("localhost".to_string(), "*.*".to_string()))
        .chain(tcp_hosts.into_iter().map(|h| (h, format!("`{db}`.*"))));
    for (host, on) in hosts {
        let grant_option = if on == "*.*" {
            " WITH GRANT OPTION"
        } else {
            ""
        };
        // Over the network (a server for client hosts), the password and the load travel
        // only over TLS; the socket and loopback stay plain.
        let require = match spec.tls.is_some() && on != "*.*" {
            true => " REQUIRE SSL",
            false => "",
        };
        sql += &format!(
            "CREATE USER IF NOT EXISTS '{user}'@'{host}' IDENTIFIED BY '{pw}';\n\
             ALTER USER '{user}'@'{host}' IDENTIFIED BY '{pw}'{require};\n\
             GRANT ALL PRIVILEGES ON {on} TO '{user}'@'{host}'{grant_option};\n"
        );
    }
    sql
}

/// `s` inside single quotes in SQL.
fn quoted(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\'', "''")
}

/// The anonymous accounts the server has (`''@'host'`), read through `conn` (the socket
/// account, which may read mysql.user).
pub(crate) async fn anonymous(conn: &mut Conn) -> Result<Vec<String>, String> {
    let rows = conn
        .query_rows("SELECT Host FROM mysql.user WHERE User = ''")
        .await
        .map_err(|e| e.to_string())?;
    Ok(rows
        .into_iter()
        .map(|r| format!("''@'{}'", r.first().cloned().flatten().unwrap_or_default()))
        .collect())
}

/// This machine's host name: the server's `@@hostname`, which an initializer may have given
/// an anonymous account.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Listen;

    fn sql(spec: &ServerSpec, flavor: Flavor) -> String {
        init_sql(
            spec,
            &Secret::new("pw"),
            flavor,
            "db1",
            &Secret::new("rootpw"),
        )
    }

    #[test]
    fn only_the_socket_account_holds_rights_beyond_the_database() {
        let spec = ServerSpec {
            listen: Some(Listen {
                address: [169, 254, 77, 2].into(),
                clients: vec![[169, 254, 77, 1].into(), [169, 254, 77, 3].into()],
            }),
            ..ServerSpec::default()
        };
        let text = sql(&spec, Flavor::MariaDb);
        let grants: Vec<&str> = text.lines().filter(|l| l.starts_with("GRANT")).collect();
        assert_eq!(
            grants,
            [
                "GRANT ALL PRIVILEGES ON *.* TO 'sbtest'@'localhost' WITH GRANT OPTION;",
                "GRANT ALL PRIVILEGES ON `sbtest`.* TO 'sbtest'@'169.254.77.1';",
                "GRANT ALL PRIVILEGES ON `sbtest`.* TO 'sbtest'@'169.254.77.3';",
            ]
        );
        let loopback = sql(&ServerSpec::default(), Flavor::MariaDb);
        assert!(loopback.contains("GRANT ALL PRIVILEGES ON `sbtest`.* TO 'sbtest'@'127.0.0.1';"));
        // One statement per line: the server reads init files that way.
        assert!(text.lines().all(|l| l.ends_with(';')), "{text}");
    }

    #[test]
    fn anonymous_accounts_go_and_mysql_root_is_locked() {
        let text = sql(&ServerSpec::default(), Flavor::MySql);
        for host in ["localhost", "%", "db1"] {
            assert!(
                text.contains(&format!("DROP USER IF EXISTS ''@'{host}';")),
                "{text}"
            );
        }
        assert!(
            text.contains("ALTER USER 'root'@'localhost' IDENTIFIED BY 'rootpw' ACCOUNT LOCK;"),
            "{text}"
        );
        // MariaDB's root is initialized for the socket (OS root) only, and left as it is.
        assert!(!sql(&ServerSpec::default(), Flavor::MariaDb).contains("'root'"));
        assert_eq!(quoted("it's"), "it''s");
    }
}
