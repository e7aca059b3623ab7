//! A study's server setups: `[axes]` (every combination of the values listed) or `[[variant]]`
//! entries (an explicit list), each expanded into its instances.

use bakeoff_server::variant::{instance_variants, Allocator, Setting};
use bakeoff_server::Variant;
use std::path::PathBuf;
use toml::de::DeValue;

use super::spec::NamedVariant;
use crate::reader::{cpu_list, int_value, kind, str_value, Problems, Table, Value};

/// The per-variant keys, as axes (lists) or as one variant's values.
struct VariantKeys<'t, 'i> {
    allocator: Option<Vec<&'t Value<'i>>>,
    cpus: Option<Vec<&'t Value<'i>>>,
    numa: Option<Vec<&'t Value<'i>>>,
    instances: Option<Vec<&'t Value<'i>>>,
    binary: Option<Vec<&'t Value<'i>>>,
    settings: Option<Vec<&'t Value<'i>>>,
}

impl<'t, 'i> VariantKeys<'t, 'i> {
    /// Every key, in the order of `given::SETUP_KEYS` (and of a variant's name).
    fn all(&self) -> [&Option<Vec<&'t Value<'i>>>; 6] {
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

/// Every combination of the axes' values.
pub(super) fn axes_variants(p: &mut Problems, mut t: Table) -> Vec<NamedVariant> {
    let k = keys(p, &mut t);
    t.finish(p);
    let (al, cp, nu, ins, bi, se): (Vec<Option<&Value>>, _, _, _, _, _) = (
        pick(&k.allocator),
        pick(&k.cpus),
        pick(&k.numa),
        pick(&k.instances),
        pick(&k.binary),
        pick(&k.settings),
    );
    let mut out = Vec::new();
    for a in &al {
        for c in &cp {
            for n in &nu {
                for i in &ins {
                    for b in &bi {
                        for s in &se {
                            if let Some(v) = one_variant(p, *a, *c, *n, *i, *b, *s, None) {
                                out.push(v);
                            }
                        }
                    }
                }
            }
        }
    }
    // Name variants by what differs between them.
    let varying: Vec<bool> = k
        .all()
        .iter()
        .map(|o| o.as_ref().is_some_and(|v| v.len() > 1))
        .collect();
    let total = out.len();
    for v in &mut out {
        v.name = describe(v, &varying, total);
    }
    out
}

pub(super) fn listed_variant(p: &mut Problems, mut t: Table) -> Option<NamedVariant> {
    let name = t.string(p, "name").map(|(s, _)| s.to_string());
    let client_cpus = t
        .string(p, "client_cpus")
        .map(|(s, span)| cpu_list(p, s, span, "variant.client_cpus"));
    let given = super::given::given(p, &mut t);
    let price_per_hour = super::given::price(p, &mut t);
    let k = keys(p, &mut t);
    t.finish(p);
    if let Some(given) = given {
        return given_variant(p, &k, name, given, price_per_hour, client_cpus.flatten());
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
        ("allocator", &k.allocator),
        ("cpus", &k.cpus),
        ("numa", &k.numa),
        ("instances", &k.instances),
        ("binary", &k.binary),
    ]
    .iter()
    .all(|(key, o)| single(o, p, key).is_ok());
    let mut v = one_variant(
        p,
        first(&k.allocator),
        first(&k.cpus),
        first(&k.numa),
        first(&k.instances),
        first(&k.binary),
        first(&k.settings),
        name,
    )?;
    if v.name.is_empty() {
        v.name = describe(&v, &[true; 6], 2);
    }
    v.client_cpus = client_cpus.flatten();
    v.price_per_hour = price_per_hour;
    ok.then_some(v)
}

/// A listed variant that names a server the user runs: none of the keys that set up a
/// server bakeoff starts apply to it.
fn given_variant(
    p: &mut Problems,
    k: &VariantKeys,
    name: Option<String>,
    given: super::spec::GivenServer,
    price_per_hour: Option<f64>,
    client_cpus: Option<bakeoff_server::variant::CpuList>,
) -> Option<NamedVariant> {
    let mut bad = false;
    for (key, v) in super::given::SETUP_KEYS.iter().zip(k.all()) {
        if let Some(v) = v.as_ref().and_then(|v| v.first()) {
            p.at(v.span(), format!("`variant.{key}` sets up a server bakeoff starts; `server` names one you run, which bakeoff never starts, stops or reconfigures"));
            bad = true;
        }
    }
    let name = name.unwrap_or_else(|| given.url.clone());
    let mut v = NamedVariant::started(&name, None, vec![Variant::default()]);
    v.given = Some(given);
    v.price_per_hour = price_per_hour;
    v.client_cpus = client_cpus;
    (!bad).then_some(v)
}

#[allow(clippy::too_many_arguments)]
fn one_variant(
    p: &mut Problems,
    allocator: Option<&Value>,
    cpus: Option<&Value>,
    numa: Option<&Value>,
    instances: Option<&Value>,
    binary: Option<&Value>,
    settings: Option<&Value>,
    name: Option<String>,
) -> Option<NamedVariant> {
    let mut bad = false;
    let mut base = Variant::default();
    if let Some(v) = allocator {
        match str_value(p, v, "`allocator`").map(str::parse::<Allocator>) {
            Some(Ok(a)) => base.allocator = a,
            Some(Err(e)) => {
                p.at(v.span(), e);
                bad = true;
            }
            None => bad = true,
        }
    }
    if let Some(v) = settings {
        match v.get_ref() {
            DeValue::Table(t) => {
                for (k, val) in t.iter() {
                    let value = match val.get_ref() {
                        DeValue::String(s) => s.to_string(),
                        DeValue::Integer(i) => i.as_str().to_string(),
                        DeValue::Boolean(b) => {
                            if *b {
                                "ON".into()
                            } else {
                                "OFF".into()
                            }
                        }
                        _ => {
                            p.at(
                                val.span(),
                                format!(
                                    "setting `{}` must be a string, number or true/false, found {}",
                                    k.get_ref(),
                                    kind(val)
                                ),
                            );
                            bad = true;
                            continue;
                        }
                    };
                    match format!("{}={value}", k.get_ref()).parse::<Setting>() {
                        Ok(s) => base.settings.push(s),
                        Err(e) => {
                            p.at(k.span(), e);
                            bad = true;
                        }
                    }
                }
            }
            _ => {
                p.at(v.span(), format!("`settings` must be a table like {{ innodb_adaptive_hash_index = \"OFF\" }}, found {}", kind(v)));
                bad = true;
            }
        }
    }
    let count = match instances {
        Some(v) => int_value(p, v, "`instances`", 1..65).unwrap_or_else(|| {
            bad = true;
            1
        }) as u32,
        None => 1,
    };
    let cpus = cpus.and_then(|v| str_value(p, v, "`cpus`").map(|s| (s, v.span())));
    let numa = numa.and_then(|v| str_value(p, v, "`numa`").map(|s| (s, v.span())));
    let binary = binary
        .and_then(|v| str_value(p, v, "`binary`"))
        .map(PathBuf::from);
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
    (!bad).then(|| NamedVariant::started(&name.unwrap_or_default(), binary, instances))
}

fn describe(v: &NamedVariant, varying: &[bool], total: usize) -> String {
    let first = &v.instances[0];
    let mut parts = Vec::new();
    let show = |i: usize| total == 1 || varying[i];
    if show(0) {
        parts.push(format!("allocator={}", first.allocator));
    }
    if show(1) && first.cpus.is_some() {
        let sets: Vec<String> = v
            .instances
            .iter()
            .map(|i| i.cpus.as_ref().map_or("all".into(), |c| c.to_string()))
            .collect();
        parts.push(format!("cpus={}", sets.join("/")));
    }
    if show(2) {
        parts.push(format!("numa={}", first.numa));
    }
    if show(3) && v.instances.len() > 1 {
        parts.push(format!("instances={}", v.instances.len()));
    }
    if show(4) {
        if let Some(b) = &v.binary {
            parts.push(format!("binary={}", b.display()));
        }
    }
    if show(5) {
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
