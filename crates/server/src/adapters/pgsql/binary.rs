//! Finding PostgreSQL's server binary and its initdb.

use std::path::{Path, PathBuf};

use crate::binary::{is_executable, which};
use crate::value_kind::ValueKind;
use crate::ServerError;

pub const PG_INSTALL_HINT: &str =
    "install PostgreSQL's server (Debian/Ubuntu: `sudo apt-get install postgresql-15`), or name a binary with --server-binary";

/// Where Debian's packages put each major version's binaries.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// `postgres` on PATH, else the newest of Debian's `/usr/lib/postgresql/N/bin/postgres`.
pub fn find_postgres_binary() -> Result<PathBuf, ServerError> {
    if let Some(p) = which("postgres") {
        return Ok(p);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(DEBIAN_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin/postgres");
            is_executable(&bin).then_some((major, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, p)| p).ok_or_else(|| {
        ServerError::NotFound(format!(
            "no postgres found on PATH or in {DEBIAN_ROOT}/*/bin: {PG_INSTALL_HINT}"
        ))
    })
}

/// The initdb beside `server`.
pub fn find_initdb(server: &Path) -> Result<PathBuf, ServerError> {
    let beside = server.parent().map(|d| d.join("initdb"));
    [beside, which("initdb")]
        .into_iter()
        .flatten()
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            ServerError::NotFound(format!(
                "no initdb found beside {} to initialize a datadir: {PG_INSTALL_HINT}",
                server.display()
            ))
        })
}

/// Whether `binary` is PostgreSQL's server: what `--version` says, else its name.
pub fn is_postgres(binary: &Path) -> bool {
    crate::identity::Identity::of(binary).product == crate::identity::Product::PostgreSql
}

/// The settings `binary` knows, from `postgres --describe-config` (one per line, the name
/// first, tab-separated); it needs no datadir and runs in milliseconds.
pub fn setting_names(
    binary: &Path,
) -> Result<std::collections::BTreeMap<String, ValueKind>, String> {
    let out = std::process::Command::new(binary)
        .arg("--describe-config")
        .output()
        .map_err(|e| format!("{} --describe-config: {e}", binary.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --describe-config failed ({})",
            binary.display(),
            out.status
        ));
    }
    // name, context, group, type, ...: the type tells the kind of value it takes.
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut fields = l.split('\t');
            let name = fields.next().filter(|n| !n.is_empty())?;
            let vartype = fields.nth(2).unwrap_or("");
            Some((name.to_string(), ValueKind::of_pg_type(vartype)))
        })
        .collect())
}
