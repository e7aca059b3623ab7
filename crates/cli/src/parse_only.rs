//! `BAKEOFF_PARSE_ONLY=1`: read a command line as a run would, then stop before doing anything
//! (no server, no load, no files). The book's tests use it to show that every command line the
//! README's first five minutes gives parses, without starting servers for minutes of load.

use std::process::ExitCode;

pub fn requested() -> bool {
    std::env::var_os("BAKEOFF_PARSE_ONLY").is_some_and(|v| v == "1")
}

/// Says which grammar read the line, so a test can tell a line taken as sysbench's from one
/// taken as bakeoff's own, and that nothing ran (a variable left set in a shell must not pass
/// for a benchmark that ran).
pub fn stop(grammar: &str) -> ExitCode {
    println!("parsed as {grammar} (BAKEOFF_PARSE_ONLY=1: nothing was run)");
    ExitCode::SUCCESS
}
