//! The servers a run or a series talks to: started here (the server lab in this process), on
//! a server host (the server lab there, through its agent), or given by the user. `bakeoff
//! run` and the study runner see them the same way: one kind of started server
//! ([`Running`]), one set of servers ([`Servers`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use bakeoff_driver::{Conn, ConnectOptions, Endpoint};
use bakeoff_remote::server::{RemoteServer, RemoteSpec};
use bakeoff_remote::HostUrl;
use bakeoff_server::placement::{launch_cpus, process_cpus};
use bakeoff_server::variant::CpuList;
use bakeoff_server::{file_sha256, Check, Listen, Server, ServerSpec};
use bakeoff_telemetry::SampleTarget;
use serde::Serialize;

use crate::spread::ClientHosts;

/// A server bakeoff started: here, or on another host through its agent.
pub enum Running {
    Here(Server),
    There(RemoteServer),
}

/// Why a server did not start: the lab's own error, the agent's, or the setup around them.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Server(#[from] bakeoff_server::ServerError),
    #[error(transparent)]
    Remote(#[from] bakeoff_remote::RemoteError),
    #[error("{0}")]
    Setup(String),
}

/// Start `spec` here, or on `host` when one is named; admitting load from `clients` when the
/// load is spread over client hosts (a server here then listens on the address they reach
/// this machine by).
pub fn start(
    host: Option<&HostUrl>,
    spec: &ServerSpec,
    clients: Option<&ClientHosts>,
) -> Result<Running, StartError> {
    let admit = clients.map(ClientHosts::addresses).unwrap_or_default();
    match host {
        None => {
            let mut spec = spec.clone();
            if let Some(c) = clients {
                let address = c
                    .this_machine()
                    .map_err(StartError::Setup)?
                    .ok_or_else(|| {
                        StartError::Setup(
                            "no client host said by which address it reaches this machine".into(),
                        )
                    })?;
                spec.listen = Some(Listen {
                    address,
                    clients: admit,
                });
                // Its load account over the network requires TLS, with this run's certificate.
                let tls = bakeoff_server::lab_ca().and_then(|ca| ca.server_tls(address));
                spec.tls = Some(tls.map_err(StartError::Setup)?);
            }
            Ok(Running::Here(Server::start(&spec)?))
        }
        Some(h) => {
            let remote = RemoteSpec {
                engine: spec.engine,
                binary: spec.binary.as_ref().map(|b| b.display().to_string()),
                options: spec.options.clone(),
                variant: spec.variant.clone(),
                clients: admit,
                start_timeout: spec.start_timeout,
            };
            Ok(Running::There(RemoteServer::start(h, &remote)?))
        }
    }
}

/// Start one server per spec (a variant's instances), here or on `host`, telling `on_up` as
/// each is ready; the first that fails stops the rest (those started go with the error), and
/// says which it was (from 0).
pub fn start_all(
    host: Option<&HostUrl>,
    specs: &[ServerSpec],
    clients: Option<&ClientHosts>,
    mut on_up: impl FnMut(usize, &Running, &ServerSpec),
) -> Result<Servers, (usize, StartError)> {
    let mut started = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let running = start(host, spec, clients).map_err(|e| (i, e))?;
        on_up(i, &running, spec);
        started.push(running);
    }
    Ok(Servers::Started(started))
}

impl Running {
    /// How the load reaches it: the socket here, TCP to its host's address there.
    pub fn connect_options(&self) -> ConnectOptions {
        match self {
            Running::Here(s) => s.connect_options(),
            Running::There(s) => s.connect_options(),
        }
    }

    /// How client hosts reach it: TCP, at the address it listens on for them.
    pub fn reach(&self) -> ConnectOptions {
        match self {
            Running::Here(s) => s.tcp_connect_options(),
            Running::There(s) => s.connect_options(),
        }
    }

    pub fn variant_problems(&self) -> Option<String> {
        match self {
            Running::Here(s) => s.variant_problems(),
            Running::There(s) => s.variant_problems(),
        }
    }

    /// How it ended, if it has (None while it runs).
    pub fn ended(&mut self) -> Option<Death> {
        match self {
            Running::Here(s) => Some(Death::Exited {
                status: s.exited()?,
                socket: s.socket().to_path_buf(),
                log_tail: s.error_log_tail(15),
            }),
            Running::There(s) => s.lost().map(Death::Lost),
        }
    }

    /// Its process's counters, read by the agent on its host, when it runs there.
    pub fn process_reader(&self) -> Option<bakeoff_telemetry::RemoteProcess> {
        match self {
            Running::Here(_) => None,
            Running::There(s) => Some(s.process_reader()),
        }
    }

    /// Its process, when it runs here (the sampler reads /proc).
    pub fn pid(&self) -> Option<u32> {
        match self {
            Running::Here(s) => s.pid(),
            Running::There(_) => None,
        }
    }

    pub fn checks(&self) -> &[Check] {
        match self {
            Running::Here(s) => s.checks(),
            Running::There(s) => &s.checks,
        }
    }

    pub fn version(&self) -> String {
        match self {
            Running::Here(s) => s.version().to_string(),
            Running::There(s) => s.version.clone(),
        }
    }

    pub fn binary(&self) -> String {
        match self {
            Running::Here(s) => s.binary().display().to_string(),
            Running::There(s) => s.binary.clone(),
        }
    }

    /// The binary's hash, where bakeoff can read the file.
    pub fn binary_sha256(&self) -> Option<String> {
        match self {
            Running::Here(s) => file_sha256(s.binary()),
            Running::There(s) => s.binary_sha256.clone(),
        }
    }

    /// The profile of the machine it runs on, when not here.
    pub fn machine(&self) -> Option<serde_json::Value> {
        match self {
            Running::Here(_) => None,
            Running::There(s) => s.machine.clone(),
        }
    }

    /// The host it runs on, when not here.
    pub fn host(&self) -> Option<String> {
        match self {
            Running::Here(_) => None,
            Running::There(s) => Some(s.host.to_string()),
        }
    }
}

/// How a started server ended before it was stopped.
pub enum Death {
    /// It exited here, with the end of its error log.
    Exited {
        socket: PathBuf,
        status: String,
        log_tail: String,
    },
    /// The link to its host went, and why.
    Lost(String),
}

impl Death {
    /// As a study records it: why the server is gone, with the end of its log where it ran
    /// here.
    pub fn said(self) -> String {
        match self {
            Death::Exited {
                socket,
                status,
                log_tail,
            } => format!(
                "the server on {} exited during the run ({status}); last lines of its log:\n{log_tail}",
                socket.display()
            ),
            Death::Lost(why) => why,
        }
    }
}

/// A verified axis, with the instance (from 1) it belongs to.
#[derive(Serialize)]
pub struct InstanceCheck {
    instance: usize,
    #[serde(flatten)]
    check: Check,
}

/// Servers the user gave (a list spreads the connections, as sysbench's), with each one's
/// process where it can be read: here (a unix socket's peer, or the process listening on a
/// loopback port), or on its host over ssh (`remote`).
#[derive(Clone, Default)]
pub struct GivenServers {
    pub options: Vec<ConnectOptions>,
    pub pids: Vec<Option<u32>>,
    pub remote: Vec<Option<bakeoff_telemetry::RemoteProcess>>,
}

impl GivenServers {
    /// `options`, each one's process looked for here.
    pub fn here(options: Vec<ConnectOptions>) -> GivenServers {
        let pids = given_pids(&options);
        let remote = vec![None; options.len()];
        GivenServers {
            options,
            pids,
            remote,
        }
    }
}

/// The servers one run talks to (the connections are spread over them round-robin).
pub enum Servers {
    Given(GivenServers),
    /// The variant's instances bakeoff started, here or on a server host.
    Started(Vec<Running>),
}

impl Servers {
    /// The servers bakeoff started (none when they were given).
    pub fn started(&self) -> &[Running] {
        match self {
            Servers::Started(s) => s,
            Servers::Given(..) => &[],
        }
    }

    fn started_mut(&mut self) -> &mut [Running] {
        match self {
            Servers::Started(s) => s,
            Servers::Given(..) => &mut [],
        }
    }

    /// One per server; session `tid` uses `endpoints[tid % len]`.
    pub fn endpoints(&self) -> Vec<ConnectOptions> {
        match self {
            Servers::Given(g) => g.options.clone(),
            Servers::Started(s) => s.iter().map(Running::connect_options).collect(),
        }
    }

    /// How client hosts reach the servers: over TCP (a server here at the address it listens
    /// on for them).
    pub fn reach(&self) -> Vec<ConnectOptions> {
        match self {
            Servers::Given(g) => g.options.clone(),
            Servers::Started(s) => s.iter().map(Running::reach).collect(),
        }
    }

    /// Started by bakeoff (here or on another host): its tables are bakeoff's to load, its
    /// variant set.
    pub fn is_started(&self) -> bool {
        matches!(self, Servers::Started(_))
    }

    /// What the sampler reads of each server.
    pub fn sample_targets(&self) -> Vec<SampleTarget> {
        match self {
            // Its process where it was found (here, or over ssh on its host); otherwise only
            // its status over its connection. A server given twice is sampled once.
            Servers::Given(g) => {
                let mut seen = std::collections::BTreeSet::new();
                g.options
                    .iter()
                    .zip(&g.pids)
                    .zip(&g.remote)
                    .filter(|((_, pid), _)| pid.is_none_or(|p| seen.insert(p)))
                    .map(|((o, &pid), remote)| SampleTarget {
                        pid,
                        status: Some(o.clone()),
                        remote: remote.clone(),
                    })
                    .collect()
            }
            // Here: its process and its status over the socket. There: the status over TCP
            // from here, the process read by the agent on its host.
            Servers::Started(s) => s
                .iter()
                .map(|s| SampleTarget {
                    pid: s.pid(),
                    status: Some(s.connect_options()),
                    remote: s.process_reader(),
                })
                .collect(),
        }
    }

    /// Refuse a run a server cannot take: servers lower max_connections quietly when their
    /// file limit is low, and the run would then fail on its last connections. A listen queue
    /// shorter than the connections is only worth a note (returned): connects then wait for
    /// room.
    pub fn check_connections(&self, wanted: u32) -> Result<Vec<String>, String> {
        let endpoints = self.endpoints();
        let per_server = wanted.div_ceil(endpoints.len() as u32);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let mut notes = Vec::new();
        for opts in &endpoints {
            // A server that cannot be reached fails here, once: the run's own connects would
            // only wait out the same connect timeout again.
            let (max, back_log) = rt
                .block_on(async {
                    if opts.protocol == bakeoff_driver::Protocol::Postgres {
                        return pg_connection_room(opts).await;
                    }
                    let mut c = Conn::connect(opts).await?;
                    let Ok(rows) = c.query_rows("SELECT @@max_connections, @@back_log").await
                    else {
                        return Ok((None, None));
                    };
                    let num = |i: usize| rows.first()?.get(i)?.as_ref()?.parse::<u32>().ok();
                    Ok((num(0), num(1)))
                })
                .map_err(|e| e.to_string())?;
            if let Some(max) = max.filter(|m| *m < per_server + 2) {
                return Err(format!(
                    "--threads={wanted}: the server allows {max} connections (max_connections); {}",
                    if self.is_started() {
                        format!("add --set max_connections={}", per_server + 100)
                    } else {
                        "raise max_connections on the server, or use fewer --threads".into()
                    }
                ));
            }
            notes.extend(listen_queue_note(
                per_server,
                back_log,
                bakeoff_driver::somaxconn(),
            ));
        }
        Ok(notes)
    }

    /// The processes of the servers bakeoff started here (to freeze while others take turns).
    pub fn pids(&self) -> Vec<u32> {
        self.started().iter().filter_map(Running::pid).collect()
    }

    /// End what bakeoff started at once (SIGKILL), without a clean shutdown: a turn-taking
    /// block's copies are throwaway, and a shutdown's flush would only cost time.
    pub fn discard(self) {
        if let Servers::Started(s) = self {
            for r in s {
                match r {
                    Running::Here(server) => server.discard(),
                    Running::There(remote) => drop(remote),
                }
            }
        }
    }

    /// How the first started server that ended did, if one has.
    pub fn ended(&mut self) -> Option<Death> {
        self.started_mut().iter_mut().find_map(Running::ended)
    }

    /// Every started server's failed axes, one line each.
    pub fn variant_problems(&self) -> Option<String> {
        let Servers::Started(s) = self else {
            return None;
        };
        let problems: Vec<String> = s.iter().filter_map(Running::variant_problems).collect();
        (!problems.is_empty()).then(|| problems.join("\n"))
    }

    /// SHOW GLOBAL VARIABLES of the (first) server now; empty when it does not answer.
    pub fn variables(&self) -> BTreeMap<String, String> {
        let Some(opts) = self.endpoints().into_iter().next() else {
            return BTreeMap::new();
        };
        bakeoff_server::global_variables(&opts)
    }

    /// Every started server's verified variant axes.
    pub fn checks(&self) -> Vec<InstanceCheck> {
        let Servers::Started(s) = self else {
            return Vec::new();
        };
        s.iter()
            .enumerate()
            .flat_map(|(i, s)| {
                s.checks().iter().map(move |c| InstanceCheck {
                    instance: i + 1,
                    check: c.clone(),
                })
            })
            .collect()
    }

    /// Known for a started server; a given server's version is not asked for yet.
    pub fn server_version(&self) -> Option<String> {
        match self {
            Servers::Started(s) => s.first().map(Running::version),
            Servers::Given(..) => None,
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

/// Each given server's process when it is on this machine: a unix socket's peer (read on a
/// connection closed politely so the server counts no aborted connect), or the process that
/// listens on a loopback address's port; None for another host, or when it cannot be read.
pub fn given_pids(servers: &[ConnectOptions]) -> Vec<Option<u32>> {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return vec![None; servers.len()];
    };
    servers
        .iter()
        .map(|o| {
            if let Endpoint::Tcp { host, port } = &o.endpoint {
                return is_loopback(host)
                    .then(|| bakeoff_telemetry::listening_process(*port).ok())
                    .flatten()
                    .map(|(pid, _)| pid);
            }
            rt.block_on(async {
                if o.protocol == bakeoff_driver::Protocol::Postgres {
                    // The socket's peer credentials are its listener's: the postmaster
                    // (the backend that answers was forked from it after the accept).
                    let c = bakeoff_driver::PgConn::connect(o).await.ok()?;
                    let server = c.peer_pid();
                    c.quit().await;
                    return server;
                }
                let c = Conn::connect(o).await.ok()?;
                let pid = c.peer_pid();
                c.quit().await;
                pid
            })
        })
        .collect()
}

/// A given server's process on its own machine, over ssh (`ssh`), found there by the TCP port
/// it listens on; None for a server on a unix socket (its process is read here); an error
/// says why it was not found.
pub fn watch_given(
    ssh: &str,
    opts: &ConnectOptions,
) -> Option<Result<bakeoff_remote::watched::Watched, String>> {
    let Endpoint::Tcp { port, .. } = &opts.endpoint else {
        return None;
    };
    Some(
        HostUrl::parse(ssh)
            .map_err(|e| format!("{ssh}: {e}"))
            .and_then(|h| {
                bakeoff_remote::watched::Watched::start(&h, *port).map_err(|e| e.to_string())
            }),
    )
}

/// A host name that means this machine.
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback())
}

/// The CPUs of the given servers' processes `pids`, to place the client beside them as beside
/// servers bakeoff started: None for a server on every CPU bakeoff has (an unpinned one); empty
/// when any process is not known here (then the client goes where it is told).
pub fn given_cpus(pids: &[Option<u32>]) -> Vec<Option<CpuList>> {
    let own = launch_cpus();
    let servers: Option<Vec<Option<CpuList>>> = pids
        .iter()
        .map(|&pid| {
            let pid = pid?;
            process_cpus(pid).map(|c| (!own.is_subset(&c)).then_some(c))
        })
        .collect();
    servers.unwrap_or_default()
}

/// PostgreSQL's room for the load's connections: max_connections less the slots it keeps
/// for superusers (it has no back_log: its listen queue is the kernel's somaxconn).
async fn pg_connection_room(
    opts: &ConnectOptions,
) -> Result<(Option<u32>, Option<u32>), bakeoff_driver::DriverError> {
    let mut c = bakeoff_driver::PgConn::connect_pinned(opts).await?;
    let rows = c
        .query_rows("SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int")
        .await;
    c.quit().await;
    let max = rows
        .ok()
        .and_then(|r| r.first()?.first()?.as_ref()?.parse::<u32>().ok());
    Ok((max, None))
}
