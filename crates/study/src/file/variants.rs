//! A study's server setups: `[axes]` (every combination of the values listed) or `[[variant]]`
//! entries (an explicit list), each expanded into its instances.

use bakeoff_server::variant::{instance_variants, Allocator};
use bakeoff_server::Variant;
use std::path::PathBuf;

use super::engines::{engine_value, settings as read_settings, Engines};
use super::spec::NamedVariant;
use crate::reader::{cpu_list, int_value, str_value, Problems, Table, Value};

/// The per-variant keys, as axes (lists) or as one variant's values.
struct VariantKeys<'t, 'i> {
    engine: Option<Vec<&'t Value<'i>>>,
    allocator: Option<Vec<&'t Value<'i>>>,
    cpus: Option<Vec<&'t Value<'i>>>,
    numa: Option<Vec<&'t Value<'i>>>,
    instances: Option<Vec<&'t Value<'i>>>,
    binary: Option<Vec<&'t Value<'i>>>,
    settings: Option<Vec<&'t Value<'i>>>,
}

impl<'t, 'i> VariantKeys<'t, 'i> {
    /// Every key but `engine`, in the order of `given::SETUP_KEYS`.
    fn setup(&self) -> [&Option<Vec<&'t Value<'i>>>; 6] {
        [
            &self.allocator,
            &self.cpus,
            &self.numa,
            &self.instances,
            &self.binary,
            &self.settings,
        ]
    }
}

fn keys<'t, 'i>(p: &mut Problems, t: &mut Table<'t, 'i>) -> VariantKeys<'t, 'i> {
    VariantKeys {
        engine: t.list(p, "engine"),
        allocator: t.list(p, "allocator"),
        cpus: t.list(p, "cpus"),
        numa: t.list(p, "numa"),
        instances: t.list(p, "instances"),
        binary: t.list(p, "binary"),
        settings: t.list(p, "settings"),
    }
}

/// An axis's values, or one "not set" when the axis is absent.
fn pick<'t, 'i>(o: &Option<Vec<&'t Value<'i>>>) -> Vec<Option<&'t Value<'i>>> {
    o.clone()
        .map(|v| v.into_iter().map(Some).collect())
        .unwrap_or_else(|| vec![None])
}

fn first<'t, 'i>(o: &Option<Vec<&'t Value<'i>>>) -> Option<&'t Value<'i>> {
    o.as_ref().and_then(|v| v.first().copied())
}

/// One variant's values, each axis's one (None: not set).
#[derive(Clone, Copy, Default)]
struct Picked<'t, 'i> {
    engine: Option<&'t Value<'i>>,
    allocator: Option<&'t Value<'i>>,
    cpus: Option<&'t Value<'i>>,
    numa: Option<&'t Value<'i>>,
    instances: Option<&'t Value<'i>>,
    binary: Option<&'t Value<'i>>,
    settings: Option<&'t Value<'i>>,
}

/// Every combination of the axes' values.
pub(super) fn axes_variants(p: &mut Problems, mut t: Table, eng: &Engines) -> Vec<NamedVariant> {
    let k = keys(p, &mut t);
    t.finish(p);
    if let (Some((_, span)), Some(_)) = (&eng.study, &k.engine) {
        p.at(
            span.clone(),
            "`engine` is both the study's and an axis: keep one",
        );
    }
    let lists: Vec<Vec<Option<&Value>>> = std::iter::once(&k.engine)
        .chain(k.setup())
        .map(pick)
        .collect();
    // Every combination, the last axis varying fastest (the order the file lists them).
    let total: usize = lists.iter().map(Vec::len).product();
    let combos = (0..total).map(|mut n| {
        let mut at = [None; 7];
        for (i, l) in lists.iter().enumerate().rev() {
            at[i] = l[n % l.len()];
            n /= l.len();
        }
        Picked {
            engine: at[0],
            allocator: at[1],
            cpus: at[2],
            numa: at[3],
            instances: at[4],
            binary: at[5],
            settings: at[6],
        }
    });
    let mut out: Vec<NamedVariant> = combos
        .into_iter()
        .filter_map(|c| one_variant(p, c, None, eng))
        .collect();
    // Name variants by what differs between them.
    let varying: Vec<bool> = std::iter::once(&k.engine)
        .chain(k.setup())
        .map(|o| o.as_ref().is_some_and(|v| v.len() > 1))
        .collect();
    let total = out.len();
    for v in &mut out {
        v.name = describe(v, &varying, total);
    }
    out
}

/// A study with neither axes nor variants: one variant, of the study's engine.
pub(super) fn default_variant(p: &mut Problems, eng: &Engines) -> Vec<NamedVariant> {
    one_variant(p, Picked::default(), Some("default".into()), eng)
        .into_iter()
        .collect()
}

/// A listed variant. `tpcc`: whether the study has a TPC-C workload, the only one that
/// `procedures` changes.
pub(super) fn listed_variant(
    p: &mut Problems,
    mut t: Table,
    eng: &Engines,
    tpcc: bool,
) -> Option<NamedVariant> {
    let name = t.string(p, "name").map(|(s, _)| s.to_string());
    let procedures = procedures(p, &mut t, tpcc);
    let client_cpus = t
        .string(p, "client_cpus")
        .map(|(s, span)| cpu_list(p, s, span, "variant.client_cpus"));
    let given = super::given::given(p, &mut t);
    let price_per_hour = super::given::price(p, &mut t);
    let k = keys(p, &mut t);
    t.finish(p);
    if let Some(given) = given {
        let given = GivenParts {
            name,
            given,
            price_per_hour,
            client_cpus: client_cpus.flatten(),
            procedures,
        };
        return given_variant(p, &k, given, eng);
    }
    let single = |o: &Option<Vec<&'_ Value<'_>>>, p: &mut Problems, key: &str| -> Result<(), ()> {
        match o {
            Some(v) if v.len() > 1 => {
                p.at(
                    v[0].span(),
                    format!("`variant.{key}` takes one value; lists belong in [axes]"),
                );
                Err(())
            }
            _ => Ok(()),
        }
    };
    let ok = [
        ("engine", &k.engine),
        ("allocator", &k.allocator),
        ("cpus", &k.cpus),
        ("numa", &k.numa),
        ("instances", &k.instances),
        ("binary", &k.binary),
    ]
    .iter()
    .all(|(key, o)| single(o, p, key).is_ok());
    let picked = Picked {
        engine: first(&k.engine),
        allocator: first(&k.allocator),
        cpus: first(&k.cpus),
        numa: first(&k.numa),
        instances: first(&k.instances),
        binary: first(&k.binary),
        settings: first(&k.settings),
    };
    let mut v = one_variant(p, picked, name, eng)?;
    if v.name.is_empty() {
        let mut varying = [true; 7];
        varying[0] = false;
        v.name = describe(&v, &varying, 2);
        // Two variants alike but for how the load runs TPC-C must not share a name.
        if let Some(b) = procedures {
            v.name = match v.name.as_str() {
                "default" => format!("procedures={b}"),
                n => format!("{n} procedures={b}"),
            };
        }
    }
    v.client_cpus = client_cpus.flatten();
    v.price_per_hour = price_per_hour;
    v.procedures = procedures;
    ok.then_some(v)
}

/// `procedures = true|false`: how the variant's load runs TPC-C. Said where no workload is
/// TPC-C, which it would leave alike.
fn procedures(p: &mut Problems, t: &mut Table, tpcc: bool) -> Option<bool> {
    let span = t.get("procedures").map(|v| v.span())?;
    let b = t.bool(p, "procedures")?;
    if !tpcc {
        p.at(span, "`variant.procedures` chooses how TPC-C runs (the server's stored procedures, or statements from the client), and no [[workload]] here is \"tpcc\": remove it, or add name = \"tpcc\"");
        return None;
    }
    Some(b)
}

/// What a listed variant with `server` says besides its setup keys.
struct GivenParts {
    name: Option<String>,
    given: super::spec::GivenServer,
    price_per_hour: Option<f64>,
    client_cpus: Option<bakeoff_server::variant::CpuList>,
    procedures: Option<bool>,
}

/// A listed variant that names a server the user runs: none of the keys that set up a
/// server bakeoff starts apply to it; its engine is its URL's.
fn given_variant(
    p: &mut Problems,
    k: &VariantKeys,
    g: GivenParts,
    eng: &Engines,
) -> Option<NamedVariant> {
    let mut bad = false;
    for (key, v) in super::given::SETUP_KEYS.iter().zip(k.setup()) {
        if let Some(v) = v.as_ref().and_then(|v| v.first()) {
            p.at(v.span(), format!("`variant.{key}` sets up a server bakeoff starts; `server` names one you run, which bakeoff never starts, stops or reconfigures"));
            bad = true;
        }
    }
    let engine = g.given.engine();
    let said = first(&k.engine).map(|v| (engine_value(p, v), v.span()));
    let said = said.or(eng.study.as_ref().map(|(e, s)| (Some(*e), s.clone())));
    if let Some((Some(e), span)) = said {
        if !e.runs(engine) {
            p.at(span, format!("the variant's server is a {} URL ({}), and its engine is {}: keep the one that is true", engine.title(), g.given.url, e.title()));
            bad = true;
        }
    }
    let name = g.name.unwrap_or_else(|| g.given.url.clone());
    let mut v = NamedVariant::started(&name, None, vec![Variant::default()]);
    v.engine = engine;
    v.given = Some(g.given);
    v.price_per_hour = g.price_per_hour;
    v.client_cpus = g.client_cpus;
    v.procedures = g.procedures;
    (!bad).then_some(v)
}

fn one_variant(
    p: &mut Problems,
    k: Picked,
    name: Option<String>,
    eng: &Engines,
) -> Option<NamedVariant> {
    let mut bad = false;
    let said = k.engine.map(|v| engine_value(p, v));
    if said == Some(None) {
        bad = true;
    }
    let binary = k
        .binary
        .and_then(|v| str_value(p, v, "`binary`").map(|s| (PathBuf::from(s), v.span())));
    let engine = eng.resolve(said.flatten(), binary.as_ref().map(|(b, _)| b.as_path()));
    let section = eng.section(engine);
    let binary = binary.or_else(|| section.and_then(|s| s.binary.clone()));
    let mut base = Variant::default();
    if let Some(a) = section.and_then(|s| s.allocator.clone()) {
        base.allocator = a;
    }
    if let Some(v) = k.allocator {
        match str_value(p, v, "`allocator`").map(str::parse::<Allocator>) {
            Some(Ok(a)) => base.allocator = a,
            Some(Err(e)) => {
                p.at(v.span(), e);
                bad = true;
            }
            None => bad = true,
        }
    }
    let own = match k.settings.map(|v| read_settings(p, v)) {
        Some(None) => {
            bad = true;
            Vec::new()
        }
        Some(Some(s)) => s,
        None => Vec::new(),
    };
    let from_section = section.map_or(&[][..], |s| &s.settings[..]);
    let every: Vec<_> = from_section.iter().chain(&own).cloned().collect();
    eng.check(
        p,
        (engine, k.engine.map(|v| v.span())),
        binary.as_ref().map(|(b, s)| (b.as_path(), s.clone())),
        &every,
    );
    base.settings = own.into_iter().map(|(s, _)| s).collect();
    let (cpus, numa, instances) = (k.cpus, k.numa, k.instances);
    let count = match instances {
        Some(v) => int_value(p, v, "`instances`", 1..65).unwrap_or_else(|| {
            bad = true;
            1
        }) as u32,
        None => 1,
    };
    let cpus = cpus.and_then(|v| str_value(p, v, "`cpus`").map(|s| (s, v.span())));
    let numa = numa.and_then(|v| str_value(p, v, "`numa`").map(|s| (s, v.span())));
    let instances = match instance_variants(
        &base,
        count,
        cpus.as_ref().map(|(s, _)| *s),
        numa.as_ref().map_or("default", |(s, _)| *s),
    ) {
        Ok(v) => v,
        Err(e) => {
            let span = if e.starts_with("--numa") {
                numa.map(|(_, s)| s)
            } else {
                cpus.map(|(_, s)| s)
            };
            p.at(
                span.unwrap_or(0..0),
                e.replace("--instances", "instances").replace("--", ""),
            );
            return None;
        }
    };
    let mut v = NamedVariant::started(&name.unwrap_or_default(), binary.map(|(b, _)| b), instances);
    v.engine = engine;
    v.engine_settings = from_section.iter().map(|(s, _)| s.clone()).collect();
    (!bad).then_some(v)
}

fn describe(v: &NamedVariant, varying: &[bool], total: usize) -> String {
    let first = &v.instances[0];
    let mut parts = Vec::new();
    let show = |i: usize| total == 1 || varying[i];
    // Named only where the engine varies: a study of one engine says it once (its manifest,
    // environment and report), and its variants keep short names.
    if varying[0] {
        parts.push(format!("engine={}", v.engine));
    }
    if show(1) {
        parts.push(format!("allocator={}", first.allocator));
    }
    if show(2) && first.cpus.is_some() {
        let sets: Vec<String> = v
            .instances
            .iter()
            .map(|i| i.cpus.as_ref().map_or("all".into(), |c| c.to_string()))
            .collect();
        parts.push(format!("cpus={}", sets.join("/")));
    }
    if show(3) {
        parts.push(format!("numa={}", first.numa));
    }
    if show(4) && v.instances.len() > 1 {
        parts.push(format!("instances={}", v.instances.len()));
    }
    if show(5) {
        if let Some(b) = &v.binary {
            parts.push(format!("binary={}", b.display()));
        }
    }
    if show(6) {
        for s in &first.settings {
            parts.push(format!("{}={}", s.name, s.value));
        }
    }
    if parts.is_empty() {
        "default".into()
    } else {
        parts.join(" ")
    }
}

/// The first listed variant after the first that is the same as it in everything but its
/// name: the A/A check's twin, where one was declared. Compared as stored, its settings as
/// parsed (in one order, whatever order the file lists them in).
pub(super) fn twin_of_first(variants: &[NamedVariant]) -> Option<usize> {
    let unnamed = |v: &NamedVariant| {
        let mut json = serde_json::to_value(v).ok()?;
        json.as_object_mut()?.remove("name");
        Some(json)
    };
    let first = unnamed(variants.first()?)?;
    (1..variants.len()).find(|&i| unnamed(&variants[i]).as_ref() == Some(&first))
}
