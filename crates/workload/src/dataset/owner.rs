//! What each engine supplies to the ownership rules (`owned.rs`): its statements for reading
//! a table's facts, marking, holding and dropping, and nothing of the rules themselves. The
//! engines' own are in `adapters/`; a new engine is a new file there.

use super::progress::DatasetError;
use super::token::Token;

/// What one table shows of who made it and whose code runs when it is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Its comment: `bakeoff:<token>` on bakeoff's tables, `bakeoff marker` on the marker.
    pub comment: Option<String>,
    /// The role that owns it, where that is not exactly the session's role (PostgreSQL; MySQL
    /// has no owners).
    pub foreign_owner: Option<String>,
    /// Triggers and rules on it, by name: code that runs as whoever writes (or reads, for a
    /// rule) the table. bakeoff creates none.
    pub code: Vec<String>,
    /// Not an ordinary table: what it is (a view, a partitioned or foreign table).
    pub kind: Option<String>,
    /// This account cannot see the table's triggers (MySQL without the TRIGGER privilege).
    pub triggers_hidden: bool,
}

/// One engine's statements on the tables of one place (a PostgreSQL schema, a MySQL
/// database), on one connection.
#[allow(async_fn_in_trait)]
pub trait Owner {
    /// Where the tables are, for messages: `schema "public"`, `database sbtest`.
    fn place(&self) -> String;
    /// What to do instead, for a refusal: how to point bakeoff elsewhere on this engine.
    fn elsewhere(&self) -> &'static str;
    /// Why the place itself will not do, or None: another role that owns it (PostgreSQL: a
    /// schema's owner may drop any table in it and put another under its name).
    async fn place_refusal(&mut self) -> Result<Option<String>, DatasetError>;
    /// The table's facts; None when there is no table of that name here.
    async fn facts(&mut self, table: &str) -> Result<Option<Facts>, DatasetError>;
    /// Make the marker table (none is there).
    async fn create_marker(&mut self) -> Result<(), DatasetError>;
    /// Whether the marker table has its token column (one from a bakeoff before tokens has not).
    async fn marker_has_tokens(&mut self) -> Result<bool, DatasetError>;
    /// The marker table's rows: table name and token, as any account may have written them.
    async fn marker_rows(&mut self) -> Result<Vec<(String, String)>, DatasetError>;
    /// Remove the marker row (values as parameters, never inside SQL text).
    async fn forget(&mut self, table: &str, token: &str) -> Result<(), DatasetError>;
    /// Record `table` in the marker table and create it with `create`, carrying `token`; a
    /// table never exists without its row.
    async fn create_marked(
        &mut self,
        table: &str,
        create: &str,
        workload: &str,
        token: &Token,
    ) -> Result<(), DatasetError>;
    /// Hold `table` so that nothing can change it or take its name until [`Owner::drop_held`]
    /// or [`Owner::release`]; the name it is held under (`fence` names a rename's target).
    async fn hold(&mut self, table: &str, fence: &str) -> Result<String, DatasetError>;
    async fn drop_held(&mut self, held: &str) -> Result<(), DatasetError>;
    async fn release(&mut self, table: &str, held: &str) -> Result<(), DatasetError>;
    /// Whether the table has no rows.
    async fn is_empty(&mut self, table: &str) -> Result<bool, DatasetError>;
    async fn quit(self);
}

/// The marker table's rows as (table name, token), whatever the server sent: a missing
/// value is empty (and proves nothing).
pub fn marker_pairs(rows: Vec<Vec<Option<String>>>) -> Vec<(String, String)> {
    rows.into_iter()
        .map(|r| {
            let mut r = r.into_iter().map(Option::unwrap_or_default);
            (r.next().unwrap_or_default(), r.next().unwrap_or_default())
        })
        .collect()
}
