//! The study file's reference (`docs/src/reference/study-file.md`) lists every key the parser
//! reads, in the section of its table. The keys are the parser's own: `study check` on a file
//! with an unknown key in each table says the keys it knows there, so a key added to the
//! parser without a line on that page fails here.

use std::path::Path;
use std::process::Command;

const PAGE: &str = "docs/src/reference/study-file.md";

/// Each table, the page's section for it, and a study that puts an unknown key there.
const TABLES: &[(&str, &str, &str)] = &[
    ("", "## Top level", "zzqq = 1\n"),
    ("dataset", "## [dataset]", "[dataset]\nzzqq = 1\n"),
    ("workload[1]", "## [[workload]]", ""),
    // A user's scripts read keys of their own.
    ("workload[1] pgbench", "## [[workload]]", ""),
    ("workload[1] lua", "## [[workload]]", ""),
    (
        "alternation",
        "## [alternation]",
        "[alternation]\nzzqq = 1\n",
    ),
    (
        "mariadb",
        "## [mariadb], [mysql], [postgresql]",
        "[mariadb]\nzzqq = 1\n",
    ),
    (
        "postgresql",
        "## [mariadb], [mysql], [postgresql]",
        "[postgresql]\nzzqq = 1\n",
    ),
    ("axes", "## [axes]", "[axes]\nzzqq = 1\n"),
    (
        "variant[1]",
        "## [[variant]]",
        "[[variant]]\nname = \"a\"\nzzqq = 1\n",
    ),
    ("hosts", "## [hosts]", "[hosts]\nzzqq = 1\n"),
];

/// The keys `study check` says it knows in `table` (None: it said nothing of that table).
fn known_keys(table: &str, extra: &str) -> Option<Vec<String>> {
    let file =
        bakeoff_testkit::scratch::path(&format!("keys-{}.toml", table.replace(['[', ']'], "")));
    let lua = bakeoff_testkit::scratch::path("keys.lua");
    std::fs::write(&lua, "function event() end\n").unwrap();
    let workload = match table {
        "workload[1]" => "[[workload]]\nname = \"oltp_point_select\"\nzzqq = 1\n".to_string(),
        "workload[1] pgbench" => {
            "[[workload]]\nname = \"pgbench\"\nscripts = [\"tpcb-like\"]\nzzqq = 1\n".to_string()
        }
        "workload[1] lua" => format!(
            "[[workload]]\nname = {:?}\nzzqq = 1\n",
            lua.display().to_string()
        ),
        _ => "[[workload]]\nname = \"oltp_point_select\"\n".to_string(),
    };
    let table = table.split(' ').next().unwrap_or(table);
    std::fs::write(&file, format!("threads = [1]\n{extra}{workload}")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["study", "check"])
        .arg(&file)
        .output()
        .expect("run bakeoff study check");
    let err = String::from_utf8_lossy(&o.stderr);
    let unknown = match table {
        "" => "unknown key `zzqq`".to_string(),
        t => format!("unknown key `{t}.zzqq`"),
    };
    let line = err.lines().find(|l| l.contains(&unknown))?;
    let (_, keys) = line.split_once("known keys here: ")?;
    let mut keys: Vec<String> = keys.split(", ").map(str::to_string).collect();
    keys.dedup();
    Some(keys)
}

/// The rows of the page's section `header`: each row's first cell, the key in backticks.
fn documented(page: &str, header: &str) -> Vec<String> {
    let Some(start) = page.find(&format!("{header}\n")) else {
        return Vec::new();
    };
    page[start + header.len()..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| {
            l.strip_prefix("| `")?
                .split_once('`')
                .map(|(k, _)| k.to_string())
        })
        .collect()
}

#[test]
fn every_key_the_study_parser_reads_is_on_the_reference_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = std::fs::read_to_string(root.join(PAGE)).expect("the study file's reference page");
    let mut missing = Vec::new();
    for (table, header, extra) in TABLES {
        let keys = known_keys(table, extra)
            .unwrap_or_else(|| panic!("study check said no known keys for table `{table}`"));
        assert!(!keys.is_empty(), "{table}");
        let listed = documented(&page, header);
        for k in keys {
            if !listed.contains(&k) {
                missing.push(format!("{header}: `{k}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys the parser reads that {PAGE} does not list (a row `| \\`key\\` | type | default | what it does |` in the section):\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_key_missing_from_the_page_is_found() {
    let page = "## [dataset]\n\n| key |\n|---|\n| `tables` | integer |\n\n## [alternation]\n| `enabled` |\n";
    assert_eq!(documented(page, "## [dataset]"), ["tables"]);
    assert!(!documented(page, "## [dataset]").contains(&"table_size".to_string()));
    assert_eq!(documented(page, "## [alternation]"), ["enabled"]);
}

#[test]
fn the_annotated_study_on_the_page_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = std::fs::read_to_string(root.join(PAGE)).unwrap();
    let start = page.find("```toml\n").expect("an annotated study") + "```toml\n".len();
    let end = start + page[start..].find("```").unwrap();
    let file = bakeoff_testkit::scratch::path("reference-example.toml");
    std::fs::write(&file, &page[start..end]).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["study", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Every relative link in the book and the README leads to a file that is there.
#[test]
fn links_between_pages_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs/src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            match (p.is_dir(), p.extension().is_some_and(|x| x == "md")) {
                (true, _) => dirs.push(p),
                (false, true) => pages.push(p),
                _ => {}
            }
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (_, rest) in text.match_indices("](").map(|(i, _)| ((), &text[i + 2..])) {
            let Some(target) = rest.split(')').next() else {
                continue;
            };
            let target = target.split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !page.parent().unwrap().join(target).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(
        pages.len() >= 3,
        "the README and the book's pages: {pages:?}"
    );
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

/// The README's annotated study is `examples/first-study.toml` word for word (which
/// `studies.rs` checks with every example), so the two cannot drift apart.
#[test]
fn the_readmes_study_is_the_example_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme.find("```toml\n").expect("a study in the README") + "```toml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let file = std::fs::read_to_string(root.join("examples/first-study.toml")).unwrap();
    assert_eq!(&readme[start..end], file);
    assert!(
        readme.lines().count() <= 150,
        "the README is an on-ramp: at most 150 lines"
    );
}

/// Every command `bakeoff --help` lists has a row on the command line's page.
#[test]
fn every_command_has_a_row_on_the_command_line_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = std::fs::read_to_string(root.join("docs/src/reference/command-line.md")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10, "{help}");
    let missing: Vec<&&str> = commands
        .iter()
        .filter(|c| !page.contains(&format!("| `{c}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "commands without a row on the page: {missing:?}"
    );
}

/// Every study in the book (a ```toml block that sweeps `threads`) passes `study check`.
#[test]
fn every_study_in_the_book_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs = vec![root.join("docs/src")];
    let mut studies = Vec::new();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let text = std::fs::read_to_string(&p).unwrap();
                let mut parts = text.split("```toml\n");
                let mut prose = parts.next().unwrap_or("").to_string();
                for block in parts {
                    let study = block.split("```").next().unwrap_or("");
                    // A study the page shows refused (`NAME.toml: N problem(s)`) is its
                    // mistakes' example; guides.rs checks that it gets those problems.
                    let named = prose
                        .trim_end()
                        .rsplit("\n\n")
                        .next()
                        .unwrap_or("")
                        .split('`')
                        .find_map(|w| w.strip_suffix(".toml"));
                    let refused = named.is_some_and(|n| {
                        text.contains(&format!("{n}.toml: "))
                            && text.contains("problem(s); nothing was run")
                    });
                    if study.lines().any(|l| l.starts_with("threads")) && !refused {
                        studies.push((p.clone(), study.to_string()));
                    }
                    prose = block.rsplit("```").next().unwrap_or("").to_string();
                }
            }
        }
    }
    assert!(!studies.is_empty(), "the book has studies");
    // A study of a script names it relative to itself, as the examples do: beside them.
    let dir = bakeoff_testkit::scratch::dir("book-studies");
    let scripts = dir.join("scripts");
    if !scripts.exists() {
        std::os::unix::fs::symlink(root.join("examples/scripts"), &scripts).unwrap();
    }
    for (i, (page, study)) in studies.iter().enumerate() {
        let file = dir.join(format!("book-study-{i}.toml"));
        std::fs::write(&file, study).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(["study", "check"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "a study in {} does not check:\n{study}\n{}",
            page.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Every page under docs/src is in SUMMARY.md (mdBook leaves a page it does not list out of
/// the book), and every page SUMMARY.md lists is there.
#[test]
fn every_page_is_in_the_summary() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let mut pages = Vec::new();
    for dir in [
        src.clone(),
        src.join("guide"),
        src.join("reference"),
        src.join("contributing"),
    ] {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md") && p.file_name().unwrap() != "SUMMARY.md" {
                pages.push(p.strip_prefix(&src).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let missing: Vec<_> = pages
        .iter()
        .filter(|p| !summary.contains(&format!("]({p})")))
        .collect();
    assert!(
        missing.is_empty(),
        "pages SUMMARY.md does not list: {missing:?}"
    );
    assert!(pages.len() >= 10, "{pages:?}");
}
