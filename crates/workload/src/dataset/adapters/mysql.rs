//! MySQL's and MariaDB's statements for the ownership rules. Tables have no owners here:
//! what proves a table bakeoff's is its comment and its marker row, and what makes it safe
//! to write is that no trigger is on it. MariaDB shows any account that can use a table
//! its triggers' names (10.11, checked by `owned.rs`'s test with an account without
//! TRIGGER); MySQL shows them only to an account with the TRIGGER privilege, so there a
//! table is refused when the account lacks it.
//!
//! Every function these statements call is a built-in (`BUILTINS`, checked by a test): on
//! MySQL a stored function cannot take a built-in's name when called unqualified, so
//! nothing another account creates runs from them. Values travel as prepared-statement
//! parameters; answers come back through session variables, as text.

use bakeoff_driver::{Conn, ConnectOptions, DriverError, Outcome, Param};

use crate::dataset::owner::{marker_pairs, Facts, Owner};
use crate::dataset::progress::DatasetError;
use crate::dataset::token::{Token, MARKER_COMMENT, MARKER_TABLE};

/// The functions the statements below call, all built-ins.
#[cfg(test)]
const BUILTINS: &[&str] = &[
    "DATABASE",
    "GROUP_CONCAT",
    "CURRENT_USER",
    "CONCAT",
    "SUBSTRING_INDEX",
    "COUNT",
];

const FACTS: &str = "SET @bakeoff_type = (SELECT table_type FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?), \
    @bakeoff_comment = (SELECT table_comment FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?), \
    @bakeoff_triggers = (SELECT GROUP_CONCAT(trigger_name ORDER BY trigger_name SEPARATOR ', ') FROM information_schema.triggers WHERE event_object_schema = DATABASE() AND event_object_table = ?)";
const FACTS_READ: &str = "SELECT @bakeoff_type, @bakeoff_comment, @bakeoff_triggers";
/// The account as information_schema's GRANTEE columns write it: `'user'@'host'`.
const GRANTEE: &str = "CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')";
const WHERE_AM_I: &str = "SELECT DATABASE()";
const TRIGGER_GRANTS: &str = "SET @bakeoff_trigger = (SELECT COUNT(*) FROM (\
    SELECT 1 FROM information_schema.user_privileges WHERE grantee = @bakeoff_grantee AND privilege_type = 'TRIGGER' \
    UNION ALL SELECT 1 FROM information_schema.schema_privileges WHERE grantee = @bakeoff_grantee AND table_schema = DATABASE() AND privilege_type = 'TRIGGER' \
    UNION ALL SELECT 1 FROM information_schema.table_privileges WHERE grantee = @bakeoff_grantee AND table_schema = DATABASE() AND table_name = ? AND privilege_type = 'TRIGGER') g)";
const TOKEN_COLUMN: &str = "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'bakeoff_tables' AND column_name = 'token'";
const MARKER_ROWS: &str =
    "SELECT table_name, token FROM bakeoff_tables ORDER BY created_at, table_name";
const FORGET: &str = "DELETE FROM bakeoff_tables WHERE table_name = ? AND token = ?";
const RECORD: &str = "REPLACE INTO bakeoff_tables (table_name, workload, token) VALUES (?, ?, ?)";

/// A connection into one database, for the rules.
pub struct MyOwner {
    pub conn: Conn,
    database: String,
    /// MariaDB: every trigger's name is visible to an account that can use its table.
    mariadb: bool,
}

impl MyOwner {
    pub async fn connect(opts: &ConnectOptions) -> Result<MyOwner, DatasetError> {
        let conn = Conn::connect(opts).await?;
        MyOwner::on(conn).await
    }

    pub async fn on(mut conn: Conn) -> Result<MyOwner, DatasetError> {
        let database = first(conn.query_rows(WHERE_AM_I).await?).unwrap_or_default();
        let mariadb = conn.server_version().contains("MariaDB");
        if !mariadb {
            conn.exec(&format!("SET @bakeoff_grantee = {GRANTEE}"))
                .await?;
        }
        Ok(MyOwner {
            conn,
            database,
            mariadb,
        })
    }

    /// Whether this account would see `table`'s triggers.
    async fn sees_triggers(&mut self, table: &str) -> Result<bool, DatasetError> {
        if self.mariadb {
            return Ok(true);
        }
        execute(&mut self.conn, TRIGGER_GRANTS, &[table]).await?;
        let n = first(self.conn.query_rows("SELECT @bakeoff_trigger").await?);
        Ok(n.is_some_and(|n| n != "0"))
    }
}

impl Owner for MyOwner {
    fn place(&self) -> String {
        format!("database {}", bakeoff_driver::printable(&self.database))
    }

    fn elsewhere(&self) -> &'static str {
        "drop or rename it yourself, or point bakeoff at a database no other account can write to (--mysql-db, or mysql://HOST/OTHER_DB)"
    }

    /// No owners here: an account with DROP on the database can drop any table in it, as it
    /// always could.
    async fn place_refusal(&mut self) -> Result<Option<String>, DatasetError> {
        Ok(None)
    }

    async fn facts(&mut self, table: &str) -> Result<Option<Facts>, DatasetError> {
        execute(&mut self.conn, FACTS, &[table, table, table]).await?;
        let row = self.conn.query_rows(FACTS_READ).await?;
        let mut row = row.into_iter().next().unwrap_or_default().into_iter();
        let (kind, comment, triggers) = (
            row.next().flatten(),
            row.next().flatten(),
            row.next().flatten(),
        );
        let Some(kind) = kind else {
            return Ok(None);
        };
        Ok(Some(Facts {
            comment,
            foreign_owner: None,
            code: triggers
                .map(|t| t.split(", ").map(bakeoff_driver::printable).collect())
                .unwrap_or_default(),
            kind: (kind != "BASE TABLE").then(|| bakeoff_driver::printable(&kind.to_lowercase())),
            triggers_hidden: !self.sees_triggers(table).await?,
        }))
    }

    async fn create_marker(&mut self) -> Result<(), DatasetError> {
        let sql = format!(
            "CREATE TABLE {MARKER_TABLE} (table_name VARCHAR(64) NOT NULL PRIMARY KEY, \
             workload VARCHAR(64) NOT NULL, token CHAR(16) NOT NULL, \
             created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) COMMENT='{MARKER_COMMENT}'"
        );
        self.conn.exec(&sql).await?;
        Ok(())
    }

    async fn marker_has_tokens(&mut self) -> Result<bool, DatasetError> {
        Ok(!self.conn.query_rows(TOKEN_COLUMN).await?.is_empty())
    }

    async fn marker_rows(&mut self) -> Result<Vec<(String, String)>, DatasetError> {
        let rows = self.conn.query_rows(MARKER_ROWS).await?;
        Ok(marker_pairs(rows))
    }

    async fn forget(&mut self, table: &str, token: &str) -> Result<(), DatasetError> {
        Ok(execute(&mut self.conn, FORGET, &[table, token]).await?)
    }

    /// The row first: a crash in between leaves a row for a missing table (harmless), never
    /// a table without its row.
    async fn create_marked(
        &mut self,
        table: &str,
        create: &str,
        workload: &str,
        token: &Token,
    ) -> Result<(), DatasetError> {
        execute(&mut self.conn, RECORD, &[table, workload, token.as_str()]).await?;
        self.conn
            .exec(&format!("{create}{}", token.table_option()))
            .await?;
        Ok(())
    }

    /// A rename to a name that carries the token: no one can put another table under it.
    async fn hold(&mut self, table: &str, fence: &str) -> Result<String, DatasetError> {
        self.conn
            .exec(&format!("RENAME TABLE `{table}` TO `{fence}`"))
            .await?;
        Ok(fence.to_string())
    }

    async fn drop_held(&mut self, held: &str) -> Result<(), DatasetError> {
        self.conn.exec(&format!("DROP TABLE `{held}`")).await?;
        Ok(())
    }

    async fn release(&mut self, table: &str, held: &str) -> Result<(), DatasetError> {
        self.conn
            .exec(&format!("RENAME TABLE `{held}` TO `{table}`"))
            .await?;
        Ok(())
    }

    async fn is_empty(&mut self, table: &str) -> Result<bool, DatasetError> {
        let sql = format!("SELECT 1 FROM `{table}` LIMIT 1");
        Ok(self.conn.query_rows(&sql).await?.is_empty())
    }

    async fn quit(self) {
        self.conn.quit().await
    }
}

fn first(rows: Vec<Vec<Option<String>>>) -> Option<String> {
    rows.into_iter().next()?.into_iter().next().flatten()
}

/// A statement with its values as parameters of a server-side prepared statement.
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

    /// Every `NAME(` in the statements above that is not a type or a keyword is a built-in.
    #[test]
    fn the_statements_call_only_builtins() {
        let not_calls = ["VARCHAR", "CHAR", "VALUES", "KEY", "FROM", "IN", "TABLES"];
        let texts = [
            FACTS,
            FACTS_READ,
            GRANTEE,
            WHERE_AM_I,
            TRIGGER_GRANTS,
            TOKEN_COLUMN,
            MARKER_ROWS,
            FORGET,
            RECORD,
        ];
        let mut called = std::collections::BTreeSet::new();
        for text in texts {
            let bytes = text.as_bytes();
            for (i, _) in text.match_indices('(') {
                let start = bytes[..i]
                    .iter()
                    .rposition(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                    .map_or(0, |p| p + 1);
                let name = text[start..i].to_ascii_uppercase();
                if !name.is_empty() && !not_calls.contains(&name.as_str()) {
                    called.insert(name);
                }
            }
        }
        let builtins: std::collections::BTreeSet<String> =
            BUILTINS.iter().map(|s| s.to_string()).collect();
        assert_eq!(called, builtins);
    }
}
