//! Merging results databases: every study of another database copied into this one (runs,
//! ticks, probes), each study once.

use std::path::Path;

use rusqlite::params;

use crate::{lock, results_version, schema, select, Store, StoreError};

/// What [`Store::merge_from`] copied.
#[derive(Debug, Default, PartialEq)]
pub struct Merged {
    /// Names of the studies copied, in their order.
    pub studies: Vec<String>,
    /// Studies left out because this database already holds them.
    pub skipped: usize,
    pub runs: usize,
    pub ticks: usize,
    pub probes: usize,
}

/// Every column of a run but its id and study: what a merge copies as is.
const RUN_COLUMNS: &str = "repetition, variant, workload, threads, variant_name, workload_label, status, reason, started_at,
    seconds, events, tps, qps, errors, reconnects, p50_ms, p95_ms, p99_ms, max_ms, server_cpu_us_per_event, rss_growth_bytes,
    client_bound, summary_json, manifest_json";

impl Store {
    /// Copy every study of the results database at `source` into this one, with its runs,
    /// ticks and probes (new ids, same contents), so results from several machines can be
    /// reported side by side. A study already here (same name, file hash, spec and creation
    /// time) is skipped, so merging the same file twice adds nothing.
    pub fn merge_from(&mut self, source: &Path) -> Result<Merged, StoreError> {
        // A source of an older layout is brought to this one first (as opening it would);
        // a newer one is refused. Anything else is left to the copy, which names the file.
        if let Some(found) = results_version(source) {
            if found > schema::VERSION {
                return Err(StoreError::Newer {
                    path: source.to_path_buf(),
                    found,
                    known: schema::VERSION,
                });
            }
            if found.max(1) < schema::VERSION {
                drop(Store::open(source)?);
            }
        }
        let _source_lock = lock(source)?;
        let src_err = |reason: String| StoreError::Io {
            path: source.to_path_buf(),
            reason,
        };
        self.conn
            .execute(
                "ATTACH DATABASE ?1 AS src",
                params![source.to_string_lossy()],
            )
            .map_err(|e| src_err(e.to_string()))?;
        let merged = self.merge_attached().map_err(|e| match e {
            StoreError::Sql { source: e, .. } => src_err(format!(
                "{e}; is it a bakeoff results database (written by `bakeoff study run`)?"
            )),
            other => other,
        });
        let _ = self.conn.execute("DETACH DATABASE src", []);
        merged
    }

    fn merge_attached(&mut self) -> Result<Merged, StoreError> {
        let path = self.path.clone();
        let err = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        let mut merged = Merged::default();
        let studies: Vec<(i64, String)> = {
            select(
                &tx,
                "SELECT id, name FROM src.studies s WHERE NOT EXISTS (SELECT 1 FROM main.studies m
                 WHERE m.name = s.name AND m.hash = s.hash AND m.spec_json = s.spec_json AND m.created_at = s.created_at) ORDER BY id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(err)?
        };
        merged.skipped = tx
            .query_row("SELECT COUNT(*) FROM src.studies", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(err)? as usize
            - studies.len();
        for (old_study, name) in studies {
            tx.execute(
                "INSERT INTO main.studies (name, hash, spec_json, created_at, bakeoff_version)
                 SELECT name, hash, spec_json, created_at, bakeoff_version FROM src.studies WHERE id = ?1",
                params![old_study],
            )
            .map_err(err)?;
            let study = tx.last_insert_rowid();
            let runs: Vec<i64> = {
                select(
                    &tx,
                    "SELECT id FROM src.runs WHERE study_id = ?1 ORDER BY id",
                    params![old_study],
                    |r| r.get(0),
                )
                .map_err(err)?
            };
            for old_run in &runs {
                tx.execute(
                    &format!("INSERT INTO main.runs (study_id, {RUN_COLUMNS}) SELECT ?1, {RUN_COLUMNS} FROM src.runs WHERE id = ?2"),
                    params![study, old_run],
                )
                .map_err(err)?;
                let run = tx.last_insert_rowid();
                merged.ticks += tx
                    .execute(
                        "INSERT INTO main.ticks (run_id, t, tps, qps, p99_ms, errors, json)
                         SELECT ?1, t, tps, qps, p99_ms, errors, json FROM src.ticks WHERE run_id = ?2",
                        params![run, old_run],
                    )
                    .map_err(err)?;
            }
            merged.probes += tx
                .execute(
                    "INSERT INTO main.probes (study_id, probe, threads, figure, unit, status, reason, summary_json)
                     SELECT ?1, probe, threads, figure, unit, status, reason, summary_json FROM src.probes WHERE study_id = ?2",
                    params![study, old_study],
                )
                .map_err(err)?;
            merged.runs += runs.len();
            merged.studies.push(name);
        }
        tx.commit().map_err(err)?;
        Ok(merged)
    }
}
