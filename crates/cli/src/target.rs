//! The servers a run starts, as its options describe them, and what it prints as each one is
//! ready: the lab (`bakeoff_study::lab`) starts them, here or on `--server-host`.

use anyhow::Result;
use bakeoff_remote::HostUrl;
use bakeoff_server::ServerSpec;
use bakeoff_study::lab::{self, Running, StartError};
use bakeoff_study::spread::ClientHosts;

use crate::args::EmbeddedArgs;
use crate::output;

/// The server spec of each instance of the variant the options describe.
fn specs(e: &EmbeddedArgs) -> Result<Vec<ServerSpec>> {
    let variants = e.variant.variants().map_err(anyhow::Error::msg)?;
    Ok(variants
        .into_iter()
        .map(|variant| ServerSpec {
            binary: e.server_binary.clone(),
            options: e.server_options.clone(),
            variant,
            start_timeout: std::time::Duration::from_secs(e.server_start_timeout),
            ..ServerSpec::default()
        })
        .collect())
}

/// Start every instance of the variant the options describe, here, printing each one's
/// checks; listening for the client hosts when there are some.
pub(crate) fn start_embedded(
    e: &EmbeddedArgs,
    clients: Option<&ClientHosts>,
) -> Result<Vec<Running>> {
    let mut servers = Vec::new();
    for (i, spec) in specs(e)?.into_iter().enumerate() {
        let running = lab::start(None, &spec, clients).map_err(|err| match err {
            StartError::Server(s) => anyhow::Error::new(s).context(match e.variant.instances {
                1 => "starting the embedded server".to_string(),
                n => format!("starting embedded server {} of {n}", i + 1),
            }),
            other => anyhow::Error::new(other),
        })?;
        if let Running::Here(server) = &running {
            eprintln!(
                "Embedded server {}{} ready on {} ({})",
                server.version(),
                if e.variant.instances > 1 {
                    format!(" #{}", i + 1)
                } else {
                    String::new()
                },
                server.socket().display(),
                spec.variant
            );
        }
        for c in running.checks() {
            eprintln!("{}", output::check_line(c));
        }
        servers.push(running);
    }
    Ok(servers)
}

/// Start every instance of the variant on `host` (one agent each), printing their checks;
/// admitting load from the client hosts too.
pub(crate) fn start_remote(
    e: &EmbeddedArgs,
    host: &str,
    clients: Option<&ClientHosts>,
) -> Result<Vec<Running>> {
    let host = HostUrl::parse(host).map_err(|e| anyhow::anyhow!("--server-host: {e}"))?;
    let mut servers = Vec::new();
    for spec in specs(e)? {
        let running = lab::start(Some(&host), &spec, clients)?;
        if let Running::There(server) = &running {
            eprintln!(
                "Server {} ready on {} at {}:{} ({})",
                server.version, server.host, server.address, server.port, spec.variant
            );
        }
        for c in running.checks() {
            eprintln!("{}", output::check_line(c));
        }
        servers.push(running);
    }
    Ok(servers)
}
