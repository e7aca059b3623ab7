//! The fixed results database the report tests read: a real study's rows
//! (fixtures/study.sql), loaded into a fresh database that removes itself.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use bakeoff_store::Store;

/// A results database in the temp dir, removed (with its WAL and lock) on drop.
pub struct TempDb(pub PathBuf);

impl TempDb {
    pub fn new(name: &str) -> TempDb {
        let p = bakeoff_testkit::scratch::path(&format!("report-{name}.db"));
        let db = TempDb(p);
        db.remove();
        db
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The fixture study in a new database, then `sql` run on it (to make it another machine's).
pub fn fixture(name: &str, sql: &str) -> TempDb {
    let db = TempDb::new(name);
    drop(Store::open(db.path()).unwrap()); // the schema, as the store makes it
    let c = rusqlite::Connection::open(db.path()).unwrap();
    c.execute_batch(include_str!("../fixtures/study.sql"))
        .unwrap();
    c.execute_batch(sql).unwrap();
    db
}

/// Pixels of an RGBA image within a small distance of `rgb`.
pub fn pixels_of(rgba: &[u8], rgb: (u8, u8, u8)) -> usize {
    rgba.chunks_exact(4)
        .filter(|p| {
            (p[0] as i32 - rgb.0 as i32).abs() < 24
                && (p[1] as i32 - rgb.1 as i32).abs() < 24
                && (p[2] as i32 - rgb.2 as i32).abs() < 24
        })
        .count()
}

/// Tags open and close in order (a small well-formedness check for the markup we write).
pub fn balanced(xml: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find('<') {
        let end = rest[i..].find('>').ok_or("unclosed <")? + i;
        let tag = &rest[i + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.starts_with('?') || tag.ends_with('/') {
            continue;
        }
        let name = tag.split_whitespace().next().unwrap_or("");
        if matches!(name, "br" | "meta") {
            continue;
        }
        if let Some(closing) = name.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == closing => {}
                other => return Err(format!("</{closing}> closes {other:?}")),
            }
        } else {
            stack.push(name.to_string());
        }
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed {stack:?}"))
    }
}
