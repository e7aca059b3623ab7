//! bakeoff: the only place that prints errors or picks exit codes
//! (0 ok, 1 the run failed, 2 usage or environment error, 130 interrupted).

mod args;
mod argv;
mod client;
mod clients;
mod commands;
mod dialect;
mod exit;
mod fleet;
mod header;
mod host;
mod interrupt;
mod legacy;
mod manual;
mod metrics;
mod output;
mod parse_only;
mod pgbench;
mod plan;
mod prepared;
mod progress;
mod results;
mod run_report;
mod script_workload;
mod serve;
mod slap;
mod study;
mod study_status;
mod sysbench;
mod target;
mod tls;
mod tpcc;
mod tpcc_command;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    // First, while bakeoff is one thread: what ends its servers if it is killed (SIGKILL, a
    // crash, the OOM killer). Without it (fork refused) the parent-death signal remains.
    if let Err(why) = bakeoff_server::watchdog::start() {
        eprintln!("bakeoff: warning: no watchdog ({why}): if bakeoff is killed (SIGKILL), a server it froze may stay frozen until the next bakeoff starts");
    }
    quiet_sigpipe();
    // Keeps the C symbols scripts reach through ffi in the binary (build.rs exports them).
    std::hint::black_box(bakeoff_workload::scripting::lua::exported_symbols());
    let program = std::env::args().next().unwrap_or_default();
    let raw: Vec<String> = std::env::args().skip(1).collect();
    // Read now (copied into `raw`): from here on `ps` shows x's where a password was.
    argv::blank_passwords();
    if pgbench::speaks_pgbench(&program, &raw) {
        return pgbench::main(&program, &raw);
    }
    // `bakeoff help pgbench`: pgbench's own help (its options are not clap's).
    if raw.len() == 2 && raw[0] == "help" && raw[1] == "pgbench" {
        return pgbench::main(&program, &["pgbench".into(), "--help".into()]);
    }
    if sysbench::speaks_sysbench(&program, &raw) {
        return match sysbench::front(&raw) {
            sysbench::Outcome::Exit(code) => code,
            sysbench::Outcome::Run(argv) => sysbench::exit_code(run(&argv)),
        };
    }
    run(&raw)
}

/// A line in bakeoff's own grammar (or one the sysbench front end turned into it).
fn run(raw: &[String]) -> ExitCode {
    let normalized = legacy::normalize(raw);
    if let Some(why) = &normalized.refused {
        eprintln!("bakeoff: {why}");
        return ExitCode::from(exit::EXIT_USAGE);
    }
    let parsed = args::Cli::command()
        .try_get_matches_from(std::iter::once("bakeoff".to_string()).chain(normalized.argv))
        .and_then(|m| Ok((args::Cli::from_arg_matches(&m)?, m)));
    let cli = match parsed {
        Ok((mut cli, matches)) => {
            args::record_given(&mut cli, &matches);
            cli
        }
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(exit::EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    for note in &normalized.notes {
        dialect::said!("note: {note}");
    }
    if parse_only::requested() {
        return parse_only::stop(match dialect::is_sysbench() {
            true => "sysbench's grammar",
            false => "bakeoff's grammar",
        });
    }
    interrupt::install();
    let result = match &cli.command {
        args::Command::Prepare(a) => commands::prepare(a),
        args::Command::Run(a) => commands::run(a),
        args::Command::Cleanup(a) => commands::cleanup(a),
        args::Command::Tpcc(t) => tpcc_command::main(t),
        args::Command::Prewarm(a) => commands::prewarm(a),
        args::Command::Server(args::ServerCommand::Start(e)) => serve::start(e),
        args::Command::Study(args::StudyCommand::Check { file }) => study::check(file),
        args::Command::Study(args::StudyCommand::Plan { file, pilot_blocks }) => {
            plan::plan(file, *pilot_blocks)
        }
        args::Command::Study(args::StudyCommand::Run {
            file, db, new, on, ..
        }) if !on.is_empty() => fleet::run_on(file, db.as_deref(), *new, on),
        args::Command::Study(args::StudyCommand::Run {
            file,
            db,
            new,
            metrics_addr,
            ..
        }) => study::run(file, db.as_deref(), *new, metrics_addr.as_deref()),
        args::Command::Study(args::StudyCommand::List { db, format }) => results::list(db, *format),
        args::Command::Agent => {
            bakeoff_study::agent::serve(&exit::INTERRUPTED);
            Ok(ExitCode::SUCCESS)
        }
        args::Command::Export { db, format, what } => results::export(db, format, what),
        args::Command::Report {
            results: r,
            output,
            charts,
            format,
        } => results::report(r, output.as_deref(), charts.as_deref(), *format),
        args::Command::Compare { results: r, format } => results::compare(r, *format),
        args::Command::Merge { inputs, output } => results::merge(inputs, output),
        args::Command::Completions { shell } => manual::completions(*shell),
        args::Command::Man { dir } => manual::man(dir.as_deref()),
        args::Command::Host(args::HostCommand::Cpu(a)) => host::cpu(a),
        args::Command::Host(args::HostCommand::Memory(a)) => host::memory(a),
        args::Command::Host(args::HostCommand::Fileio(a)) => host::fileio_cmd(a),
        args::Command::Host(args::HostCommand::Threads(a)) => host::threads(a),
        args::Command::Host(args::HostCommand::Mutex(a)) => host::mutex(a),
        // Taken before clap (`speaks_pgbench`); here only if that ever changes.
        args::Command::Pgbench { args } => {
            let argv: Vec<String> = std::iter::once("pgbench".to_string())
                .chain(args.iter().cloned())
                .collect();
            return pgbench::main("bakeoff", &argv);
        }
    };
    interrupt::leave_to_abandoner();
    match result {
        Ok(code) => code,
        Err(e) if dialect::is_sysbench() => {
            dialect::fatal(&told(&e));
            advise(&told(&e));
            ExitCode::from(exit::EXIT_USAGE)
        }
        Err(e) => {
            eprintln!("bakeoff: {}", told(&e));
            advise(&told(&e));
            ExitCode::from(exit::EXIT_USAGE)
        }
    }
}

/// What fixes an error whose words say what was missing, on stderr (in sysbench's grammar
/// too: its stdout keeps sysbench's FATAL line alone).
pub(crate) fn advise(error: &str) {
    if error.contains("(using password: NO)") {
        eprintln!("bakeoff: the server wants a password and none was given: set BAKEOFF_MYSQL_PASSWORD (other users cannot see it in `ps`) or give --mysql-password; a server from `bakeoff server start` keeps it in the client.cnf it prints");
    }
}

/// An error and its causes, each said once: a cause whose words the message before it
/// already carries (a driver's error quotes its I/O error) is not said again.
fn told(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain().map(|c| c.to_string()) {
        if out.contains(&cause) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&cause);
    }
    out
}

/// A reader that stops early (`bakeoff ... | head`) ends bakeoff quietly, with the status a
/// SIGPIPE gives (141), as it ends sysbench and every Unix filter, instead of a panic on the
/// next print. SIGPIPE itself stays ignored: bakeoff writes to pipes of its own (ssh uploads),
/// where a closed pipe is an error to handle, not a reason to die.
fn quiet_sigpipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info)
    }));
}
