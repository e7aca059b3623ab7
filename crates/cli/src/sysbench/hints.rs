//! What a first word that names no test, script or command was probably meant to be: said on
//! stderr beside sysbench's own refusal, so that a typo of one of bakeoff's commands, or a
//! study file given where a script goes, gets the line to type.

use bakeoff_workload::WorkloadKind;

use super::schema;

/// A first word that is plainly not a test or script: a study file (`bakeoff study.toml`),
/// which would otherwise be read as Lua and fail on its first line.
pub(super) fn misplaced(test: &str) -> Option<String> {
    let toml = std::path::Path::new(test)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    toml.then(|| {
        format!(
            "bakeoff: {test} is a study file (TOML), not a test or a Lua script: run it with `bakeoff study run {test}`, or check it first with `bakeoff study check {test}`"
        )
    })
}

/// For a first word that names nothing: the command, test or workload it is nearest to
/// (`comapre` is `compare`), as the whole line to type.
pub(super) fn did_you_mean(test: &str, args: &[String]) -> Option<String> {
    let own = crate::legacy::OWN.iter().filter(|w| !w.starts_with('-'));
    let known: Vec<&str> = own
        .chain(crate::legacy::COMMANDS)
        .copied()
        .chain(schema::TESTS.iter().map(|(n, ..)| *n))
        .chain(WorkloadKind::ALL.iter().map(|(_, n)| *n))
        .chain(["completions", "man"])
        .collect();
    let near = bakeoff_study::nearest(test, &known).filter(|n| *n != test)?;
    let line: Vec<&str> = args
        .iter()
        .map(|a| if a == test { near } else { a.as_str() })
        .collect();
    Some(format!(
        "bakeoff: no command, test or script '{test}'; did you mean `bakeoff {}`? (`bakeoff --help` lists the commands)",
        line.join(" ")
    ))
}
