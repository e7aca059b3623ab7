//! What `bakeoff run` prints once a timed run is over: the final report (text or JSON) and
//! what it says of a started server that died during the run.

use std::process::ExitCode;

use anyhow::Result;
use bakeoff_engine::{RunResult, RunSpec};
use bakeoff_server::placement::ClientPlacement;
use bakeoff_study::lab::{Death, Servers};
use bakeoff_study::spread::HostShare;
use bakeoff_workload::WorkloadSpec;
use serde::Serialize;

use crate::args::{Format, LoadArgs};
use crate::exit::exit_code;
use crate::header::{ignored_options, JsonHeader};
use crate::output;

/// The final report, text or JSON; the exit code the run's status gives.
pub(crate) fn report(
    a: &LoadArgs,
    spec: &WorkloadSpec,
    run_spec: &RunSpec,
    result: &RunResult,
    hosts: &[HostShare],
    target: &Servers,
    placement: &ClientPlacement,
) -> Result<ExitCode> {
    let text = a.general.format == Format::Text;
    // sysbench prints no report after a connection's FATAL: in its dialect, what was measured
    // up to the failure goes to stderr (at its info level) instead of its stdout.
    let failed = matches!(result.status, bakeoff_engine::RunStatus::Failed(_))
        && crate::dialect::is_sysbench();
    if text {
        if failed {
            crate::dialect::extra!("{}", output::final_report(result, run_spec.percentile));
        } else if crate::dialect::shows(crate::dialect::NOTICE) {
            if a.general.histogram {
                print!("{}", output::histogram(&result.histogram));
            }
            print!("{}", output::final_report(result, run_spec.percentile));
        }
        // What sysbench's report does not have: on stderr in its dialect.
        crate::dialect::extra!("{}", output::extra_report(result));
        if let Some(t) = &result.telemetry {
            crate::dialect::extra!("{}", output::telemetry_report(t, run_spec.client_threads));
        }
        if hosts.is_empty() {
            crate::dialect::extra!("{}", output::placement_report(placement));
        } else {
            crate::dialect::extra!("{}", crate::clients::report(hosts));
        }
    } else {
        let doc = JsonReport {
            header: JsonHeader::new(spec, run_spec, target, placement, ignored_options(a, spec)),
            result,
            client_hosts: hosts,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(exit_code(&result.status, result.elapsed_seconds))
}

#[derive(Serialize)]
struct JsonReport<'a> {
    #[serde(flatten)]
    header: JsonHeader<'a>,
    result: &'a RunResult,
    /// Each client host's share, when the load was spread (--client-host).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    client_hosts: &'a [HostShare],
}

/// What `bakeoff run` says of a started server that ended during the run.
pub(crate) fn death_line(d: Death) -> String {
    match d {
        Death::Exited {
            socket,
            status,
            log_tail,
        } => format!(
            "The embedded server on {} exited during the run ({status}), so the figures above end with it; last lines of its error log:\n{log_tail}",
            socket.display()
        ),
        Death::Lost(why) => why,
    }
}
