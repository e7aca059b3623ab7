//! PostgreSQL's statements for the ownership rules, on a connection whose search path is
//! pinned to pg_catalog (`PgConn::pin_search_path`): every function and operator they name
//! is pg_catalog's, every table is named with its schema. The schema is the one the user's
//! search path creates in (`current_schema()` before the pin), where the workload's
//! unqualified names find the tables.
//!
//! A table's facts come from the catalogs: its kind, its owner against the session's role
//! (exactly: on 15 and older a role can grant itself to another, so membership proves
//! nothing), its comment, and its triggers (those PostgreSQL makes for foreign keys aside)
//! and rules. A drop is held by a lock in a transaction: checked again under the lock,
//! dropped, committed.

use bakeoff_driver::{ConnectOptions, DriverError, Outcome, Param, PgConn};

use crate::dataset::owner::{marker_pairs, Facts, Owner};
use crate::dataset::progress::DatasetError;
use crate::dataset::token::{Token, MARKER_COMMENT, MARKER_TABLE};

/// A connection into one schema, for the rules and for bakeoff's own dataset statements.
pub struct PgOwner {
    pub conn: PgConn,
    /// The schema, as PostgreSQL names it (unquoted).
    pub schema: String,
}

impl PgOwner {
    pub async fn connect(opts: &ConnectOptions) -> Result<PgOwner, DatasetError> {
        let mut conn = PgConn::connect(opts).await?;
        let schema = conn
            .query_value("SELECT pg_catalog.current_schema()")
            .await?;
        conn.pin_search_path().await?;
        let Some(schema) = schema else {
            conn.quit().await;
            return Err(DatasetError::Thread(
                "no schema on the connection's search path exists, so there is nowhere to make the tables: create one (CREATE SCHEMA AUTHORIZATION you), or set your role's search_path to one (ALTER ROLE you SET search_path = ...)".into(),
            ));
        };
        Ok(PgOwner { conn, schema })
    }

    /// `table` named with the schema, both quoted.
    pub fn qualified(&self, table: &str) -> String {
        format!("{}.{}", ident(&self.schema), ident(table))
    }
}

impl Owner for PgOwner {
    fn place(&self) -> String {
        format!("schema {}", bakeoff_driver::printable(&ident(&self.schema)))
    }

    fn elsewhere(&self) -> &'static str {
        "drop it as its owner, or point bakeoff at a database only your role can create in (postgresql://HOST/OTHER_DB), or give your role a schema of its own first on its search path (CREATE SCHEMA AUTHORIZATION you; ALTER ROLE you SET search_path = you)"
    }

    /// The schema's owner must be the session's role, a superuser, or pg_database_owner in a
    /// database the role owns (PostgreSQL 15's `public`).
    async fn place_refusal(&mut self) -> Result<Option<String>, DatasetError> {
        let sql = format!(
            "SELECT o.rolname, o.rolname = current_user OR o.rolsuper \
             OR (o.rolname = 'pg_database_owner' AND d.datdba = (SELECT oid FROM pg_roles WHERE rolname = current_user)), \
             (SELECT rolname FROM pg_roles WHERE oid = d.datdba) \
             FROM pg_namespace n JOIN pg_roles o ON o.oid = n.nspowner, pg_database d \
             WHERE n.nspname = {} AND d.datname = current_database()",
            lit(&self.schema)
        );
        let rows = self.conn.query_rows(&sql).await?;
        let mut row = rows.into_iter().next().unwrap_or_default().into_iter();
        let mut next = || row.next().flatten().map(|v| bakeoff_driver::printable(&v));
        let (owner, fine, database_owner) = (next(), next(), next());
        Ok(match (fine.as_deref(), owner) {
            (Some("t"), _) => None,
            (_, Some(o)) if o == "pg_database_owner" => Some(format!(
                "is owned by the database's owner, role \"{}\", who may drop any table in it and put another under its name",
                database_owner.unwrap_or_default()
            )),
            (_, o) => Some(format!(
                "is owned by role \"{}\", who may drop any table in it and put another under its name",
                o.unwrap_or_default()
            )),
        })
    }

    async fn facts(&mut self, table: &str) -> Result<Option<Facts>, DatasetError> {
        let sql = format!(
            "SELECT c.relkind, r.rolname, r.rolname = current_user, \
             obj_description(c.oid, 'pg_class'), \
             (SELECT string_agg(t.tgname::text, ', ' ORDER BY t.tgname) FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal), \
             (SELECT string_agg(w.rulename::text, ', ' ORDER BY w.rulename) FROM pg_rewrite w WHERE w.ev_class = c.oid) \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_roles r ON r.oid = c.relowner \
             WHERE n.nspname = {} AND c.relname = {}",
            lit(&self.schema),
            lit(table)
        );
        let rows = self.conn.query_rows(&sql).await?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let mut row = row.into_iter();
        let mut next = || row.next().flatten();
        let (kind, owner, mine, comment) = (next(), next(), next(), next());
        let code = [next(), next()]
            .into_iter()
            .flatten()
            .flat_map(|names| {
                let names = names.split(", ").map(bakeoff_driver::printable);
                names.collect::<Vec<_>>()
            })
            .collect();
        Ok(Some(Facts {
            comment,
            foreign_owner: (mine.as_deref() != Some("t"))
                .then(|| bakeoff_driver::printable(&owner.unwrap_or_default())),
            code,
            kind: relkind(kind.as_deref()),
            triggers_hidden: false,
        }))
    }

    async fn create_marker(&mut self) -> Result<(), DatasetError> {
        let marker = self.qualified(MARKER_TABLE);
        let sql = format!(
            "BEGIN; CREATE TABLE {marker} (table_name VARCHAR(64) NOT NULL PRIMARY KEY, \
             workload VARCHAR(64) NOT NULL, token CHAR(16) NOT NULL, \
             created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP); \
             COMMENT ON TABLE {marker} IS '{MARKER_COMMENT}'; COMMIT"
        );
        exec(&mut self.conn, &sql).await
    }

    async fn marker_has_tokens(&mut self) -> Result<bool, DatasetError> {
        let sql = format!(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = {}::regclass AND attname = 'token' AND NOT attisdropped",
            lit(&self.qualified(MARKER_TABLE))
        );
        Ok(self.conn.query_value(&sql).await?.as_deref() == Some("1"))
    }

    async fn marker_rows(&mut self) -> Result<Vec<(String, String)>, DatasetError> {
        let sql = format!(
            "SELECT table_name, token FROM {} ORDER BY created_at, table_name",
            self.qualified(MARKER_TABLE)
        );
        let rows = self.conn.query_rows(&sql).await?;
        Ok(marker_pairs(rows))
    }

    /// The row's values are any account's words: they travel as parameters, never inside SQL
    /// text (with standard_conforming_strings off a backslash would end a quoted literal).
    async fn forget(&mut self, table: &str, token: &str) -> Result<(), DatasetError> {
        let sql = format!(
            "DELETE FROM {} WHERE table_name = ? AND token = ?",
            self.qualified(MARKER_TABLE)
        );
        let stmt = self.conn.prepare(&sql).await?;
        let params = [Param::Str(table.as_bytes()), Param::Str(token.as_bytes())];
        let outcome = self.conn.execute(&stmt, &params).await;
        self.conn.close_stmt(&stmt).await?;
        match outcome? {
            Outcome::Err(e) => Err(DriverError::Server(e).into()),
            _ => Ok(()),
        }
    }

    /// One transaction: the table never exists without its row and its token.
    async fn create_marked(
        &mut self,
        table: &str,
        create: &str,
        workload: &str,
        token: &Token,
    ) -> Result<(), DatasetError> {
        let sql = format!(
            "BEGIN; INSERT INTO {} (table_name, workload, token) VALUES ({}, {}, {}) \
             ON CONFLICT (table_name) DO UPDATE SET token = EXCLUDED.token; {create}; \
             COMMENT ON TABLE {} IS {}; COMMIT",
            self.qualified(MARKER_TABLE),
            lit(table),
            lit(workload),
            lit(token.as_str()),
            self.qualified(table),
            lit(&token.comment()),
        );
        exec(&mut self.conn, &sql).await
    }

    /// A lock that nothing else can take until the transaction ends: the table checked next
    /// is the table dropped.
    async fn hold(&mut self, table: &str, _fence: &str) -> Result<String, DatasetError> {
        let sql = format!(
            "BEGIN; LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
            self.qualified(table)
        );
        exec(&mut self.conn, &sql).await?;
        Ok(table.to_string())
    }

    async fn drop_held(&mut self, held: &str) -> Result<(), DatasetError> {
        let sql = format!("DROP TABLE {}; COMMIT", self.qualified(held));
        exec(&mut self.conn, &sql).await
    }

    async fn release(&mut self, _table: &str, _held: &str) -> Result<(), DatasetError> {
        exec(&mut self.conn, "ROLLBACK").await
    }

    async fn is_empty(&mut self, table: &str) -> Result<bool, DatasetError> {
        let sql = format!(
            "SELECT NOT EXISTS (SELECT 1 FROM {})",
            self.qualified(table)
        );
        Ok(self.conn.query_value(&sql).await?.as_deref() == Some("t"))
    }

    async fn quit(self) {
        self.conn.quit().await
    }
}

/// What a relation that is not an ordinary table is, in words; None for a table.
fn relkind(kind: Option<&str>) -> Option<String> {
    let words = match kind? {
        "r" => return None,
        "v" => "a view",
        "m" => "a materialized view",
        "p" => "a partitioned table",
        "f" => "a foreign table",
        "S" => "a sequence",
        other => {
            let other = bakeoff_driver::printable(other);
            return Some(format!("a relation of kind '{other}'"));
        }
    };
    Some(words.to_string())
}

/// An identifier, quoted: safe whatever it holds.
pub fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A string literal that means `s` whatever `standard_conforming_strings` says: dollar
/// quoted, with a tag `s` does not contain.
pub fn lit(s: &str) -> String {
    // The closing tag must be the first place the tag stands: not inside `s`, nor begun by
    // its end (`x$b` then `$b$` would close at `$b$b$`).
    let mut tag = String::from("b");
    while format!("{s}${tag}$").find(&format!("${tag}$")) != Some(s.len()) {
        tag.push('o');
    }
    format!("${tag}${s}${tag}$")
}

/// A statement that must succeed; a failed transaction is rolled back before the error
/// returns, so the connection stays usable.
pub async fn exec(conn: &mut PgConn, sql: &str) -> Result<(), DatasetError> {
    match conn.query(sql).await? {
        Outcome::Err(e) => {
            conn.recover().await?;
            Err(DriverError::Server(e).into())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_names_hold_whatever_they_quote() {
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(lit("sbtest1"), "$b$sbtest1$b$");
        assert_eq!(lit("x$b"), "$bo$x$b$bo$");
        let odd = "x$b$y";
        let quoted = lit(odd);
        let tag = &quoted[..quoted[1..].find('$').unwrap() + 2];
        assert!(!odd.contains(tag), "{quoted}");
        assert!(quoted.ends_with(tag));
    }
}
