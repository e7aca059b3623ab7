//! Where a series' servers run: here (the server lab in this process) or on the study's
//! server host (the server lab there, through its agent). The runner sees one kind of server.

use bakeoff_driver::ConnectOptions;
use bakeoff_remote::server::{RemoteServer, RemoteSpec};
use bakeoff_remote::HostUrl;
use bakeoff_server::{file_sha256, Check, Listen, Server, ServerSpec};

use crate::spread::ClientHosts;

pub(crate) enum Running {
    Here(Server),
    There(RemoteServer),
}

/// Start `spec` here, or on `host` when the study names a server host; admitting load from
/// `clients` when the load is spread over client hosts.
pub(crate) fn start(
    host: Option<&HostUrl>,
    spec: &ServerSpec,
    clients: Option<&ClientHosts>,
) -> Result<Running, String> {
    let admit = clients.map(ClientHosts::addresses).unwrap_or_default();
    match host {
        None => {
            let mut spec = spec.clone();
            if let Some(c) = clients {
                // Here, listening on the address the client hosts reach this machine by.
                let address = c
                    .this_machine()?
                    .ok_or("no client host said by which address it reaches this machine")?;
                spec.listen = Some(Listen {
                    address,
                    clients: admit,
                });
            }
            Server::start(&spec)
                .map(Running::Here)
                .map_err(|e| e.to_string())
        }
        Some(h) => RemoteServer::start(
            h,
            &RemoteSpec {
                binary: spec.binary.as_ref().map(|b| b.display().to_string()),
                options: spec.options.clone(),
                variant: spec.variant.clone(),
                clients: admit,
                start_timeout: spec.start_timeout,
            },
        )
        .map(Running::There)
        .map_err(|e| e.to_string()),
    }
}

impl Running {
    /// How the load reaches it: the socket here, TCP to its host's address there.
    pub(crate) fn connect_options(&self) -> ConnectOptions {
        match self {
            Running::Here(s) => s.connect_options(),
            Running::There(s) => s.connect_options(),
        }
    }

    /// How client hosts reach it: TCP, at the address it listens on for them.
    pub(crate) fn reach(&self) -> ConnectOptions {
        match self {
            Running::Here(s) => s.tcp_connect_options(),
            Running::There(s) => s.connect_options(),
        }
    }

    pub(crate) fn variant_problems(&self) -> Option<String> {
        match self {
            Running::Here(s) => s.variant_problems(),
            Running::There(s) => s.variant_problems(),
        }
    }

    /// Why it is gone, with the end of its log where it ran here; None while it runs.
    pub(crate) fn death(&mut self) -> Option<String> {
        match self {
            Running::Here(s) => {
                let status = s.exited()?;
                Some(format!(
                    "the server on {} exited during the run ({status}); last lines of its log:\n{}",
                    s.socket().display(),
                    s.error_log_tail(15)
                ))
            }
            Running::There(s) => s.lost(),
        }
    }

    /// Its process's counters, read by the agent on its host, when it runs there.
    pub(crate) fn process_reader(&self) -> Option<bakeoff_telemetry::RemoteProcess> {
        match self {
            Running::Here(_) => None,
            Running::There(s) => Some(s.process_reader()),
        }
    }

    /// Its process, when it runs here (the sampler reads /proc).
    pub(crate) fn pid(&self) -> Option<u32> {
        match self {
            Running::Here(s) => s.pid(),
            Running::There(_) => None,
        }
    }

    pub(crate) fn checks(&self) -> &[Check] {
        match self {
            Running::Here(s) => s.checks(),
            Running::There(s) => &s.checks,
        }
    }

    pub(crate) fn version(&self) -> String {
        match self {
            Running::Here(s) => s.version().to_string(),
            Running::There(s) => s.version.clone(),
        }
    }

    pub(crate) fn binary(&self) -> String {
        match self {
            Running::Here(s) => s.binary().display().to_string(),
            Running::There(s) => s.binary.clone(),
        }
    }

    /// The binary's hash, where bakeoff can read the file.
    pub(crate) fn binary_sha256(&self) -> Option<String> {
        match self {
            Running::Here(s) => file_sha256(s.binary()),
            Running::There(s) => s.binary_sha256.clone(),
        }
    }

    /// The profile of the machine it runs on, when not here.
    pub(crate) fn machine(&self) -> Option<serde_json::Value> {
        match self {
            Running::Here(_) => None,
            Running::There(s) => s.machine.clone(),
        }
    }

    /// The host it runs on, when not here.
    pub(crate) fn host(&self) -> Option<String> {
        match self {
            Running::Here(_) => None,
            Running::There(s) => Some(s.host.to_string()),
        }
    }
}
