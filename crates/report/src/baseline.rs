//! What each variant is compared with.
//!
//! A study with two axes asks one question per slice: "what does tcmalloc do on 12 CPUs" is
//! answered against glibc on 12 CPUs, not against glibc on 4. So by default each variant is
//! compared with the variant that has the first axis at its first value and every other axis
//! equal ([`Rule::Along`]). Listed `[[variant]]`s have one axis, `variant` (their names), and
//! merged machines one more, `platform` (`database` for before and after, the databases given
//! to `compare`): the same rule covers both. `--baseline AXIS=VALUE`
//! picks the axis and value; `--baseline "<a variant>"` keeps one baseline for all
//! ([`Rule::Single`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::source::{variant_name, Source};

/// Axes in the order they are tried for the default, as the study file expands them.
const ORDER: [&str; 7] = [
    "variant",
    "engine",
    "allocator",
    "cpus",
    "numa",
    "instances",
    "binary",
];

/// Every variant's value on every axis of the study.
#[derive(Debug, Default)]
pub struct Axes {
    /// The axes whose values differ between variants, first axis first.
    pub names: Vec<String>,
    /// Each variant (its report name) with its values, in the study's order.
    pub variants: Vec<(String, BTreeMap<String, String>)>,
}

impl Axes {
    pub fn of(src: &Source, origins: &[String]) -> Axes {
        let side = src.side_axis();
        let mut variants = Vec::new();
        for (si, study) in src.studies.iter().enumerate() {
            let spec: serde_json::Value =
                serde_json::from_str(&study.spec_json).unwrap_or_default();
            for (name, mut coords) in study_variants(&spec, study) {
                if src.studies.len() > 1 {
                    coords.insert(side.into(), origins[si].clone());
                }
                variants.push((variant_name(src, si, &name, origins), coords));
            }
        }
        let mut names: Vec<String> = ORDER.iter().map(|s| s.to_string()).collect();
        for (_, c) in &variants {
            for k in c.keys() {
                if !names.contains(k) && k != side {
                    names.push(k.clone()); // settings, by name
                }
            }
        }
        names.push(side.into());
        let varies = |axis: &String| {
            let vals: Vec<Option<&String>> = variants.iter().map(|(_, c)| c.get(axis)).collect();
            vals.iter().any(|v| *v != vals[0])
        };
        let names = names.into_iter().filter(|a| varies(a)).collect();
        Axes { names, variants }
    }

    /// The values axis `axis` takes, in the study's order.
    pub fn values(&self, axis: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (_, c) in &self.variants {
            if let Some(v) = c.get(axis) {
                if !out.contains(&v.as_str()) {
                    out.push(v);
                }
            }
        }
        out
    }

    fn coords(&self, variant: &str) -> Option<&BTreeMap<String, String>> {
        self.variants
            .iter()
            .find(|(n, _)| n == variant)
            .map(|(_, c)| c)
    }

    /// "allocator (glibc, jemalloc); cpus (0-3, 0-11)": what `--baseline` may name.
    fn listing(&self) -> String {
        self.names
            .iter()
            .map(|a| format!("{a} ({})", self.values(a).join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// A study's variants with their axis values: from its spec, or (a spec without them) from
/// the names its runs were stored under, read as axis=value words where they are such.
fn study_variants(
    spec: &serde_json::Value,
    study: &crate::source::StudySource,
) -> Vec<(String, BTreeMap<String, String>)> {
    let listed = is_listed(spec);
    if let Some(vs) = spec["variants"].as_array() {
        return vs
            .iter()
            .map(|v| {
                let name = v["name"].as_str().unwrap_or("").to_string();
                let coords = if listed {
                    BTreeMap::from([("variant".to_string(), name.clone())])
                } else {
                    properties(v)
                };
                (name, coords)
            })
            .collect();
    }
    let mut by_index: BTreeMap<i64, String> = BTreeMap::new();
    for r in &study.runs {
        let index = r.get("variant").and_then(|v| v.as_i64()).unwrap_or(0);
        let name = r.get("variant_name").and_then(|v| v.as_str()).unwrap_or("");
        by_index.entry(index).or_insert_with(|| name.to_string());
    }
    by_index
        .into_values()
        .map(|name| {
            let words: Option<BTreeMap<String, String>> = name
                .split(' ')
                .map(|w| {
                    w.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                })
                .collect();
            let coords =
                words.unwrap_or_else(|| BTreeMap::from([("variant".into(), name.clone())]));
            (name, coords)
        })
        .collect()
}

/// A study from `[[variant]]` entries: its spec says so, or (databases written before it
/// did) a variant name is not made of axis=value words.
fn is_listed(spec: &serde_json::Value) -> bool {
    if let Some(l) = spec["listed"].as_bool() {
        return l;
    }
    spec["variants"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .any(|n| n != "default" && n.split(' ').any(|w| !w.contains('=')))
}

/// A variant's server setup as axis values (all instances together).
fn properties(v: &serde_json::Value) -> BTreeMap<String, String> {
    let inst: Vec<&serde_json::Value> = v["instances"].as_array().into_iter().flatten().collect();
    let joined = |k: &str, none: &str| {
        inst.iter()
            .map(|i| i[k].as_str().unwrap_or(none).to_string())
            .collect::<Vec<_>>()
            .join("/")
    };
    let mut c = BTreeMap::from([
        (
            "engine".to_string(),
            v["engine"].as_str().unwrap_or("mariadb").to_string(),
        ),
        ("allocator".to_string(), joined("allocator", "glibc")),
        ("cpus".to_string(), joined("cpus", "all")),
        ("numa".to_string(), joined("numa", "default")),
        ("instances".to_string(), inst.len().to_string()),
        (
            "binary".to_string(),
            v["binary"].as_str().unwrap_or("default").to_string(),
        ),
    ]);
    for s in inst
        .first()
        .and_then(|i| i["settings"].as_array())
        .into_iter()
        .flatten()
    {
        if let (Some(n), Some(val)) = (s["name"].as_str(), s["value"].as_str()) {
            c.insert(n.to_string(), val.to_string());
        }
    }
    c
}

/// How baselines are chosen.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rule {
    /// Each variant against the one with `axis` at `value` and every other axis equal.
    Along { axis: String, value: String },
    /// Every variant against this one.
    Single { variant: String },
    /// One variant only: nothing to compare.
    Nothing,
}

impl Rule {
    /// The rule `--baseline` asks for (None: the default), or why it names nothing here.
    pub fn choose(axes: &Axes, asked: Option<&str>) -> Result<Rule, String> {
        let Some(asked) = asked else {
            return Ok(match axes.names.first() {
                Some(axis) => Rule::Along {
                    axis: axis.clone(),
                    value: axes.values(axis)[0].to_string(),
                },
                None => Rule::Nothing,
            });
        };
        if axes.coords(asked).is_some() {
            return Ok(Rule::Single {
                variant: asked.to_string(),
            });
        }
        if let Some((axis, value)) = asked.split_once('=') {
            let (axis, value) = (axis.trim(), value.trim());
            if axes.names.iter().any(|a| a == axis) && axes.values(axis).contains(&value) {
                return Ok(Rule::Along {
                    axis: axis.to_string(),
                    value: value.to_string(),
                });
            }
        }
        let variants: Vec<&str> = axes.variants.iter().map(|(n, _)| n.as_str()).collect();
        Err(format!(
            "--baseline '{asked}' is neither AXIS=VALUE nor a variant of this study. Axes: {}. Variants: {}",
            if axes.names.is_empty() { "none".to_string() } else { axes.listing() },
            variants.join(", ")
        ))
    }

    /// The variant `v` is compared with: Ok(None) when `v` is a baseline itself, Err(why)
    /// when the study has no variant to compare it with.
    pub fn baseline_of(&self, axes: &Axes, v: &str) -> Result<Option<String>, String> {
        match self {
            Rule::Nothing => Ok(None),
            Rule::Single { variant } => Ok((variant != v).then(|| variant.clone())),
            Rule::Along { axis, value } => {
                let Some(mine) = axes.coords(v) else {
                    return Ok(None);
                };
                if mine.get(axis).map(String::as_str) == Some(value.as_str()) {
                    return Ok(None);
                }
                let mut want = mine.clone();
                want.insert(axis.clone(), value.clone());
                axes.variants
                    .iter()
                    .find(|(_, c)| *c == want)
                    .map(|(n, _)| Some(n.clone()))
                    .ok_or_else(|| {
                        let others: Vec<String> = axes
                            .names
                            .iter()
                            .filter(|a| *a != axis)
                            .filter_map(|a| Some(format!("{a}={}", mine.get(a)?)))
                            .collect();
                        format!(
                            "the study has no variant with {axis}={value} and {}",
                            others.join(" ")
                        )
                    })
            }
        }
    }

    /// In words, for the table's heading.
    pub fn describe(&self, axes: &Axes) -> String {
        match self {
            Rule::Nothing => "one variant: nothing to compare".into(),
            Rule::Single { variant } => format!("every variant against '{variant}'"),
            Rule::Along { axis, value } => {
                // Listed variants are named, not described by axes: say the name.
                let base = if axis == "variant" {
                    format!("'{value}'")
                } else {
                    format!("{axis}={value}")
                };
                let others: Vec<&str> = axes
                    .names
                    .iter()
                    .filter(|a| *a != axis)
                    .map(String::as_str)
                    .collect();
                if others.is_empty() {
                    format!("every variant against {base}")
                } else {
                    format!(
                        "every variant against {base} at the same {}",
                        others.join(" and ")
                    )
                }
            }
        }
    }
}
