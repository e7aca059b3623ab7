//! The servers a run starts, as its options describe them (the lab, `bakeoff_study::lab`,
//! starts them), and what is printed as each one is ready.

use anyhow::Result;
use bakeoff_server::ServerSpec;
use bakeoff_study::cell::start_servers;
use bakeoff_study::lab::{Running, Servers};

use crate::args::EmbeddedArgs;
use crate::output;

/// The server spec of each instance of the variant the options describe.
pub(crate) fn specs(e: &EmbeddedArgs) -> Result<Vec<ServerSpec>> {
    let variants = e.variant.variants().map_err(anyhow::Error::msg)?;
    let binary = match (&e.server_binary, e.db_driver.as_str()) {
        (Some(b), _) => Some(b.clone()),
        (None, "pgsql") => Some(bakeoff_server::find_postgres_binary()?),
        (None, _) => None,
    };
    Ok(variants
        .into_iter()
        .map(|variant| ServerSpec {
            binary: binary.clone(),
            options: e.server_options.clone(),
            variant,
            start_timeout: std::time::Duration::from_secs(e.server_start_timeout),
            ..ServerSpec::default()
        })
        .collect())
}

/// Start every instance of the variant the options describe, here, printing each one's
/// checks (`bakeoff server start`).
pub(crate) fn start_embedded(e: &EmbeddedArgs) -> Result<Servers> {
    let instances = e.variant.instances;
    let up = |i: usize, running: &Running, spec: &ServerSpec| {
        print_server_up(running, i, instances, spec)
    };
    Ok(start_servers(None, &specs(e)?, None, up)?)
}

/// A server is up: where, as which variant, and each axis as verified.
pub(crate) fn print_server_up(running: &Running, index: usize, instances: u32, spec: &ServerSpec) {
    match running {
        Running::Here(server) => eprintln!(
            "Embedded server {}{} ready on {} ({})",
            server.version(),
            if instances > 1 {
                format!(" #{}", index + 1)
            } else {
                String::new()
            },
            server.socket().display(),
            spec.variant
        ),
        Running::There(server) => eprintln!(
            "Server {} ready on {} at {}:{} ({})",
            server.version, server.host, server.address, server.port, spec.variant
        ),
    }
    for c in running.checks() {
        eprintln!("{}", output::check_line(c));
    }
}
