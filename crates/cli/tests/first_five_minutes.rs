//! Every command line the README's "first five minutes" gives parses: each is read by the
//! grammar it is written in (sysbench's, pgbench's or bakeoff's own) with `BAKEOFF_PARSE_ONLY=1`,
//! which stops before starting a server or touching a file. A renamed option or command that
//! leaves the README behind fails here.

use std::path::Path;
use std::process::Command;

/// The README's section, from its header to the next one.
fn section() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme
        .find("## The first five minutes")
        .expect("the README has a first five minutes");
    let rest = &readme[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

/// Command lines: each line of a ```sh block (split at `&&`), and each inline `bakeoff ...`
/// outside code blocks (the prose names check, run, compare, report and plan that way).
fn command_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut block: Option<&str> = None;
    for line in text.lines() {
        if let Some(fence) = line.strip_prefix("```") {
            block = match block {
                None => Some(if fence.is_empty() { "output" } else { fence }),
                Some(_) => None,
            };
            continue;
        }
        match block {
            Some("sh") => lines.extend(line.split("&&").map(|c| c.trim().to_string())),
            Some(_) => {}
            None => lines.extend(line.split('`').skip(1).step_by(2).map(str::to_string)),
        }
    }
    lines.retain(|l| l.starts_with("bakeoff "));
    lines
}

/// Splits a line as a shell would for these plain lines (no quotes are used in them).
fn words(line: &str) -> Vec<&str> {
    assert!(
        !line.contains(['"', '\'', '$', '|', ';']),
        "a line this test cannot split like a shell: {line}"
    );
    line.split_whitespace().skip(1).collect()
}

#[test]
fn every_command_line_in_the_first_five_minutes_parses() {
    let lines = command_lines(&section());
    let mut grammars = Vec::new();
    for line in &lines {
        let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(words(line))
            .env("BAKEOFF_PARSE_ONLY", "1")
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .output()
            .expect("run bakeoff");
        // sysbench's grammar prints its header line first, as sysbench does.
        let out = String::from_utf8_lossy(&o.stdout);
        let last = out.lines().last().unwrap_or("");
        assert!(
            o.status.success() && last.starts_with("parsed as "),
            "`{line}` does not parse: {:?}\n{out}{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
        let grammar = last.trim_start_matches("parsed as ");
        grammars.push(grammar[..grammar.find(" (").unwrap_or(grammar.len())].to_string());
    }
    // The section promises one line in each grammar, and check/run/compare/report/plan.
    for want in [
        "sysbench's grammar",
        "pgbench's grammar",
        "bakeoff's grammar",
    ] {
        assert!(
            grammars.iter().any(|g| g == want),
            "no line read as {want}: {lines:?}"
        );
    }
    for cmd in [
        "study check",
        "study run",
        "compare",
        "report",
        "study plan",
    ] {
        let want = format!("bakeoff {cmd} ");
        assert!(
            lines.iter().any(|l| l.starts_with(&want)),
            "no `{want}...` line: {lines:?}"
        );
    }
}

#[test]
fn a_line_that_does_not_parse_is_caught() {
    // The check itself: an option no grammar knows is refused in parse-only mode too.
    for args in [
        &["oltp_point_select", "--no-such-option=1", "run"][..],
        &["pgbench", "--no-such-option", "mydb"][..],
        &["study", "check"][..],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .args(args)
            .env("BAKEOFF_PARSE_ONLY", "1")
            .output()
            .expect("run bakeoff");
        assert!(!o.status.success(), "{args:?} passed parse-only");
    }
}

/// What the README shows `study check` printing is what it prints (the output changed under
/// the README once).
#[test]
fn the_readmes_study_check_output_is_what_check_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = section();
    let at = text
        .find("`bakeoff study check examples/first-study.toml`")
        .expect("the README shows study check");
    let block = &text[at..];
    let start = block.find("```\n").expect("its output follows") + 4;
    let shown = &block[start..start + block[start..].find("```").unwrap()];
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["study", "check", "examples/first-study.toml"])
        .current_dir(&root)
        .output()
        .expect("run bakeoff");
    assert!(o.status.success());
    assert_eq!(
        shown,
        String::from_utf8_lossy(&o.stdout),
        "README's block, then check's output"
    );
}

fn bakeoff(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .output()
        .expect("run bakeoff")
}

/// A typo of a command, or a study file where a command goes, is answered with the line to
/// type; sysbench's own refusal stays on stdout as sysbench prints it.
#[test]
fn a_typo_or_a_study_file_in_a_commands_place_gets_the_line_to_type() {
    let o = bakeoff(&["comapre", "x.db"]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(!o.status.success());
    assert!(
        err.contains("did you mean `bakeoff compare x.db`?"),
        "{err}"
    );
    assert!(
        out.contains("FATAL: Cannot find benchmark 'comapre'"),
        "{out}"
    );
    let o = bakeoff(&["stduy", "check", "a.toml"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("did you mean `bakeoff study check a.toml`?"),
        "{err}"
    );
    // Nothing near: sysbench's refusal alone.
    let o = bakeoff(&["zzzzzzzz", "run"]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("did you mean"));

    // A script in bakeoff's own grammar runs (crates/cli/tests/scripts.rs); one that is not
    // there is named.
    let o = bakeoff(&["run", "mine.lua"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot read the Lua script mine.lua"), "{err}");

    let dir = bakeoff_testkit::scratch::dir("toml-as-script");
    let study = dir.join("mine.toml");
    std::fs::write(&study, "threads = [1]\n").unwrap();
    let o = bakeoff(&[study.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("is a study file")
            && err.contains(&format!("bakeoff study run {}", study.display()))
            && err.contains("bakeoff study check"),
        "{err}"
    );
}

/// Installed like a tool: completions for three shells and man pages, made from the same
/// definitions as --help; `bakeoff st<TAB>` completes in bash; --version names the commit.
#[test]
fn completions_man_pages_and_version_come_from_the_same_definitions_as_help() {
    for shell in ["bash", "zsh", "fish"] {
        let o = bakeoff(&["completions", shell]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && out.contains("compare") && out.contains("study"),
            "{shell}: {out}"
        );
    }
    let script = bakeoff_testkit::scratch::dir("completions").join("bakeoff.bash");
    std::fs::write(&script, bakeoff(&["completions", "bash"]).stdout).unwrap();
    let tab = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(bakeoff st); COMP_CWORD=1; COMP_LINE='bakeoff st'; COMP_POINT=10; _bakeoff bakeoff st bakeoff; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    let offered = String::from_utf8_lossy(&tab.stdout);
    assert_eq!(
        offered.trim(),
        "study",
        "{offered}{}",
        String::from_utf8_lossy(&tab.stderr)
    );

    let o = bakeoff(&["man"]);
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(
        page.contains(".TH bakeoff") && page.contains("compare"),
        "{page}"
    );
    let dir = bakeoff_testkit::scratch::dir("man-pages");
    let o = bakeoff(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for page in [
        "bakeoff.1",
        "bakeoff-run.1",
        "bakeoff-study-run.1",
        "bakeoff-tpcc-prepare.1",
    ] {
        let text =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{page}: {text}"
        );
    }
    assert!(
        !dir.join("bakeoff-agent.1").exists(),
        "hidden commands get no page"
    );

    let o = bakeoff(&["--version"]);
    let v = String::from_utf8_lossy(&o.stdout);
    let commit = v
        .split("(commit ")
        .nth(1)
        .and_then(|c| c.strip_suffix(")\n"))
        .unwrap_or("");
    assert!(
        commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "--version names a commit: {v}"
    );
}
