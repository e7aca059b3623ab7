//! Reading results back: studies, runs, ticks, manifests and probes, as rows for export and
//! reports.

use rusqlite::params;

use crate::{select, Row, Store, StoreError};

/// Every run, as `runs` and `export` give them: who and what first, then the figures, then
/// the ids that join them to ticks and studies.
const RUNS: &str =
    "SELECT s.name AS study, r.variant_name, r.workload_label, r.threads, r.repetition, r.status,
                    r.tps, r.qps, r.p50_ms, r.p95_ms, r.p99_ms,
                    json_extract(r.summary_json, '$.total.latency.p999_ms') AS p999_ms, r.max_ms,
                    r.server_cpu_us_per_event, r.errors, r.reconnects, r.events, r.seconds,
                    r.rss_growth_bytes, r.client_bound, r.reason, r.started_at,
                    r.id, r.study_id, r.variant, r.workload
             FROM runs r JOIN studies s ON s.id = r.study_id
             WHERE ?1 IS NULL OR r.study_id = ?1 ORDER BY r.id";

/// Every tick of every run.
const TICKS: &str = "SELECT t.run_id, s.name AS study, r.variant_name, r.workload_label, r.threads, r.repetition, r.status,
                    t.t, t.tps, t.qps, t.p99_ms, t.errors,
                    json_extract(t.json, '$.telemetry.server.rss_bytes') AS server_rss_bytes,
                    json_extract(t.json, '$.telemetry.server.vsz_bytes') AS server_vsz_bytes,
                    json_extract(t.json, '$.telemetry.server_cpu_us_per_event') AS server_cpu_us_per_event
             FROM ticks t JOIN runs r ON r.id = t.run_id JOIN studies s ON s.id = r.study_id
             WHERE ?1 IS NULL OR r.study_id = ?1 ORDER BY t.run_id, t.t";

/// Every host probe.
const PROBES: &str =
    "SELECT p.id, s.name AS study, p.probe, p.threads, p.figure, p.unit, p.status, p.reason
             FROM probes p JOIN studies s ON s.id = p.study_id
             WHERE ?1 IS NULL OR p.study_id = ?1 ORDER BY p.id";

impl Store {
    /// Every probe result (of `study`), one row each.
    pub fn probe_rows(&self, study: Option<i64>) -> Result<Vec<Row>, StoreError> {
        self.rows(PROBES, study)
    }

    /// Every study in the database, oldest first, with what a listing shows: when it was
    /// made and by which bakeoff, its platform label and the host of its first run, its
    /// runs ok and not, and when its latest run started (seconds since the epoch).
    pub fn study_list(&self) -> Result<Vec<Row>, StoreError> {
        self.rows(
            "SELECT s.id, s.name, s.created_at, s.bakeoff_version,
                    json_extract(s.spec_json, '$.platform') AS platform,
                    (SELECT json_extract(r.manifest_json, '$.host.hostname') FROM runs r
                      WHERE r.study_id = s.id AND r.manifest_json <> '{}' ORDER BY r.id LIMIT 1) AS host,
                    (SELECT count(*) FROM runs r WHERE r.study_id = s.id AND r.status = 'ok') AS runs_ok,
                    (SELECT count(*) FROM runs r WHERE r.study_id = s.id AND r.status <> 'ok') AS runs_not_ok,
                    (SELECT max(r.started_at) FROM runs r WHERE r.study_id = s.id) AS last_run_at
             FROM studies s WHERE ?1 IS NULL OR s.id = ?1 ORDER BY s.id",
            None,
        )
    }

    /// Every study in the database: (id, name), oldest first.
    pub fn studies(&self) -> Result<Vec<(i64, String)>, StoreError> {
        select(
            &self.conn,
            "SELECT id, name FROM studies ORDER BY id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| self.err(e))
    }

    /// The expanded study spec stored when the study began (JSON).
    pub fn study_spec(&self, study: i64) -> Result<String, StoreError> {
        self.conn
            .query_row(
                "SELECT spec_json FROM studies WHERE id = ?1",
                params![study],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Cells of `study` with at least one stored run.
    pub fn cell_count(&self, study: i64) -> Result<i64, StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM cells WHERE study_id = ?1",
                params![study],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// SQLite's own check of the file, "ok" when sound.
    pub fn integrity(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Runs of `study` (or of every study), as rows of named values, for export and tests.
    /// p99.9 comes from the run's summary (its column is null where the summary has none).
    pub fn runs(&self, study: Option<i64>) -> Result<Vec<Row>, StoreError> {
        self.rows(RUNS, study)
    }

    /// What each run's telemetry says of the machine beside the load (for judging whether its
    /// figure is suspect): the host's steal, busy and interrupt shares, the span sampled, and the CPU
    /// seconds of the server, the client, and the client's idle polling.
    pub fn run_health(&self, study: i64) -> Result<Vec<Row>, StoreError> {
        self.rows(
            "SELECT id,
                    json_extract(summary_json, '$.telemetry.host.steal') AS host_steal,
                    json_extract(summary_json, '$.telemetry.host.user')
                      + json_extract(summary_json, '$.telemetry.host.sys') AS host_busy,
                    json_extract(summary_json, '$.telemetry.host.irq') AS host_irq,
                    json_extract(summary_json, '$.telemetry.host.kernel_threads') AS host_kthreads,
                    json_extract(summary_json, '$.telemetry.seconds') AS seconds,
                    json_extract(summary_json, '$.telemetry.server.cpu_user_seconds')
                      + json_extract(summary_json, '$.telemetry.server.cpu_sys_seconds') AS server_cpu_seconds,
                    json_extract(summary_json, '$.telemetry.client_cpu_seconds') AS client_cpu_seconds,
                    json_extract(summary_json, '$.telemetry.client_idle_poll_seconds') AS client_idle_poll_seconds
             FROM runs WHERE study_id = ?1 ORDER BY id",
            Some(study),
        )
    }

    /// How each run was measured, where it bears on trusting it: `turn_slice_ms` (set where
    /// its servers took turns) and `writes` (the statements that wrote), by id.
    pub fn run_methods(&self, study: i64) -> Result<Vec<Row>, StoreError> {
        self.rows(
            "SELECT id,
                    json_extract(summary_json, '$.turns.slice_ms') AS turn_slice_ms,
                    json_extract(summary_json, '$.turns.server') AS turn_server,
                    json_extract(summary_json, '$.total.writes') AS writes
             FROM runs WHERE study_id = ?1 ORDER BY id",
            Some(study),
        )
    }

    /// Each run's summary (what the engine and the client hosts reported, as JSON) with its
    /// identity: id, threads, status, events, summary_json.
    pub fn summaries(&self, study: i64) -> Result<Vec<Row>, StoreError> {
        self.rows(
            "SELECT id, threads, status, events, summary_json FROM runs
             WHERE study_id = ?1 ORDER BY id",
            Some(study),
        )
    }

    /// Every tick of every run (of `study`), one row each, with its run's identity.
    pub fn tick_rows(&self, study: Option<i64>) -> Result<Vec<Row>, StoreError> {
        self.rows(TICKS, study)
    }

    /// The measured slices of `study`'s runs that took turns: run_id, tps, and `after`, the
    /// server whose turn came just before the slice (its run's own `turn_server` where it
    /// followed itself). Runs stored before slices recorded it have none.
    pub fn turn_slices(&self, study: i64) -> Result<Vec<Row>, StoreError> {
        self.rows(
            "SELECT t.run_id, t.tps, json_extract(t.json, '$.after') AS after
             FROM ticks t JOIN runs r ON r.id = t.run_id
             WHERE r.study_id = ?1 AND json_extract(t.json, '$.after') IS NOT NULL
             ORDER BY t.run_id, t.t",
            Some(study),
        )
    }

    /// One environment manifest per variant of `study` (its first stored run's): variant,
    /// variant_name, manifest_json.
    pub fn manifests(&self, study: i64) -> Result<Vec<Row>, StoreError> {
        self.rows(
            "SELECT variant, variant_name, manifest_json FROM runs
             WHERE id IN (SELECT MIN(id) FROM runs WHERE study_id = ?1 AND manifest_json <> '{}' GROUP BY variant)
             ORDER BY variant",
            Some(study),
        )
    }

    fn rows(&self, sql: &str, study: Option<i64>) -> Result<Vec<Row>, StoreError> {
        Ok(self.table(sql, study)?.1)
    }

    /// `what` (runs, ticks or probes) of every study as `export` writes it: the columns in
    /// the order a reader wants them (who, what, the figures), and the rows.
    pub fn export_table(&self, what: &str) -> Result<(Vec<String>, Vec<Row>), StoreError> {
        let sql = match what {
            "ticks" => TICKS,
            "probes" => PROBES,
            _ => RUNS,
        };
        self.table(sql, None)
    }

    /// The rows of `sql` (with `?1` the study, or NULL for all) and its column names.
    fn table(&self, sql: &str, study: Option<i64>) -> Result<(Vec<String>, Vec<Row>), StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let names: Vec<String> = stmt.column_names().map(str::to_string).collect();
        let rows = stmt
            .query_map(params![study], |row| {
                let mut m = Row::new();
                for (i, n) in names.iter().enumerate() {
                    let v = match row.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => serde_json::Value::Null,
                        rusqlite::types::ValueRef::Integer(x) => x.into(),
                        rusqlite::types::ValueRef::Real(x) => x.into(),
                        rusqlite::types::ValueRef::Text(t) => {
                            String::from_utf8_lossy(t).into_owned().into()
                        }
                        rusqlite::types::ValueRef::Blob(_) => serde_json::Value::Null,
                    };
                    m.insert(n.clone(), v);
                }
                Ok(m)
            })
            .map_err(|e| self.err(e))?;
        let rows = rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?;
        Ok((names, rows))
    }

    /// The stored ticks of run `run`: (t, tps, the tick's JSON).
    pub fn ticks(&self, run: i64) -> Result<Vec<(f64, f64, String)>, StoreError> {
        select(
            &self.conn,
            "SELECT t, tps, json FROM ticks WHERE run_id = ?1 ORDER BY t",
            params![run],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(|e| self.err(e))
    }

    /// The number of tick rows of run `run`.
    pub fn tick_count(&self, run: i64) -> Result<i64, StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM ticks WHERE run_id = ?1",
                params![run],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }
}
