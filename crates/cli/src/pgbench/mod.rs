//! `bakeoff pgbench ...`: pgbench 15's command line, scripts and output on bakeoff's load
//! engine. Messages and exit codes are pgbench's (1: bad options or a setup failure, 2: a
//! client aborted), so a wrapper written for pgbench reads bakeoff alike.

mod args;
mod connect;
mod files;
mod help;
mod report;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bakeoff_driver::PgConn;
use bakeoff_engine::{RunSpec, RunStatus};
use bakeoff_workload::pgbench::builtin;
use bakeoff_workload::pgbench::eval::Vars;
use bakeoff_workload::pgbench::init::{initialize, InitOptions};
use bakeoff_workload::pgbench::script::{self, Script};
use bakeoff_workload::pgbench::value::Value;
use bakeoff_workload::pgbench::{Live, PgbenchSource, QueryMode, ScriptStats};

use args::{Parsed, PgbenchArgs, ScriptArg};

/// Whether this command line is pgbench's: `bakeoff pgbench ...`, or bakeoff run as `pgbench`.
pub fn speaks_pgbench(program: &str, raw: &[String]) -> bool {
    let base = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    base == "pgbench" || raw.first().is_some_and(|a| a == "pgbench")
}

/// Run pgbench's command line `raw` (after `bakeoff pgbench`, or all of it as `pgbench`).
pub fn main(program: &str, raw: &[String]) -> ExitCode {
    let argv = match raw.first() {
        Some(a) if a == "pgbench" => &raw[1..],
        _ => raw,
    };
    let a = match args::parse(argv) {
        Ok(Parsed::Help) => {
            print!("{}", help::HELP);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            // pgbench's first three words, as a wrapper reads them, then whose it is (as
            // `sysbench --version` says "sysbench 1.0.20 (bakeoff X.Y)").
            println!(
                "pgbench (PostgreSQL) 15 (bakeoff {})",
                env!("CARGO_PKG_VERSION")
            );
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(_)) if crate::parse_only::requested() => {
            return crate::parse_only::stop("pgbench's grammar");
        }
        Ok(Parsed::Run(a)) => a,
        Err(r) => {
            match r.getopt {
                true => eprintln!("{program}: {}", r.message),
                false => eprintln!("pgbench: error: {}", r.message),
            }
            if r.hint {
                eprintln!("pgbench: hint: Try \"pgbench --help\" for more information.");
            }
            return ExitCode::from(1);
        }
    };
    crate::interrupt::install();
    match run(&a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pgbench: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(a: &PgbenchArgs) -> Result<ExitCode, String> {
    if let Some(name) = &a.show_script {
        let (n, desc, text) = builtin::find(name).map_err(with_listing)?;
        eprintln!("-- {n}: {desc}\n{text}");
        return Ok(ExitCode::SUCCESS);
    }
    if a.scripts
        .iter()
        .any(|s| matches!(s, ScriptArg::Builtin(n, _) if n == "list"))
    {
        eprint!("{}", builtin::listing());
        return Ok(ExitCode::SUCCESS);
    }
    // pgbench reads its scripts with its options, so a script it refuses is refused before
    // any connection.
    let scripts = match a.init {
        true => Vec::new(),
        false => load_scripts(a)?,
    };
    // A setting libpq refuses fails the connection, as pgbench then says.
    let cannot = |e: String| {
        let purpose = if a.init { "initialization" } else { "setup" };
        format!("{e}\npgbench: error: could not create connection for {purpose}")
    };
    let endpoint = connect::options(a).map_err(cannot)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start: {e}"))?;
    let mut conn = rt
        .block_on(PgConn::connect(&endpoint))
        .map_err(|e| cannot(connect::said(&e, &endpoint)))?;
    if a.init {
        return init(a, conn, &rt);
    }
    // pgbench's first line, in its form for a client and server of different versions.
    println!(
        "pgbench (bakeoff {}, server {})",
        env!("CARGO_PKG_VERSION"),
        conn.server_version()
    );
    if a.debug {
        eprintln!("pgbench: {}", connect::described(a, &endpoint));
    }
    // As pgbench: any built-in script (none given is tpcb-like) reads the scale from the
    // tables, for every script of the run.
    let builtin_used = a.scripts.is_empty()
        || a.scripts
            .iter()
            .any(|s| matches!(s, ScriptArg::Builtin(..)));
    let scale = rt.block_on(scale_of(a, &mut conn, builtin_used, &endpoint))?;
    // pgbench names a partitioned pgbench_accounts in its report when a built-in runs.
    let partitions = match builtin_used {
        true => rt.block_on(partitions_of(&mut conn)),
        false => None,
    };
    if !a.no_vacuum {
        rt.block_on(vacuum(&mut conn, a.vacuum_all));
    }
    rt.block_on(conn.quit());
    bench(a, endpoint, scripts, (scale, partitions))
}

fn init(
    a: &PgbenchArgs,
    mut conn: PgConn,
    rt: &tokio::runtime::Runtime,
) -> Result<ExitCode, String> {
    let mut steps = a.init_steps.clone().unwrap_or_else(|| "dtgvp".into());
    if a.no_vacuum {
        steps.retain(|c| c != 'v');
    }
    if a.foreign_keys && !steps.contains('f') {
        steps.push('f');
    }
    let o = InitOptions {
        steps,
        scale: a.scale.unwrap_or(1),
        fillfactor: a.fillfactor,
        unlogged: a.unlogged,
        partitions: a.partitions,
        partition_method: a.partition_method.clone().unwrap_or_else(|| "range".into()),
        tablespace: a.tablespace.clone(),
        index_tablespace: a.index_tablespace.clone(),
        quiet: a.quiet,
    };
    rt.block_on(initialize(&mut conn, &o, &mut |line| eprintln!("{line}")))
        .map_err(|e| e.to_string())?;
    rt.block_on(conn.quit());
    Ok(ExitCode::SUCCESS)
}

/// A built-in script not found, and the list pgbench prints after it.
fn with_listing(e: String) -> String {
    format!("{e}\n{}", builtin::listing().trim_end())
}

fn load_scripts(a: &PgbenchArgs) -> Result<Vec<Script>, String> {
    let wanted = match a.scripts.is_empty() {
        true => vec![ScriptArg::Builtin("tpcb-like".into(), 1)],
        false => a.scripts.clone(),
    };
    let mut out = Vec::new();
    for s in wanted {
        let parsed = match &s {
            ScriptArg::Builtin(name, w) => {
                let (_, desc, text) = builtin::find(name).map_err(with_listing)?;
                script::parse(desc, desc, text, *w)
            }
            ScriptArg::File(path, w) => {
                let text = match path.as_str() {
                    "-" => std::io::read_to_string(std::io::stdin()),
                    p => std::fs::read_to_string(p),
                }
                .map_err(|e| format!("could not open file \"{path}\": {}", report::os_error(&e)))?;
                script::parse(path, path, &text, *w)
            }
        };
        let parsed = parsed.map_err(|e| e.to_string())?;
        if a.mode.unwrap_or(QueryMode::Simple) != QueryMode::Simple {
            if let Some(refused) = script::too_many_params(&parsed) {
                return Err(refused);
            }
        }
        out.push(parsed);
    }
    if out.iter().all(|s| s.weight == 0) {
        return Err("total script weight must not be zero".into());
    }
    Ok(out)
}

/// The scale the run reports and the built-in scripts use: pgbench_branches' rows when a
/// built-in script runs, else -s (default 1).
async fn scale_of(
    a: &PgbenchArgs,
    conn: &mut PgConn,
    builtin_used: bool,
    endpoint: &bakeoff_driver::ConnectOptions,
) -> Result<u32, String> {
    if !builtin_used {
        return Ok(a.scale.unwrap_or(1));
    }
    const COUNT: &str = "select count(*) from pgbench_branches";
    let count = conn.query_value(COUNT).await.map_err(|e| {
        let said = match &e {
            bakeoff_driver::DriverError::Server(se) => bakeoff_driver::libpq_error(COUNT, se),
            e => connect::said(e, endpoint),
        };
        format!(
            "could not count number of branches: {said}\npgbench: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{}\".",
            endpoint.database.clone().unwrap_or_default()
        )
    })?;
    let n: u32 = count.and_then(|c| c.parse().ok()).unwrap_or(0);
    if n == 0 {
        return Err(format!(
            "invalid count(*) from pgbench_branches: \"0\"\npgbench: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{}\".",
            endpoint.database.clone().unwrap_or_default()
        ));
    }
    if a.scale.is_some() {
        eprintln!(
            "pgbench: warning: scale option ignored, using count from pgbench_branches table ({n})"
        );
    }
    Ok(n)
}

/// "starting vacuum...end.": what pgbench cleans before a run; a missing table is said and
/// the run goes on, as pgbench's does.
async fn vacuum(conn: &mut PgConn, all: bool) {
    eprint!("starting vacuum...");
    let mut steps = vec![
        "vacuum pgbench_branches",
        "vacuum pgbench_tellers",
        "truncate pgbench_history",
    ];
    if all {
        steps.extend([
            "vacuum analyze pgbench_accounts",
            "vacuum analyze pgbench_history",
        ]);
    }
    for sql in steps {
        if let Ok(bakeoff_driver::Outcome::Err(e)) = conn.query(sql).await {
            eprintln!("pgbench: error: {}", bakeoff_driver::libpq_error(sql, &e));
            eprintln!("pgbench: detail: (ignoring this error and continuing anyway)");
        }
    }
    eprintln!("end.");
}

/// pgbench_accounts' partitioning: its method and how many partitions, when partitioned.
async fn partitions_of(conn: &mut PgConn) -> Option<(String, u64)> {
    let rows = conn
        .query_rows(
            "select p.partstrat, count(i.inhrelid) from pg_catalog.pg_class c \
             join pg_catalog.pg_partitioned_table p on p.partrelid = c.oid \
             left join pg_catalog.pg_inherits i on i.inhparent = c.oid \
             where c.relname = 'pgbench_accounts' and pg_catalog.pg_table_is_visible(c.oid) \
             group by 1",
        )
        .await
        .ok()?;
    let row = rows.into_iter().next()?;
    let method = match row.first()?.as_deref()? {
        "r" => "range",
        "h" => "hash",
        other => other,
    }
    .to_string();
    let n = row.get(1)?.as_deref()?.parse().ok()?;
    Some((method, n))
}

/// The scale the report says, and pgbench_accounts' partitioning if it has one.
type Scale = (u32, Option<(String, u64)>);

fn bench(
    a: &PgbenchArgs,
    endpoint: bakeoff_driver::ConnectOptions,
    scripts: Vec<Script>,
    (scale, partitions): Scale,
) -> Result<ExitCode, String> {
    let seed = a.seed;
    let mut vars = Vars::default();
    for (k, v) in &a.defines {
        vars.set_text(k, v.clone());
    }
    if !vars.contains("scale") {
        vars.set_value("scale", Value::Int(scale as i64));
    }
    let jobs = a.jobs.min(a.clients);
    let streams = bakeoff_workload::pgbench::prng::Streams::deal(seed, a.clients, jobs);
    if !vars.contains("default_seed") {
        vars.set_value("default_seed", Value::Int(streams.default_seed as i64));
    }
    if !vars.contains("random_seed") {
        vars.set_value("random_seed", Value::Int(seed as i64));
    }
    let mode = a.mode.unwrap_or(QueryMode::Simple);
    let logs = report::TxLogs::open(a)?;
    let debug = a.debug.then(|| {
        let say: Box<dyn Fn(&str) + Send + Sync> = Box::new(|m| eprintln!("pgbench: {}", shown(m)));
        say
    });
    let source = Arc::new(PgbenchSource {
        endpoint,
        scripts,
        mode,
        vars,
        max_tries: a.max_tries.unwrap_or(1),
        connect_each: a.connect,
        per_command: a.report_per_command,
        latency_limit: a
            .latency_limit
            .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
        paced: a.rate.is_some(),
        stats: Mutex::new(Vec::new()),
        abort_fails_run: false,
        on_abort: Box::new(|m| eprintln!("pgbench: error: {}", shown(m))),
        on_notice: Box::new(|m| eprintln!("{}", shown(m))),
        on_verbose: a.verbose_errors.then(|| {
            let f: Box<dyn Fn(&str) + Send + Sync> =
                Box::new(|m| eprintln!("pgbench: {}", shown(m)));
            f
        }),
        on_transaction: logs.clone().map(|l| {
            let f: bakeoff_workload::pgbench::session::OnTransaction =
                Box::new(move |tid, t| l.write(tid, t));
            f
        }),
        aborted: AtomicU32::new(0),
        streams,
        live: (a.progress > 0).then(Live::default),
        debug,
    });
    let spec = RunSpec {
        connections: a.clients,
        client_threads: jobs,
        time: a.time.map(Duration::from_secs),
        time_includes_connecting: true,
        events: None,
        events_per_connection: match a.time {
            Some(_) => None,
            None => Some(a.transactions.unwrap_or(10)),
        },
        rate: a.rate,
        tick: Duration::from_secs(a.progress.max(1) as u64),
        seed,
        ignore_errors: bakeoff_engine::IgnoreErrors::Codes(Vec::new()),
        ..RunSpec::default()
    };
    let mut progress = report::Progress::new(a, source.clone());
    let result = bakeoff_engine::run(
        source.clone(),
        &spec,
        &crate::exit::INTERRUPTED,
        &mut progress,
    )
    .map_err(|e| e.to_string())?;
    if let Some(l) = logs {
        l.finish();
    }
    let stats: Vec<ScriptStats> = source
        .stats
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let aborted = source.aborted.load(Ordering::Relaxed);
    print!(
        "{}",
        report::final_report(
            a,
            &source.scripts,
            &stats,
            &result,
            (scale, partitions.as_ref()),
            mode,
            jobs
        )
    );
    if let RunStatus::Failed(why) = &result.status {
        eprintln!("pgbench: error: {why}");
        return Ok(ExitCode::from(2));
    }
    if aborted > 0 {
        eprintln!("pgbench: error: Run was aborted; the above results are incomplete.");
        return Ok(ExitCode::from(2));
    }
    if result.status == RunStatus::Interrupted {
        return Ok(ExitCode::from(crate::exit::EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// A client's message as the terminal gets it: the server's words reach these lines through
/// variables a script took from its results (`\gset`, `\aset`) and the SQL they went into,
/// so every control character but the line breaks is written out (`\x1b`).
fn shown(m: &str) -> String {
    bakeoff_driver::printable_lines(m)
}
