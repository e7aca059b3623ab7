//! The source tree's shape, kept as the architecture says: within a crate no file imports,
//! directly or through others, a file that imports it back; and no file under `crates/*/src`
//! grows past 600 lines, unless it is a table (listed, with the length it may not exceed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

/// Tables allowed past MAX_LINES, with the length they may not exceed.
/// None today: the clap table split into cli/src/args/ (load commands, probes, values).
const LONG: &[(&str, usize)] = &[];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path in its crate: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`, the
/// crate root is empty.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a file without its unit tests (they may import anything of their module).
fn code(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod ").map_or(text, |i| &text[..i])
}

/// The modules of the crate that `text` (the file of module `me`) names: the longest known
/// module at the head of each `crate::` path, and the sibling or parent each `super::` names.
fn imports(text: &str, me: &[String], known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|p| {
                p.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|p| !p.is_empty() && p.chars().next().is_some_and(|c| c.is_lowercase()))
            .collect()
    };
    let longest_known = |path: Vec<String>| {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].to_vec())
            .find(|m| known.contains(m))
    };
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + 7..];
        // `crate::{a::X, b}`: each entry of the list (up to the first `}`) is a path.
        let paths: Vec<&str> = match rest.strip_prefix('{') {
            Some(list) => list[..list.find('}').unwrap_or(list.len())]
                .split(',')
                .map(str::trim)
                .collect(),
            None => vec![rest],
        };
        for p in paths {
            if let Some(m) = longest_known(ident(p)) {
                out.insert(m);
            }
        }
    }
    for (i, _) in text.match_indices("super::") {
        let parent = me[..me.len().saturating_sub(1)].to_vec();
        let mut path = parent.clone();
        path.extend(ident(&text[i + 7..]));
        if let Some(m) = longest_known(path) {
            out.insert(m);
        }
    }
    // A parent naming its own child modules: `use child::x`, `child::f()`.
    for child in known
        .iter()
        .filter(|m| m.len() == me.len() + 1 && m.starts_with(me))
    {
        let name = format!("{}::", child[me.len()]);
        let named = text.match_indices(&name).any(|(i, _)| {
            !text[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        });
        if named {
            out.insert(child.clone());
        }
    }
    out.retain(|m| m != me && !m.is_empty());
    out
}

/// The circles among `graph`'s nodes (its strongly connected parts of more than one node).
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    let reach = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for next in graph.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<_, _> = graph.keys().map(|k| (k.clone(), reach(k))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (a, from_a) in &reaches {
        let circle: Vec<String> = from_a
            .iter()
            .filter(|b| *b != a && reaches[*b].contains(a))
            .chain(std::iter::once(a))
            .map(|m| m.join("::"))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if circle.len() > 1 {
            found.insert(circle);
        }
    }
    found.into_iter().collect()
}

fn crate_srcs() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(crates_dir())
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("src"),
            )
        })
        .filter(|(_, src)| src.is_dir())
        .collect();
    out.sort();
    out
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let mut problems = Vec::new();
    for (name, src) in crate_srcs() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: BTreeMap<Vec<String>, PathBuf> = files
            .iter()
            .map(|f| (module_of(&src, f), f.clone()))
            .collect();
        let known: BTreeSet<Vec<String>> = modules.keys().cloned().collect();
        let graph: BTreeMap<_, _> = modules
            .iter()
            .map(|(m, f)| {
                let text = std::fs::read_to_string(f).unwrap();
                (m.clone(), imports(code(&text), m, &known))
            })
            .collect();
        if std::env::var("LAYOUT_DEBUG").is_ok() {
            for (m, to) in &graph {
                eprintln!("{name}: {m:?} -> {to:?}");
            }
        }
        for c in circles(&graph) {
            problems.push(format!("{name}: {}", c.join(" <-> ")));
        }
    }
    assert!(
        problems.is_empty(),
        "import circles (move what both sides need into a module of its own):\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_source_file_grows_past_600_lines() {
    let mut problems = Vec::new();
    for (name, src) in crate_srcs() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let rel = format!(
                "{name}/{}",
                f.strip_prefix(src.parent().unwrap()).unwrap().display()
            );
            let lines = std::fs::read_to_string(&f).unwrap().lines().count();
            let limit = LONG
                .iter()
                .find(|(p, _)| *p == rel)
                .map_or(MAX_LINES, |(_, n)| *n);
            if lines > limit {
                problems.push(format!("{rel}: {lines} lines (at most {limit})"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "files a newcomer cannot hold; split them by concern:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_circle_check_sees_a_circle() {
    let m = |s: &str| vec![s.to_string()];
    let known: BTreeSet<Vec<String>> = [m("a"), m("b"), m("c")].into_iter().collect();
    let a = imports(
        "use crate::{b::Thing, x};\nfn f() { crate::c::g() }",
        &m("a"),
        &known,
    );
    assert_eq!(a, [m("b"), m("c")].into_iter().collect());
    let graph: BTreeMap<_, _> = [
        (m("a"), a),
        (m("b"), imports("use super::a;", &m("b"), &known)),
        (m("c"), BTreeSet::new()),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        circles(&graph),
        vec![vec!["a".to_string(), "b".to_string()]]
    );
}
