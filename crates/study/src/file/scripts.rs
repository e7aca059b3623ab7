//! A `[[workload]]` that is the user's own: a sysbench Lua script (`name = "mine.lua"`) or
//! pgbench scripts (`name = "mine.sql"`, or `name = "pgbench"` with `scripts = ["a.sql@3",
//! "tpcb-like@1"]`). Their files are read here, relative to the study file, so the study
//! carries their text (to client hosts, and into its results).

use std::path::{Path, PathBuf};

use bakeoff_workload::scripting::user::{self, PgMode, UserScript};
use bakeoff_workload::WorkloadSpec;
use toml::de::DeValue;

use crate::reader::{one_of, str_value, Problems, Table};

/// The workload entry `t` (its `name` at `span`) as a user's script, its files read from
/// `dir` (the study file's directory), with what a study does not call of it (`check`);
/// None after saying what is wrong.
pub(super) fn script_workload(
    p: &mut Problems,
    t: &mut Table,
    (name, span): (&str, std::ops::Range<usize>),
    dir: &Path,
) -> Option<(WorkloadSpec, Vec<String>)> {
    let script = match name.ends_with(".lua") {
        true => lua(p, t, (name, span.clone()), dir),
        false => pgbench(p, t, (name, span.clone()), dir),
    }?;
    // Read as its run will read it: a Lua body loads (once) and its options are ones it
    // declares; every pgbench script parses.
    match script.check() {
        Ok(uncalled) => Some((WorkloadSpec::of_script(script), uncalled)),
        Err(e) if name.ends_with(".lua") => {
            p.at(span, format!("{name}: {e}"));
            None
        }
        Err(e) => {
            p.at(span, e);
            None
        }
    }
}

fn lua(
    p: &mut Problems,
    t: &mut Table,
    (name, span): (&str, std::ops::Range<usize>),
    dir: &Path,
) -> Option<UserScript> {
    // Every key is read before anything can end the entry: one left unread would be
    // reported as unknown besides.
    let options = lua_options(p, t);
    let text = read(p, span.clone(), name, dir)?;
    Some(UserScript::Lua {
        path: dir.join(name).display().to_string(),
        text,
        options: options?,
    })
}

/// A Lua workload's `options`, as its command line would give them.
fn lua_options(p: &mut Problems, t: &mut Table) -> Option<Vec<(String, Option<String>)>> {
    let mut options = Vec::new();
    if let Some(v) = t.get("options") {
        let DeValue::Table(inner) = v.get_ref() else {
            p.at(v.span(), "`options` must be a table of the script's options, e.g. { tables = 4, table_size = 10000 }");
            return None;
        };
        for (k, v) in inner.iter() {
            let key = k.get_ref().replace('_', "-");
            let value = match v.get_ref() {
                DeValue::String(s) => s.to_string(),
                DeValue::Integer(i) => i.to_string(),
                DeValue::Float(f) => f.to_string(),
                DeValue::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
                _ => {
                    p.at(v.span(), format!("`options.{}` must be a string, number or boolean, as on sysbench's command line", k.get_ref()));
                    continue;
                }
            };
            options.push((key, Some(value)));
        }
    }
    Some(options)
}

fn pgbench(
    p: &mut Problems,
    t: &mut Table,
    (name, span): (&str, std::ops::Range<usize>),
    dir: &Path,
) -> Option<UserScript> {
    let scale = t.int(p, "scale", 1..100_001).unwrap_or(1) as u32;
    let mode = match t.string(p, "query_mode") {
        None => PgMode::Simple,
        Some((s, at)) => one_of(p, at, "query_mode", s, PgMode::ALL).unwrap_or(PgMode::Simple),
    };
    let mut entries: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    match (name, t.get("scripts")) {
        ("pgbench", None) => {
            p.at(span, "`name = \"pgbench\"` runs pgbench scripts: add scripts = [\"mine.sql@2\", \"tpcb-like@1\"] (files relative to the study file, or pgbench's built-ins, each with its weight as pgbench's -f FILE@WEIGHT)");
            return None;
        }
        ("pgbench", Some(_)) => {
            for v in t.list(p, "scripts").unwrap_or_default() {
                if let Some(s) = str_value(p, v, "an entry of `scripts`") {
                    entries.push((s.to_string(), v.span()));
                }
            }
        }
        (file, Some(v)) => {
            p.at(v.span(), format!("`scripts` goes with name = \"pgbench\"; name = \"{file}\" is one script already"));
            return None;
        }
        (files, None) => entries.extend(files.split(',').map(|f| (f.to_string(), span.clone()))),
    }
    let mut scripts = Vec::new();
    for (entry, at) in entries {
        match user::pgbench_file(&entry, dir) {
            Ok(f) => scripts.push(f),
            Err(e) if e.starts_with("cannot read") => p.at(
                at,
                format!("{e} (a script's path is relative to the study file's directory)"),
            ),
            Err(e) => p.at(at, e),
        }
    }
    if scripts.is_empty() {
        return None;
    }
    Some(UserScript::Pgbench {
        scripts,
        scale,
        mode,
    })
}

/// A script's text, from `name` relative to `dir`; None after saying why not.
fn read(p: &mut Problems, span: std::ops::Range<usize>, name: &str, dir: &Path) -> Option<String> {
    let path: PathBuf = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) => {
            p.at(
                span,
                format!(
                    "cannot read the script {}: {e} (a script's path is relative to the study file's directory)",
                    path.display()
                ),
            );
            None
        }
    }
}
