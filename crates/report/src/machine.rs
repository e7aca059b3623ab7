//! What the machine did beside the runs: each variant's server memory over the study, and the
//! host probes run with it.

use std::collections::BTreeMap;

use bakeoff_store::Row;

use crate::model::{MemoryPoint, MemorySeries, ProbeFigure};
use crate::source::{num, opt, text, variant_name, Source, VariantKey};

/// Each variant's server RSS and VSZ at every tick of every run it served, on one time axis
/// from its first run's start (runs of a variant share its server, so growth across thread
/// counts shows).
pub(crate) fn memory(src: &Source, origins: &[String]) -> Vec<MemorySeries> {
    let mut by_variant: BTreeMap<VariantKey, Vec<(f64, f64, f64)>> = BTreeMap::new();
    for (si, s) in src.studies.iter().enumerate() {
        let runs: BTreeMap<i64, &Row> = s.runs.iter().map(|r| (num(r, "id") as i64, r)).collect();
        for t in &s.ticks {
            let (Some(run), Some(rss)) = (
                runs.get(&(num(t, "run_id") as i64)),
                opt(t, "server_rss_bytes"),
            ) else {
                continue;
            };
            let key = VariantKey {
                study: si,
                index: num(run, "variant") as i64,
                name: variant_name(src, si, &text(run, "variant_name"), origins),
            };
            let start = num(run, "started_at");
            by_variant.entry(key).or_default().push((
                start + num(t, "t"),
                rss,
                num(t, "server_vsz_bytes"),
            ));
        }
    }
    by_variant
        .into_iter()
        .map(|(k, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let t0 = pts.first().map_or(0.0, |p| p.0);
            MemorySeries {
                variant: k.name,
                points: pts
                    .into_iter()
                    .map(|(t, rss, vsz)| MemoryPoint {
                        t: t - t0,
                        rss_mib: rss / 1048576.0,
                        vsz_mib: vsz / 1048576.0,
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The host probes' figures, each with the machine it ran on.
pub(crate) fn probes(src: &Source, origins: &[String]) -> Vec<ProbeFigure> {
    src.studies
        .iter()
        .enumerate()
        .flat_map(|(si, s)| {
            s.probes.iter().map(move |p| ProbeFigure {
                origin: origins[si].clone(),
                probe: text(p, "probe"),
                threads: num(p, "threads") as u32,
                figure: num(p, "figure"),
                unit: text(p, "unit"),
                status: text(p, "status"),
            })
        })
        .collect()
}
