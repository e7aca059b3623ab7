//! `bakeoff run --client-host ...`: the load spread over other machines (see
//! bakeoff_study::spread), and what the report adds for them.

use std::fmt::Write as _;

use anyhow::{bail, Result};
use bakeoff_remote::HostUrl;
use bakeoff_study::spread::{ClientHosts, HostShare};

use crate::args::LoadArgs;

/// Agents on the --client-host machines; None when the load runs in this process (no
/// --client-host, or only `local`).
pub(crate) fn connect(a: &LoadArgs) -> Result<Option<ClientHosts>> {
    let given = &a.general.client_host;
    let mut urls = Vec::new();
    for h in given {
        let url = HostUrl::parse(h).map_err(|e| anyhow::anyhow!("--client-host: {e}"))?;
        if urls.contains(&url) {
            bail!("--client-host {h} is given twice; give each client host once");
        }
        urls.push(url);
    }
    if urls.iter().all(|u| *u == HostUrl::Local) {
        return Ok(None);
    }
    if a.general.client_cpus.is_some() {
        bail!("--client-cpus places the load on this machine's CPUs; with --client-host each client host runs its part on all of its own CPUs: give one or the other");
    }
    let names: Vec<String> = urls.iter().map(ToString::to_string).collect();
    eprintln!("Starting the load's agents on {}...", names.join(", "));
    Ok(Some(ClientHosts::connect(&urls)?))
}

/// Text report lines: each host's share, and a warning naming any client-bound host.
pub(crate) fn report(shares: &[HostShare]) -> String {
    let mut s = String::from("Client hosts:\n");
    for h in shares {
        let _ = writeln!(
            s,
            "    {:<32} {:>6} connections {:>12} events  CPU {:>5.1}%{}",
            h.host,
            h.connections,
            h.events,
            h.client_cpu_share * 100.0,
            if h.client_bound { "  CLIENT-BOUND" } else { "" }
        );
    }
    for h in shares.iter().filter(|h| h.client_bound) {
        let _ = writeln!(
            s,
            "Warning: client host {} used {:.0}% of its CPUs: the figures may measure that host, not the server; add client hosts or use bigger ones",
            h.host,
            h.client_cpu_share * 100.0
        );
    }
    s
}
