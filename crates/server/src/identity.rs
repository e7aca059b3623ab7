//! What a server binary is, as its own `--version` says (asked once per binary, then kept):
//! MariaDB, MySQL, Percona Server for MySQL or PostgreSQL, and the version it gives. Never
//! from the file's name: Debian's /usr/sbin/mysqld is a link to mariadbd.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

/// Whose server a binary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    MariaDb,
    MySql,
    /// Percona Server for MySQL: MySQL's server with Percona's changes, which initializes,
    /// starts and answers as MySQL's does.
    Percona,
    PostgreSql,
    /// It said none of these (a script around a server, or nothing at all).
    Unknown,
}

impl Product {
    pub fn title(self) -> &'static str {
        match self {
            Product::MariaDb => "MariaDB",
            Product::MySql => "MySQL",
            Product::Percona => "Percona Server for MySQL",
            Product::PostgreSql => "PostgreSQL",
            Product::Unknown => "unknown",
        }
    }
}

/// A binary's product and version, from what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub product: Product,
    /// As it gives it, less MariaDB's packaging: "10.11.19", "8.4.3", "8.0.39-30", "15.8";
    /// empty when it gives none.
    pub version: String,
    /// The line of `--version` it was read from; empty when it said nothing.
    pub line: String,
    /// Whether the binary ran at all (false: not here, or not executable).
    pub ran: bool,
}

impl Identity {
    /// `binary`'s, asked once per path and kept for the process.
    pub fn of(binary: &Path) -> Arc<Identity> {
        static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<Identity>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(i) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(binary) {
            return i.clone();
        }
        let id = Arc::new(Identity::ask(binary));
        let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(binary.to_path_buf(), id.clone());
        id
    }

    fn ask(binary: &Path) -> Identity {
        let Ok(out) = Command::new(binary).arg("--version").output() else {
            return Identity {
                ran: false,
                ..Identity::of_version("")
            };
        };
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.trim().is_empty() {
            text = String::from_utf8_lossy(&out.stderr).into_owned();
        }
        let mut id = Identity::of_version(&text);
        // PostgreSQL's server by its own name, as the lab has always known it.
        let named_postgres = binary
            .file_name()
            .is_some_and(|n| n == "postgres" || n == "postmaster");
        if id.product == Product::Unknown && named_postgres {
            id.product = Product::PostgreSql;
        }
        id
    }

    /// What `--version` output `text` says: "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for
    /// debian-linux-gnu ...", "mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server -
    /// GPL)", "mysqld  Ver 8.0.39-30 for Linux on x86_64 (Percona Server (GPL), ...)",
    /// "postgres (PostgreSQL) 15.8 ...".
    pub fn of_version(text: &str) -> Identity {
        let lines = || text.lines().map(str::trim).filter(|l| !l.is_empty());
        let line = lines()
            .find(|l| l.contains(" Ver ") || l.contains("(PostgreSQL)"))
            .or_else(|| lines().next())
            .unwrap_or("");
        let product = if line.contains("MariaDB") {
            Product::MariaDb
        } else if line.contains("Percona") {
            Product::Percona
        } else if line.contains("MySQL") {
            Product::MySql
        } else if line.contains("PostgreSQL") {
            Product::PostgreSql
        } else {
            Product::Unknown
        };
        Identity {
            product,
            version: version_in(line, product),
            line: line.to_string(),
            ran: true,
        }
    }

    /// "MariaDB 10.11.19", "Percona Server for MySQL 8.0.39-30".
    pub fn describe(&self) -> String {
        match self.version.is_empty() {
            true => self.product.title().to_string(),
            false => format!("{} {}", self.product.title(), self.version),
        }
    }
}

fn version_in(line: &str, product: Product) -> String {
    let word_after = |key: &str| {
        line.split_once(key)
            .and_then(|(_, rest)| rest.split_whitespace().next())
    };
    let word = match product {
        Product::PostgreSql => word_after("(PostgreSQL) "),
        // A client's line names its own version first: "Ver 15.1 Distrib 10.11.19-MariaDB,".
        _ => word_after("Distrib ").or_else(|| word_after(" Ver ")),
    };
    let word = word.unwrap_or("").trim_end_matches(',');
    let word = word.split("-MariaDB").next().unwrap_or("");
    match word.starts_with(|c: char| c.is_ascii_digit()) {
        true => word.to_string(),
        false => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Product, String) {
        let i = Identity::of_version(text);
        (i.product, i.version)
    }

    #[test]
    fn each_server_is_read_from_what_its_version_says() {
        let mariadb =
            "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)";
        assert_eq!(read(mariadb), (Product::MariaDb, "10.11.19".into()));
        // Debian's mysqld is mariadbd: its name says mysqld, its version MariaDB.
        let linked = "/usr/sbin/mysqld  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)";
        assert_eq!(read(linked), (Product::MariaDb, "10.11.6".into()));
        let client = "mariadb  Ver 15.1 Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)";
        assert_eq!(read(client), (Product::MariaDb, "10.11.19".into()));
        let mysql84 = "mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)";
        assert_eq!(read(mysql84), (Product::MySql, "8.4.3".into()));
        let mysql80 = "/opt/mysql-8.0/bin/mysqld  Ver 8.0.40 for Linux on x86_64 (MySQL Community Server - GPL)";
        assert_eq!(read(mysql80), (Product::MySql, "8.0.40".into()));
        let percona = "mysqld  Ver 8.0.39-30 for Linux on x86_64 (Percona Server (GPL), Release '30', Revision '1b9e6b3a')";
        assert_eq!(read(percona), (Product::Percona, "8.0.39-30".into()));
        let pg = "postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)";
        assert_eq!(read(pg), (Product::PostgreSql, "15.8".into()));
        // A line that names none of them, or none at all.
        assert_eq!(read("wrapper 1.0\n"), (Product::Unknown, String::new()));
        assert_eq!(read(""), (Product::Unknown, String::new()));
        assert_eq!(
            Identity::of_version(percona).describe(),
            "Percona Server for MySQL 8.0.39-30"
        );
    }

    #[test]
    fn a_binary_is_asked_by_running_it_and_not_by_its_name() {
        let missing = Identity::of(Path::new("/nonexistent/mysqld"));
        assert!(!missing.ran);
        assert_eq!(missing.product, Product::Unknown);
        // coreutils' `true` under the name mysqld is no MySQL.
        let dir = std::env::temp_dir().join(format!("bakeoff-identity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mysqld = dir.join("mysqld");
        let _ = std::os::unix::fs::symlink("/bin/true", &mysqld);
        let said = Identity::of(&mysqld);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(said.ran);
        assert_eq!(said.product, Product::Unknown);
    }
}
