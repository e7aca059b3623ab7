//! prepare / run / cleanup: validated specs from the arguments, then the layers below.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use bakeoff_driver::ConnectOptions;
use bakeoff_engine::{ClientWait, IgnoreErrors, RunSpec};
use bakeoff_remote::HostUrl;
use bakeoff_server::placement::ClientPlacement;
use bakeoff_server::variant::CpuList;
use bakeoff_study::cell::Load;
use bakeoff_study::cell::{run_cell, Cell, CellEnd, CellOutcome, ServerPlan};
use bakeoff_study::lab::{given_cpus, given_pids, GivenServers};
use bakeoff_study::tables;
use bakeoff_workload::dataset::{self, DatasetError, Progress};
use bakeoff_workload::{Distribution, OltpOptions, PsMode, WorkloadKind, WorkloadSpec};

use crate::args::{Format, LoadArgs};
use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED, INTERRUPTED};
use crate::header::Printer;
use crate::prepared;
use crate::progress::{print_progress, LoadLine};
use crate::run_report::{death_line, report};

pub fn workload_spec(a: &LoadArgs) -> Result<WorkloadSpec> {
    if let Some(script) = crate::script_workload::user_script(a)? {
        return Ok(WorkloadSpec::of_script(script));
    }
    let kind: WorkloadKind = a.workload.parse().map_err(anyhow::Error::msg)?;
    let g = &a.general;
    let o = &a.oltp;
    let mut distribution = Distribution::new(
        g.rand_type
            .parse()
            .map_err(|e| anyhow::anyhow!("--rand-type: {e}"))?,
    );
    distribution.spec_iter = g.rand_spec_iter;
    distribution.spec_pct = g.rand_spec_pct;
    distribution.spec_res = g.rand_spec_res;
    distribution.pareto_h = g.rand_pareto_h;
    distribution.zipfian_exp = g.rand_zipfian_exp;
    if !(0.0..1.0).contains(&g.rand_pareto_h) || g.rand_pareto_h == 0.0 {
        bail!(
            "--rand-pareto-h={} must be between 0 and 1 (exclusive)",
            g.rand_pareto_h
        );
    }
    if g.rand_zipfian_exp < 0.0 {
        bail!(
            "--rand-zipfian-exp={} must be at least 0",
            g.rand_zipfian_exp
        );
    }
    let options = OltpOptions {
        tables: o.tables,
        table_size: o.table_size,
        range_size: o.range_size,
        point_selects: o.point_selects,
        simple_ranges: o.simple_ranges,
        sum_ranges: o.sum_ranges,
        order_ranges: o.order_ranges,
        distinct_ranges: o.distinct_ranges,
        index_updates: o.index_updates,
        non_index_updates: o.non_index_updates,
        delete_inserts: o.delete_inserts,
        range_selects: o.range_selects,
        auto_inc: o.auto_inc,
        skip_trx: o.skip_trx,
        secondary: o.secondary,
        create_secondary: o.create_secondary,
        storage_engine: a.mysql.mysql_storage_engine.clone(),
        table_options: String::new(),
        random_points: o.random_points,
        number_of_ranges: o.number_of_ranges,
        delta: o.delta,
        ps_mode: if a.mysql.db_ps_mode == "disable" {
            PsMode::Disable
        } else {
            PsMode::Auto
        },
    };
    let spec = WorkloadSpec {
        kind,
        options,
        distribution,
        tpcc: a.tpcc.clone(),
        script: None,
    };
    spec.validate().map_err(anyhow::Error::msg)?;
    Ok(spec)
}

/// The run as the options say; `client_cpus` is how many CPUs the client was given (the
/// default for --client-threads).
pub fn run_spec(a: &LoadArgs, placement: &ClientPlacement) -> Result<RunSpec> {
    let client_cpus = placement.cpu_count();
    let g = &a.general;
    if !(0.0..=100.0).contains(&g.percentile) {
        bail!("--percentile={} must be between 0 and 100", g.percentile);
    }
    if g.rate < 0.0 || !g.rate.is_finite() {
        bail!(
            "--rate={} must be a positive number of events per second (0 = closed loop)",
            g.rate
        );
    }
    let fixed = fixed_work(g)?;
    let time_secs = g.time.unwrap_or(if fixed.is_some() { 0 } else { 10 });
    if time_secs == 0 && g.events == 0 && fixed.is_none() {
        bail!("both --time and --events are 0: the run would never end; set one of them");
    }
    let time = (time_secs > 0).then(|| Duration::from_secs(time_secs));
    let grace = forced_shutdown(&g.forced_shutdown, time)?;
    let ignore_errors = parse_ignore_errors(&a.mysql.mysql_ignore_errors)?;
    Ok(RunSpec {
        connections: g.threads,
        client_threads: g.client_threads.unwrap_or(client_cpus).clamp(1, g.threads),
        time,
        time_includes_connecting: false,
        events: (g.events > 0).then_some(g.events),
        warmup: Duration::from_secs(g.warmup_time),
        events_per_connection: fixed.map(|(_, n)| n),
        rate: (g.rate > 0.0).then_some(g.rate),
        tick: Duration::from_secs(g.report_interval.max(1)),
        percentile: g.percentile,
        ignore_errors,
        grace,
        seed: Some(g.rand_seed)
            .filter(|&s| s != 0)
            .unwrap_or_else(clock_seed),
        queue_limit: 131_072,
        batch_scheduling: g.client_sched == "batch",
        first_tid: 0,
        client_wait: match g.client_wait.as_str() {
            "poll" => ClientWait::Poll,
            "sleep" => ClientWait::Sleep,
            _ => ClientWait::auto(placement.apart),
        },
        checkpoints: g
            .report_checkpoints
            .0
            .iter()
            .map(|&s| Duration::from_secs(s))
            .collect(),
    })
}

/// (iterations, events per connection) when fixed work was asked for.
pub fn fixed_work(g: &crate::args::GeneralArgs) -> Result<Option<(u32, u64)>> {
    if g.iterations.is_none() && g.events_per_connection.is_none() {
        return Ok(None);
    }
    if g.events > 0 {
        bail!("--events={} counts events of the whole run; with --iterations use --events-per-connection (each connection's share of one iteration)", g.events);
    }
    if g.warmup_time > 0 {
        bail!("--warmup-time={} warms an open-ended run; for fixed work, add a first iteration and ignore it, or prewarm with --prewarm", g.warmup_time);
    }
    if g.rate > 0.0 {
        bail!("--rate paces an open-ended run; fixed work (--iterations, --events-per-connection) runs each connection's events back to back: drop one of them");
    }
    Ok(Some((
        g.iterations.unwrap_or(1),
        g.events_per_connection.unwrap_or(1),
    )))
}

fn forced_shutdown(v: &str, time: Option<Duration>) -> Result<Duration> {
    if v == "off" || v == "0" {
        return Ok(Duration::from_secs(5));
    }
    if let Some(pct) = v.strip_suffix('%') {
        let pct: f64 = pct
            .parse()
            .with_context(|| format!("--forced-shutdown={v}: expected N or N%"))?;
        let base = time.context("--forced-shutdown=N% needs --time")?;
        return Ok(base.mul_f64(pct / 100.0));
    }
    let secs: f64 = v.parse().with_context(|| {
        format!("--forced-shutdown={v}: expected off, seconds, or N% of --time")
    })?;
    Ok(Duration::from_secs_f64(secs))
}

fn parse_ignore_errors(v: &str) -> Result<IgnoreErrors> {
    if v == "all" {
        return Ok(IgnoreErrors::All);
    }
    let codes = v
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|c| c.trim().parse::<u16>().with_context(|| format!("--mysql-ignore-errors: '{c}' is not an error code (use numbers like 1213,1205 or \"all\")")))
        .collect::<Result<Vec<_>>>()?;
    Ok(IgnoreErrors::Codes(codes))
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// The servers given on the command line, in sysbench's order: every socket, else every
/// host x port pair (each new connection takes the next, round-robin). Empty: none given,
/// so bakeoff runs its embedded server.
fn given_servers(a: &LoadArgs) -> Result<Vec<ConnectOptions>> {
    let all = given_servers_unwarned(a)?;
    crate::dialect::warn_unverified(&all);
    Ok(all)
}

fn given_servers_unwarned(a: &LoadArgs) -> Result<Vec<ConnectOptions>> {
    let m = &a.mysql;
    if let Some(url) = &m.server {
        return server_url(m, url).map(|o| vec![o]);
    }
    let tls = crate::tls::options(
        &m.mysql_ssl,
        m.mysql_ssl_ca.as_deref(),
        m.mysql_ssl_cert.as_deref(),
        m.mysql_ssl_key.as_deref(),
        m.mysql_ssl_cipher.as_deref(),
    )
    .map_err(anyhow::Error::msg)?;
    let endpoints = bakeoff_driver::endpoints(&m.mysql_socket, &m.mysql_host, &m.mysql_port);
    if endpoints.is_empty() && tls.mode != bakeoff_driver::SslMode::Disabled {
        bail!("--mysql-ssl={} is for a server you give (--mysql-host, --mysql-socket): the embedded server is reached over its unix socket, without TLS", m.mysql_ssl);
    }
    Ok(endpoints
        .into_iter()
        .map(|endpoint| {
            let mut o = ConnectOptions::new(endpoint, &m.mysql_user, "");
            o.password = m.mysql_password.clone();
            o.connect_timeout = Duration::from_secs(m.mysql_connect_timeout);
            o.tls = tls.clone();
            o.auth = m.auth();
            o.compress = m.mysql_compression;
            o.limits = m.limits();
            o.with_database(&m.mysql_db)
        })
        .collect())
}

/// `--server-ssh`: the given server's process, found and read on its host over ssh (none
/// without it, or when it cannot be found there: its CPU is then unknown, and a note says why).
fn watched_there(
    a: &LoadArgs,
    given: &[ConnectOptions],
) -> Vec<Option<bakeoff_telemetry::RemoteProcess>> {
    let mut remote = vec![None; given.len()];
    let (Some(ssh), Some(first)) = (&a.mysql.server_ssh, given.first()) else {
        return remote;
    };
    match bakeoff_study::lab::watch_given(ssh, first) {
        None => eprintln!("note: --server-ssh reads a server reached over TCP; this one is on a unix socket here, read from its process already"),
        Some(Ok(w)) => {
            eprintln!(
                "The server's process on {}: pid {} ({}), listening on port {}",
                w.host, w.pid, w.command, w.port
            );
            remote[0] = Some(w.reader());
        }
        Some(Err(e)) => eprintln!("note: the server's CPU stays unknown: --server-ssh {e}"),
    }
    remote
}

/// `--server URL`: the server, its password from MYSQL_PWD, `--defaults-file` or
/// `--password-command`, never from the command line.
fn server_url(m: &crate::args::MysqlArgs, url: &str) -> Result<ConnectOptions> {
    // The URL first: one that holds a password is the worse mistake, whatever else is set.
    let parsed = bakeoff_driver::ServerUrl::parse(url).map_err(anyhow::Error::msg)?;
    if !m.mysql_password.expose().is_empty() {
        bail!("--server takes its password from MYSQL_PWD, --defaults-file or --password-command; --mysql-password (or BAKEOFF_MYSQL_PASSWORD) goes with the --mysql-* connection options");
    }
    let found = bakeoff_driver::PasswordSource {
        defaults_file: m.defaults_file.clone(),
        defaults_group: m.defaults_group.clone(),
        password_command: m.password_command.clone(),
    }
    .find()
    .map_err(anyhow::Error::msg)?;
    let pg = parsed.protocol == bakeoff_driver::Protocol::Postgres;
    let mut o = parsed.connect_options(found);
    if pg && o.password.expose().is_empty() && o.password_command.is_none() {
        // The URL found no password by libpq's rules: say why the password file was not read.
        if let Some(w) = bakeoff_driver::pgpass::pgpass_for(&o).warning {
            eprintln!("bakeoff: {w}");
        }
    }
    if parsed.connect_timeout.is_none() {
        o.connect_timeout = Duration::from_secs(m.mysql_connect_timeout);
    }
    let auth = m.auth();
    // The URL's max-packet and --max-packet are both caps: the smaller holds.
    o.limits = m.limits();
    let cap = o.limits.max_packet;
    o.limits.max_packet = parsed.max_packet.map_or(cap, |url| url.min(cap));
    o.compress |= m.mysql_compression;
    o.auth.get_server_public_key |= auth.get_server_public_key;
    o.auth.cleartext |= auth.cleartext;
    if auth.server_public_key.is_some() {
        o.auth.server_public_key = auth.server_public_key;
    }
    Ok(o)
}

/// The server prepare, prewarm and cleanup work on: the first given. With a list (a cluster
/// behind several addresses, as sysbench users pass them) the tables are made once.
pub(crate) fn first_given(a: &LoadArgs, command: &str) -> Result<Option<ConnectOptions>> {
    if a.mysql.existing_tables == "use" {
        bail!("--existing-tables=use is for `bakeoff run`: {command} works on bakeoff's own tables only; run on yours with `bakeoff run WORKLOAD --existing-tables=use`");
    }
    let all = given_servers(a)?;
    if all.len() > 1 {
        eprintln!(
            "note: {command} works on the first server given ({}); the run spreads its connections over all {}",
            all[0].endpoint,
            all.len()
        );
    }
    Ok(all.into_iter().next())
}

/// Whose tables a run on a given server may write to (`--existing-tables`); sysbench's
/// grammar uses them as sysbench does, unchecked.
fn adopt(a: &LoadArgs) -> Option<dataset::Adopt> {
    match (
        crate::dialect::is_sysbench(),
        a.mysql.existing_tables.as_str(),
    ) {
        (true, _) => None,
        (false, "use") => Some(dataset::Adopt::Existing),
        _ => Some(dataset::Adopt::Marked),
    }
}

fn prepare_threads(a: &LoadArgs) -> u32 {
    a.general
        .prepare_threads
        .unwrap_or_else(dataset::default_connections)
}

pub fn prepare(a: &LoadArgs) -> Result<ExitCode> {
    let spec = workload_spec(a)?;
    if let Some(s) = &spec.script {
        // On a server of the user's: their tools' own ways, whose semantics they know.
        bail!(
            "{}",
            crate::script_workload::prepare_by_hand(s, &a.workload)
        );
    }
    let Some(opts) = first_given(a, "prepare")? else {
        bail!("prepare needs a server that outlives this command: pass --mysql-socket or --mysql-host (`bakeoff run` without them prepares its embedded server itself)");
    };
    let pids = given_pids(&given_servers(a)?);
    place_for_given_server(a, &pids)?;
    let json = a.general.format == Format::Json;
    let line = LoadLine::new();
    let load = tables_load(a, &spec, clock_seed());
    // `opts` is the first server given.
    let prepared = tables::prepare(&opts, &load, pids.first().copied().flatten(), &|p| {
        // JSON keeps stdout for its one document; the rows line is on stderr either way.
        if !json || matches!(p, Progress::Rows { .. }) {
            line.show(p)
        }
    });
    line.end();
    let (prepared, spent) = match prepared {
        Err(e @ DatasetError::Interrupted { .. }) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        r => r?,
    };
    if json {
        println!("{}", prepared::json(&prepared, &spent));
    } else {
        crate::dialect::said!("{}", prepared::text(&prepared, &spent));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn prewarm(a: &LoadArgs) -> Result<ExitCode> {
    let spec = workload_spec(a)?;
    if spec.script.is_some() {
        bail!("prewarm reads sysbench's tables; {} names its tables in its own code, so bakeoff cannot read them ahead: give the run a --warmup-time instead", a.workload);
    }
    let Some(opts) = first_given(a, "prewarm")? else {
        bail!("prewarm needs a server: pass --mysql-socket or --mysql-host (for the embedded server use `bakeoff run --prewarm`)");
    };
    place_for_given_server(a, &given_pids(&given_servers(a)?))?;
    let load = tables_load(a, &spec, 0);
    if !load.shared {
        // Reading a table can run its owner's code (a rule, a view): bakeoff's own only.
        tables::check_marked(&opts, &load)?;
    }
    tables::prewarm(&opts, &load, &print_progress)?;
    Ok(ExitCode::SUCCESS)
}

pub fn cleanup(a: &LoadArgs) -> Result<ExitCode> {
    let Some(opts) = first_given(a, "cleanup")? else {
        bail!("cleanup needs a server: pass --mysql-socket or --mysql-host (the embedded server is removed after each run)");
    };
    if bakeoff_workload::scripting::user::is_script(&a.workload, std::path::Path::new("")) {
        bail!("{w}'s tables are its own, and bakeoff drops only tables it made: drop them as the script says (a Lua script's cleanup: `bakeoff {w} [options] cleanup`; pgbench's: `bakeoff pgbench -i -I d`)", w = a.workload);
    }
    // sysbench's grammar drops the workload's tables as sysbench does; bakeoff's, the marked ones.
    let spec = match crate::dialect::is_sysbench() {
        true => Some(workload_spec(a)?),
        false => None,
    };
    let shared = spec.as_ref().map(|s| tables_load(a, s, 0));
    tables::cleanup(&opts, shared.as_ref(), &print_progress)?;
    Ok(ExitCode::SUCCESS)
}

/// The tables the load arguments describe, for prepare and prewarm.
pub(crate) fn tables_load<'a>(a: &LoadArgs, spec: &'a WorkloadSpec, seed: u64) -> Load<'a> {
    Load {
        workload: spec,
        threads: a.general.threads,
        loaders: prepare_threads(a),
        seed,
        interrupt: &INTERRUPTED,
        // sysbench's grammar shares the tables with sysbench: its order, no marker table.
        shared: crate::dialect::is_sysbench(),
    }
}

/// A server bakeoff did not start: on a unix socket here its CPUs are read from its process,
/// and the client placed beside it as beside an embedded one; over TCP they are unknown, so
/// the client goes where it is told.
fn place_for_given_server(a: &LoadArgs, pids: &[Option<u32>]) -> Result<ClientPlacement> {
    let cpus = crate::client::parse(a.general.client_cpus.as_deref())?;
    let servers = given_cpus(pids);
    let refs: Vec<Option<&CpuList>> = servers.iter().map(Option::as_ref).collect();
    crate::client::place(cpus.as_ref(), &refs)
}

/// Place the client beside the servers this run will start (or the one it was given).
fn place_client(a: &LoadArgs, given_pids: &[Option<u32>]) -> Result<ClientPlacement> {
    if !given_pids.is_empty() {
        return place_for_given_server(a, given_pids);
    }
    let cpus = crate::client::parse(a.general.client_cpus.as_deref())?;
    let variants = a
        .general
        .embedded
        .variant
        .variants()
        .map_err(anyhow::Error::msg)?;
    let servers: Vec<Option<&CpuList>> = variants.iter().map(|v| v.cpus.as_ref()).collect();
    crate::client::place(cpus.as_ref(), &servers)
}

pub fn run(a: &LoadArgs) -> Result<ExitCode> {
    let spec = workload_spec(a)?;
    let given = given_servers(a)?;
    let pids = given_pids(&given);
    let placement = place_client(a, &pids)?;
    let mut run_spec = run_spec(a, &placement)?;
    let processes = given
        .first()
        .map_or(a.general.embedded.db_driver == "pgsql", |o| {
            o.protocol == bakeoff_driver::Protocol::Postgres
        });
    if processes && !placement.apart && a.general.client_threads.is_none() {
        run_spec.client_threads =
            bakeoff_engine::threads_beside_processes(run_spec.client_threads, run_spec.connections);
    }
    let host = match &a.general.embedded.server_host {
        Some(h) => Some(HostUrl::parse(h).map_err(|e| anyhow::anyhow!("--server-host: {e}"))?),
        None => None,
    };
    // Each connection is a file; the runtime and the server's own needs come on top.
    bakeoff_engine::files::raise_open_files(u64::from(run_spec.connections) + 256)
        .map_err(|e| anyhow::anyhow!("--threads={}: {e}", run_spec.connections))?;
    let servers = match given.is_empty() {
        false
            if a.general.embedded.db_driver == "pgsql"
                && given
                    .iter()
                    .any(|o| o.protocol != bakeoff_driver::Protocol::Postgres) =>
        {
            bail!("--db-driver=pgsql: a PostgreSQL server you run is given as --server postgresql://USER@HOST:5432/DATABASE (its password in PGPASSWORD); --mysql-host and --mysql-socket name MySQL servers")
        }
        false => {
            if a.general.embedded.server_host.is_some() {
                bail!("--server-host starts a server on another machine; --server, --mysql-host and --mysql-socket name one already running: give one or the other");
            }
            if !a.general.embedded.variant.is_default() {
                bail!("--allocator, --cpus, --numa, --set and --instances set up the embedded server; a server given with --server, --mysql-socket or --mysql-host runs as it was started");
            }
            ServerPlan::Given(GivenServers {
                remote: watched_there(a, &given),
                options: given.clone(),
                pids,
            })
        }
        true if a.mysql.existing_tables == "use" => {
            bail!("--existing-tables=use runs on tables already on a server you give (--server, --mysql-socket or --mysql-host); the embedded server starts empty and bakeoff loads its tables")
        }
        true => ServerPlan::Launch {
            host: host.as_ref(),
            specs: crate::target::specs(&a.general.embedded)?,
        },
    };
    // First: a server started for client hosts admits their addresses.
    let mut clients = crate::clients::connect(a)?;
    let iterations = fixed_work(&a.general)?.map(|(iterations, _)| iterations);
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let cell = Cell {
        servers,
        workload: &spec,
        run: &run_spec,
        iterations,
        threads: a.general.threads,
        loaders: prepare_threads(a),
        prewarm: a.general.prewarm,
        connect_timeout: Duration::from_secs(a.mysql.mysql_connect_timeout),
        stall_timeout: a.mysql.limits().stall_timeout,
        sampled_client_threads: run_spec.client_threads.min(cpus),
        interrupt: &INTERRUPTED,
        adopt: adopt(a),
    };
    let mut printer = Printer::new(a, &spec, iterations);
    let metrics = crate::metrics::serve(a.general.metrics_addr.as_deref())?;
    if let Some((live, _)) = &metrics {
        let threads = a.general.threads.to_string();
        live.begin_run(&[("workload", spec.kind.to_string()), ("threads", threads)]);
        printer.live = Some(live.clone());
    }
    // TPC-C's run reads the server's new orders around the measured span.
    let (outcome, tpcc) = match spec.kind == WorkloadKind::Tpcc {
        true => crate::tpcc::run_cell_watched(&cell, clients.as_mut(), printer, &given)?,
        false => (run_cell(&cell, clients.as_mut(), &mut printer)?, None),
    };
    if let Some((live, _)) = &metrics {
        live.end_run();
    }
    let CellOutcome {
        servers: mut target,
        end,
    } = outcome;
    let code = match end {
        CellEnd::NotInEffect(problems) => {
            // Fail closed: numbers from a variant that did not take effect would be mislabelled.
            eprintln!(
                "The server variant did not take effect, so nothing was measured:\n{problems}"
            );
            return Ok(ExitCode::from(EXIT_FAILED));
        }
        CellEnd::InterruptedLoading { rows, total } => {
            // The embedded server and its tables go away with `target`.
            eprintln!("Interrupted while preparing the tables ({rows} of {total} rows loaded): nothing was measured");
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        CellEnd::InterruptedBeforeStart => {
            eprintln!("Interrupted before the load started: nothing was measured");
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        CellEnd::Timed(m) => match tpcc {
            Some(watch) => crate::tpcc::report(a, &spec, &m, watch, &target, &placement)?,
            None => report(a, &spec, &m.run, &m.result, &m.hosts, &target, &placement)?,
        },
        CellEnd::Fixed(w) => crate::slap::print(a, &spec, &run_spec, &w, &target, &placement)?,
    };
    if let Some(death) = target.ended().map(death_line) {
        // The report above stays: it is what was measured, up to the crash.
        eprintln!("{death}");
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    drop(target); // stops the embedded server, after everything measured is printed
    Ok(code)
}
