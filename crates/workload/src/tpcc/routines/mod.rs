//! TPC-C's five transactions as the server's own routines, as HammerDB runs TPROC-C: stored
//! procedures on MariaDB and MySQL (`mysql.rs`), PL/pgSQL functions on PostgreSQL
//! (`pgsql.rs`). A terminal then sends one call per transaction, its inputs drawn by the
//! same deck and generators as the client-side statements, so the audit and the checks are
//! the same; only where the transaction's logic runs changes.
//!
//! `bakeoff tpcc prepare` creates them beside the tables; a run with `--procedures` first
//! verifies that each one is there, is bakeoff's text, runs with the caller's rights and
//! (PostgreSQL) belongs to the caller: a routine someone else put in its place under the
//! same name is refused, not called. Cleanup drops them with the tables.

mod calls;
mod mysql;
mod pgsql;

use bakeoff_driver::{ConnectOptions, Connection, DriverError, Outcome, Param, Protocol, RowBuf};

use crate::dataset::DatasetError;

/// The calls, one per transaction, in the order of the transaction types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Call {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

/// Every call, in order.
pub const ALL: [Call; 5] = [
    Call::NewOrder,
    Call::Payment,
    Call::OrderStatus,
    Call::Delivery,
    Call::StockLevel,
];

/// SQLSTATE of the New-Order that meets its unused item (2.4.1.4) and rolls back.
pub const UNUSED_ITEM: &str = "45000";
/// SQLSTATE of a row TPC-C's population guarantees that is not there.
pub const MISSING: &str = "45001";

/// (name, parameters, body) of each routine for `protocol`, tables named after `place`.
fn routines(protocol: Protocol, place: &str) -> Vec<(&'static str, &'static str, String)> {
    let all = match protocol {
        Protocol::MySql => mysql::procedures(),
        Protocol::Postgres => pgsql::functions(),
    };
    all.into_iter()
        .map(|(n, p, body)| (n, p, body.replace('@', place)))
        .collect()
}

/// The CREATE statement of each routine (PostgreSQL's after `place`, `"schema".`).
pub fn create(protocol: Protocol, place: &str) -> Vec<String> {
    routines(protocol, place)
        .into_iter()
        .map(|(name, params, body)| match protocol {
            Protocol::MySql => {
                format!("CREATE PROCEDURE {name}({params}) MODIFIES SQL DATA SQL SECURITY INVOKER {body}")
            }
            Protocol::Postgres => format!(
                "CREATE FUNCTION {place}{name}({params}) RETURNS INT LANGUAGE plpgsql {} SECURITY INVOKER AS $bakeoff${body}$bakeoff$",
                volatility(name)
            ),
        })
        .collect()
}

/// A PostgreSQL function's volatility: Order-Status and Stock-Level only read, and a STABLE
/// function's statements all see the calling query's snapshot, so Order-Status reads its
/// customer, order and lines as of one moment (a VOLATILE one takes a snapshot per statement
/// at READ COMMITTED), as the client-side path's one statement does.
fn volatility(name: &str) -> &'static str {
    match name {
        "bakeoff_order_status" | "bakeoff_stock_level" => "STABLE",
        _ => "VOLATILE",
    }
}

/// The statements that drop each routine, whoever made it.
fn drop(protocol: Protocol, place: &str) -> Vec<String> {
    routines(protocol, place)
        .into_iter()
        .map(|(name, params, _)| match protocol {
            Protocol::MySql => format!("DROP PROCEDURE IF EXISTS {name}"),
            Protocol::Postgres => {
                // A function is named by its argument types.
                let types: Vec<&str> = params
                    .split(", ")
                    .map(|p| p.split_once(' ').map_or("", |(_, t)| t))
                    .collect();
                format!(
                    "DROP FUNCTION IF EXISTS {place}{name}({})",
                    types.join(", ")
                )
            }
        })
        .collect()
}

/// Create every routine in `place` (`"schema".` on PostgreSQL, nothing on MySQL), each of
/// the account's own that a load before left dropped first. A routine of another account
/// under the name is neither dropped nor replaced: the CREATE fails, and the error says so.
pub async fn create_all(opts: &ConnectOptions, place: &str) -> Result<(), DatasetError> {
    for sql in owned_drops(opts, place)
        .await?
        .into_iter()
        .chain(create(opts.protocol, place))
    {
        crate::dataset::exec_once(opts, &sql).await?;
    }
    Ok(())
}

/// Drop the account's own routines from the database `opts` names (cleanup, after TPC-C's
/// tables); another account's under the same names stay.
pub async fn drop_all(opts: &ConnectOptions) -> Result<(), DatasetError> {
    let place = match opts.protocol {
        Protocol::MySql => String::new(),
        Protocol::Postgres => {
            // The schema the search path names first, as the load's (`own_place` reads it,
            // then pins the path).
            let mut c = bakeoff_driver::PgConn::connect(opts).await?;
            let place = c.own_place().await;
            c.quit().await;
            place?
        }
    };
    for sql in owned_drops(opts, &place).await? {
        crate::dataset::exec_once(opts, &sql).await?;
    }
    Ok(())
}

/// The DROP of each routine there that the account made (MySQL: its definer; PostgreSQL: its
/// owner).
async fn owned_drops(opts: &ConnectOptions, place: &str) -> Result<Vec<String>, DatasetError> {
    let names = name_list();
    let found = match opts.protocol {
        Protocol::MySql => {
            let mut c = bakeoff_driver::Conn::connect(opts).await?;
            let rows = c.query_rows(&format!("SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE' AND DEFINER = CURRENT_USER() AND ROUTINE_NAME IN {names}")).await;
            c.quit().await;
            rows?
        }
        Protocol::Postgres => {
            let mut c = bakeoff_driver::PgConn::connect_pinned(opts).await?;
            let rows = c.query_rows(&format!("SELECT p.proname FROM pg_catalog.pg_proc p WHERE p.pronamespace = {} AND p.proowner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) AND p.proname IN {names}", namespace(place))).await;
            c.quit().await;
            rows?
        }
    };
    let found: Vec<String> = found
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect();
    Ok(drop(opts.protocol, place)
        .into_iter()
        .zip(routines(opts.protocol, place))
        .filter(|(_, (name, _, _))| found.iter().any(|f| f == name))
        .map(|(sql, _)| sql)
        .collect())
}

/// The statement a terminal prepares for `call`, and its parameters' kinds (`i` integer, `t`
/// text, `m` money) as `sql::param_kinds` gives them.
pub fn call(protocol: Protocol, place: &str, call: Call) -> (String, &'static str) {
    let (name, kinds) = match call {
        Call::NewOrder => ("bakeoff_new_order", "iiiittti"),
        Call::Payment => ("bakeoff_payment", "iiiiitm"),
        Call::OrderStatus => ("bakeoff_order_status", "iiit"),
        Call::Delivery => ("bakeoff_delivery", "ii"),
        Call::StockLevel => ("bakeoff_stock_level", "iii"),
    };
    match protocol {
        Protocol::MySql => {
            let marks = vec!["?"; kinds.len()].join(", ");
            (format!("CALL {name}({marks})"), kinds)
        }
        Protocol::Postgres => {
            // Each value cast to the routine's own type: the driver binds integers as
            // BIGINT and money as a double, and a function is chosen by its types.
            let marks: Vec<&str> = kinds
                .bytes()
                .map(|k| match k {
                    b'i' => "?::INT",
                    b't' => "?::TEXT",
                    _ => "?::NUMERIC(6,2)",
                })
                .collect();
            (format!("SELECT {place}{name}({})", marks.join(", ")), kinds)
        }
    }
}

/// The routines' names, as an SQL list: `('bakeoff_new_order', ...)`.
fn name_list() -> String {
    let names: Vec<String> = routines(Protocol::MySql, "")
        .iter()
        .map(|(n, _, _)| format!("'{n}'"))
        .collect();
    format!("({})", names.join(", "))
}

/// The schema `place` names (`"schema".`), as a literal PostgreSQL resolves to its oid.
fn namespace(place: &str) -> String {
    format!(
        "pg_catalog.to_regnamespace({})",
        crate::dataset::pg_lit(place.trim_end_matches('.'))
    )
}

/// Whether every routine is there as bakeoff creates it and is the caller's own: its text,
/// its caller's rights (not a definer's), made by the caller (MySQL: the definer; PostgreSQL:
/// the owner) and, on MySQL, its parameters' types. Else what is wrong, for an error that says
/// what to do. An account that may alter routines in the database can still replace one
/// after this look: on a shared MySQL server, `--procedures` trusts those accounts.
pub async fn verify<C: Connection>(
    conn: &mut C,
    protocol: Protocol,
    place: &str,
) -> Result<Result<(), String>, DriverError> {
    let names = name_list();
    let sql = match protocol {
        Protocol::MySql => format!(
            "SELECT r.ROUTINE_NAME, r.ROUTINE_DEFINITION, r.SECURITY_TYPE = 'INVOKER' AND r.ROUTINE_TYPE = 'PROCEDURE' AND r.DEFINER = CURRENT_USER(), (SELECT GROUP_CONCAT(LOWER(p.PARAMETER_NAME), ' ', LOWER(p.DTD_IDENTIFIER) ORDER BY p.ORDINAL_POSITION SEPARATOR ', ') FROM information_schema.PARAMETERS p WHERE p.SPECIFIC_SCHEMA = r.ROUTINE_SCHEMA AND p.SPECIFIC_NAME = r.ROUTINE_NAME AND p.ROUTINE_TYPE = 'PROCEDURE') FROM information_schema.ROUTINES r WHERE r.ROUTINE_SCHEMA = DATABASE() AND r.ROUTINE_NAME IN {names}"
        ),
        Protocol::Postgres => format!(
            "SELECT p.proname, p.prosrc, NOT p.prosecdef AND p.proowner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) FROM pg_catalog.pg_proc p WHERE p.pronamespace = {} AND p.proname IN {names}",
            namespace(place)
        ),
    };
    let stmt = conn.prepare(&sql).await?;
    let mut rows = RowBuf::new();
    if let Outcome::Err(e) = conn.execute_into(&stmt, &[], &mut rows).await? {
        return Err(DriverError::Server(e));
    }
    let mut problems = Vec::new();
    for (name, params, body) in routines(protocol, place) {
        let found: Vec<usize> = (0..rows.rows())
            .filter(|r| rows.bytes(*r, 0) == Some(name.as_bytes()))
            .collect();
        let own = |r: usize| matches!(rows.int(r, 2), Some(1)) || rows.bytes(r, 2) == Some(b"t");
        let typed = |r: usize| {
            protocol == Protocol::Postgres
                || rows.bytes(r, 3).map(types) == Some(params.to_lowercase())
        };
        match found[..] {
            [] => problems.push(format!("{name} is missing")),
            // MySQL shows a routine's text only to its definer (and the privileged).
            [r] if rows.bytes(r, 1).is_none() => {
                problems.push(format!("{name} was made by another account"))
            }
            [r] if rows.bytes(r, 1).map(|b| b.trim_ascii()) != Some(body.trim().as_bytes()) => {
                problems.push(format!("{name} is not the text bakeoff creates"))
            }
            [r] if !own(r) => problems.push(format!(
                "{name} runs with its definer's rights or belongs to another account"
            )),
            [r] if !typed(r) => problems.push(format!(
                "{name} does not take the parameters bakeoff creates it with"
            )),
            [_] => {}
            _ => problems.push(format!("{name} is there more than once")),
        }
    }
    Ok(match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("; ")),
    })
}

/// MySQL's parameter list as `information_schema.PARAMETERS` gives it, in the words bakeoff
/// creates it with: MariaDB writes INT as `int(11)`.
fn types(list: &[u8]) -> String {
    String::from_utf8_lossy(list).replace("int(11)", "int")
}

/// The values of New-Order's call: its lines' items, supply warehouses and quantities, each
/// a comma-separated list, written into `buf` (the three lists one after another) in the
/// order given; returns where each ends.
pub fn line_lists(lines: &[super::input::Line], buf: &mut Vec<u8>) -> [usize; 3] {
    use std::io::Write;
    buf.clear();
    let mut ends = [0; 3];
    for (k, end) in ends.iter_mut().enumerate() {
        for (i, l) in lines.iter().enumerate() {
            let v = [l.item, l.supply_w, l.quantity][k];
            let _ = write!(buf, "{}{v}", if i == 0 { "" } else { "," });
        }
        *end = buf.len();
    }
    ends
}

/// Sample values of each kind, for the driver to type a statement when it prepares it.
pub fn samples(kinds: &str) -> Vec<Param<'static>> {
    kinds
        .bytes()
        .map(|k| match k {
            b'm' => Param::Double(0.0),
            b't' => Param::Str(b""),
            _ => Param::Int(0),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_has_as_many_values_as_its_routine_has_parameters() {
        for p in [Protocol::MySql, Protocol::Postgres] {
            let all = routines(p, "\"s\".");
            for (k, c) in ALL.into_iter().enumerate() {
                let (text, kinds) = call(p, "\"s\".", c);
                assert_eq!(text.matches('?').count(), kinds.len(), "{text}");
                assert_eq!(all[k].1.split(", ").count(), kinds.len(), "{}", all[k].0);
                assert!(text.contains(all[k].0), "{text}");
            }
            assert!(all.iter().all(|(_, _, b)| !b.contains('@')));
        }
        assert_eq!(
            drop(Protocol::Postgres, "\"s\".")[3],
            "DROP FUNCTION IF EXISTS \"s\".bakeoff_delivery(INT, INT)"
        );
    }

    #[test]
    fn line_lists_are_comma_separated_in_order() {
        use super::super::input::Line;
        let lines = [
            Line {
                item: 7,
                supply_w: 1,
                quantity: 5,
            },
            Line {
                item: 3,
                supply_w: 2,
                quantity: 10,
            },
        ];
        let mut buf = Vec::new();
        let ends = line_lists(&lines, &mut buf);
        assert_eq!(&buf[..ends[0]], b"7,3");
        assert_eq!(&buf[ends[0]..ends[1]], b"1,2");
        assert_eq!(&buf[ends[1]..ends[2]], b"5,10");
    }
}
