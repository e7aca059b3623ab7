//! Study results in SQLite.
//!
//! One file per study (by default beside the study file): the study (its hash and expanded
//! spec), every run with its status and reason, its per-tick series and its environment
//! manifest. WAL mode, one transaction per run, committed before the next run starts: a crash
//! or Ctrl-C loses at most the run in progress. One writer at a time (a lock file beside the
//! database); results are never deleted.
//!
//! Main types: [`Store`], [`RunRecord`] (plain data in), [`RunKey`] (what identifies a run for
//! resuming). It knows SQL and nothing about engines or servers.

mod merge;
mod read;
mod records;
mod schema;

pub use merge::Merged;
pub use records::{
    check_block, is_check_block, ProbeRecord, Row, RunKey, RunRecord, TickRecord, CHECK_BLOCKS_FROM,
};

use std::collections::HashSet;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("results database {path}: {source}")]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("results database {path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error(
        "another bakeoff is writing to {0}; wait for it to finish, or give this run another --db"
    )]
    Locked(PathBuf),
    #[error("results database {path} was written by a newer bakeoff (layout version {found}; this bakeoff reads up to {known}); open it with that version or a later one")]
    Newer {
        path: PathBuf,
        found: u32,
        known: u32,
    },
    #[error("the study file changed since study '{name}' started in {path} (it had hash {old}, now {new}); finished runs would not match the file. Run with --new to start a new study in the same database, or restore the file")]
    Edited {
        name: String,
        path: PathBuf,
        old: String,
        new: String,
    },
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    _lock: File,
}

impl Store {
    /// Open (creating if needed) the results database at `path`, as its only writer.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let lock = lock(path)?;
        let conn = Connection::open(path).map_err(|source| StoreError::Sql {
            path: path.to_path_buf(),
            source,
        })?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            _lock: lock,
        };
        store.migrate()?;
        Ok(store)
    }

    /// Bring the database to this version's layout: a new file gets it whole, an older one
    /// the migration steps it lacks; a newer one is refused, since this version cannot know
    /// what it holds.
    fn migrate(&self) -> Result<(), StoreError> {
        let e = |err| self.err(err);
        let found: u32 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(e)?;
        if found > schema::VERSION {
            return Err(StoreError::Newer {
                path: self.path.clone(),
                found,
                known: schema::VERSION,
            });
        }
        let existing: bool = self
            .conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'studies'",
                [],
                |r| r.get(0),
            )
            .map_err(e)?;
        // Files from before the version was stamped hold version 1's layout.
        let from = if existing {
            found.max(1)
        } else {
            schema::VERSION
        };
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(e)?;
        let mut steps = schema::MIGRATIONS.iter().filter(|(n, _)| *n > from);
        let migrated = steps
            .try_for_each(|(_, sql)| self.conn.execute_batch(sql))
            .and_then(|()| {
                self.conn
                    .execute_batch(&format!("PRAGMA user_version = {}", schema::VERSION))
            });
        match migrated {
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(e)?,
            Err(err) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e(err));
            }
        }
        // Tables, indexes and views of this version (each IF NOT EXISTS), and the pragmas.
        self.conn.execute_batch(schema::SCHEMA).map_err(e)
    }

    /// The layout version of the open database.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// The study to write into: the latest one named `name` if its file hash is the same
    /// (resume), a new one if there is none or `new` is asked for; an edited file otherwise
    /// is refused.
    pub fn begin_study(
        &mut self,
        name: &str,
        hash: &str,
        spec_json: &str,
        new: bool,
    ) -> Result<i64, StoreError> {
        let latest = self.latest_study(
            "SELECT id, hash FROM studies WHERE name = ?1 ORDER BY id DESC LIMIT 1",
            params![name],
        )?;
        self.resume_or_insert(latest, name, hash, spec_json, new)
    }

    /// As [`Store::begin_study`], for the results of one machine of a fleet: the study of
    /// that name whose spec says `platform` (several machines' studies share one name).
    pub fn begin_platform_study(
        &mut self,
        name: &str,
        platform: &str,
        hash: &str,
        spec_json: &str,
        new: bool,
    ) -> Result<i64, StoreError> {
        let latest = self.latest_study(
            "SELECT id, hash FROM studies WHERE name = ?1 AND json_extract(spec_json, '$.platform') = ?2
             ORDER BY id DESC LIMIT 1",
            params![name, platform],
        )?;
        self.resume_or_insert(latest, name, hash, spec_json, new)
    }

    /// (id, file hash) of the study `sql` selects, if any.
    fn latest_study(
        &self,
        sql: &str,
        args: impl rusqlite::Params,
    ) -> Result<Option<(i64, String)>, StoreError> {
        self.conn
            .query_row(sql, args, |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(|e| self.err(e))
    }

    fn resume_or_insert(
        &mut self,
        latest: Option<(i64, String)>,
        name: &str,
        hash: &str,
        spec_json: &str,
        new: bool,
    ) -> Result<i64, StoreError> {
        match latest {
            Some((id, old)) if old == hash && !new => Ok(id),
            Some((_, old)) if !new => Err(StoreError::Edited {
                name: name.into(),
                path: self.path.clone(),
                old,
                new: hash.into(),
            }),
            _ => {
                self.conn
                    .execute(
                        "INSERT INTO studies (name, hash, spec_json, created_at, bakeoff_version) VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![name, hash, spec_json, now(), env!("CARGO_PKG_VERSION")],
                    )
                    .map_err(|e| self.err(e))?;
                Ok(self.conn.last_insert_rowid())
            }
        }
    }

    /// Runs of `study` that need not run again (every status but interrupted).
    pub fn finished(&self, study: i64) -> Result<HashSet<RunKey>, StoreError> {
        select(
            &self.conn,
            "SELECT repetition, variant, workload, threads FROM runs WHERE study_id = ?1 AND status <> 'interrupted'",
            params![study],
            |r| {
                Ok(RunKey {
                    repetition: r.get(0)?,
                    variant: r.get(1)?,
                    workload: r.get(2)?,
                    threads: r.get(3)?,
                })
            },
        )
        .map_err(|e| self.err(e))
    }

    /// Store one run and its ticks in one transaction, committed before returning. An earlier
    /// interrupted attempt of the same run is replaced; a finished one is never touched.
    pub fn record(&mut self, study: i64, r: &RunRecord) -> Result<i64, StoreError> {
        Ok(self.record_all(study, std::slice::from_ref(r))?[0])
    }

    /// Store several runs in one transaction: all of them are kept, or none (a turn-taking
    /// block's runs come from one measurement, and are resumed all or nothing).
    pub fn record_all(&mut self, study: i64, runs: &[RunRecord]) -> Result<Vec<i64>, StoreError> {
        let path = self.path.clone();
        let err = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        let ids = runs
            .iter()
            .map(|r| insert_run(&tx, study, r))
            .collect::<Result<Vec<i64>, _>>()
            .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(ids)
    }

    /// Store one host probe's result (once per study, probe and thread count).
    pub fn record_probe(&mut self, study: i64, p: &ProbeRecord) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO probes (study_id, probe, threads, figure, unit, status, reason, summary_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![study, p.probe, p.threads, p.figure, p.unit, p.status, p.reason, p.summary_json],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// (probe, threads) pairs already measured for `study`.
    pub fn probes_done(&self, study: i64) -> Result<HashSet<(String, u32)>, StoreError> {
        select(
            &self.conn,
            "SELECT probe, threads FROM probes WHERE study_id = ?1 AND status = 'ok'",
            params![study],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| self.err(e))
    }
}

/// Every row of `sql`, each through `f`, into any collection (a Vec, a HashSet).
fn select<T, C: FromIterator<T>>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    f: impl FnMut(&rusqlite::Row) -> rusqlite::Result<T>,
) -> rusqlite::Result<C> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map(params, f)?;
    rows.collect()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// An exclusive lock on `<db>.lock`, held while the store is open.
fn lock(path: &Path) -> Result<File, StoreError> {
    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| StoreError::Io {
            path: lock_path.clone(),
            reason: e.to_string(),
        })?;
    // SAFETY: flock on a descriptor we own; released when the file closes.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(StoreError::Locked(path.to_path_buf()));
    }
    Ok(f)
}

/// The layout version of a bakeoff results database at `path`, read without changing it;
/// None when it is not one (or cannot be read).
fn results_version(path: &Path) -> Option<u32> {
    let c = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    let is_results: bool = c
        .query_row(
            "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'studies'",
            [],
            |r| r.get(0),
        )
        .ok()?;
    if !is_results {
        return None;
    }
    c.query_row("PRAGMA user_version", [], |r| r.get(0)).ok()
}

/// One run and its ticks, inside `tx`; an interrupted attempt of the same run goes first.
fn insert_run(
    tx: &rusqlite::Transaction<'_>,
    study: i64,
    r: &RunRecord,
) -> Result<i64, rusqlite::Error> {
    let key = r.key.unwrap_or(RunKey {
        repetition: 0,
        variant: 0,
        workload: 0,
        threads: 0,
    });
    tx.execute(
        "DELETE FROM ticks WHERE run_id IN (SELECT id FROM runs WHERE study_id = ?1 AND repetition = ?2 AND variant = ?3 AND workload = ?4 AND threads = ?5 AND status = 'interrupted')",
        params![study, key.repetition, key.variant, key.workload, key.threads],
    )
    ?;
    tx.execute(
        "DELETE FROM runs WHERE study_id = ?1 AND repetition = ?2 AND variant = ?3 AND workload = ?4 AND threads = ?5 AND status = 'interrupted'",
        params![study, key.repetition, key.variant, key.workload, key.threads],
    )
    ?;
    tx.execute(
        "INSERT INTO runs (study_id, repetition, variant, workload, threads, variant_name, workload_label, status, reason, started_at,
            seconds, events, tps, qps, errors, reconnects, p50_ms, p95_ms, p99_ms, max_ms, server_cpu_us_per_event, rss_growth_bytes,
            client_bound, summary_json, manifest_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
        params![
            study, key.repetition, key.variant, key.workload, key.threads, r.variant_name, r.workload_label, r.status,
            r.reason, now() - r.seconds.ceil() as i64, r.seconds, r.events as i64, r.tps, r.qps, r.errors as i64, r.reconnects as i64, r.p50_ms,
            r.p95_ms, r.p99_ms, r.max_ms, r.server_cpu_us_per_event, r.rss_growth_bytes, r.client_bound, r.summary_json,
            r.manifest_json
        ],
    )
    ?;
    let run = tx.last_insert_rowid();
    {
        let mut stmt = tx
            .prepare("INSERT INTO ticks (run_id, t, tps, qps, p99_ms, errors, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            ?;
        for t in &r.ticks {
            stmt.execute(params![
                run,
                t.t,
                t.tps,
                t.qps,
                t.p99_ms,
                t.errors as i64,
                t.json
            ])?;
        }
    }
    Ok(run)
}
