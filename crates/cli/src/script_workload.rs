//! A user's own workload on the command line (`bakeoff run mine.lua`, `bakeoff run
//! read.sql@9,tpcb-like@1`), read as a study reads it from its file: the same seam
//! (`scripting::user`), so the run gets the engine's percentiles and telemetry.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use bakeoff_workload::scripting::user::{self, PgMode, UserScript};

use crate::args::LoadArgs;

/// The user's script the line names, read and checked; None for a built-in workload.
pub(crate) fn user_script(a: &LoadArgs) -> Result<Option<UserScript>> {
    let w = &a.workload;
    if !user::is_script(w, Path::new("")) {
        if !a.script_options.is_empty() {
            bail!("--script-option gives a script of yours its options, and {w} is a built-in workload: its options are bakeoff's own (bakeoff run --help)");
        }
        return Ok(None);
    }
    let mut options = Vec::new();
    for o in &a.script_options {
        let Some((k, v)) = o.split_once('=') else {
            bail!("--script-option={o}: give NAME=VALUE, e.g. --script-option tables=4");
        };
        options.push((k.trim().replace('_', "-"), v.to_string()));
    }
    if w.ends_with(".lua") {
        let text = std::fs::read_to_string(w)
            .map_err(|e| anyhow!("cannot read the Lua script {w}: {e}"))?;
        let script = UserScript::Lua {
            path: w.clone(),
            text,
            options: options.into_iter().map(|(k, v)| (k, Some(v))).collect(),
        };
        script.check().map_err(|e| anyhow!("{w}: {e}"))?;
        return Ok(Some(script));
    }
    if w == "pgbench" {
        bail!("name pgbench's scripts, each with its weight as pgbench's -f FILE@WEIGHT: `bakeoff run read.sql@9,tpcb-like@1 --db-driver=pgsql`");
    }
    let (mut scale, mut mode) = (1, PgMode::Simple);
    for (k, v) in options {
        match k.as_str() {
            "scale" => {
                scale = v.parse().ok().filter(|n| (1..=100_000).contains(n)).ok_or_else(|| {
                    anyhow!("--script-option scale={v}: pgbench's scale is a whole number from 1 to 100000")
                })?
            }
            "query-mode" => {
                mode = PgMode::ALL
                    .iter()
                    .find(|(n, _)| *n == v)
                    .map(|(_, m)| *m)
                    .ok_or_else(|| anyhow!("--script-option query_mode={v}: one of simple, extended, prepared (pgbench's -M)"))?
            }
            other => bail!("--script-option {other}: pgbench scripts take scale=N and query_mode=simple|extended|prepared"),
        }
    }
    let scripts = w
        .split(',')
        .map(|e| user::pgbench_file(e, Path::new("")))
        .collect::<Result<Vec<_>, String>>()
        .map_err(anyhow::Error::msg)?;
    let script = UserScript::Pgbench {
        scripts,
        scale,
        mode,
    };
    script.check().map_err(anyhow::Error::msg)?;
    let postgres = match &a.mysql.server {
        Some(url) => {
            bakeoff_driver::ServerUrl::parse(url).is_ok_and(|u| script.runs_on(u.protocol))
        }
        None => a.general.embedded.db_driver == "pgsql",
    };
    if !postgres {
        bail!("{w}: pgbench scripts run on PostgreSQL: add --db-driver=pgsql (the embedded PostgreSQL), or give yours with --server postgresql://USER@HOST/DATABASE");
    }
    Ok(Some(script))
}

/// How a user's script makes its tables on a server of theirs: as its own tool does.
pub(crate) fn prepare_by_hand(s: &UserScript, workload: &str) -> String {
    match s {
        UserScript::Lua { .. } => format!("a Lua script makes its own tables, as under sysbench: `bakeoff {workload} [its options] --mysql-socket=... prepare` (a study's or `bakeoff run`'s embedded server gets them made for it)"),
        UserScript::Pgbench { .. } => "pgbench scripts run on pgbench's tables: `bakeoff pgbench -i -s SCALE` makes them, as pgbench does (dropping any pgbench_* tables of those names first); a study's or `bakeoff run`'s embedded server gets them made for it".to_string(),
    }
}
