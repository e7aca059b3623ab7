//! What a run talks to: a server the user gave, or the embedded server(s) bakeoff started
//! (several when a variant asks for instances; the load is spread over them round-robin).

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use bakeoff_driver::{Conn, ConnectOptions};
use bakeoff_remote::server::{RemoteServer, RemoteSpec};
use bakeoff_remote::HostUrl;
use bakeoff_server::{Check, Listen, Server, ServerSpec};
use bakeoff_telemetry::SampleTarget;
use serde::Serialize;

use crate::args::EmbeddedArgs;
use crate::output;
use crate::runtime::rt;

pub(crate) enum Target {
    /// Servers given on the command line (a list spreads the connections, as sysbench's),
    /// with each one's process where it is known here (a unix socket's peer).
    Given(Vec<ConnectOptions>, Vec<Option<u32>>),
    Embedded(Vec<Server>),
    /// The variant's servers on another host (`--server-host`), started there by its agent.
    Remote(Vec<RemoteServer>),
}

/// A verified axis, with the instance it belongs to.
#[derive(Serialize)]
pub(crate) struct InstanceCheck {
    instance: usize,
    #[serde(flatten)]
    check: Check,
}

/// Start every instance of the variant the options describe, printing each one's checks;
/// listening for client hosts when `listen` says.
pub(crate) fn start_embedded(e: &EmbeddedArgs, listen: Option<&Listen>) -> Result<Vec<Server>> {
    let variants = e.variant.variants().map_err(anyhow::Error::msg)?;
    let mut servers = Vec::new();
    for (i, variant) in variants.into_iter().enumerate() {
        let spec = ServerSpec {
            binary: e.server_binary.clone(),
            options: e.server_options.clone(),
            variant,
            listen: listen.cloned(),
            start_timeout: std::time::Duration::from_secs(e.server_start_timeout),
            ..ServerSpec::default()
        };
        let server = Server::start(&spec).with_context(|| match e.variant.instances {
            1 => "starting the embedded server".to_string(),
            n => format!("starting embedded server {} of {n}", i + 1),
        })?;
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
        for c in server.checks() {
            eprintln!("{}", output::check_line(c));
        }
        servers.push(server);
    }
    Ok(servers)
}

/// Start every instance of the variant on `host` (one agent each), printing their checks;
/// admitting load from `clients` too.
pub(crate) fn start_remote(
    e: &EmbeddedArgs,
    host: &str,
    clients: &[std::net::IpAddr],
) -> Result<Vec<RemoteServer>> {
    let host = HostUrl::parse(host).map_err(|e| anyhow::anyhow!("--server-host: {e}"))?;
    let variants = e.variant.variants().map_err(anyhow::Error::msg)?;
    let mut servers = Vec::new();
    for variant in variants {
        let spec = RemoteSpec {
            binary: e.server_binary.as_ref().map(|b| b.display().to_string()),
            options: e.server_options.clone(),
            variant: variant.clone(),
            clients: clients.to_vec(),
            start_timeout: std::time::Duration::from_secs(e.server_start_timeout),
        };
        let server = RemoteServer::start(&host, &spec)?;
        eprintln!(
            "Server {} ready on {} at {}:{} ({variant})",
            server.version, server.host, server.address, server.port
        );
        for c in &server.checks {
            eprintln!("{}", output::check_line(c));
        }
        servers.push(server);
    }
    Ok(servers)
}

impl Target {
    /// One per server; session `tid` uses `endpoints[tid % len]`.
    pub(crate) fn endpoints(&self) -> Vec<ConnectOptions> {
        match self {
            Target::Given(o, _) => o.clone(),
            Target::Embedded(s) => s.iter().map(Server::connect_options).collect(),
            Target::Remote(s) => s.iter().map(RemoteServer::connect_options).collect(),
        }
    }

    /// Started by bakeoff (here or on another host): the tables are loaded, the variant set.
    /// How client hosts reach the servers: over TCP (an embedded server at the address it
    /// listens on for them).
    pub(crate) fn reach(&self) -> Vec<ConnectOptions> {
        match self {
            Target::Given(o, _) => o.clone(),
            Target::Embedded(s) => s.iter().map(Server::tcp_connect_options).collect(),
            Target::Remote(s) => s.iter().map(RemoteServer::connect_options).collect(),
        }
    }

    pub(crate) fn is_embedded(&self) -> bool {
        !matches!(self, Target::Given(..))
    }

    pub(crate) fn sample_targets(&self) -> Vec<SampleTarget> {
        match self {
            // On a unix socket here its process is the socket's peer; over TCP it is not
            // known, only its status over its connection. A server given twice is sampled once.
            Target::Given(o, pids) => {
                let mut seen = std::collections::BTreeSet::new();
                o.iter()
                    .zip(pids)
                    .filter(|(_, pid)| pid.is_none_or(|p| seen.insert(p)))
                    .map(|(o, &pid)| SampleTarget {
                        pid,
                        status: Some(o.clone()),
                        remote: None,
                    })
                    .collect()
            }
            // Status over TCP from here, the process read by the agent on its host.
            Target::Remote(s) => s
                .iter()
                .map(|s| SampleTarget {
                    status: Some(s.connect_options()),
                    remote: Some(s.process_reader()),
                    ..SampleTarget::default()
                })
                .collect(),
            Target::Embedded(s) => s
                .iter()
                .map(|s| SampleTarget {
                    pid: s.pid(),
                    status: Some(s.connect_options()),
                    remote: None,
                })
                .collect(),
        }
    }

    /// Refuse a run a server cannot take: servers lower max_connections quietly when their
    /// file limit is low, and the run would then fail on its last connections. A listen queue
    /// shorter than the connections is only worth a note: connects then wait for room.
    pub(crate) fn check_connections(&self, wanted: u32) -> Result<()> {
        let endpoints = self.endpoints();
        let per_server = wanted.div_ceil(endpoints.len() as u32);
        for opts in &endpoints {
            let (max, back_log) = rt()?
                .block_on(async {
                    let mut c = Conn::connect(opts).await.ok()?;
                    let rows = c
                        .query_rows("SELECT @@max_connections, @@back_log")
                        .await
                        .ok()?;
                    let row = rows.first()?;
                    let num = |i: usize| row.get(i)?.as_ref()?.parse::<u32>().ok();
                    Some((num(0), num(1)))
                })
                .unwrap_or((None, None));
            if let Some(max) = max.filter(|m| *m < per_server + 2) {
                bail!(
                    "--threads={wanted}: the server allows {max} connections (max_connections); {}",
                    if self.is_embedded() {
                        format!("add --set max_connections={}", per_server + 100)
                    } else {
                        "raise max_connections on the server, or use fewer --threads".into()
                    }
                );
            }
            if let Some(note) = listen_queue_note(per_server, back_log, bakeoff_driver::somaxconn())
            {
                eprintln!("note: {note}");
            }
        }
        Ok(())
    }

    /// Why an embedded server is gone, if one exited on its own.
    pub(crate) fn died(&mut self) -> Option<String> {
        if let Target::Remote(servers) = self {
            return servers.iter().find_map(RemoteServer::lost);
        }
        let Target::Embedded(servers) = self else {
            return None;
        };
        servers.iter_mut().find_map(|s| {
            let status = s.exited()?;
            Some(format!(
                "The embedded server on {} exited during the run ({status}), so the figures above end with it; last lines of its error log:\n{}",
                s.socket().display(),
                s.error_log_tail(15)
            ))
        })
    }

    pub(crate) fn variant_problems(&self) -> Option<String> {
        let problems: Vec<String> = match self {
            Target::Embedded(servers) => servers
                .iter()
                .filter_map(Server::variant_problems)
                .collect(),
            Target::Remote(servers) => servers
                .iter()
                .filter_map(RemoteServer::variant_problems)
                .collect(),
            Target::Given(..) => return None,
        };
        (!problems.is_empty()).then(|| problems.join("\n"))
    }

    /// SHOW GLOBAL VARIABLES of the (first) server now; empty when it does not answer.
    pub(crate) fn variables(&self) -> BTreeMap<String, String> {
        let Some(opts) = self.endpoints().into_iter().next() else {
            return BTreeMap::new();
        };
        bakeoff_server::global_variables(&opts)
    }

    /// Every embedded server's verified variant axes.
    pub(crate) fn checks(&self) -> Vec<InstanceCheck> {
        match self {
            Target::Embedded(s) => s
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    s.checks().iter().map(move |c| InstanceCheck {
                        instance: i + 1,
                        check: c.clone(),
                    })
                })
                .collect(),
            Target::Remote(s) => s
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    s.checks.iter().map(move |c| InstanceCheck {
                        instance: i + 1,
                        check: c.clone(),
                    })
                })
                .collect(),
            Target::Given(..) => Vec::new(),
        }
    }

    /// Known for the embedded server; a given server's version is not asked for yet.
    pub(crate) fn server_version(&self) -> Option<String> {
        match self {
            Target::Embedded(s) => s.first().map(|s| s.version().to_string()),
            Target::Remote(s) => s.first().map(|s| s.version.clone()),
            Target::Given(..) => None,
        }
    }
}

/// Why connects may have to wait for room, when the listen queue is shorter than the
/// connections opened at once.
fn listen_queue_note(
    per_server: u32,
    back_log: Option<u32>,
    somaxconn: Option<u32>,
) -> Option<String> {
    let queue = match (back_log, somaxconn) {
        (Some(b), Some(s)) => b.min(s),
        (Some(b), None) => b,
        _ => return None,
    };
    (queue < per_server).then(|| {
        format!(
            "the server's listen queue holds {queue} (back_log={}{}) for {per_server} connections: connects that find it full wait for room, within --mysql-connect-timeout",
            back_log.unwrap_or(queue),
            somaxconn.map(|s| format!(", net.core.somaxconn={s}")).unwrap_or_default()
        )
    })
}
