//! The report's input: the stored studies of one name, read from a results database, and the
//! row accessors and variant naming every part of the report shares.

use std::collections::BTreeMap;

use bakeoff_store::{Row, Store};

/// What a report is built from: the stored studies of one name. Several when results from
/// different machines were merged; their variants are then told apart by platform (or host).
#[derive(Clone)]
pub struct Source {
    pub name: String,
    pub studies: Vec<StudySource>,
    /// The studies of that name not read, each said (an older study from a machine that has
    /// a newer one: `--new`, or two databases merged); `compare OLD.db NEW.db` compares them.
    pub set_aside: Vec<String>,
}

impl Source {
    /// The studies named `study` (default: the newest study's name) in `store`, the newest
    /// one from each machine: a merged database shows its machines side by side, and a study
    /// restarted with --new shows only its latest results.
    pub fn from_store(store: &Store, study: Option<&str>) -> Result<Source, String> {
        let e = |e: bakeoff_store::StoreError| e.to_string();
        let studies = store.studies().map_err(e)?;
        let name = match study {
            Some(n) => n.to_string(),
            None => match studies.last() {
                Some((_, n)) => n.clone(),
                None => {
                    return Err("holds no study yet; run one with bakeoff study run FILE".into())
                }
            },
        };
        let mut newest: BTreeMap<String, (i64, StudySource)> = BTreeMap::new();
        let mut set_aside = Vec::new();
        for (id, _) in studies.iter().filter(|(_, n)| *n == name) {
            let s = StudySource::read(store, *id)?;
            if let Some((old, o)) = newest.insert(s.origin(), (*id, s)) {
                set_aside.push(format!(
                    "study #{old} '{name}' from {} ({} runs), an older one from the same machine",
                    o.origin(),
                    o.runs.len()
                ));
            }
        }
        if newest.is_empty() {
            let mut names: Vec<&str> = studies.iter().map(|(_, n)| n.as_str()).collect();
            names.dedup();
            return Err(format!(
                "no study named '{name}'; it holds: {}",
                names.join(", ")
            ));
        }
        let mut chosen: Vec<(i64, StudySource)> = newest.into_values().collect();
        chosen.sort_by_key(|(id, _)| *id);
        Ok(Source {
            name,
            studies: chosen.into_iter().map(|(_, s)| s).collect(),
            set_aside,
        })
    }

    /// The one study `id` of `store`, whatever else the database holds (`export` judges
    /// every study's runs this way).
    pub fn of_study(store: &Store, id: i64, name: &str) -> Result<Source, String> {
        Ok(Source {
            name: name.to_string(),
            studies: vec![StudySource::read(store, id)?],
            set_aside: Vec::new(),
        })
    }

    /// The axis that tells its studies apart: `database` where they came from databases
    /// given side by side (before and after), else `platform` (machines, merged).
    pub fn side_axis(&self) -> &'static str {
        match self.studies.iter().any(|s| s.label.is_some()) {
            true => "database",
            false => "platform",
        }
    }

    /// Before and after: the study `study` (default: each database's newest) from each of
    /// `stores`, told apart by the label given with it (its file's name), not by machine: two
    /// runs on one host a week apart are two sides here, where a merge would keep the newer.
    /// A database that holds the study from several machines is refused, with why. Its name
    /// says both studies' where they differ ("a / b").
    pub fn from_stores(stores: &[(String, &Store)], study: Option<&str>) -> Result<Source, String> {
        let mut names: Vec<String> = Vec::new();
        let mut studies = Vec::new();
        let mut set_aside = Vec::new();
        for (label, store) in stores {
            let one = Source::from_store(store, study).map_err(|e| format!("{label}: {e}"))?;
            if one.studies.len() > 1 {
                let machines: Vec<String> = one.studies.iter().map(StudySource::origin).collect();
                return Err(format!(
                    "{label} holds study '{}' from {} machines ({}): before and after compares one machine's study with another's; give databases of one machine each (`bakeoff study run FILE --db DB` on each)",
                    one.name,
                    machines.len(),
                    machines.join(", ")
                ));
            }
            for mut s in one.studies {
                s.label = Some(label.clone());
                studies.push(s);
            }
            if !names.contains(&one.name) {
                names.push(one.name);
            }
            set_aside.extend(one.set_aside.into_iter().map(|x| format!("{label}: {x}")));
        }
        Ok(Source {
            name: names.join(" / "),
            studies,
            set_aside,
        })
    }
}

/// One stored study, as the store's row queries give it.
#[derive(Default, Clone)]
pub struct StudySource {
    pub spec_json: String,
    pub runs: Vec<Row>,
    pub ticks: Vec<Row>,
    pub manifests: Vec<Row>,
    pub probes: Vec<Row>,
    /// What each run's telemetry says of the machine (`Store::run_health`), by run id.
    pub health: Vec<Row>,
    /// How each run was measured (`Store::run_methods`), by run id.
    pub methods: Vec<Row>,
    /// Each turn-taking run's slices with the server before each (`Store::turn_slices`).
    pub slices: Vec<Row>,
    /// Each run's transaction classes (its summary's `total.classes`: TPC-C's five, each
    /// with its events and latency percentiles), by run id, for runs that have any.
    pub classes: BTreeMap<i64, Vec<serde_json::Value>>,
    /// What tells it from the other studies of the report where not its machine: the
    /// database it came from, before and after (`Source::from_stores`).
    pub label: Option<String>,
}

/// The transaction classes of each run of `Store::summaries`, where it has any.
fn classes(summaries: Vec<Row>) -> BTreeMap<i64, Vec<serde_json::Value>> {
    summaries
        .iter()
        .filter_map(|r| {
            let mut summary: serde_json::Value =
                serde_json::from_str(&text(r, "summary_json")).ok()?;
            match summary["total"]["classes"].take() {
                serde_json::Value::Array(c) if !c.is_empty() => Some((num(r, "id") as i64, c)),
                _ => None,
            }
        })
        .collect()
}

pub(crate) fn text(r: &Row, k: &str) -> String {
    r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string()
}

pub(crate) fn num(r: &Row, k: &str) -> f64 {
    r.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0)
}

pub(crate) fn opt(r: &Row, k: &str) -> Option<f64> {
    r.get(k).and_then(|v| v.as_f64())
}

impl StudySource {
    /// Study `id` as stored.
    fn read(store: &Store, id: i64) -> Result<StudySource, String> {
        let e = |e: bakeoff_store::StoreError| e.to_string();
        Ok(StudySource {
            spec_json: store.study_spec(id).map_err(e)?,
            runs: store.runs(Some(id)).map_err(e)?,
            ticks: store.tick_rows(Some(id)).map_err(e)?,
            manifests: store.manifests(id).map_err(e)?,
            probes: store.probe_rows(Some(id)).map_err(e)?,
            health: store.run_health(id).map_err(e)?,
            methods: store.run_methods(id).map_err(e)?,
            slices: store.turn_slices(id).map_err(e)?,
            classes: classes(store.summaries(id).map_err(e)?),
            label: None,
        })
    }

    pub(crate) fn spec(&self) -> serde_json::Value {
        serde_json::from_str(&self.spec_json).unwrap_or_default()
    }

    /// What tells this study's results from another machine's: its platform label, else the
    /// host it ran on.
    pub fn origin(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        if let Some(p) = self.spec()["platform"].as_str() {
            return p.to_string();
        }
        self.manifests
            .iter()
            .find_map(|m| {
                let j: serde_json::Value = serde_json::from_str(&text(m, "manifest_json")).ok()?;
                j["host"]["hostname"].as_str().map(str::to_string)
            })
            .unwrap_or_else(|| "unknown host".into())
    }

    /// CPUs the study's variant `index` may use, where it sets them: all instances' lists.
    pub(crate) fn cpus(&self, index: i64) -> Option<u32> {
        let spec = self.spec();
        let instances = spec["variants"][index as usize]["instances"].as_array()?;
        let lists: Vec<&str> = instances
            .iter()
            .filter_map(|i| i["cpus"].as_str())
            .collect();
        (!lists.is_empty()).then(|| lists.iter().map(|l| cpu_count(l)).sum())
    }
}

/// How many CPUs a list like "0-3,8,10-11" names.
fn cpu_count(list: &str) -> u32 {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) =
                    (a.trim().parse().unwrap_or(0), b.trim().parse().unwrap_or(0));
                b.saturating_sub(a) + 1
            }
            None => 1,
        })
        .sum()
}

/// A variant of a source study: which study, its index there, its name in the report.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct VariantKey {
    pub study: usize,
    pub index: i64,
    pub name: String,
}

/// The report names of every study's variants: prefixed with the origin when there are
/// several studies.
pub(crate) fn variant_name(src: &Source, study: usize, name: &str, origins: &[String]) -> String {
    if src.studies.len() > 1 {
        format!("{} {name}", origins[study])
    } else {
        name.to_string()
    }
}

/// Origins made unique: two databases from hosts of the same name are numbered.
pub(crate) fn origins(src: &Source) -> Vec<String> {
    let raw: Vec<String> = src.studies.iter().map(StudySource::origin).collect();
    raw.iter()
        .enumerate()
        .map(|(i, o)| {
            if raw.iter().filter(|x| *x == o).count() > 1 {
                format!("{o}#{}", i + 1)
            } else {
                o.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_lists_are_counted_as_taskset_reads_them() {
        assert_eq!(super::cpu_count("0-3"), 4);
        assert_eq!(super::cpu_count("0,2,4-5"), 4);
        assert_eq!(super::cpu_count("7"), 1);
    }
}
