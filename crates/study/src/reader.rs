//! Reading a TOML document by hand, keeping every value's position, so that a study file's
//! problems are all reported at once, each at its line and column (serde stops at the first).

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use bakeoff_server::variant::CpuList;

/// One thing wrong with a study file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Collects problems against the source text.
pub(crate) struct Problems<'s> {
    src: &'s str,
    pub list: Vec<Problem>,
}

impl<'s> Problems<'s> {
    pub fn new(src: &'s str) -> Self {
        Problems {
            src,
            list: Vec::new(),
        }
    }

    pub fn at(&mut self, span: Range<usize>, message: impl Into<String>) {
        let before = &self.src[..span.start.min(self.src.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        let problem = Problem {
            line,
            column,
            message: message.into(),
        };
        // An axis value is read once per combination it is in: say its problem once.
        if !self.list.contains(&problem) {
            self.list.push(problem);
        }
    }
}

pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

/// A table being read: every key asked for is known; the rest are reported as unknown, with
/// the nearest known key as a suggestion.
pub(crate) struct Table<'t, 'i> {
    table: &'t DeTable<'i>,
    /// Where the table is, for "missing key" problems.
    span: Range<usize>,
    /// Dotted path for messages: "dataset", "workload[2]".
    path: String,
    known: Vec<&'static str>,
}

impl<'t, 'i> Table<'t, 'i> {
    pub fn new(table: &'t DeTable<'i>, span: Range<usize>, path: impl Into<String>) -> Self {
        Table {
            table,
            span,
            path: path.into(),
            known: Vec::new(),
        }
    }

    fn name(&self, key: &str) -> String {
        if self.path.is_empty() {
            format!("`{key}`")
        } else {
            format!("`{}.{key}`", self.path)
        }
    }

    pub fn get(&mut self, key: &'static str) -> Option<&'t Value<'i>> {
        // A key read twice (its span, then its value) is listed once in "known keys here".
        if !self.known.contains(&key) {
            self.known.push(key);
        }
        self.table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(_, v)| v)
    }

    /// Every entry, for tables whose keys are data (settings, prices).
    pub fn entries(&mut self) -> impl Iterator<Item = (&'t str, Range<usize>, &'t Value<'i>)> + 't {
        self.known.clear();
        self.known.push("*");
        self.table
            .iter()
            .map(|(k, v)| (k.get_ref().as_ref(), k.span(), v))
    }

    pub fn int(&mut self, p: &mut Problems, key: &'static str, range: Range<i64>) -> Option<i64> {
        let v = self.get(key)?;
        int_value(p, v, &self.name(key), range)
    }

    pub fn string(
        &mut self,
        p: &mut Problems,
        key: &'static str,
    ) -> Option<(&'t str, Range<usize>)> {
        let v = self.get(key)?;
        match v.get_ref().as_str() {
            Some(s) => Some((s, v.span())),
            None => {
                p.at(
                    v.span(),
                    format!("{} must be a string, found {}", self.name(key), kind(v)),
                );
                None
            }
        }
    }

    pub fn bool(&mut self, p: &mut Problems, key: &'static str) -> Option<bool> {
        let v = self.get(key)?;
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                p.at(
                    v.span(),
                    format!(
                        "{} must be true or false, found {}",
                        self.name(key),
                        kind(v)
                    ),
                );
                None
            }
        }
    }

    /// A table value, or an array of tables (`[[key]]`), as a list.
    pub fn tables(&mut self, p: &mut Problems, key: &'static str) -> Vec<Table<'t, 'i>> {
        let Some(v) = self.get(key) else {
            return Vec::new();
        };
        let name = self.name(key);
        match v.get_ref() {
            DeValue::Table(t) => vec![Table::new(t, v.span(), name.trim_matches('`'))],
            DeValue::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| match item.get_ref() {
                    DeValue::Table(t) => Some(Table::new(
                        t,
                        item.span(),
                        format!("{}[{}]", name.trim_matches('`'), i + 1),
                    )),
                    _ => {
                        p.at(
                            item.span(),
                            format!("each entry of {name} must be a table, found {}", kind(item)),
                        );
                        None
                    }
                })
                .collect(),
            _ => {
                p.at(
                    v.span(),
                    format!("{name} must be a table, found {}", kind(v)),
                );
                Vec::new()
            }
        }
    }

    /// A value or a list of values, as a list (an axis with one value may skip the brackets).
    pub fn list(&mut self, p: &mut Problems, key: &'static str) -> Option<Vec<&'t Value<'i>>> {
        let v = self.get(key)?;
        let items: Vec<&Value> = match v.get_ref() {
            DeValue::Array(items) => items.iter().collect(),
            _ => vec![v],
        };
        if items.is_empty() {
            p.at(
                v.span(),
                format!("{} is empty: give at least one value", self.name(key)),
            );
            return None;
        }
        Some(items)
    }

    pub fn require(&self, p: &mut Problems, key: &'static str, what: &str) {
        if !self.table.iter().any(|(k, _)| k.get_ref().as_ref() == key) {
            p.at(
                self.span.clone(),
                format!("{} is missing: {what}", self.name(key)),
            );
        }
    }

    /// Report every key that nothing asked for.
    pub fn finish(self, p: &mut Problems) {
        if self.known.contains(&"*") {
            return;
        }
        for (k, _) in self.table.iter() {
            let key = k.get_ref().as_ref();
            if self.known.contains(&key) {
                continue;
            }
            let hint = match nearest(key, &self.known) {
                Some(s) => format!("; did you mean `{s}`?"),
                None => format!("; known keys here: {}", self.known.join(", ")),
            };
            p.at(k.span(), format!("unknown key {}{hint}", self.name(key)));
        }
    }
}

pub(crate) fn int_value(p: &mut Problems, v: &Value, name: &str, range: Range<i64>) -> Option<i64> {
    let Some(i) = v.get_ref().as_integer() else {
        p.at(
            v.span(),
            format!("{name} must be a whole number, found {}", kind(v)),
        );
        return None;
    };
    let Ok(n) = i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()) else {
        p.at(
            v.span(),
            format!("{name}: {} is not a number bakeoff can hold", i.as_str()),
        );
        return None;
    };
    if !range.contains(&n) {
        p.at(
            v.span(),
            format!(
                "{name} = {n} is out of range: {}..={}",
                range.start,
                range.end - 1
            ),
        );
        return None;
    }
    Some(n)
}

pub(crate) fn str_value<'t>(p: &mut Problems, v: &'t Value, name: &str) -> Option<&'t str> {
    let s = v.get_ref().as_str();
    if s.is_none() {
        p.at(
            v.span(),
            format!("{name} must be a string, found {}", kind(v)),
        );
    }
    s
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v.get_ref() {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "a whole number",
        DeValue::Float(_) => "a decimal number",
        DeValue::Boolean(_) => "true/false",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "a list",
        DeValue::Table(_) => "a table",
    }
}

/// The known key closest to a misspelt one (edit distance at most a third of its length).
pub fn nearest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (distance(word, k), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edits from `a` to `b`: insertions, deletions, substitutions, and two neighbours swapped
/// counted as one (the commonest typo: `stduy` is one edit from `study`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: edits from a[..i] to b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for j in 0..=b.len() {
        d[0][j] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// A CPU list as taskset takes it; the machine it runs on is checked by `study check`.
pub(crate) fn cpu_list(
    p: &mut Problems,
    s: &str,
    span: std::ops::Range<usize>,
    key: &str,
) -> Option<CpuList> {
    s.parse::<CpuList>()
        .map_err(|e| p.at(span, format!("`{key}`: {e}")))
        .ok()
}

pub(crate) fn a_span(doc: &DeTable, key: &str) -> std::ops::Range<usize> {
    doc.iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map_or(0..0, |(k, _)| k.span())
}

pub(crate) fn one_of<T: Copy>(
    p: &mut Problems,
    span: std::ops::Range<usize>,
    key: &str,
    v: &str,
    options: &[(&str, T)],
) -> Option<T> {
    let found = options.iter().find(|(n, _)| *n == v).map(|(_, t)| *t);
    if found.is_none() {
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        p.at(
            span,
            format!("`{key}` = \"{v}\": use one of {}", names.join(", ")),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_keys_find_their_nearest() {
        assert_eq!(nearest("treads", &["threads", "tables"]), Some("threads"));
        assert_eq!(
            nearest("repetitons", &["repetitions", "order"]),
            Some("repetitions")
        );
        assert_eq!(nearest("zzz", &["threads"]), None);
    }

    #[test]
    fn positions_are_lines_and_columns_from_one() {
        let src = "a = 1\nbb = 2\n";
        let mut p = Problems::new(src);
        p.at(9..10, "x");
        assert_eq!((p.list[0].line, p.list[0].column), (2, 4));
    }
}
