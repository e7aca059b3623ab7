//! A user's own workload: a sysbench Lua script, or pgbench scripts with weights, carried by
//! their text (so a client host runs what this machine read) and run by the same engine,
//! telemetry and reports as the built-in workloads.
//!
//! Each is a room that already exists (`scripting::lua`, `pgbench`); this file is only the
//! seam a study and `bakeoff run` reach them through: what the spec carries, the sources the
//! sessions come from, and the dataset each brings (the script's own `prepare`; pgbench's
//! `-i` tables).

use std::path::Path;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};

use bakeoff_driver::{ConnectOptions, PgConn, Protocol};
use serde::{Deserialize, Serialize};

use crate::dataset::{DatasetError, Prepared};
use crate::pgbench::eval::Vars;
use crate::pgbench::init::{initialize, InitOptions};
use crate::pgbench::prng::Streams;
use crate::pgbench::value::Value;
use crate::pgbench::{PgbenchSource, QueryMode};

/// A workload the user wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UserScript {
    /// A sysbench Lua script and the options its command line would give it (names with
    /// dashes, as sysbench's).
    Lua {
        path: String,
        text: String,
        options: Vec<(String, Option<String>)>,
    },
    /// pgbench scripts, each chosen by its weight as `pgbench -f file@weight` chooses, run
    /// on pgbench's tables at `scale` (`pgbench -i -s`).
    Pgbench {
        scripts: Vec<PgbenchFile>,
        scale: u32,
        mode: PgMode,
    },
}

/// One pgbench script: a file's text, or a built-in's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgbenchFile {
    /// The path as given, or `builtin: NAME`.
    pub name: String,
    pub text: String,
    pub weight: u32,
}

/// pgbench's `-M`, as a study file says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PgMode {
    Simple,
    Extended,
    Prepared,
}

impl PgMode {
    pub const ALL: &'static [(&'static str, PgMode)] = &[
        ("simple", PgMode::Simple),
        ("extended", PgMode::Extended),
        ("prepared", PgMode::Prepared),
    ];

    fn query_mode(self) -> QueryMode {
        match self {
            PgMode::Simple => QueryMode::Simple,
            PgMode::Extended => QueryMode::Extended,
            PgMode::Prepared => QueryMode::Prepared,
        }
    }
}

/// sysbench's options a Lua script reads without declaring them (bakeoff's Lua API reads them
/// itself), so a study may give them beside the script's own.
const LUA_GENERAL: &[&str] = &[
    "mysql-ignore-errors",
    "pgsql-ignore-errors",
    "rand-type",
    "rand-seed",
    "rand-spec-iter",
    "rand-spec-pct",
    "rand-spec-res",
    "rand-pareto-h",
    "rand-zipfian-exp",
    "verbosity",
    "threads",
];

/// sysbench's own scripts, which run as the built-in workloads of their names.
pub const STOCK_SCRIPTS: &str = "/usr/share/sysbench";

/// Whether `path` is one of sysbench's own scripts (in [`STOCK_SCRIPTS`], however reached).
pub fn is_stock(path: &Path) -> bool {
    path.canonicalize()
        .is_ok_and(|c| c.parent() == Some(Path::new(STOCK_SCRIPTS)))
}

/// A pgbench script entry without its `@WEIGHT`.
fn without_weight(entry: &str) -> &str {
    entry.rsplit_once('@').map_or(entry, |(w, _)| w)
}

/// Whether workload name `name` is a user's script rather than a built-in workload: a `.lua`
/// file of the user's (sysbench's own, in its directory or by bare name, are the built-ins
/// of their names), `.sql` files (`,` between several, each `@WEIGHT`), or `pgbench`. Paths
/// are relative to `dir`.
pub fn is_script(name: &str, dir: &Path) -> bool {
    if name == "pgbench" || name.split(',').any(|e| without_weight(e).ends_with(".sql")) {
        return true;
    }
    if !name.ends_with(".lua") {
        return false;
    }
    let path = dir.join(name);
    // A bare sysbench name that is not a file here is the built-in of that name.
    let builtin = !path.exists() && name.parse::<crate::WorkloadKind>().is_ok();
    !is_stock(&path) && !builtin
}

/// One pgbench script as pgbench's `-f FILE@WEIGHT` or `-b NAME@WEIGHT` gives it: a file
/// (`.sql`, or any path; relative to `dir`) or a built-in by name or unique prefix.
pub fn pgbench_file(entry: &str, dir: &Path) -> Result<PgbenchFile, String> {
    let what = without_weight(entry);
    let weight = match entry.rsplit_once('@') {
        Some((_, n)) => match n.parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("`{entry}`: the weight after @ must be a whole number from 1, as pgbench's -f FILE@WEIGHT")),
        },
        None => 1,
    };
    if what.ends_with(".sql") || what.contains('/') {
        let path = dir.join(what);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the pgbench script {}: {e}", path.display()))?;
        return Ok(PgbenchFile {
            name: what.to_string(),
            text,
            weight,
        });
    }
    match crate::pgbench::builtin::find(what) {
        Ok((builtin, _, text)) => Ok(PgbenchFile {
            name: format!("builtin: {builtin}"),
            text: text.to_string(),
            weight,
        }),
        Err(e) => Err(format!("`{what}`: {e}; a script of yours ends in .sql (pgbench's built-ins: tpcb-like, simple-update, select-only)")),
    }
}

impl UserScript {
    /// How results name it when the study gives no label: the file's stem.
    pub fn default_label(&self) -> String {
        let stem = |p: &str| {
            std::path::Path::new(p)
                .file_stem()
                .map_or_else(|| p.to_string(), |s| s.to_string_lossy().into_owned())
        };
        match self {
            UserScript::Lua { path, .. } => stem(path),
            UserScript::Pgbench { scripts, .. } => match scripts.as_slice() {
                [one] => stem(one.name.trim_start_matches("builtin: ")),
                _ => "pgbench".to_string(),
            },
        }
    }

    /// Whether its sessions block their thread on every statement (a Lua script that waits
    /// inside C: `lua::waits_in_c`), so each connection needs a client thread of its own.
    pub fn blocks(&self) -> bool {
        match self {
            UserScript::Lua { text, .. } => super::lua::waits_in_c(text).is_some(),
            UserScript::Pgbench { .. } => false,
        }
    }

    /// What it can run on: pgbench's scripts are PostgreSQL's.
    pub fn runs_on(&self, protocol: Protocol) -> bool {
        match self {
            UserScript::Lua { .. } => true,
            UserScript::Pgbench { .. } => protocol == Protocol::Postgres,
        }
    }

    /// Read it as its run will (the Lua body loaded and its options checked against what it
    /// declares; every pgbench script parsed), without a server: a study says what is wrong
    /// before it starts one. Read once, it also names what a study does not call of it: a Lua
    /// script's main-state hooks (`init`, `done`, the report hooks; the study reports, and
    /// runs each connection's `thread_init`, `event` and `thread_done` only).
    pub fn check(&self) -> Result<Vec<String>, String> {
        match self {
            UserScript::Lua { .. } => {
                let script = self.lua(None, None, 1, 1)?;
                let main = script
                    .main(&|n| LUA_GENERAL.contains(&n))
                    .map_err(|e| e.to_string())?;
                if main.runs_its_threads().map_err(|e| e.to_string())? {
                    // One call a connection, which the engine cannot end or take turns from.
                    return Err(format!("{} runs its threads itself (thread_run()): a study or `bakeoff run` times events, so give it an event() function, or run it as sysbench does: `bakeoff {} [options] run`", script.name(), script.name()));
                }
                match main.has_events().map_err(|e| e.to_string())? {
                    true => Ok(main.main_hooks()),
                    false => Err(format!(
                        "{} has no event() function: it has nothing to run",
                        script.name()
                    )),
                }
            }
            UserScript::Pgbench { .. } => self.pgbench_scripts().map(|_| Vec::new()),
        }
    }

    /// The Lua script for a run against `endpoint` (None: reading it only), to run `command`
    /// in `threads` threads (`sysbench.opt.threads`, which scripts read to share out work),
    /// its random numbers from `seed` (`--rand-seed`, unless the study gives one: a study's
    /// runs repeat, and every server of a block loads the same rows).
    fn lua(
        &self,
        endpoint: Option<&ConnectOptions>,
        command: Option<&str>,
        threads: u32,
        seed: u64,
    ) -> Result<crate::scripting::lua::Script, String> {
        let UserScript::Lua {
            path,
            text,
            options,
        } = self
        else {
            return Err("not a Lua script".into());
        };
        let mut options = options.clone();
        if !options.iter().any(|(n, _)| n == "threads") {
            options.push(("threads".into(), Some(threads.max(1).to_string())));
        }
        // sysbench's 0 is the clock's; a study's seed is never taken as that.
        if !options.iter().any(|(n, _)| n == "rand-seed") {
            options.push(("rand-seed".into(), Some(seed.max(1).to_string())));
        }
        crate::scripting::lua::Script::new(
            path.into(),
            text.clone(),
            options,
            command.map(str::to_string),
            endpoint.into_iter().cloned().collect(),
        )
    }

    fn pgbench_scripts(&self) -> Result<Vec<crate::pgbench::script::Script>, String> {
        let UserScript::Pgbench { scripts, .. } = self else {
            return Err("not pgbench scripts".into());
        };
        scripts
            .iter()
            .map(|f| {
                crate::pgbench::script::parse(&f.name, &f.name, &f.text, f.weight)
                    .map_err(|e| format!("{}: {e}", f.name))
            })
            .collect()
    }

    /// The sessions' sources for a run of `threads` connections from `seed`, one per server
    /// (connection `tid` uses `endpoints[tid % len]`).
    pub(crate) fn sources(
        &self,
        endpoints: &[ConnectOptions],
        threads: u32,
        seed: u64,
    ) -> Result<UserSources, String> {
        match self {
            UserScript::Lua { .. } => Ok(UserSources::Lua(
                endpoints
                    .iter()
                    .map(|e| self.lua(Some(e), Some("run"), threads, seed).map(Arc::new))
                    .collect::<Result<_, _>>()?,
            )),
            UserScript::Pgbench { scale, mode, .. } => {
                let scripts = self.pgbench_scripts()?;
                let streams = Streams::deal(seed, threads.max(1), threads.max(1));
                let mut vars = Vars::default();
                vars.set_value("scale", Value::Int(i64::from(*scale)));
                vars.set_value("default_seed", Value::Int(streams.default_seed as i64));
                vars.set_value("random_seed", Value::Int(seed as i64));
                let source = |endpoint: &ConnectOptions| PgbenchSource {
                    endpoint: endpoint.clone(),
                    scripts: scripts.clone(),
                    mode: mode.query_mode(),
                    vars: vars.clone(),
                    max_tries: 1,
                    connect_each: false,
                    per_command: false,
                    latency_limit: None,
                    paced: false,
                    stats: Mutex::new(Vec::new()),
                    // A client that aborts fails the run with pgbench's words: a study's
                    // figures must not quietly come from the clients that were left.
                    abort_fails_run: true,
                    on_abort: Box::new(|_| {}),
                    on_notice: Box::new(|_| {}),
                    on_verbose: None,
                    on_transaction: None,
                    aborted: AtomicU32::new(0),
                    streams: streams.clone(),
                    live: None,
                    debug: None,
                };
                Ok(UserSources::Pgbench(
                    endpoints.iter().map(|e| Arc::new(source(e))).collect(),
                ))
            }
        }
    }

    /// Load what the workload runs on into the server at `opts`: the Lua script's own
    /// `prepare` command, as sysbench runs it with the run's `--threads` (in that many threads
    /// where it declares it parallel: a script may make a table per thread), or pgbench's four
    /// tables at the scale (`pgbench -i`: drops and replaces any `pgbench_*` tables of those
    /// names).
    pub async fn prepare(
        &self,
        opts: &ConnectOptions,
        threads: u32,
        seed: u64,
    ) -> Result<Prepared, DatasetError> {
        let began = std::time::Instant::now();
        match self {
            UserScript::Lua { .. } => {
                let threads = threads.max(1);
                let script = self
                    .lua(Some(opts), Some("prepare"), threads, seed)
                    .map_err(DatasetError::Script)?;
                // The script's calls block: off the runtime's thread.
                let ran = tokio::task::spawn_blocking(move || {
                    script.run_command(
                        Some("prepare"),
                        &|n| LUA_GENERAL.contains(&n),
                        threads,
                        &|| {},
                    )
                })
                .await
                .map_err(|e| DatasetError::Thread(e.to_string()))?;
                match ran {
                    // A script with no prepare runs on what the server has (its run says
                    // what is missing, in the script's own words).
                    Err(crate::scripting::lua::ScriptError::NoCommand { .. }) => {
                        Ok(prepared(began))
                    }
                    Ok(crate::scripting::lua::Ran::CommandFailed) => Err(DatasetError::Script(
                        "the script's prepare command returned false".into(),
                    )),
                    Ok(_) => Ok(prepared(began)),
                    Err(e) => Err(DatasetError::Script(format!("its prepare command: {e}"))),
                }
            }
            UserScript::Pgbench { scale, .. } => {
                let mut conn = PgConn::connect(opts).await?;
                let o = InitOptions {
                    steps: "dtgvp".into(),
                    scale: *scale,
                    fillfactor: 100,
                    unlogged: false,
                    partitions: 0,
                    partition_method: "range".into(),
                    tablespace: None,
                    index_tablespace: None,
                    quiet: true,
                };
                let done = initialize(&mut conn, &o, &mut |_| {}).await;
                conn.quit().await;
                done.map_err(|e| DatasetError::Script(format!("pgbench's -i: {e}")))?;
                Ok(prepared(began))
            }
        }
    }
}

fn prepared(began: std::time::Instant) -> Prepared {
    Prepared {
        tables: 0,
        rows: 0,
        load: began.elapsed(),
        index: std::time::Duration::ZERO,
        redo_bytes: None,
        local_infile: false,
    }
}

/// The sources a user's workload opens its sessions from, one per server.
pub(crate) enum UserSources {
    Lua(Vec<Arc<crate::scripting::lua::Script>>),
    Pgbench(Vec<Arc<PgbenchSource>>),
}

impl std::fmt::Debug for UserSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UserSources::Lua(s) => write!(f, "Lua({} sources)", s.len()),
            UserSources::Pgbench(s) => write!(f, "Pgbench({} sources)", s.len()),
        }
    }
}
