//! TPC-C's report after a run: NOPM and TPM, each transaction's count and latency, the
//! client's counts against the server's, the CPU each side spent per new order, and the
//! audit of clause 9.2. Text, or one JSON document with `nopm` and `tpm` at its top level.

use std::process::ExitCode;

use anyhow::Result;
use bakeoff_engine::{RunResult, RunStatus};
use bakeoff_server::placement::ClientPlacement;
use bakeoff_study::lab::Servers;
use bakeoff_study::measure::Measured;
use bakeoff_telemetry::ClassSummary;
use bakeoff_workload::tpcc::audit::{audit, passed, AuditLine, Realised, Verdict};
use bakeoff_workload::tpcc::paced::{
    deck_ceiling, RESPONSE_LIMIT_S, TERMINALS_PER_WAREHOUSE, TPMC_PER_WAREHOUSE,
};
use bakeoff_workload::tpcc::{CLASSES, T_RETRIES, T_ROLLBACK};
use bakeoff_workload::WorkloadSpec;
use serde::Serialize;

use super::watch::ServerNewOrders;
use crate::args::{Format, LoadArgs};
use crate::exit::{exit_code, EXIT_FAILED};
use crate::header::{ignored_options, JsonHeader};

/// One transaction type's figures.
#[derive(Debug, Serialize)]
struct Transaction<'a> {
    name: &'static str,
    count: u64,
    per_minute: f64,
    share_percent: f64,
    /// Tries again after a deadlock or serialization failure.
    retries: u64,
    #[serde(flatten)]
    latency: Option<&'a ClassSummary>,
}

/// The report's figures, computed once for text and JSON alike.
#[derive(Debug, Serialize)]
struct Figures<'a> {
    /// New-Orders committed per minute (rolled-back ones do not count): the client's count,
    /// which the server's `sum(d_next_o_id)` confirms (`server_new_orders`).
    nopm: f64,
    /// The server's commits and rollbacks per minute (MariaDB/MySQL `Com_commit +
    /// Com_rollback`, the whole server's; PostgreSQL `xact_commit + xact_rollback` of the
    /// run's database); None when the server's counters were not read.
    tpm: Option<f64>,
    warehouses: u32,
    connections: u32,
    seconds: f64,
    new_orders: u64,
    /// The change of `sum(d_next_o_id)` over the measured span, as HammerDB counts NOPM.
    server_new_orders: Option<i64>,
    /// Client's committed New-Orders over the server's count (1.0: they agree).
    client_to_server: Option<f64>,
    /// Transactions the client ended (each a commit or a rollback), per minute.
    client_tpm: f64,
    transactions: Vec<Transaction<'a>>,
    server_cpu_ms_per_new_order: Option<f64>,
    client_cpu_ms_per_new_order: Option<f64>,
    audit: Vec<AuditLine>,
    audit_passed: bool,
    /// With keying and think time: how the terminals paced, and their response times.
    #[serde(skip_serializing_if = "Option::is_none")]
    paced: Option<Paced>,
}

/// A paced run's figures (clause 5.2.5).
#[derive(Debug, Serialize)]
struct Paced {
    terminals: u32,
    /// The specification's waits times this (1: its pacing).
    keying_scale: f64,
    /// New-Orders ended a minute, the rolled-back ones with them (as go-tpc and CockroachDB
    /// count them): what the efficiency is reckoned from.
    tpmc: f64,
    /// `tpmc` against 12.86 per ten terminals (a warehouse's; divided by the scale), in
    /// percent.
    efficiency_percent: f64,
    /// What this deck (10 New-Orders in 23) allows at the mean waits with instant answers,
    /// against the same: 98.0%.
    deck_ceiling_percent: f64,
    response_times: Vec<Limit>,
    /// Every type's 90th percentile within its limit.
    response_times_passed: bool,
}

/// One type's 90th-percentile response time against its limit (5.2.5.3).
#[derive(Debug, Serialize)]
struct Limit {
    name: &'static str,
    p90_ms: Option<f64>,
    limit_ms: f64,
    within: bool,
}

fn paced(
    spec: &WorkloadSpec,
    realised: &[Realised; 5],
    classes: &[ClassSummary],
    minutes: f64,
) -> Option<Paced> {
    let o = &spec.tpcc;
    let terminals = bakeoff_workload::tpcc::paced::terminals(o, spec.tpcc.warehouses);
    if terminals == 0 {
        return None;
    }
    // 12.86 a warehouse is 12.86 per ten terminals: --terminals other than ten a warehouse
    // moves the ceiling with them.
    let ceiling =
        TPMC_PER_WAREHOUSE * f64::from(terminals) / f64::from(TERMINALS_PER_WAREHOUSE) / o.keying;
    let tpmc = realised[0].events as f64 / minutes;
    let response_times: Vec<Limit> = (0..CLASSES.len())
        .map(|i| {
            // The limits are the specification's, whatever the waits' scale: they bound
            // what the server and the queue for a connection take, not the user's pace.
            let limit_ms = RESPONSE_LIMIT_S[i] * 1000.0;
            let p90_ms = classes.get(i).filter(|c| c.events > 0).map(|c| c.p90_ms);
            Limit {
                name: CLASSES[i],
                p90_ms,
                limit_ms,
                within: p90_ms.is_some_and(|p| p <= limit_ms),
            }
        })
        .collect();
    Some(Paced {
        terminals,
        keying_scale: o.keying,
        tpmc,
        efficiency_percent: 100.0 * tpmc / ceiling,
        deck_ceiling_percent: 100.0 * deck_ceiling() / TPMC_PER_WAREHOUSE,
        response_times_passed: response_times.iter().all(|l| l.within),
        response_times,
    })
}

fn figures<'a>(
    spec: &WorkloadSpec,
    result: &'a RunResult,
    connections: u32,
    server: ServerNewOrders,
) -> Figures<'a> {
    let classes = &result.total.classes;
    let seconds = result.elapsed_seconds.max(1e-9);
    let minutes = seconds / 60.0;
    let class = |i: usize| classes.get(i);
    let realised: [Realised; 5] = std::array::from_fn(|i| match class(i) {
        Some(c) => Realised {
            events: c.events,
            tally: c.tally,
        },
        None => Realised::default(),
    });
    let total: u64 = realised.iter().map(|r| r.events).sum();
    let new_orders = realised[0]
        .events
        .saturating_sub(realised[0].tally[T_ROLLBACK]);
    let transactions = (0..CLASSES.len())
        .map(|i| Transaction {
            name: CLASSES[i],
            count: realised[i].events,
            per_minute: realised[i].events as f64 / minutes,
            share_percent: 100.0 * realised[i].events as f64 / total.max(1) as f64,
            retries: realised[i].tally[T_RETRIES],
            latency: class(i),
        })
        .collect();
    let retries: u64 = realised.iter().map(|r| r.tally[T_RETRIES]).sum();
    let t = result.telemetry.as_ref();
    let status = |k: &str| t.and_then(|t| t.status.get(k).copied());
    let server_tx = match (status("Com_commit"), status("Com_rollback")) {
        (Some(c), r) => Some(c + r.unwrap_or(0)),
        _ => status("pg_stat_database.xact_commit")
            .map(|c| c + status("pg_stat_database.xact_rollback").unwrap_or(0)),
    };
    let per_new_order = |cpu_s: f64| (new_orders > 0).then(|| 1000.0 * cpu_s / new_orders as f64);
    let lines = audit(&realised, spec.tpcc.warehouses);
    Figures {
        nopm: new_orders as f64 / minutes,
        tpm: server_tx.map(|x| x as f64 / minutes),
        warehouses: spec.tpcc.warehouses,
        connections,
        seconds,
        new_orders,
        server_new_orders: server.delta(),
        client_to_server: server
            .delta()
            .filter(|d| *d > 0)
            .map(|d| new_orders as f64 / d as f64),
        client_tpm: (total + retries) as f64 / minutes,
        transactions,
        server_cpu_ms_per_new_order: t
            .and_then(|t| t.server.as_ref())
            .and_then(|s| per_new_order(s.cpu_user_seconds + s.cpu_sys_seconds)),
        client_cpu_ms_per_new_order: t.and_then(|t| per_new_order(t.client_cpu_seconds)),
        audit_passed: passed(&lines),
        audit: lines,
        paced: paced(spec, &realised, classes, minutes),
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    #[serde(flatten)]
    figures: &'a Figures<'a>,
    #[serde(flatten)]
    header: JsonHeader<'a>,
    result: &'a RunResult,
    /// Each client host's share, when the load was spread (--client-host).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    client_hosts: &'a [bakeoff_study::spread::HostShare],
}

/// Print the run's TPC-C report; the exit code its status and audit give (a run whose audit
/// failed did not do TPC-C's work: 1).
pub(crate) fn report(
    a: &LoadArgs,
    spec: &WorkloadSpec,
    m: &Measured,
    server: ServerNewOrders,
    target: &Servers,
    placement: &ClientPlacement,
) -> Result<ExitCode> {
    let result = &m.result;
    let mut spec = spec.clone();
    if spec.tpcc.warehouses == 0 {
        spec.tpcc.warehouses = warehouses_of(target);
    }
    let f = figures(&spec, result, m.run.connections, server);
    let json = a.general.format == Format::Json;
    if json {
        let doc = JsonReport {
            figures: &f,
            header: JsonHeader::new(&spec, &m.run, target, placement, ignored_options(a, &spec)),
            result,
            client_hosts: &m.hosts,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", text(&f));
        if !m.hosts.is_empty() {
            eprint!("{}", crate::clients::report(&m.hosts));
        }
    }
    if a.tpcc_check {
        let endpoints = target.endpoints();
        for opts in &endpoints {
            println!("Consistency (clause 3.3.2) after the run:");
            let found = super::check::check_on(opts, false, &mut |x| {
                println!("{}", super::check::finding_line(x))
            })?;
            if found.iter().any(|x| !x.holds()) {
                return Ok(ExitCode::from(EXIT_FAILED));
            }
        }
    }
    if !f.audit_passed && matches!(result.status, RunStatus::Completed) {
        eprintln!(
            "The audit failed: this run did not do TPC-C's work (see the lines marked FAIL)."
        );
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(exit_code(&result.status, result.elapsed_seconds))
}

/// The warehouses the run's terminals found (a run on a given server takes what is there).
fn warehouses_of(target: &Servers) -> u32 {
    let first = target.endpoints().into_iter().take(1).collect::<Vec<_>>();
    super::watch::read_sum(&first, "SELECT warehouses FROM @bakeoff_tpcc").unwrap_or(0) as u32
}

fn ms(v: f64) -> String {
    format!("{v:.2}")
}

fn text(f: &Figures<'_>) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nTPC-C: {} warehouses, {} connections, {:.1} s measured",
        f.warehouses, f.connections, f.seconds
    );
    let _ = writeln!(
        s,
        "    NOPM:  {:.0}   (New-Orders committed per minute; rolled-back ones do not count)",
        f.nopm
    );
    match f.tpm {
        Some(t) => {
            let _ = writeln!(s, "    TPM:   {t:.0}   (the server's commits and rollbacks per minute; the client ended {:.0})", f.client_tpm);
        }
        None => {
            let _ = writeln!(s, "    TPM:   not read from the server; the client ended {:.0} transactions per minute", f.client_tpm);
        }
    }
    match (f.server_new_orders, f.client_to_server) {
        (Some(d), Some(r)) => {
            let _ = writeln!(s, "    new orders: {} committed by the client, {d} by the server's sum(d_next_o_id) (ratio {r:.3})", f.new_orders);
        }
        _ => {
            let _ = writeln!(
                s,
                "    new orders: {} committed (the server's sum(d_next_o_id) was not read)",
                f.new_orders
            );
        }
    }
    if let (Some(srv), Some(cli)) = (f.server_cpu_ms_per_new_order, f.client_cpu_ms_per_new_order) {
        let _ = writeln!(
            s,
            "    CPU per new order: server {srv:.3} ms, client {cli:.3} ms"
        );
    }
    if let Some(p) = &f.paced {
        paced_text(&mut s, p);
    }
    let _ = writeln!(s, "\n    transaction      count   share    p50 ms   p90 ms   p95 ms   p99 ms    max ms  retries");
    for t in &f.transactions {
        let (p50, p90, p95, p99, max) = t.latency.map_or((0.0, 0.0, 0.0, 0.0, 0.0), |l| {
            (l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.max_ms)
        });
        let _ = writeln!(
            s,
            "    {:<13} {:>8}  {:>5.1}%  {:>8}  {:>7}  {:>7}  {:>7}  {:>8}  {:>7}",
            t.name,
            t.count,
            t.share_percent,
            ms(p50),
            ms(p90),
            ms(p95),
            ms(p99),
            ms(max),
            t.retries
        );
    }
    let _ = writeln!(
        s,
        "\n    audit (clause 9.2)                       realised          bounds"
    );
    for l in &f.audit {
        let verdict = match l.verdict {
            Verdict::Pass => "ok",
            Verdict::Noise => "outside, within chance for this many",
            Verdict::Fail => "FAIL",
            Verdict::NotApplicable => "n/a: one warehouse, nothing is remote",
        };
        let _ = writeln!(
            s,
            "    {:<38} {:>6.2}% of {:<7} [{}, {}]%  {verdict}",
            l.what, l.percent, l.of, l.low, l.high
        );
    }
    s
}

fn paced_text(s: &mut String, p: &Paced) {
    use std::fmt::Write;
    let scale = match p.keying_scale {
        1.0 => "the specification's keying and think times".to_string(),
        k => format!("keying and think times x{k} (not the specification's pacing)"),
    };
    let _ = writeln!(s, "    paced: {} terminals, {scale}", p.terminals);
    let _ = writeln!(
        s,
        "    efficiency: {:.1}%   ({:.0} New-Orders a minute, rolled-back ones included, against 12.86 per ten terminals{}; this deck's mix allows {:.1}% at the mean waits)",
        p.efficiency_percent,
        p.tpmc,
        if p.keying_scale == 1.0 { String::new() } else { format!(" over the scale {}", p.keying_scale) },
        p.deck_ceiling_percent
    );
    let _ = writeln!(s, "\n    response time (5.2.5.3)   p90 ms     limit");
    for l in &p.response_times {
        let (p90, verdict) = match l.p90_ms {
            Some(v) => (format!("{v:.2}"), if l.within { "ok" } else { "OVER" }),
            None => ("-".into(), "none ran"),
        };
        let _ = writeln!(
            s,
            "    {:<24} {:>8}  {:>6.0} s  {verdict}",
            l.name,
            p90,
            l.limit_ms / 1000.0
        );
    }
}
