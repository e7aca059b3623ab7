//! libpq's connection service file: a service named by `PGSERVICE` (or `service=`) is a
//! `[name]` section of key=value lines in `PGSERVICEFILE` or `~/.pg_service.conf`, else in
//! `PGSYSCONFDIR/pg_service.conf` (`/etc/postgresql-common/pg_service.conf` on Debian). Its
//! values stand below what the command line gives and above the `PG*` variables.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Debian's libpq looks here for the system-wide file.
const SYSCONFDIR: &str = "/etc/postgresql-common";

/// The service's settings (`host`, `port`, `dbname`, `user`, `password`, `sslmode`, ...).
pub type Service = BTreeMap<String, String>;

/// The files libpq reads for a service, in its order.
fn files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    match std::env::var_os("PGSERVICEFILE") {
        Some(f) => out.push(PathBuf::from(f)),
        None => {
            if let Some(h) = std::env::var_os("HOME") {
                out.push(PathBuf::from(h).join(".pg_service.conf"));
            }
        }
    }
    let sys =
        std::env::var_os("PGSYSCONFDIR").map_or_else(|| PathBuf::from(SYSCONFDIR), PathBuf::from);
    out.push(sys.join("pg_service.conf"));
    out
}

/// Service `name` from the first file that defines it; an error names the service and the
/// files looked in, as libpq's does.
pub fn service(name: &str) -> Result<Service, String> {
    let files = files();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        if let Some(s) = section(&text, name).map_err(|e| format!("{}: {e}", f.display()))? {
            return Ok(s);
        }
    }
    let looked: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    Err(format!(
        "definition of service \"{name}\" not found (looked in {})",
        looked.join(", ")
    ))
}

/// The `[name]` section of a service file's text; None when it has none.
pub fn section(text: &str, name: &str) -> Result<Option<Service>, String> {
    let mut inside = false;
    let mut found: Option<Service> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            let Some(head) = head.strip_suffix(']') else {
                return Err(format!("line {}: syntax error in service file", n + 1));
            };
            if found.is_some() {
                break;
            }
            inside = head == name;
            if inside {
                found = Some(Service::new());
            }
            continue;
        }
        if !inside {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!("line {}: syntax error in service file", n + 1));
        };
        if let Some(s) = found.as_mut() {
            s.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_its_section() {
        let file = "# services\n[other]\nhost=elsewhere\n\n[bench]\nhost = db1\nport=6432\ndbname=sbtest\nuser=bench\n[last]\nhost=x\n";
        let s = section(file, "bench").unwrap().unwrap();
        assert_eq!(s.get("host").map(String::as_str), Some("db1"));
        assert_eq!(s.get("port").map(String::as_str), Some("6432"));
        assert_eq!(s.len(), 4);
        assert_eq!(section(file, "missing").unwrap(), None);
        assert!(section("[bench]\nnonsense\n", "bench").is_err());
    }
}
