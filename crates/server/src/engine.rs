//! The database engine a server runs (MariaDB, MySQL or PostgreSQL; not the load engine, which
//! is the `bakeoff_engine` crate): its default binary, the protocol its clients speak, and the
//! settings its binary knows, so a study can refuse one engine's setting given to another
//! before anything starts.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::adapters::{mysql, pgsql};
use crate::identity::{Identity, Product};
use crate::value_kind::ValueKind;
use crate::ServerError;

#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The embedded default; MySQL's `mysqld` is taken where no `mariadbd` is installed.
    #[default]
    MariaDb,
    MySql,
    PostgreSql,
}

/// The names a study file may use, with the engine each means.
pub const ENGINE_NAMES: &[(&str, Engine)] = &[
    ("mariadb", Engine::MariaDb),
    ("mysql", Engine::MySql),
    ("postgresql", Engine::PostgreSql),
];

impl Engine {
    /// As a study file writes it: "mariadb", "mysql", "postgresql".
    pub fn name(self) -> &'static str {
        match self {
            Engine::MariaDb => "mariadb",
            Engine::MySql => "mysql",
            Engine::PostgreSql => "postgresql",
        }
    }

    /// As prose writes it.
    pub fn title(self) -> &'static str {
        match self {
            Engine::MariaDb => "MariaDB",
            Engine::MySql => "MySQL",
            Engine::PostgreSql => "PostgreSQL",
        }
    }

    /// The engine of a binary, as its `--version` says (see [`Identity`]): Percona Server is
    /// MySQL's, and a binary that says none of them MariaDB's.
    pub fn of_binary(binary: &Path) -> Engine {
        Engine::of_product(Identity::of(binary).product)
    }

    fn of_product(product: Product) -> Engine {
        match product {
            Product::PostgreSql => Engine::PostgreSql,
            Product::MySql | Product::Percona => Engine::MySql,
            Product::MariaDb | Product::Unknown => Engine::MariaDb,
        }
    }

    /// Why a server of this engine may not run `binary` (`named`: the study or command line
    /// named it; else it is this engine's default), from what the binary says it is: "mysql"
    /// takes MySQL and Percona Server for MySQL, "mariadb" MariaDB or a binary that says none
    /// (a script around one), "postgresql" PostgreSQL. MariaDB's default is MySQL's mysqld
    /// where no mariadbd is installed, and is taken. None too when the binary does not run
    /// (the start says why).
    pub fn refuses_binary(self, binary: &Path, named: bool) -> Option<String> {
        let id = Identity::of(binary);
        let takes = match (self, id.product) {
            (_, _) if !id.ran => true,
            (Engine::MariaDb, Product::MariaDb | Product::Unknown) => true,
            (Engine::MariaDb, Product::MySql | Product::Percona) => !named,
            (Engine::MySql, Product::MySql | Product::Percona) => true,
            (Engine::PostgreSql, Product::PostgreSql) => true,
            _ => false,
        };
        (!takes).then(|| self.refusal(binary, &id))
    }

    fn refusal(self, binary: &Path, id: &Identity) -> String {
        let found = match id.product {
            Product::Unknown => {
                let said = match id.line.is_empty() {
                    true => "its --version says nothing".to_string(),
                    false => format!("its --version says \"{}\"", id.line),
                };
                format!(
                    "{} does not say it is {} ({said})",
                    binary.display(),
                    self.title()
                )
            }
            _ => format!(
                "{} is {}{}, not {}",
                binary.display(),
                id.describe(),
                link_note(binary),
                self.title()
            ),
        };
        let get = match self {
            Engine::MySql => "install MySQL 8.0 or 8.4 (or Percona Server for MySQL, which engine \"mysql\" takes too; see docs/src/guide/mysql.md) and name its binary with `[mysql] binary = \"/opt/mysql/bin/mysqld\"`",
            Engine::MariaDb => "name a MariaDB server with `[mariadb] binary = \"/usr/sbin/mariadbd\"`",
            Engine::PostgreSql => "name a PostgreSQL server with `[postgresql] binary = \"/usr/lib/postgresql/15/bin/postgres\"`",
        };
        let instead = Engine::of_product(id.product);
        let or = match instead == self {
            true => String::new(),
            false => format!(", or use engine \"{}\"", instead.name()),
        };
        format!("engine \"{}\": {found}; {get}{or}", self.name())
    }

    /// What the lab sets on every server of this engine it starts, before the variant's own
    /// settings (which win), as (name, value) with underscores: a variant that sets one of
    /// these to the same value is no different from one that leaves it out.
    pub fn lab_defaults(self) -> Vec<(String, String)> {
        let list = match self {
            Engine::PostgreSql => pgsql::LAB_DEFAULTS,
            _ => mysql::LAB_DEFAULTS,
        };
        list.iter()
            .map(|d| {
                let (name, value) = d.split_once('=').unwrap_or((d, "ON"));
                (name.replace('-', "_"), value.to_string())
            })
            // Where its log goes is the lab's business, not a setting a study compares.
            .filter(|(n, _)| !n.starts_with("log"))
            .collect()
    }

    /// The binary a server of this engine runs when none is named.
    pub fn default_binary(self) -> Result<PathBuf, ServerError> {
        match self {
            Engine::MariaDb => mysql::find_server_binary(),
            Engine::MySql => crate::binary::which("mysqld").ok_or_else(|| {
                ServerError::NotFound(
                    "no mysqld found on PATH or in /usr/sbin: install MySQL's server, or name its binary (`binary = \"/path/to/mysqld\"`)".into(),
                )
            }),
            Engine::PostgreSql => pgsql::find_postgres_binary(),
        }
    }

    /// What a server of this engine's family that says `version` (its `SELECT VERSION()`) is:
    /// MariaDB and MySQL share a family (and a default), and only the version tells them
    /// apart: MariaDB's names MariaDB, MySQL's and Percona Server's give a number only.
    pub fn by_version(self, version: &str) -> Engine {
        match self {
            Engine::PostgreSql => self,
            _ if version.is_empty() => self,
            _ => mysql::flavor_of(version).into(),
        }
    }

    /// Whether a server of `self` may be one of `binary_engine`'s (a given server's URL says
    /// MySQL's protocol for MariaDB and MySQL alike: it cannot tell them apart).
    pub fn runs(self, binary_engine: Engine) -> bool {
        (self == Engine::PostgreSql) == (binary_engine == Engine::PostgreSql)
    }
}

/// " (mysqld here is Debian's link to mariadbd)": where a binary's name is not its file's.
fn link_note(binary: &Path) -> String {
    let Ok(real) = std::fs::canonicalize(binary) else {
        return String::new();
    };
    match (binary.file_name(), real.file_name()) {
        (Some(name), Some(file)) if name != file => {
            let (name, file) = (name.to_string_lossy(), file.to_string_lossy());
            match binary == Path::new("/usr/sbin/mysqld") && file == "mariadbd" {
                true => " (mysqld here is Debian's link to mariadbd)".to_string(),
                false => format!(" ({name} here is a link to {})", real.display()),
            }
        }
        _ => String::new(),
    }
}

impl From<mysql::Flavor> for Engine {
    fn from(f: mysql::Flavor) -> Engine {
        match f {
            mysql::Flavor::MariaDb => Engine::MariaDb,
            mysql::Flavor::MySql => Engine::MySql,
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Engine {
    type Err = String;

    fn from_str(s: &str) -> Result<Engine, String> {
        let s = s.to_ascii_lowercase();
        let alias = match s.as_str() {
            "postgres" | "pgsql" => "postgresql",
            "mariadbd" => "mariadb",
            other => other,
        };
        ENGINE_NAMES
            .iter()
            .find(|(n, _)| *n == alias)
            .map(|(_, e)| *e)
            .ok_or_else(|| format!("'{s}' is not an engine; use mariadb, mysql or postgresql"))
    }
}

/// The settings a server binary knows, asked of the binary once per process.
#[derive(Debug)]
pub struct Catalog {
    pub engine: Engine,
    pub binary: PathBuf,
    /// Every setting it lists, with the kind of value each takes.
    names: BTreeMap<String, ValueKind>,
}

impl Catalog {
    /// `binary`'s catalog (cached); an error says why the binary could not list them.
    pub fn of(binary: &Path) -> Result<Arc<Catalog>, String> {
        static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<Catalog>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(c) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(binary) {
            return Ok(c.clone());
        }
        let engine = Engine::of_binary(binary);
        let names = match engine {
            Engine::PostgreSql => pgsql::setting_names(binary)?,
            _ => mysql::setting_names(binary)?,
        };
        let c = Arc::new(Catalog {
            engine,
            binary: binary.to_path_buf(),
            names,
        });
        let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(binary.to_path_buf(), c.clone());
        Ok(c)
    }

    /// Whether the server takes setting `name`. PostgreSQL takes any dotted name (an
    /// extension's, checked when it loads); MySQL's `loose_` prefix means "ignore if unknown".
    pub fn knows(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase().replace('-', "_");
        match self.engine {
            Engine::PostgreSql => name.contains('.') || self.names.contains_key(&name),
            _ => {
                name.starts_with("loose_")
                    || self.names.contains_key(&name)
                    || ["skip_", "enable_", "disable_"].iter().any(|p| {
                        name.strip_prefix(p)
                            .is_some_and(|n| self.names.contains_key(n))
                    })
            }
        }
    }

    /// Whether the server would refuse `name=value` at its start. A name the catalog lists
    /// is taken; a MySQL-family binary is asked about any other (it still takes options it
    /// no longer lists, such as MariaDB's removed innodb_thread_concurrency, which then do
    /// nothing: the started server's checks say so); PostgreSQL's list is complete.
    pub fn refuses(&self, name: &str, value: &str) -> bool {
        if self.knows(name) {
            return false;
        }
        match self.engine {
            Engine::PostgreSql => true,
            _ => mysql::refuses_option(&self.binary, name, value),
        }
    }

    /// Every name it knows, in order (for "did you mean").
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(String::as_str)
    }

    /// Why the server would refuse `value` for setting `name`, a setting it lists, by the
    /// kind of value the setting takes; None when the value is of that kind, or when the
    /// kind is not known here (a string, an enum: the server's start judges those).
    pub fn value_problem(&self, name: &str, value: &str) -> Option<String> {
        let key = name.to_ascii_lowercase().replace('-', "_");
        self.names.get(&key)?.problem(name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases() {
        assert_eq!("postgres".parse::<Engine>(), Ok(Engine::PostgreSql));
        assert_eq!("MariaDB".parse::<Engine>(), Ok(Engine::MariaDb));
        assert!("oracle"
            .parse::<Engine>()
            .unwrap_err()
            .contains("mariadb, mysql or postgresql"));
        assert!(Engine::MySql.runs(Engine::MariaDb));
        assert!(!Engine::PostgreSql.runs(Engine::MariaDb));
    }

    #[test]
    fn a_running_servers_version_says_mariadb_or_else_is_mysqls() {
        // SELECT VERSION(): MariaDB says so; MySQL and Percona Server give a number only.
        let mariadb = "10.11.19-MariaDB-0+deb12u1";
        assert_eq!(Engine::MySql.by_version(mariadb), Engine::MariaDb);
        assert_eq!(Engine::MySql.by_version("8.4.3"), Engine::MySql);
        assert_eq!(Engine::MariaDb.by_version("8.0.39-30"), Engine::MySql);
        assert_eq!(Engine::MySql.by_version(""), Engine::MySql);
        assert_eq!(Engine::PostgreSql.by_version("15.8"), Engine::PostgreSql);
    }
}
