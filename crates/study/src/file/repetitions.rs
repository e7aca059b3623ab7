//! How many blocks a study runs: a number, or `"auto"` (a pilot of 5 blocks sizes the study
//! for `precision`, the half-width of each family-adjusted interval, up to `max_repetitions`:
//! Stein's two-stage design; half the margin unless given); the equivalence margin
//! (`equivalence`, 5% unless given); and whether each block
//! runs the first variant twice (`noise_check`), the A/A check of the set-up.

use toml::de::DeValue;

use super::spec::{Auto, DEFAULT_MARGIN, DEFAULT_MAX_REPETITIONS, MIN_AUTO};
use crate::reader::{kind, Problems, Table};

/// What a study file says of its repetitions.
pub(super) struct Repetitions {
    /// The fixed count, or for "auto" the blocks run before the first judgement.
    pub count: u32,
    pub auto: Option<Auto>,
    pub noise_check: bool,
    pub equivalence: Option<f64>,
}

pub(super) fn repetitions(p: &mut Problems, top: &mut Table) -> Repetitions {
    let auto = match top.get("repetitions") {
        None => Err(1),
        Some(v) => match v.get_ref() {
            DeValue::String(s) if s.as_ref() == "auto" => Ok(()),
            DeValue::Integer(_) => {
                Err(crate::reader::int_value(p, v, "`repetitions`", 1..101).map_or(1, |n| n as u32))
            }
            _ => {
                p.at(
                    v.span(),
                    format!(
                        "`repetitions` is a number of blocks (1 to 100) or \"auto\", found {}",
                        kind(v)
                    ),
                );
                Err(1)
            }
        },
    };
    let equivalence = top.get("equivalence").map(|v| match number(v) {
        Some(x) if (0.001..=0.5).contains(&x) => x,
        found => {
            let found = found.map_or_else(|| kind(v).to_string(), |x| x.to_string());
            p.at(v.span(), format!("`equivalence` is the margin within which two variants count as equivalent, a fraction from 0.001 to 0.5 (0.03: within +-3%), found {found}"));
            DEFAULT_MARGIN
        }
    });
    let precision = top.get("precision");
    let max = top.get("max_repetitions");
    let noise_span = top.get("noise_check").map(|v| v.span());
    let noise_check = top.bool(p, "noise_check");
    let count = match auto {
        Err(count) => {
            for (key, v) in [("precision", precision), ("max_repetitions", max)] {
                if let Some(v) = v {
                    p.at(v.span(), format!("`{key}` goes with repetitions = \"auto\" (blocks until every comparison is that precise); with a number of repetitions it has no meaning"));
                }
            }
            if noise_check == Some(true) && count < 2 {
                p.at(
                    noise_span.unwrap_or(0..0),
                    "noise_check = true needs at least 2 repetitions: the noise floor is an interval over blocks",
                );
            }
            return Repetitions {
                count,
                auto: None,
                noise_check: noise_check.unwrap_or(false),
                equivalence,
            };
        }
        Ok(()) => MIN_AUTO,
    };
    // Intervals at most half the margin wide on each side: a comparison with nothing there
    // then lies within the margin and ends "equivalent", not "undecided".
    let margin = equivalence.unwrap_or(DEFAULT_MARGIN);
    let precision = match precision {
        None => margin / 2.0,
        Some(v) => match number(v) {
            Some(x) if (0.001..=0.5).contains(&x) => x,
            found => {
                let found = found.map_or_else(|| kind(v).to_string(), |x| x.to_string());
                p.at(v.span(), format!("`precision` is the half-width wanted for each ratio's family-adjusted interval, a fraction from 0.001 to 0.5 (0.05: within +-5%), found {found}"));
                margin / 2.0
            }
        },
    };
    let max_repetitions = match max {
        None => DEFAULT_MAX_REPETITIONS,
        Some(v) => crate::reader::int_value(p, v, "`max_repetitions`", i64::from(MIN_AUTO)..101)
            .map_or(DEFAULT_MAX_REPETITIONS, |n| n as u32),
    };
    Repetitions {
        count,
        auto: Some(Auto {
            precision,
            max_repetitions,
            pilot: MIN_AUTO,
        }),
        noise_check: noise_check.unwrap_or(true),
        equivalence: Some(margin),
    }
}

fn number(v: &crate::reader::Value) -> Option<f64> {
    match v.get_ref() {
        DeValue::Float(f) => f.as_str().replace('_', "").parse().ok(),
        DeValue::Integer(i) => i.as_str().replace('_', "").parse().ok(),
        _ => None,
    }
}
