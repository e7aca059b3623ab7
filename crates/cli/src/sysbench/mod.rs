//! bakeoff in sysbench's grammar: `bakeoff [options]... TEST|SCRIPT [command]`, or any line
//! when invoked as `sysbench` (a symlink). The line is parsed as sysbench 1.0.20 parses it
//! (`grammar`), checked against sysbench's options (`schema`), answered with sysbench's
//! messages and exit codes, and run through bakeoff's own commands speaking sysbench's
//! dialect (`crate::dialect`): sysbench's stdout, bakeoff's additions on stderr.

mod grammar;
mod hints;
mod schema;
mod script_run;

use std::process::ExitCode;

use bakeoff_workload::WorkloadKind;
use clap::CommandFactory;

use crate::dialect::{self, notice};
use grammar::Line;

/// sysbench's exit status for every failure.
const FAILURE: u8 = 1;

/// Whether to read the line in sysbench's grammar: always when invoked as `sysbench`,
/// otherwise when it does not start with one of bakeoff's own commands.
pub(crate) fn speaks_sysbench(program: &str, args: &[String]) -> bool {
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    // The first words of bakeoff's own grammar: its load commands and its other commands.
    let own = |a: &str| crate::legacy::COMMANDS.contains(&a) || crate::legacy::OWN.contains(&a);
    name == "sysbench" || args.first().is_some_and(|a| !own(a))
}

/// sysbench's version line, with bakeoff's: the first two words are what scripts check.
pub(crate) fn version() -> String {
    format!("sysbench 1.0.20 (bakeoff {})", env!("CARGO_PKG_VERSION"))
}

/// What a line in sysbench's grammar is after the checks: bakeoff's own argv to run, or done.
pub(crate) enum Outcome {
    Run(Vec<String>),
    Exit(ExitCode),
}

/// Parse and check `args`; answer what sysbench answers itself (help, version, errors).
pub(crate) fn front(args: &[String]) -> Outcome {
    match check(args) {
        Ok(o) => o,
        Err(Stop::Usage(msg)) => {
            eprintln!("{msg}");
            Outcome::Exit(ExitCode::from(FAILURE))
        }
        Err(Stop::Fatal(msg)) => {
            // sysbench's logger prefixes every line of a message.
            dialect::fatal(&msg);
            crate::advise(&msg);
            Outcome::Exit(ExitCode::from(FAILURE))
        }
    }
}

enum Stop {
    /// A command-line error, said on stderr (as sysbench does before its logger runs).
    Usage(String),
    /// sysbench's `FATAL:` message, on stdout.
    Fatal(String),
}

fn check(args: &[String]) -> Result<Outcome, Stop> {
    let line = grammar::parse(args).map_err(|e| {
        // `bakeoff stduy check a.toml` fails sysbench's grammar before its test is looked
        // up: the guess at what was meant goes with the refusal.
        let first = args.first().filter(|a| !a.starts_with('-'));
        match first.and_then(|a| hints::did_you_mean(a, args)) {
            Some(hint) => Stop::Usage(format!("{e}\n{hint}")),
            None => Stop::Usage(e),
        }
    })?;
    if line.on("help") {
        println!("{}", schema::general_help());
        return Ok(Outcome::Exit(ExitCode::SUCCESS));
    }
    if line.on("version") {
        println!("{}", version());
        return Ok(Outcome::Exit(ExitCode::SUCCESS));
    }
    let verbosity = match line.value("verbosity").map(str::parse::<u8>) {
        None => dialect::NOTICE,
        Some(Ok(v)) if v <= 5 => v,
        Some(_) => {
            let v = line.value("verbosity").unwrap_or_default();
            println!("Invalid value for verbosity: {v}");
            return Ok(Outcome::Exit(ExitCode::from(FAILURE)));
        }
    };
    dialect::speak_sysbench(verbosity);
    if line.test_option {
        eprintln!("WARNING: the --test option is deprecated. You can pass a script name or path on the command line without any options.");
    }
    for w in grammar::startup_warnings(&line) {
        dialect::warning(&w);
    }
    notice!("{}\n", version());
    let test = match line.test.as_deref() {
        // No test named, or '-': sysbench reads a script from standard input.
        None | Some("-") => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
                Stop::Fatal(format!("cannot read a script from standard input: {e}"))
            })?;
            // sysbench runs such a script's body only, whatever command follows.
            let body_only = Line {
                command: None,
                ..line.clone()
            };
            return script(&body_only, "stdin".into(), Some(text));
        }
        Some(t) => t,
    };
    if let Some(hint) = hints::misplaced(test) {
        return Err(Stop::Usage(hint));
    }
    let mut found = resolve(test);
    if let Test::Workload(kind) = found {
        if line.on("mysql-dry-run") {
            found = Test::Script(dry_run_script(kind)?);
        }
    }
    match found {
        Test::Builtin(name, opts) => builtin(&line, name, opts),
        Test::Workload(kind) => workload(&line, test, kind),
        Test::Script(path) => script(&line, path, None),
        Test::Missing => {
            // sysbench's line on stdout; what bakeoff guesses was meant, on stderr.
            if let Some(hint) = hints::did_you_mean(test, args) {
                eprintln!("{hint}");
            }
            Err(Stop::Fatal(format!(
                "Cannot find benchmark '{test}': no such built-in test, file or module"
            )))
        }
    }
}

enum Test {
    Builtin(&'static str, &'static [schema::Opt]),
    Workload(WorkloadKind),
    Script(std::path::PathBuf),
    Missing,
}

/// sysbench's own scripts, which bakeoff runs as its native workloads of the same names.
use bakeoff_workload::scripting::user::STOCK_SCRIPTS;

fn resolve(test: &str) -> Test {
    if let Some((name, _, opts)) = schema::TESTS.iter().find(|(n, ..)| *n == test) {
        return Test::Builtin(name, opts);
    }
    // As sysbench looks a script up: the name as given, else as a module on LUA_PATH (then
    // ./NAME.lua). A script of the user's runs in Lua, whatever its name; sysbench's own run
    // natively.
    let lua_path = std::env::var("LUA_PATH").unwrap_or_default();
    let modules = lua_path
        .split(';')
        .filter(|p| p.contains('?'))
        .map(|p| p.replace('?', test))
        .chain([format!("./{test}.lua")]);
    for path in std::iter::once(test.to_string()).chain(modules) {
        let p = std::path::Path::new(&path);
        if p.is_file() && !bakeoff_workload::scripting::user::is_stock(p) {
            return Test::Script(path.into());
        }
    }
    match test.parse::<WorkloadKind>() {
        Ok(kind) => Test::Workload(kind),
        Err(_) => Test::Missing,
    }
}

/// `--mysql-dry-run` measures the client alone, the script's own work per event: so sysbench's
/// script runs in Lua as sysbench would run it, its statements answered by nobody.
fn dry_run_script(kind: WorkloadKind) -> Result<std::path::PathBuf, Stop> {
    let path = std::path::Path::new(STOCK_SCRIPTS).join(format!("{kind}.lua"));
    match path.is_file() {
        true => Ok(path),
        false => Err(Stop::Fatal(format!(
            "--mysql-dry-run runs sysbench's own script for {kind}, and {} is not there: install sysbench's scripts (apt-get install sysbench), or run without --mysql-dry-run",
            path.display()
        ))),
    }
}

/// A Lua script: its body, and its commands but `run`, in this thread; `run` through the
/// engine (`script_run`).
fn script(line: &Line, path: std::path::PathBuf, text: Option<String>) -> Result<Outcome, Stop> {
    use bakeoff_workload::scripting::lua::{Script, ScriptError};
    let text = match text {
        Some(t) => t,
        None => std::fs::read_to_string(&path)
            .map_err(|e| Stop::Fatal(format!("cannot read {}: {e}", path.display())))?,
    };
    let command = line.command.as_deref();
    let options = line
        .options
        .iter()
        .map(|g| (g.name.clone(), g.value.clone()))
        .collect();
    let script = Script::new(path, text, options, line.command.clone(), endpoints(line)?)
        .map_err(Stop::Fatal)?;
    let general = |n: &str| schema::global().any(|o| o.0 == n) || crate::legacy::known(n);
    let failed = |e: ScriptError| match e {
        ScriptError::InvalidOption(name) => {
            let written = line.options.iter().find(|g| g.name == name);
            Stop::Usage(format!(
                "invalid option: {}",
                written.map_or(format!("--{name}"), |g| g.written.clone())
            ))
        }
        e @ (ScriptError::NoCommand { .. } | ScriptError::Unknown(_)) => Stop::Usage(e.to_string()),
        ScriptError::Lua(msg) => Stop::Fatal(msg),
    };
    if command == Some("run") {
        // The body runs in this thread first, as in sysbench's main state.
        let main = script.main(&general).map_err(failed)?;
        return script_run::run(line, script, main)
            .map(Outcome::Exit)
            .map_err(Stop::Fatal);
    }
    let threads = line
        .value("threads")
        .or(line.value("num-threads"))
        .map_or(Ok(1), str::parse::<u32>)
        .map_err(|_| {
            Stop::Fatal(format!(
                "Invalid value for --threads: {:?}",
                line.value("threads")
            ))
        })?;
    let starting = || notice!("Initializing worker threads...\n");
    let ran = script
        .run_command(command, &general, threads, &starting)
        .map_err(failed)?;
    Ok(Outcome::Exit(match ran {
        bakeoff_workload::scripting::lua::Ran::CommandFailed => ExitCode::from(FAILURE),
        _ => ExitCode::SUCCESS,
    }))
}

/// The servers the line names, with sysbench's defaults (user and database sbtest).
fn endpoints(line: &Line) -> Result<Vec<bakeoff_driver::ConnectOptions>, Stop> {
    use bakeoff_driver::ConnectOptions;
    if line.value("db-driver") == Some("pgsql") {
        return pgsql_endpoint(line).map(|o| vec![o]);
    }
    let list = |name: &str, default: &str| -> Vec<String> {
        line.value(name)
            .unwrap_or(default)
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let sockets: Vec<std::path::PathBuf> = list("mysql-socket", "")
        .into_iter()
        .map(Into::into)
        .collect();
    let ports: Vec<u16> = list("mysql-port", "3306")
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    let endpoints = bakeoff_driver::endpoints(&sockets, &list("mysql-host", "localhost"), &ports);
    let user = line.value("mysql-user").unwrap_or("sbtest");
    let password = line
        .value("mysql-password")
        .map(str::to_string)
        .or_else(|| std::env::var("BAKEOFF_MYSQL_PASSWORD").ok())
        .unwrap_or_default();
    let db = line.value("mysql-db").unwrap_or("sbtest");
    let max_packet = max_packet(line)?;
    let path = |name: &str| line.value(name).map(std::path::Path::new);
    let tls = crate::tls::options(
        if line.on("mysql-ssl") {
            "on"
        } else {
            line.value("mysql-ssl").unwrap_or("off")
        },
        path("mysql-ssl-ca"),
        path("mysql-ssl-cert"),
        path("mysql-ssl-key"),
        line.value("mysql-ssl-cipher"),
    )
    .map_err(Stop::Fatal)?;
    Ok(endpoints
        .into_iter()
        .map(|e| {
            let mut o = ConnectOptions::new(e, user, &password).with_database(db);
            o.tls = tls.clone();
            o.auth = bakeoff_driver::AuthOptions {
                get_server_public_key: line.on("mysql-get-server-public-key"),
                server_public_key: path("mysql-server-public-key-path").map(Into::into),
                cleartext: line.on("mysql-enable-cleartext-plugin"),
                ..Default::default()
            };
            o.compress = line.on("mysql-compression");
            // sysbench's driver asks for CLIENT_MULTI_STATEMENTS; a line in its grammar keeps it.
            o.multi_statements = true;
            o.limits.max_packet = max_packet;
            o
        })
        .collect::<Vec<_>>())
    .inspect(|all| crate::dialect::warn_unverified(all))
}

/// cpu, memory, fileio, threads, mutex.
fn builtin(line: &Line, name: &str, opts: &[schema::Opt]) -> Result<Outcome, Stop> {
    let Some(command) = line.command.as_deref() else {
        return Err(Stop::Usage(format!(
            "The '{name}' test requires a command argument. See 'sysbench {name} help'"
        )));
    };
    check_options(line, |n| opts.iter().any(|o| o.0 == n))?;
    let commands: &[&str] = match name {
        "fileio" => &["prepare", "run", "cleanup"],
        _ => &["run"],
    };
    match command {
        "help" => {
            print!("{name} options:\n{}\n", schema::print_set(opts));
            Ok(Outcome::Exit(ExitCode::SUCCESS))
        }
        c if commands.contains(&c) => {
            if name == "memory" {
                memory_values(line)?;
            }
            Ok(Outcome::Run(argv(line, name, c, false)))
        }
        "prepare" | "cleanup" => Err(Stop::Usage(format!(
            "'{name}' test does not implement the '{command}' command."
        ))),
        other => Err(Stop::Usage(format!("Unknown command: {other}"))),
    }
}

/// The values memory's init refuses, refused with its message.
fn memory_values(line: &Line) -> Result<(), Stop> {
    let invalid = |name: &str, v: &str| Stop::Fatal(format!("Invalid value for {name}: {v}"));
    if let Some(v) = line.value("memory-block-size") {
        match crate::args::parse_size(v) {
            Ok(b) if b >= 8 && b.is_power_of_two() => {}
            _ => return Err(invalid("memory-block-size", v)),
        }
    }
    let allowed: [(&str, &[&str]); 3] = [
        ("memory-scope", &["global", "local"]),
        ("memory-oper", &["read", "write", "none"]),
        ("memory-access-mode", &["seq", "rnd"]),
    ];
    for (name, values) in allowed {
        if let Some(v) = line.value(name).filter(|v| !values.contains(v)) {
            return Err(invalid(name, v));
        }
    }
    Ok(())
}

/// The native sysbench workloads (oltp_*, select_random_*, bulk_insert), by name or by the
/// path of sysbench's own script of that name.
fn workload(line: &Line, test: &str, kind: WorkloadKind) -> Result<Outcome, Stop> {
    let oltp = |n: &str| bakeoff_workload::OPTION_NAMES.contains(&n);
    check_options(line, oltp)?;
    let pg = match line.value("db-driver") {
        None | Some("mysql") => false,
        Some("pgsql") => true,
        Some(other) => {
            // sysbench says it twice: the driver, then the command that needed it.
            if dialect::shows(dialect::FATAL) {
                println!("FATAL: invalid database driver name: '{other}'");
            }
            let command = line.command.as_deref().unwrap_or("run");
            return Err(Stop::Fatal(format!(
                "`{command}' function failed: {test}: failed to initialize the DB driver"
            )));
        }
    };
    let Some(command) = line.command.as_deref() else {
        // sysbench loads the script and, given no command, has nothing more to do.
        return Ok(Outcome::Exit(ExitCode::SUCCESS));
    };
    match command {
        "help" => {
            let base = test.rsplit('/').next().unwrap_or(test);
            print!(
                "{base} options:\n{}\n",
                schema::print_set(&script_options(kind))
            );
            Ok(Outcome::Exit(ExitCode::SUCCESS))
        }
        "prepare" | "run" | "cleanup" => Ok(Outcome::Run(argv(line, test, command, pg))),
        "prewarm" | "warmup" if pg => {
            // oltp_common.lua's cmd_prewarm asserts the mysql driver.
            Err(Stop::Fatal(format!(
                "`prewarm' function failed: {STOCK_SCRIPTS}/oltp_common.lua:100: prewarm is currently MySQL only"
            )))
        }
        "prewarm" | "warmup" => Ok(Outcome::Run(argv(line, test, "prewarm", pg))),
        other => Err(Stop::Usage(format!("Unknown command: {other}"))),
    }
}

/// The options a workload's script lists in its help.
fn script_options(kind: WorkloadKind) -> Vec<schema::Opt> {
    let mut set = schema::OLTP.to_vec();
    match kind {
        WorkloadKind::SelectRandomPoints => set.push((
            "random_points",
            schema::Kind::Int,
            Some("10"),
            "Number of random points in the IN() clause in generated SELECTs",
        )),
        WorkloadKind::SelectRandomRanges => {
            set.push((
                "number_of_ranges",
                schema::Kind::Int,
                Some("10"),
                "Number of random BETWEEN ranges per SELECT",
            ));
            set.push((
                "delta",
                schema::Kind::Int,
                Some("5"),
                "Size of BETWEEN ranges",
            ));
        }
        _ => {}
    }
    set.sort_by_key(|o| o.0);
    set
}

/// Refuse an option neither sysbench (for this test) nor bakeoff knows, as sysbench does.
fn check_options(line: &Line, test_knows: impl Fn(&str) -> bool) -> Result<(), Stop> {
    let own = own_options();
    for g in &line.options {
        let n = g.name.as_str();
        let known = schema::global().any(|o| o.0 == n)
            || test_knows(n)
            || crate::legacy::known(n)
            || own.iter().any(|o| o == n);
        if !known {
            return Err(Stop::Usage(format!("invalid option: {}", g.written)));
        }
    }
    Ok(())
}

/// bakeoff's own long options of `run` and the host probes: valid in sysbench's grammar too
/// (`--format=json`, `--allocator`, ...).
fn own_options() -> Vec<String> {
    let cli = crate::args::Cli::command();
    let mut out = Vec::new();
    let mut add = |c: &clap::Command| {
        out.extend(
            c.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string)),
        )
    };
    if let Some(run) = cli.find_subcommand("run") {
        add(run);
    }
    if let Some(host) = cli.find_subcommand("host") {
        host.get_subcommands().for_each(&mut add);
    }
    out
}

/// The line as bakeoff's legacy reader takes it: options, the test, the command. With the
/// pgsql driver, its `--pgsql-*` options become a `--server` URL (and the password libpq's
/// PGPASSWORD, which that URL's connections read); without --pgsql-host or --pgsql-port,
/// the embedded PostgreSQL.
fn argv(line: &Line, test: &str, command: &str, pg: bool) -> Vec<String> {
    let pgsql = |n: &str| n.starts_with("pgsql-");
    let mut out: Vec<String> = line
        .options
        .iter()
        .filter(|g| !matches!(g.name.as_str(), "verbosity" | "db-driver"))
        .filter(|g| !(pg && pgsql(&g.name)))
        .map(|g| match &g.value {
            Some(v) => format!("--{}={v}", g.name),
            None => format!("--{}", g.name),
        })
        .collect();
    // No server named: the embedded PostgreSQL, as the embedded MariaDB starts when no
    // --mysql-host or --mysql-socket is given (sysbench itself would try localhost:5432).
    let named = ["pgsql-host", "pgsql-port"]
        .iter()
        .any(|n| line.value(n).is_some());
    if pg && !named {
        out.push("--db-driver=pgsql".into());
    } else if pg {
        out.push(format!("--server={}", pgsql_url(line)));
        if let Some(pw) = line.value("pgsql-password").filter(|p| !p.is_empty()) {
            // Read by this process's own connections only; nothing else is started.
            std::env::set_var("PGPASSWORD", pw);
        }
    }
    out.push(test.to_string());
    out.push(command.to_string());
    out
}

/// The server sysbench's `--pgsql-*` options name (a host that is a path is libpq's socket
/// directory), its password from `--pgsql-password`, else PGPASSWORD as libpq reads it.
fn pgsql_endpoint(line: &Line) -> Result<bakeoff_driver::ConnectOptions, Stop> {
    let url = bakeoff_driver::ServerUrl::parse(&pgsql_url(line)).map_err(Stop::Fatal)?;
    let mut o = url.connect_options(bakeoff_driver::Found::default());
    let password = line
        .value("pgsql-password")
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .or_else(|| std::env::var("PGPASSWORD").ok())
        .unwrap_or_default();
    o.password = bakeoff_driver::Secret::new(&password);
    o.user = line.value("pgsql-user").unwrap_or("sbtest").to_string();
    o.limits.max_packet = max_packet(line)?;
    Ok(o)
}

/// bakeoff's own `--max-packet` on the line (1G, MySQL's largest max_allowed_packet, when
/// not given).
fn max_packet(line: &Line) -> Result<usize, Stop> {
    let Some(v) = line.value("max-packet") else {
        return Ok(bakeoff_driver::Limits::MAX_PACKET);
    };
    bakeoff_driver::parse_max_packet(v).map_err(|e| Stop::Fatal(format!("--max-packet: {e}")))
}

/// sysbench's `--pgsql-*` options as a postgresql:// URL: a host that is a path is libpq's
/// socket directory.
fn pgsql_url(line: &Line) -> String {
    let get = |n: &str, default: &str| line.value(n).unwrap_or(default).to_string();
    let (host, port) = (get("pgsql-host", "localhost"), get("pgsql-port", "5432"));
    let (user, db) = (get("pgsql-user", "sbtest"), get("pgsql-db", "sbtest"));
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    let (user, db) = (enc(&user), enc(&db));
    match host.starts_with('/') {
        true => format!(
            "postgresql://{user}@localhost:{port}/{db}?host={}",
            enc(&host)
        ),
        false => format!("postgresql://{user}@{host}:{port}/{db}"),
    }
}

/// bakeoff's exit code as sysbench's: 0 ok, 130 interrupted, 1 anything else.
pub(crate) fn exit_code(bakeoff: ExitCode) -> ExitCode {
    let interrupted = ExitCode::from(crate::exit::EXIT_INTERRUPTED);
    if bakeoff == ExitCode::SUCCESS || bakeoff == interrupted {
        bakeoff
    } else {
        ExitCode::from(FAILURE)
    }
}
