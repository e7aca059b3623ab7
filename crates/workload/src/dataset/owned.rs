//! What bakeoff owns in a place (a schema or database) it may share with other accounts,
//! and the proof it asks for before it writes to, reads a token from, or drops a table: the
//! rules, once for every engine. Each engine supplies only its statements (`adapters/`).
//!
//! Each prepare draws a random token and writes it twice: on each table it creates (its
//! comment, `bakeoff:<token>`) and in that table's row of the marker table. A table is
//! bakeoff's to use only when it
//! - is an ordinary table (not a view, nor a partitioned or foreign table),
//! - is owned by exactly the session's role (PostgreSQL: `relowner`, not membership, since
//!   on 15 and older a role can grant itself to another),
//! - has no triggers or rules (bakeoff creates none: any there is someone's code that would
//!   run as this role), and, on MySQL, the account can see its triggers,
//! - carries the token of its marker row (for `cleanup` and `run --server`; the marker
//!   itself carries the marker comment), the marker passing the same checks first.
//!
//! A drop takes only names bakeoff makes (`sbtestN`), checks, holds the table (PostgreSQL: a
//! lock in a transaction; MySQL: a rename to a name carrying the token), checks again on
//! what it holds, and drops that: nothing between the check and the drop can put another
//! table under the dropped name.
//!
//! What this stops: a row planted in the marker table, a marker or workload table planted
//! with a trigger or rule, a user's own table of the same name. What it cannot stop: a
//! superuser, and on MySQL an account with ALTER on the user's table, which can write the
//! token onto it.

use super::owner::{Facts, Owner};
use super::progress::{DatasetError, Progress};
use super::token::{bakeoff_creates, Token, MARKER_COMMENT, MARKER_TABLE};

/// What a table must carry to be used.
#[derive(Debug, Clone, Copy)]
pub(super) enum Claim<'a> {
    /// The marker table: the marker comment.
    Marker,
    /// A table bakeoff made: its marker row's token.
    Token(&'a Token),
    /// The user's own table (`existing_tables = "use"`): any comment.
    Any,
}

/// Why a table may not be used, given its facts; None: it may.
pub(super) fn refusal(f: &Facts, claim: Claim<'_>) -> Option<String> {
    if let Some(kind) = &f.kind {
        return Some(format!("is {kind}, not a table"));
    }
    if let Some(owner) = &f.foreign_owner {
        return Some(format!(
            "is owned by role \"{owner}\", not by the role bakeoff logged in as"
        ));
    }
    if !f.code.is_empty() {
        return Some(format!(
            "has triggers or rules bakeoff did not create ({}), which would run as the role bakeoff logged in as",
            f.code.join(", ")
        ));
    }
    if f.triggers_hidden {
        return Some(
            "may have triggers this account cannot see (it lacks the TRIGGER privilege there)"
                .into(),
        );
    }
    let comment = f.comment.as_deref();
    match claim {
        Claim::Marker if comment != Some(MARKER_COMMENT) => {
            Some("does not carry bakeoff's marker comment".into())
        }
        Claim::Token(t) if comment != Some(t.comment().as_str()) => {
            Some("does not carry the token of bakeoff's marker row".into())
        }
        _ => None,
    }
}

fn not_ours<O: Owner>(o: &O, table: &str, why: String) -> DatasetError {
    DatasetError::NotOurs {
        table: table.to_string(),
        place: o.place(),
        why,
        fix: o.elsewhere(),
    }
}

/// The place, refused when another role owns it (`Owner::place_refusal`).
async fn place_is_ours<O: Owner>(o: &mut O) -> Result<(), DatasetError> {
    match o.place_refusal().await? {
        None => Ok(()),
        Some(why) => Err(DatasetError::NotOurPlace {
            place: o.place(),
            why,
            fix: o.elsewhere(),
        }),
    }
}

/// Whether the marker table is there (and bakeoff's); one that is not bakeoff's, or
/// predates tokens, is refused with what to do, and never read.
async fn marker_is_ours<O: Owner>(o: &mut O) -> Result<bool, DatasetError> {
    let Some(f) = o.facts(MARKER_TABLE).await? else {
        return Ok(false);
    };
    if let Some(why) = refusal(&f, Claim::Marker) {
        return Err(not_ours(o, MARKER_TABLE, why));
    }
    match o.marker_has_tokens().await? {
        true => Ok(true),
        false => Err(DatasetError::OldMarker),
    }
}

/// Before a prepare creates anything: none of `tables` there (a table in the way is
/// refused, not adopted, so a refused prepare leaves nothing behind), and the marker table
/// bakeoff's, or made now.
pub(super) async fn make_room<O: Owner>(o: &mut O, tables: &[String]) -> Result<(), DatasetError> {
    place_is_ours(o).await?;
    for name in tables {
        if o.facts(name).await?.is_some() {
            return Err(match is_marked(o, name).await {
                true => DatasetError::Exists(name.clone()),
                false => DatasetError::ExistsNotOurs {
                    table: name.clone(),
                    fix: o.elsewhere(),
                },
            });
        }
    }
    if !marker_is_ours(o).await? {
        o.create_marker().await?;
    }
    Ok(())
}

/// Whether table `name` is bakeoff's: its marker row's token on it, the marker bakeoff's. Any
/// doubt (a marker not bakeoff's, an old one, an error asking) is "no".
async fn is_marked<O: Owner>(o: &mut O, name: &str) -> bool {
    if !matches!(marker_is_ours(o).await, Ok(true)) {
        return false;
    }
    let Ok(rows) = o.marker_rows().await else {
        return false;
    };
    let token = rows
        .iter()
        .find(|(t, _)| t == name)
        .and_then(|(_, token)| Token::parse(token));
    match (token, o.facts(name).await) {
        (Some(token), Ok(Some(f))) => refusal(&f, Claim::Token(&token)).is_none(),
        _ => false,
    }
}

/// A table bakeoff did not prepare: not there at all, or there but not made by bakeoff (the
/// two call for different fixes, and "not made by bakeoff" about a missing table misleads).
async fn not_prepared<O: Owner>(o: &mut O, table: String) -> DatasetError {
    match o.facts(&table).await {
        Ok(None) => DatasetError::NotThere(table),
        _ => DatasetError::NotPrepared(table),
    }
}

/// Before bakeoff runs a workload on tables it prepared (`run --server`): each one
/// bakeoff's, carrying the token of the marker row that names it; the marker bakeoff's too.
pub(super) async fn check_marked<O: Owner>(
    o: &mut O,
    tables: &[String],
) -> Result<(), DatasetError> {
    let first = tables.first().cloned().unwrap_or_default();
    place_is_ours(o).await?;
    if !marker_is_ours(o).await? {
        return Err(not_prepared(o, first).await);
    }
    let rows = o.marker_rows().await?;
    for name in tables {
        let token = rows
            .iter()
            .find(|(t, _)| t == name)
            .and_then(|(_, token)| Token::parse(token));
        let Some(f) = o.facts(name).await? else {
            return Err(DatasetError::NotThere(name.clone()));
        };
        let Some(token) = token else {
            return Err(DatasetError::NotPrepared(name.clone()));
        };
        if let Some(why) = refusal(&f, Claim::Token(&token)) {
            return Err(not_ours(o, name, why));
        }
    }
    Ok(())
}

/// Before a run on the user's own tables (`existing_tables = "use"`): each one there, an
/// ordinary table the role owns, with no one's code on it.
pub(super) async fn check_existing<O: Owner>(
    o: &mut O,
    tables: &[String],
) -> Result<(), DatasetError> {
    place_is_ours(o).await?;
    for name in tables {
        let Some(f) = o.facts(name).await? else {
            return Err(DatasetError::Missing(name.clone()));
        };
        if let Some(why) = refusal(&f, Claim::Any) {
            return Err(not_ours(o, name, why));
        }
    }
    Ok(())
}

/// Drop every table the marker table records whose facts prove it bakeoff's, then the marker
/// table once empty. Rows that prove nothing are removed and their tables left as they are,
/// each said. A marker table that is not bakeoff's is refused, unread. The names dropped.
pub(super) async fn drop_marked<O: Owner>(
    o: &mut O,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<String>, DatasetError> {
    let mut dropped = Vec::new();
    if !marker_is_ours(o).await? {
        return Ok(dropped);
    }
    for (name, token) in o.marker_rows().await? {
        match bakeoff_creates(&name)
            .then_some(())
            .and(Token::parse(&token))
        {
            None => progress(Progress::LeftAlone {
                table: name.clone(),
                why: "its marker row names no table bakeoff creates".into(),
            }),
            Some(t) => match drop_fenced(o, &name, &t).await? {
                Fence::Dropped => {
                    progress(Progress::Dropping(name.clone()));
                    dropped.push(name.clone());
                }
                Fence::Missing => {}
                Fence::NotOurs(why) => progress(Progress::LeftAlone {
                    table: name.clone(),
                    why: format!("it {why}"),
                }),
            },
        }
        o.forget(&name, &token).await?;
    }
    drop_marker(o).await?;
    Ok(dropped)
}

/// What a fenced drop found.
#[derive(Debug, PartialEq, Eq)]
enum Fence {
    Dropped,
    Missing,
    NotOurs(String),
}

/// Drop `name` only if it passes, checked again on the table held (the table checked is the
/// table dropped).
async fn drop_fenced<O: Owner>(
    o: &mut O,
    name: &str,
    token: &Token,
) -> Result<Fence, DatasetError> {
    let Some(f) = o.facts(name).await? else {
        return Ok(Fence::Missing);
    };
    if let Some(why) = refusal(&f, Claim::Token(token)) {
        return Ok(Fence::NotOurs(why));
    }
    let fence = format!("bakeoff_drop_{}_{name}", token.as_str());
    let held = o.hold(name, &fence).await?;
    let again = o.facts(&held).await?;
    match again.map(|f| refusal(&f, Claim::Token(token))) {
        Some(None) => {
            o.drop_held(&held).await?;
            Ok(Fence::Dropped)
        }
        // Swapped or changed between the check and the hold: put it back as it was.
        other => {
            o.release(name, &held).await?;
            let why = other.flatten();
            Ok(Fence::NotOurs(why.unwrap_or_else(|| {
                "changed while bakeoff checked it".into()
            })))
        }
    }
}

/// The marker table, once no row is left in it and it passes, held as the tables are, so
/// that a row written meanwhile is seen.
async fn drop_marker<O: Owner>(o: &mut O) -> Result<(), DatasetError> {
    let fence = format!("bakeoff_drop_{}_{MARKER_TABLE}", Token::new()?.as_str());
    let held = o.hold(MARKER_TABLE, &fence).await?;
    let passes = match o.facts(&held).await? {
        Some(f) => refusal(&f, Claim::Marker).is_none(),
        None => false,
    };
    match passes && o.is_empty(&held).await? {
        true => o.drop_held(&held).await,
        false => o.release(MARKER_TABLE, &held).await,
    }
}

/// Create `tables` (name, CREATE TABLE text) as `workload`'s, each recorded in the marker
/// table with `token` before it exists (`Owner::create_marked`), in order. Each engine's
/// `create_tables` calls it once `owned::make_room` has refused any table in the way and made
/// the marker table, on a connection given its DDL timeout.
pub(super) async fn create_marked<O: Owner>(
    o: &mut O,
    tables: &[(String, String)],
    workload: &str,
    token: &Token,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<(), DatasetError> {
    for (name, create) in tables {
        progress(Progress::Creating(name.clone()));
        o.create_marked(name, create, workload, token).await?;
    }
    Ok(())
}
