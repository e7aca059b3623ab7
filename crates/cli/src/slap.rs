//! Fixed-work runs (`--iterations`, `--events-per-connection`), reported as mysqlslap does so
//! that scripts written for mysqlslap's output read ours. With --client-host every iteration
//! is spread over the client hosts, each running its block of connections.

use std::fmt::Write;
use std::process::ExitCode;

use anyhow::Result;
use bakeoff_engine::{FixedWork, RunResult, RunSpec};
use bakeoff_server::placement::ClientPlacement;
use bakeoff_study::measure::MeasuredWork;
use bakeoff_study::spread::HostShare;
use bakeoff_workload::WorkloadSpec;
use serde::Serialize;

use crate::args::{Format, LoadArgs};
use crate::exit::exit_code;
use crate::header::{ignored_options, JsonHeader};
use bakeoff_study::lab::Servers;

/// The fixed work's report, mysqlslap's block in text or everything in JSON; the exit code
/// its status gives.
pub fn print(
    a: &LoadArgs,
    spec: &WorkloadSpec,
    run_spec: &RunSpec,
    done: &MeasuredWork,
    target: &Servers,
    placement: &ClientPlacement,
) -> Result<ExitCode> {
    let (fw, shares) = (&done.work, &done.hosts);
    if a.general.format == Format::Text {
        print!("{}", report(fw));
        print!("{}", crate::output::placement_report(placement));
        if !shares.is_empty() {
            print!("{}", crate::clients::report(shares));
        }
    } else {
        let doc = JsonReport {
            header: JsonHeader::new(spec, run_spec, target, placement, ignored_options(a, spec)),
            fixed_work: fw,
            summary: Summary::of(fw),
            runs: &fw.runs,
            client_hosts: shares,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    let measured: f64 = fw.iterations.iter().map(|i| i.seconds).sum();
    Ok(exit_code(&fw.status, measured))
}

/// mysqlslap's block (its wording and 3 decimals; its figures were whole milliseconds), then
/// bakeoff's additions after a blank line.
pub fn report(fw: &FixedWork) -> String {
    let mut s = String::new();
    if fw.iterations.is_empty() {
        s.push_str("No iteration finished.\n");
        return s;
    }
    let n = fw.iterations.len() as f64;
    let per_client = fw.iterations.iter().map(|i| i.statements).sum::<u64>() as f64
        / n
        / fw.connections.max(1) as f64;
    let _ = writeln!(s, "Benchmark");
    for (what, v) in [
        ("Average", fw.avg_seconds()),
        ("Minimum", fw.min_seconds()),
        ("Maximum", fw.max_seconds()),
    ] {
        let _ = writeln!(
            s,
            "\t{what} number of seconds to run all queries: {v:.3} seconds"
        );
    }
    let _ = writeln!(s, "\tNumber of clients running queries: {}", fw.connections);
    let _ = writeln!(
        s,
        "\tAverage number of queries per client: {}",
        per_client.round() as u64
    );
    let _ = writeln!(s);
    let sum = Summary::of(fw);
    let _ = writeln!(
        s,
        "bakeoff: {} iterations x {} connections x {} events per connection",
        fw.iterations.len(),
        fw.connections,
        fw.events_per_connection
    );
    let _ = writeln!(
        s,
        "    seconds per iteration: stddev {:.3}, of which connecting and preparing {:.3} on average",
        sum.stddev_seconds, sum.avg_setup_seconds
    );
    let _ = writeln!(
        s,
        "    events per second over all iterations: {:.2}; errors ignored: {}; reconnects: {}",
        sum.events_per_second, sum.errors, sum.reconnects
    );
    s
}

#[derive(Serialize)]
struct Summary {
    min_seconds: f64,
    avg_seconds: f64,
    max_seconds: f64,
    stddev_seconds: f64,
    avg_setup_seconds: f64,
    events_per_second: f64,
    errors: u64,
    reconnects: u64,
}

impl Summary {
    fn of(fw: &FixedWork) -> Summary {
        let its = &fw.iterations;
        let n = its.len().max(1) as f64;
        let seconds: f64 = its.iter().map(|i| i.seconds).sum();
        Summary {
            min_seconds: if its.is_empty() {
                0.0
            } else {
                fw.min_seconds()
            },
            avg_seconds: fw.avg_seconds(),
            max_seconds: fw.max_seconds(),
            stddev_seconds: fw.stddev_seconds(),
            avg_setup_seconds: its.iter().map(|i| i.setup_seconds).sum::<f64>() / n,
            events_per_second: its.iter().map(|i| i.events).sum::<u64>() as f64
                / seconds.max(f64::MIN_POSITIVE),
            errors: its.iter().map(|i| i.errors).sum(),
            reconnects: its.iter().map(|i| i.reconnects).sum(),
        }
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    #[serde(flatten)]
    header: JsonHeader<'a>,
    fixed_work: &'a FixedWork,
    summary: Summary,
    /// Each iteration's full run (totals, latency percentiles, per-connection counts).
    runs: &'a [RunResult],
    /// Each client host's share over all iterations (with --client-host).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    client_hosts: &'a [HostShare],
}
