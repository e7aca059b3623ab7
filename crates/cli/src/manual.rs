//! The manual outside `--help`: shell completions and man pages, made from the same clap
//! definitions, so that neither can fall behind the options.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;

/// `bakeoff completions SHELL`: the script on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut cmd = crate::args::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "bakeoff", &mut script);
    emit(&script)
}

/// Write `text` to stdout; a reader that went away (`| head`) ends it quietly, as it ends
/// every other command (141, as a shell reports SIGPIPE).
fn emit(text: &[u8]) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::from(141)),
        other => {
            other?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `bakeoff man [--dir DIR]`: the main page on stdout, or every page into DIR.
pub fn man(dir: Option<&Path>) -> Result<ExitCode> {
    let cmd = crate::args::Cli::command();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        return emit(&page);
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--dir {}: cannot create it", dir.display()))?;
    let mut written = 0;
    write_pages(cmd, "bakeoff", dir, &mut written)?;
    eprintln!("wrote {written} man pages to {}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// `cmd`'s page as `name.1`, then each visible subcommand's as `name-sub.1`.
fn write_pages(cmd: clap::Command, name: &str, dir: &Path, written: &mut usize) -> Result<()> {
    // clap names commands with &'static str; a page is written once per process.
    let cmd = cmd.name(&*Box::leak(name.to_string().into_boxed_str()));
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let sub_name = format!("{name}-{}", sub.get_name());
        write_pages(sub.clone(), &sub_name, dir, written)?;
    }
    Ok(())
}
