//! What the lab asks a running server over SQL: is it ready (and which version), its global
//! variables, and each setting's running value.

use bakeoff_driver::{Conn, ConnectOptions};

use crate::adapters::family::runtime;
use crate::variant::{self, Check};

pub(crate) async fn probe(opts: &ConnectOptions) -> Result<String, String> {
    let mut c = Conn::connect(opts).await.map_err(|e| e.to_string())?;
    let rows = c
        .query_rows("SELECT 1, VERSION()")
        .await
        .map_err(|e| e.to_string())?;
    let version = rows
        .first()
        .and_then(|r| r.get(1).cloned().flatten())
        .unwrap_or_default();
    c.quit().await;
    Ok(version)
}

/// SHOW GLOBAL VARIABLES of the server at `opts` (empty when it does not answer): the
/// effective settings recorded with a run.
pub fn global_variables(opts: &ConnectOptions) -> std::collections::BTreeMap<String, String> {
    if opts.protocol == bakeoff_driver::Protocol::Postgres {
        return runtime().block_on(crate::adapters::pgsql::settings(opts));
    }
    runtime()
        .block_on(async {
            Conn::connect(opts)
                .await
                .ok()?
                .global_variables()
                .await
                .ok()
        })
        .unwrap_or_default()
}

/// A global variable's value now.
async fn global(c: &mut Conn, name: &str) -> Result<String, String> {
    let rows = c
        .query_rows(&format!("SELECT @@GLOBAL.{name}"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .unwrap_or_else(|| "NULL".into()))
}

/// Options whose variable kept an older name in some versions: `--transaction-isolation`
/// sets `tx_isolation` in MariaDB before 11.1 and MySQL before 8.0.
fn older_name(option: &str) -> Option<&'static str> {
    match option {
        "transaction_isolation" => Some("tx_isolation"),
        "transaction_read_only" => Some("tx_read_only"),
        _ => None,
    }
}

/// Each setting against its running global value (the server may quietly lower a value, as
/// max_connections under a low file limit).
pub(crate) async fn check_settings(
    opts: &ConnectOptions,
    settings: &[variant::Setting],
) -> Vec<Check> {
    let mut conn = Conn::connect(opts).await;
    let mut checks = Vec::new();
    for s in settings {
        let seen = match &mut conn {
            Ok(c) => {
                let mut seen = global(c, &s.name).await;
                // The option's older variable name (MariaDB before 11.1, MySQL 5.7).
                if let (Err(e), Some(old)) = (&seen, older_name(&s.name)) {
                    if e.contains("1193") {
                        seen = global(c, old).await;
                    }
                }
                seen
            }
            Err(e) => Err(e.to_string()),
        };
        let (seen, ok, note) = match seen {
            Ok(v) => {
                let ok = variant::same_value(&s.value, &v);
                let note = (!ok).then(|| format!("the server runs with {}={v}", s.name));
                (v, ok, note)
            }
            Err(e) if e.contains("1193") => (
                String::new(),
                false,
                Some(format!("the server has no variable {}: it took the option at start and ignores it (removed in this version?); options that are not variables go in --server-option", s.name)),
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
    checks
}
