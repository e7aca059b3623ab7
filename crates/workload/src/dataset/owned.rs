//! What bakeoff owns in a schema it may share with other accounts, and the proof it asks for
//! before it drops anything.
//!
//! Each prepare draws a random token and writes it twice: on each table it creates (its
//! COMMENT, `bakeoff:<token>`) and in that table's row of the marker table. A drop takes
//! only names bakeoff makes (`sbtestN`), checks the token on the table, renames the table to
//! a name carrying the token, checks again on the renamed table, and drops that: nothing
//! between the check and the drop can put another table under the dropped name. Values
//! travel as prepared-statement parameters, never inside SQL text.
//!
//! What this stops: a row planted in the marker table (it names a table that carries no such
//! token, or a name bakeoff never makes), and a user's own table of the same name. What it
//! cannot stop: an account with ALTER on the user's table, which can write the token onto it.

use bakeoff_driver::{Conn, DriverError, Outcome, Param};

use super::progress::{DatasetError, Progress};

pub const MARKER_TABLE: &str = "bakeoff_tables";
const COMMENT: &str = "bakeoff:";
/// The marker table's own comment: what makes a `bakeoff_tables` bakeoff's.
const MARKER_COMMENT: &str = "bakeoff marker";
/// The most tables a workload makes (sysbench's --tables is a 32-bit count; nobody loads more).
const MAX_TABLE: u32 = 1_000_000;

/// A prepare's random token: 16 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A fresh token from the kernel's random source.
    pub fn new() -> Result<Token, DatasetError> {
        bakeoff_driver::random_hex(8)
            .map(Token)
            .map_err(|e| DatasetError::Thread(format!("a random token: {e}")))
    }

    /// A token as the marker table holds it; anything but 16 lowercase hex digits is none.
    pub fn parse(s: &str) -> Option<Token> {
        let ok = s.len() == 16 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
        ok.then(|| Token(s.to_string()))
    }

    /// The token itself: 16 hex digits, nothing to quote.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The table COMMENT that carries it.
    pub fn comment(&self) -> String {
        format!("{COMMENT}{}", self.0)
    }

    /// The table option that writes it onto a table (the token is hex: nothing to quote).
    pub fn table_option(&self) -> String {
        format!(" COMMENT='{}'", self.comment())
    }
}

/// The number N of a name bakeoff creates, `sbtestN` (no leading zeros); None for any other.
pub fn workload_table(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("sbtest")?;
    let n: u32 = digits.parse().ok()?;
    ((1..=MAX_TABLE).contains(&n) && digits == n.to_string()).then_some(n)
}

/// The marker table, made if missing; one written before tokens is refused with what to do.
pub(super) async fn ensure_marker(conn: &mut Conn) -> Result<(), DatasetError> {
    conn.exec(&format!(
        "CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (table_name VARCHAR(64) NOT NULL PRIMARY KEY, \
         workload VARCHAR(64) NOT NULL, token CHAR(16) NOT NULL, \
         created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) COMMENT='{MARKER_COMMENT}'"
    ))
    .await?;
    refuse_old_marker(conn).await
}

/// A marker table without tokens (from a bakeoff before them) proves nothing about its tables.
async fn refuse_old_marker(conn: &mut Conn) -> Result<(), DatasetError> {
    let has = conn
        .query_rows(&format!(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '{MARKER_TABLE}' AND column_name = 'token'"
        ))
        .await?;
    match has.is_empty() {
        true => Err(DatasetError::OldMarker),
        false => Ok(()),
    }
}

/// Record `name` as this prepare's, before it is created: a crash in between leaves a row for
/// a missing table (harmless), never a table without its row.
pub(super) async fn record(
    conn: &mut Conn,
    name: &str,
    workload: &str,
    token: &Token,
) -> Result<(), DatasetError> {
    let sql = format!("REPLACE INTO {MARKER_TABLE} (table_name, workload, token) VALUES (?, ?, ?)");
    run(conn, &sql, &[name, workload, &token.0]).await
}

/// Whether `name` exists in the connection's database.
pub(super) async fn table_exists(conn: &mut Conn, name: &str) -> Result<bool, DriverError> {
    Ok(comment_of(conn, name).await?.is_some())
}

/// Drop every table the marker table records whose token proves it bakeoff's, then the
/// marker table once empty. Rows that prove nothing are removed and their tables left as
/// they are, each said. The names dropped.
pub(super) async fn drop_marked(
    conn: &mut Conn,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let mut dropped = Vec::new();
    if !table_exists(conn, MARKER_TABLE).await? {
        return Ok(dropped);
    }
    refuse_old_marker(conn).await?;
    let marked = conn
        .query_rows(&format!(
            "SELECT table_name, token FROM {MARKER_TABLE} ORDER BY created_at, table_name"
        ))
        .await?;
    for row in marked {
        let mut row = row.into_iter().map(Option::unwrap_or_default);
        let (name, token) = (
            row.next().unwrap_or_default(),
            row.next().unwrap_or_default(),
        );
        let proof = workload_table(&name).and(Token::parse(&token));
        match proof {
            None => progress(Progress::LeftAlone {
                table: name.clone(),
                why: "its marker row names no table bakeoff creates",
            }),
            Some(t) => match drop_fenced(conn, &name, &t).await? {
                Fence::Dropped => {
                    progress(Progress::Dropping(name.clone()));
                    dropped.push(name.clone());
                }
                Fence::Missing => {}
                Fence::NotOurs => progress(Progress::LeftAlone {
                    table: name.clone(),
                    why: "it does not carry the token of bakeoff's marker row",
                }),
            },
        }
        let sql = format!("DELETE FROM {MARKER_TABLE} WHERE table_name = ? AND token = ?");
        run(conn, &sql, &[&name, &token]).await?;
    }
    drop_marker(conn).await?;
    Ok(dropped)
}

/// What a fenced drop found.
#[derive(Debug, PartialEq, Eq)]
enum Fence {
    Dropped,
    Missing,
    NotOurs,
}

/// Drop `name` only if it carries `token`, checked again after renaming it to a name that
/// carries the token (a table checked is the table dropped).
async fn drop_fenced(conn: &mut Conn, name: &str, token: &Token) -> Result<Fence, DatasetError> {
    match comment_of(conn, name).await? {
        None => return Ok(Fence::Missing),
        Some(c) if c != token.comment() => return Ok(Fence::NotOurs),
        Some(_) => {}
    }
    let fenced = format!("bakeoff_drop_{}_{name}", token.0);
    conn.exec(&format!("RENAME TABLE `{name}` TO `{fenced}`"))
        .await?;
    if comment_of(conn, &fenced).await? != Some(token.comment()) {
        // Swapped between the check and the rename: put it back as it was.
        conn.exec(&format!("RENAME TABLE `{fenced}` TO `{name}`"))
            .await?;
        return Ok(Fence::NotOurs);
    }
    conn.exec(&format!("DROP TABLE `{fenced}`")).await?;
    Ok(Fence::Dropped)
}

/// The marker table, once no row is left in it and it is bakeoff's (by its comment); renamed
/// first, as the tables are, so that a row written meanwhile is seen.
async fn drop_marker(conn: &mut Conn) -> Result<(), DatasetError> {
    if comment_of(conn, MARKER_TABLE).await?.as_deref() != Some(MARKER_COMMENT) {
        return Ok(());
    }
    let fenced = format!("bakeoff_drop_{}_{MARKER_TABLE}", Token::new()?.0);
    conn.exec(&format!("RENAME TABLE {MARKER_TABLE} TO `{fenced}`"))
        .await?;
    let left = conn
        .query_rows(&format!("SELECT 1 FROM `{fenced}` LIMIT 1"))
        .await?;
    let sql = match left.is_empty() {
        true => format!("DROP TABLE `{fenced}`"),
        false => format!("RENAME TABLE `{fenced}` TO {MARKER_TABLE}"),
    };
    conn.exec(&sql).await?;
    Ok(())
}

/// A table's COMMENT in the connection's database; None when there is no such table. The
/// name goes as a parameter; the answer comes back through a session variable, as text.
async fn comment_of(conn: &mut Conn, name: &str) -> Result<Option<String>, DriverError> {
    let sql = "SET @bakeoff_comment = (SELECT table_comment FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?)";
    execute(conn, sql, &[name]).await?;
    let found = conn.query_rows("SELECT @bakeoff_comment").await?;
    Ok(found
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten()))
}

/// A statement with its values as parameters of a server-side prepared statement.
async fn run(conn: &mut Conn, sql: &str, values: &[&str]) -> Result<(), DatasetError> {
    execute(conn, sql, values).await.map_err(Into::into)
}

async fn execute(conn: &mut Conn, sql: &str, values: &[&str]) -> Result<(), DriverError> {
    let stmt = conn.prepare(sql).await?;
    let params: Vec<Param<'_>> = values.iter().map(|v| Param::Str(v.as_bytes())).collect();
    let outcome = conn.execute(&stmt, &params).await;
    conn.close_stmt(&stmt).await?;
    match outcome? {
        Outcome::Err(e) => Err(DriverError::Server(e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sbtest_names_are_bakeoffs() {
        assert_eq!(workload_table("sbtest1"), Some(1));
        assert_eq!(workload_table("sbtest250"), Some(250));
        for other in [
            "customers",
            "sbtest0",
            "sbtest01",
            "sbtest1x",
            "sbtest",
            "sbtest1`; DROP",
        ] {
            assert_eq!(workload_table(other), None, "{other}");
        }
    }

    #[test]
    fn tokens_are_fresh_hex_and_nothing_else_parses() {
        let (a, b) = (Token::new().unwrap(), Token::new().unwrap());
        assert_ne!(a, b);
        assert_eq!(Token::parse(&a.0), Some(a.clone()));
        for bad in [
            "",
            "0123",
            "0123456789abcdeg",
            "0123456789ABCDEF",
            "0123456789abcdef'",
        ] {
            assert_eq!(Token::parse(bad), None, "{bad}");
        }
        assert_eq!(a.table_option(), format!(" COMMENT='bakeoff:{}'", a.0));
    }
}
