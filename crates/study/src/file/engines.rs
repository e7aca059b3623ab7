//! Which database engine each variant runs: `engine` for the whole study, as an axis, or on a
//! `[[variant]]`; and the per-engine sections `[mariadb]`, `[mysql]`, `[postgresql]` (a
//! `binary`, an `allocator`, `settings`) that every variant of that engine gets. Every setting
//! is checked against the binary that would run it, so one engine's setting given to another
//! is refused at `study check`, at its line, before anything starts.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bakeoff_server::engine::ENGINE_NAMES;
use bakeoff_server::variant::{Allocator, Setting};
use bakeoff_server::{Catalog, Engine};
use toml::de::DeValue;

use crate::reader::{kind, nearest, str_value, Problems, Table, Value};

/// A setting as the file gives it, with where (its key) for problems.
pub(super) type Placed = (Setting, Range<usize>);

/// What a per-engine section gives every variant of that engine.
#[derive(Default)]
pub(super) struct Section {
    pub binary: Option<(PathBuf, Range<usize>)>,
    pub allocator: Option<Allocator>,
    pub settings: Vec<Placed>,
}

/// The study's engine (top-level `engine`) and its per-engine sections.
#[derive(Default)]
pub(super) struct Engines {
    pub study: Option<(Engine, Range<usize>)>,
    sections: BTreeMap<Engine, Section>,
    /// Settings are checked against binaries here; not when the servers run on another host
    /// (`[hosts] server`), where other binaries may be installed.
    pub check_here: bool,
}

/// The top-level `engine` and the `[mariadb]`, `[mysql]`, `[postgresql]` sections.
pub(super) fn engines(p: &mut Problems, top: &mut Table, check_here: bool) -> Engines {
    let study = top
        .get("engine")
        .and_then(|v| engine_value(p, v).map(|e| (e, v.span())));
    let mut sections = BTreeMap::new();
    for &(key, engine) in ENGINE_NAMES {
        if let Some(t) = top.tables(p, key).into_iter().next() {
            sections.insert(engine, section(p, t));
        }
    }
    Engines {
        study,
        sections,
        check_here,
    }
}

fn section(p: &mut Problems, mut t: Table) -> Section {
    let binary = t
        .string(p, "binary")
        .map(|(s, span)| (PathBuf::from(s), span));
    let allocator = t.get("allocator").and_then(|v| {
        let a = str_value(p, v, "`allocator`")?.parse::<Allocator>();
        a.map_err(|e| p.at(v.span(), e)).ok()
    });
    let settings = t
        .get("settings")
        .and_then(|v| settings(p, v))
        .unwrap_or_default();
    t.finish(p);
    Section {
        binary,
        allocator,
        settings,
    }
}

/// An engine's name, or a problem at it.
pub(super) fn engine_value(p: &mut Problems, v: &Value) -> Option<Engine> {
    let s = str_value(p, v, "`engine`")?;
    s.parse::<Engine>().map_err(|e| p.at(v.span(), e)).ok()
}

/// A `settings` table: each entry a string, number or true/false (ON/OFF); None (with the
/// problems said) when any entry is not.
pub(super) fn settings(p: &mut Problems, v: &Value) -> Option<Vec<Placed>> {
    let DeValue::Table(t) = v.get_ref() else {
        p.at(v.span(), format!("`settings` must be a table like {{ innodb_adaptive_hash_index = \"OFF\" }}, found {}", kind(v)));
        return None;
    };
    let mut out = Vec::new();
    let mut bad = false;
    for (k, val) in t.iter() {
        let value = match val.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) => i.as_str().to_string(),
            DeValue::Float(f) => f.as_str().to_string(),
            DeValue::Boolean(b) => if *b { "ON" } else { "OFF" }.to_string(),
            _ => {
                let msg = format!(
                    "setting `{}` must be a string, number or true/false, found {}",
                    k.get_ref(),
                    kind(val)
                );
                p.at(val.span(), msg);
                bad = true;
                continue;
            }
        };
        match format!("{}={value}", k.get_ref()).parse::<Setting>() {
            Ok(s) => out.push((s, k.span())),
            Err(e) => {
                p.at(k.span(), e);
                bad = true;
            }
        }
    }
    (!bad).then_some(out)
}

impl Engines {
    pub fn section(&self, e: Engine) -> Option<&Section> {
        self.sections.get(&e)
    }

    /// The engine of a variant that says `said` (None: the study's, else its binary's, else
    /// MariaDB).
    pub fn resolve(&self, said: Option<Engine>, binary: Option<&Path>) -> Engine {
        said.or(self.study.as_ref().map(|(e, _)| *e))
            .or_else(|| binary.map(Engine::of_binary))
            .unwrap_or_default()
    }

    /// Check a variant of `engine` (said at `engine_at`, where the variant says it) run by
    /// `binary` (the path and where the file names it; None: the engine's default): the
    /// binary is that engine's by its own `--version`, and it knows each setting. Nothing is
    /// said when the binary is not here to ask (the start will say).
    pub fn check(
        &self,
        p: &mut Problems,
        (engine, engine_at): (Engine, Option<Range<usize>>),
        binary: Option<(&Path, Range<usize>)>,
        settings: &[Placed],
    ) {
        if !self.check_here {
            return;
        }
        let (path, at) = match binary {
            Some((b, at)) => (b.to_path_buf(), Some(at)),
            None => match engine.default_binary() {
                Ok(b) => (b, None),
                Err(_) => return,
            },
        };
        if let Some(why) = engine.refuses_binary(&path, at.is_some()) {
            let at = at
                .or(engine_at)
                .or(self.study.as_ref().map(|(_, s)| s.clone()));
            p.at(at.unwrap_or(0..0), why);
            return;
        }
        let Ok(catalog) = Catalog::of(&path) else {
            return;
        };
        for (s, span) in settings {
            if catalog.refuses(&s.name, &s.value) {
                p.at(span.clone(), unknown_setting(&catalog, &s.name));
            } else if let Some(why) = catalog.value_problem(&s.name, &s.value) {
                p.at(span.clone(), why);
            }
        }
    }
}

/// Why the server `binary` (the engine's default when None) would not take setting `name`,
/// said as `study check` says it; None when it takes it, or when the binary is not here to
/// ask (the start will say). For `bakeoff run --set`, before a server starts.
pub fn setting_refused(
    engine: Engine,
    binary: Option<&Path>,
    name: &str,
    value: &str,
) -> Option<String> {
    let path = match binary {
        Some(b) => b.to_path_buf(),
        None => engine.default_binary().ok()?,
    };
    let catalog = Catalog::of(&path).ok()?;
    match catalog.refuses(name, value) {
        true => Some(unknown_setting(&catalog, name)),
        false => catalog.value_problem(name, value),
    }
}

/// Why `name` is refused for `catalog`'s server, and what to do: another engine's setting
/// goes in that engine's section; a typo gets the nearest name.
fn unknown_setting(catalog: &Arc<Catalog>, name: &str) -> String {
    let engine = catalog.engine;
    let head = format!(
        "`{name}` is not a {} setting ({} does not know it)",
        engine.title(),
        catalog.binary.display()
    );
    let other = match engine {
        Engine::PostgreSql => Engine::MariaDb,
        _ => Engine::PostgreSql,
    };
    let theirs = other
        .default_binary()
        .ok()
        .and_then(|b| Catalog::of(&b).ok())
        .filter(|c| c.knows(name));
    if let Some(c) = theirs {
        return format!(
            "{head}: it is {}'s; give it to {} variants only, under [{}] settings",
            c.engine.title(),
            c.engine.title(),
            c.engine.name()
        );
    }
    let name = name.to_ascii_lowercase().replace('-', "_");
    let names: Vec<&str> = catalog.names().collect();
    match nearest(&name, &names) {
        Some(n) => format!("{head}; did you mean `{n}`?"),
        None => format!("{head}; see its list with {}", list_command(catalog)),
    }
}

fn list_command(c: &Catalog) -> String {
    match c.engine {
        Engine::PostgreSql => format!("`{} --describe-config`", c.binary.display()),
        _ => format!("`{} --verbose --help`", c.binary.display()),
    }
}
