//! What the lab asks a running PostgreSQL over SQL: ready (the load account and database made
//! or brought up to date, the version), and each setting's running value from pg_settings.

use bakeoff_driver::{ConnectOptions, PgConn};

use crate::variant::{self, Check};

/// The superuser initdb makes; reached only over the socket in the 0700 run directory.
pub(crate) const ADMIN: &str = "bakeoff";

/// The admin's options: the same socket, the maintenance database.
pub(crate) fn admin(opts: &ConnectOptions) -> ConnectOptions {
    let mut o = opts.clone();
    o.user = ADMIN.into();
    o.password = bakeoff_driver::Secret::new("");
    o.database = Some("postgres".into());
    o
}

/// Ready: the admin gets in, the load account has this start's password and owns its
/// database (a template's datadir has them from an earlier start, with another password).
/// Returns the server's version.
pub(crate) async fn probe(opts: &ConnectOptions) -> Result<String, String> {
    let e = |e: bakeoff_driver::DriverError| e.to_string();
    let mut c = PgConn::connect_pinned(&admin(opts)).await.map_err(e)?;
    let version = c
        .query_value("SHOW server_version")
        .await
        .map_err(e)?
        .unwrap_or_default();
    let user = ident(&opts.user);
    let password = literal(opts.password.expose());
    let exists = c
        .query_value(&format!(
            "SELECT count(*) FROM pg_roles WHERE rolname = {}",
            literal(&opts.user)
        ))
        .await
        .map_err(e)?;
    let verb = if exists.as_deref() == Some("0") {
        "CREATE"
    } else {
        "ALTER"
    };
    c.exec(&format!("{verb} ROLE {user} LOGIN PASSWORD {password}"))
        .await
        .map_err(e)?;
    // Statistics views the telemetry reads, in full; CHECKPOINT after a load (PostgreSQL
    // 15's pg_checkpoint role: no superuser needed).
    c.exec(&format!("GRANT pg_read_all_stats, pg_checkpoint TO {user}"))
        .await
        .map_err(e)?;
    if let Some(db) = &opts.database {
        let found = c
            .query_value(&format!(
                "SELECT count(*) FROM pg_database WHERE datname = {}",
                literal(db)
            ))
            .await
            .map_err(e)?;
        if found.as_deref() == Some("0") {
            c.exec(&format!("CREATE DATABASE {} OWNER {user}", ident(db)))
                .await
                .map_err(e)?;
        }
    }
    c.quit().await;
    Ok(version)
}

/// Every setting and its running value (pg_settings, units as SHOW prints them): the
/// effective settings recorded with a run. Empty when the server does not answer.
pub async fn settings(opts: &ConnectOptions) -> std::collections::BTreeMap<String, String> {
    let Ok(mut c) = PgConn::connect_pinned(opts).await else {
        return Default::default();
    };
    let rows = c
        .query_rows("SELECT name, current_setting(name) FROM pg_settings ORDER BY name")
        .await
        .unwrap_or_default();
    c.quit().await;
    rows.into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            Some((r.next()??, r.next()?.unwrap_or_default()))
        })
        .collect()
}

/// An identifier, quoted.
pub(crate) fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A string literal, quoted (standard_conforming_strings is on in every supported version).
pub(crate) fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Each setting against pg_settings: the running value, compared in the setting's own unit.
pub(crate) async fn check_settings(
    opts: &ConnectOptions,
    settings: &[variant::Setting],
) -> Vec<Check> {
    let mut conn = PgConn::connect_pinned(opts).await;
    let mut checks = Vec::new();
    for s in settings {
        let sql = format!(
            "SELECT setting, coalesce(unit, ''), current_setting(name) FROM pg_settings WHERE name = {}",
            literal(&s.name.replace('-', "_").to_ascii_lowercase())
        );
        let row = match &mut conn {
            Ok(c) => c.query_rows(&sql).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let (seen, ok, note) = match row.as_ref().map(|r| r.first()) {
            Ok(Some(r)) => {
                let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
                let (setting, unit, shown) = (get(0), get(1), get(2));
                let ok = variant::same_value(&s.value, &shown)
                    || same_in_unit(&s.value, &setting, &unit);
                let note = (!ok).then(|| format!("the server runs with {}={shown}", s.name));
                (shown, ok, note)
            }
            Ok(None) => (
                String::new(),
                false,
                Some(format!("PostgreSQL has no setting {}", s.name)),
            ),
            Err(e) => (
                String::new(),
                false,
                Some(format!("cannot read it back: {e}")),
            ),
        };
        checks.push(Check {
            axis: "setting".into(),
            wanted: format!("{}={}", s.name, s.value),
            seen,
            ok,
            note,
        });
    }
    if let Ok(c) = conn {
        c.quit().await;
    }
    checks
}

/// `wanted` as PostgreSQL reads it ("1GB", "250ms", or a bare number in the setting's unit)
/// against pg_settings' `setting` in `unit` ("8kB", "kB", "ms", "s", "min", or none).
pub(crate) fn same_in_unit(wanted: &str, setting: &str, unit: &str) -> bool {
    let Ok(have) = setting.trim().parse::<f64>() else {
        return false;
    };
    let w = wanted.trim();
    let split = w
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(w.len());
    let (num, suffix) = (&w[..split], w[split..].trim());
    let Ok(num) = num.parse::<f64>() else {
        return false;
    };
    if suffix.is_empty() {
        return num == have;
    }
    match (unit_base(suffix), unit_base(unit)) {
        (Some((kind_w, base_w)), Some((kind_u, base_u))) if kind_w == kind_u => {
            (num * base_w - have * base_u).abs() < 0.5
        }
        _ => false,
    }
}

/// A unit as (kind, multiple of the kind's base: bytes or microseconds); "8kB" is 8192 bytes.
fn unit_base(unit: &str) -> Option<(u8, f64)> {
    let split = unit
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(unit.len());
    let count = if split == 0 {
        1.0
    } else {
        unit[..split].parse::<f64>().ok()?
    };
    let b = match &unit[split..] {
        "B" => (0, 1.0),
        "kB" => (0, 1024.0),
        "MB" => (0, 1048576.0),
        "GB" => (0, 1073741824.0),
        "TB" => (0, 1099511627776.0),
        "us" => (1, 1.0),
        "ms" => (1, 1e3),
        "s" => (1, 1e6),
        "min" => (1, 6e7),
        "h" => (1, 3.6e9),
        "d" => (1, 8.64e10),
        _ => return None,
    };
    Some((b.0, b.1 * count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_in_the_settings_unit() {
        assert!(same_in_unit("1GB", "131072", "8kB"));
        assert!(same_in_unit("131072", "131072", "8kB"));
        assert!(!same_in_unit("1GB", "16384", "8kB"));
        assert!(same_in_unit("2s", "2000", "ms"));
        assert!(same_in_unit("64MB", "65536", "kB"));
        assert!(!same_in_unit("64", "65536", "kB"));
        assert!(!same_in_unit("2s", "2048", "kB"));
    }

    #[test]
    fn quoting_doubles_quotes() {
        assert_eq!(literal("a'b"), "'a''b'");
        assert_eq!(ident("x\"y"), "\"x\"\"y\"");
    }
}
