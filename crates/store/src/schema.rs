//! The database layout. Columns carry the figures reports and spreadsheets sort by; the rest
//! of each run (every percentile, errors per code, telemetry, manifest) is JSON beside them.
//!
//! Results databases outlive bakeoff versions (a study is hours of machine time), so the
//! layout is versioned: [`VERSION`] is stored in the file (`PRAGMA user_version`), and
//! [`MIGRATIONS`] takes a database of any earlier version to this one when it is opened.
//! Changing the layout means: raise `VERSION`, add the step to `MIGRATIONS`, update `SCHEMA`
//! (what a new database gets), and keep a database of the old version as a test fixture.
//! Never edit a step that has shipped.

/// The layout this bakeoff writes. 1: the layout of the first release that stored results
/// (databases written before the version was stored hold it too, as version 0).
pub const VERSION: u32 = 1;

/// Steps from version `n - 1` to `n`, in order: (n, SQL). Each runs in the opening
/// transaction, with the version stamp, so a failed step leaves the file as it was.
pub const MIGRATIONS: &[(u32, &str)] = &[];

pub const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
PRAGMA foreign_keys = ON;
PRAGMA busy_timeout = 5000;

CREATE TABLE IF NOT EXISTS studies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    hash TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    bakeoff_version TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    repetition INTEGER NOT NULL,
    variant INTEGER NOT NULL,
    workload INTEGER NOT NULL,
    threads INTEGER NOT NULL,
    variant_name TEXT NOT NULL,
    workload_label TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'invalid', 'interrupted')),
    reason TEXT,
    started_at INTEGER NOT NULL,
    seconds REAL NOT NULL,
    events INTEGER NOT NULL,
    tps REAL NOT NULL,
    qps REAL NOT NULL,
    errors INTEGER NOT NULL,
    reconnects INTEGER NOT NULL,
    p50_ms REAL NOT NULL,
    p95_ms REAL NOT NULL,
    p99_ms REAL NOT NULL,
    max_ms REAL NOT NULL,
    server_cpu_us_per_event REAL,
    rss_growth_bytes INTEGER,
    client_bound INTEGER NOT NULL,
    summary_json TEXT NOT NULL,
    manifest_json TEXT NOT NULL
);
-- A finished run is stored once; only interrupted attempts may repeat (and are replaced).
CREATE UNIQUE INDEX IF NOT EXISTS runs_once ON runs (study_id, repetition, variant, workload, threads)
    WHERE status <> 'interrupted';

CREATE TABLE IF NOT EXISTS ticks (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    t REAL NOT NULL,
    tps REAL NOT NULL,
    qps REAL NOT NULL,
    p99_ms REAL NOT NULL,
    errors INTEGER NOT NULL,
    json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ticks_of_run ON ticks (run_id);

-- Cells: one per (variant, workload, thread count) of a study, over its repetitions.
CREATE VIEW IF NOT EXISTS cells AS
    SELECT study_id, variant, variant_name, workload, workload_label, threads,
           COUNT(*) AS runs, SUM(status = 'ok') AS ok, AVG(CASE WHEN status = 'ok' THEN tps END) AS mean_tps,
           MIN(CASE WHEN status = 'ok' THEN tps END) AS min_tps, MAX(CASE WHEN status = 'ok' THEN tps END) AS max_tps
    FROM runs GROUP BY study_id, variant, workload, threads;

-- Host probes run with a study: the machine's own profile beside its database results.
CREATE TABLE IF NOT EXISTS probes (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    probe TEXT NOT NULL,
    threads INTEGER NOT NULL,
    figure REAL NOT NULL,
    unit TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    summary_json TEXT NOT NULL,
    UNIQUE (study_id, probe, threads)
);
";
