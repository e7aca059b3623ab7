//! The agent's line protocol: one JSON object per line, each way, over the ssh session's
//! stdin (requests) and stdout (replies). Nothing else is ever written to the agent's stdout.
//!
//! Versioning: both sides open with `hello`, naming their protocol number and bakeoff version.
//! A bakeoff talks to an agent of the same protocol number only, and refuses another naming
//! both versions. Within one protocol number, fields may be added (old readers ignore them,
//! new fields carry defaults) but never renamed or given new meanings; a change that needs
//! either takes the next number, and a newer bakeoff that still knows the older number may
//! speak it (the number in the agent's hello says which).

use std::io::BufRead;
use std::net::IpAddr;

use bakeoff_driver::{ConnectOptions, Endpoint, Secret, SslMode, Tls};
use bakeoff_engine::{ConnTotals, RunSpec, RunStatus};
use bakeoff_server::{Check, Variant};
use bakeoff_store::{ProbeRecord, RunKey, RunRecord};
use bakeoff_telemetry::{ProcReading, Telemetry, Window};
use bakeoff_workload::WorkloadSpec;
use serde::{Deserialize, Serialize};

pub const PROTOCOL: u32 = 1;

/// How often bakeoff tells an agent it is still there.
pub const PING_EVERY_S: u64 = 2;
/// An agent that hears nothing for this long takes the link as lost and stops its servers.
pub const SILENCE_S: u64 = 10;
/// The longest line either side reads. The largest real lines are a run's record (ticks and
/// their histograms: about 2 MiB for an hour at one tick a second) and a study file; a longer
/// one is a broken or hostile peer, and reading it whole would let it fill our memory.
pub const MAX_LINE: usize = 64 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Hello {
        protocol: u32,
        version: String,
    },
    /// Run a whole study on the agent's machine (server and load both there), streaming every
    /// run back; the runs in `finished` are skipped (they are in bakeoff's database already).
    Study {
        /// The study file's text and its file name without extension (the default name).
        text: String,
        stem: String,
        /// The platform label the results go under.
        platform: String,
        #[serde(default)]
        finished: Vec<RunKey>,
        #[serde(default)]
        probes_done: Vec<(String, u32)>,
    },
    /// Start a server variant there, listening for load from other hosts: on `listen` (default:
    /// the address this ssh session came in on), its load account admitting only `clients`
    /// and the address this ssh session came from (bakeoff loads the tables and reads the
    /// server's status from there). Answered by `ServerUp`.
    ServerStart {
        #[serde(default)]
        binary: Option<String>,
        #[serde(default)]
        options: Vec<String>,
        variant: Variant,
        #[serde(default)]
        listen: Option<IpAddr>,
        #[serde(default)]
        clients: Vec<IpAddr>,
        /// The server start timeout in seconds (None: the agent's default).
        #[serde(default)]
        start_timeout_s: Option<u64>,
        /// The certificate it presents (made here for the address it listens on, signed by
        /// this run's CA): its load account over the network requires TLS.
        #[serde(default)]
        tls: Option<bakeoff_server::ServerTls>,
        /// The engine asked for (None: by the binary, else MariaDB's default); an agent from
        /// before engines ignores it and starts its default binary.
        #[serde(default)]
        engine: Option<bakeoff_server::Engine>,
    },
    /// Read server `id`'s process counters (CPU, memory, threads) now. Answered by `Sample`.
    Sample {
        id: u32,
    },
    /// Find the process listening on TCP `port` on the agent's host (a server bakeoff did not
    /// start, given by URL, whose CPU is read there): answered by `Watching`; from then on
    /// `Sample { id: WATCHED }` reads it.
    Watch {
        port: u16,
    },
    /// Stop server `id` and remove its directories. Answered by `ServerStopped`.
    ServerStop {
        id: u32,
    },
    /// Run this host's part of a load spread over several client hosts: `run.connections`
    /// connections from id `run.first_tid`, of `threads` in all, to `endpoints`. The agent
    /// connects them all, answers `LoadReady` and waits for `Go` (or `CallOff`); then a
    /// `LoadTick` every tick and `Loaded` at the end (or `Error`).
    Load(LoadPart),
    /// Every client host is ready: start the load now.
    Go,
    /// Another client host failed to get ready: close the connections, run nothing.
    CallOff,
    /// Still here (see [`SILENCE_S`]).
    Ping,
    /// Stop after the run in progress (stored as interrupted), as Ctrl-C does locally.
    Interrupt,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Hello {
        protocol: u32,
        version: String,
        os: String,
        arch: String,
        hostname: String,
        /// The two ends of this ssh session as the agent's host sees them: the address
        /// bakeoff came from and the host's own (None outside ssh).
        #[serde(default)]
        peer: Option<IpAddr>,
        #[serde(default)]
        address: Option<IpAddr>,
    },
    Note {
        text: String,
    },
    RunStart {
        done: usize,
        total: usize,
        what: String,
    },
    Tick {
        tps: f64,
    },
    Run {
        record: Box<RunRecord>,
    },
    Probe {
        record: ProbeRecord,
    },
    /// A server is up and verified. The password travels only in this session.
    ServerUp {
        id: u32,
        address: IpAddr,
        port: u16,
        user: String,
        password: Password,
        database: String,
        version: String,
        binary: String,
        pid: Option<u32>,
        checks: Vec<Check>,
        /// The binary's SHA-256, and the server host's profile (hostname, kernel, CPU model,
        /// CPUs, NUMA nodes, governor, THP) for the manifest.
        #[serde(default)]
        binary_sha256: Option<String>,
        #[serde(default)]
        machine: Option<serde_json::Value>,
    },
    /// What `Watch` found: the process and its command name, or why none.
    Watching {
        pid: Option<u32>,
        #[serde(default)]
        command: String,
        #[serde(default)]
        why: Option<String>,
    },
    ServerStopped {
        id: u32,
    },
    /// None when the process is gone.
    Sample {
        id: u32,
        reading: Option<ProcReading>,
    },
    /// The study ended (finished or interrupted); counts as in `StudyOutcome`.
    Done {
        ok: usize,
        failed: usize,
        invalid: usize,
        interrupted: bool,
    },
    /// Every connection of a `Load` is open and prepared.
    LoadReady,
    LoadTick {
        tick: Box<LoadTick>,
    },
    Loaded {
        result: Box<HostLoad>,
    },
    /// The request could not be carried out; the agent then waits for the next one.
    Error {
        message: String,
    },
}

/// The `Sample` id of the process a `Watch` found (servers the agent started count from 0).
pub const WATCHED: u32 = u32::MAX;

/// A server as a client host reaches it: TCP to an address it can route to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Password,
    pub database: Option<String>,
    /// TLS as the client host must speak it, the CA sent as text (a file here is not there).
    #[serde(default)]
    pub tls: Option<TargetTls>,
    /// The compressed protocol.
    #[serde(default)]
    pub compress: bool,
    /// A PostgreSQL server (else MySQL's protocol): an agent from before PostgreSQL reads
    /// every target as MySQL's and fails its login, saying so.
    #[serde(default)]
    pub postgres: bool,
}

/// A target's TLS: the mode, the CA that signs the server's certificate, the ciphers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TargetTls {
    pub mode: String,
    pub ca_pem: Option<String>,
    /// What the CA is called in messages there (its file here, or the lab's CA).
    #[serde(default)]
    pub ca_name: Option<String>,
    pub cipher: Option<String>,
}

/// A password on the wire: sent as it is inside the ssh session (the only place it travels),
/// printed as `***` by Debug, so no log, error or panic message of a wire type shows it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Password(String);

impl Password {
    pub fn new(s: &Secret) -> Password {
        Password(s.expose().to_string())
    }
    pub fn secret(&self) -> Secret {
        Secret::new(self.0.clone())
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl Target {
    /// None for a socket: a client host cannot reach another machine's socket file.
    /// `password` is the one to send now: a `password_command`'s output is asked for afresh
    /// each time a client host is sent a target (such tokens expire), never the empty field.
    pub fn of(o: &ConnectOptions, password: &Secret) -> Option<Target> {
        let Endpoint::Tcp { host, port } = &o.endpoint else {
            return None;
        };
        Some(Target {
            host: host.clone(),
            port: *port,
            user: o.user.clone(),
            password: Password::new(password),
            database: o.database.clone(),
            tls: TargetTls::of(&o.tls),
            compress: o.compress,
            postgres: o.protocol == bakeoff_driver::Protocol::Postgres,
        })
    }

    pub fn options(&self) -> ConnectOptions {
        let o = ConnectOptions::new(
            Endpoint::Tcp {
                host: self.host.clone(),
                port: self.port,
            },
            &self.user,
            self.password.0.as_str(),
        );
        let mut o = match &self.database {
            Some(db) => o.with_database(db),
            None => o,
        };
        if let Some(t) = &self.tls {
            o.tls = t.tls();
        }
        o.compress = self.compress;
        if self.postgres {
            o.protocol = bakeoff_driver::Protocol::Postgres;
        }
        o
    }
}

impl TargetTls {
    /// None for a plain connection. A CA file is read here and sent as its text.
    fn of(t: &Tls) -> Option<TargetTls> {
        if t.mode == SslMode::Disabled {
            return None;
        }
        let (ca_pem, ca_name) = match (&t.ca, &t.ca_pem) {
            (Some(path), _) => (
                std::fs::read_to_string(path).ok(),
                Some(format!(
                    "{} (sent from the machine that ran bakeoff)",
                    path.display()
                )),
            ),
            (None, Some(ca)) => (Some(ca.pem.to_string()), Some(ca.name.clone())),
            (None, None) => (None, None),
        };
        Some(TargetTls {
            mode: t.mode.name().to_string(),
            ca_pem,
            ca_name,
            cipher: t.cipher.clone(),
        })
    }

    fn tls(&self) -> Tls {
        let mut t = Tls::new(SslMode::parse(&self.mode).unwrap_or(SslMode::Required));
        t.ca_pem = self.ca_pem.as_deref().map(|pem| bakeoff_driver::PemCa {
            name: self
                .ca_name
                .clone()
                .unwrap_or_else(|| "the CA sent with the load".into()),
            pem: std::sync::Arc::from(pem),
        });
        t.cipher = self.cipher.clone();
        t
    }
}

/// What a client host runs of a load (see `Request::Load`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadPart {
    pub endpoints: Vec<Target>,
    pub workload: WorkloadSpec,
    pub run: RunSpec,
    /// Connections in the whole run, over every host (the workload's `threads`).
    pub threads: u32,
    /// This host's place among the client hosts (for values that must stay unique).
    pub part: u32,
    pub parts: u32,
}

/// One tick of one client host's part of a load: what it recorded, bucket for bucket, and its
/// own CPU (the telemetry of a sampler with no server).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadTick {
    pub t: f64,
    pub threads: u32,
    pub queue_length: u64,
    pub concurrency: u64,
    pub window: Window,
    pub telemetry: Option<Telemetry>,
}

/// One client host's part of a load, at its end.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostLoad {
    pub status: RunStatus,
    pub setup_seconds: f64,
    pub elapsed_seconds: f64,
    pub window: Window,
    pub telemetry: Option<Telemetry>,
    pub connections: Vec<ConnTotals>,
    pub unfinished_events: u64,
}

/// Read one line into `buf` (cleared first), at most `limit` bytes of it; Ok(false) at the
/// end of input. A longer line is an error that names the limit; what was read of it is
/// dropped.
pub fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, limit: usize) -> std::io::Result<bool> {
    buf.clear();
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > limit + 1 {
            buf.clear();
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "a line of the agent protocol longer than its limit of {} MiB (wire::MAX_LINE)",
                    limit >> 20
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..take]);
        r.consume(take);
        if end {
            return Ok(true);
        }
    }
}

pub fn line<T: Serialize>(msg: &T) -> String {
    let mut s = serde_json::to_string(msg).unwrap_or_else(|_| "\"unencodable\"".into());
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_keeps_its_servers_protocol() {
        let mut o = ConnectOptions::new(
            Endpoint::Tcp {
                host: "169.254.77.2".into(),
                port: 5432,
            },
            "sbtest",
            "pw",
        );
        o.protocol = bakeoff_driver::Protocol::Postgres;
        let t = Target::of(&o, &Secret::new("pw")).unwrap();
        let back: Target = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back.options().protocol, bakeoff_driver::Protocol::Postgres);
        // A target from before PostgreSQL is MySQL's.
        let old = r#"{"host":"h","port":3306,"user":"u","password":"p","database":null}"#;
        let old: Target = serde_json::from_str(old).unwrap();
        assert_eq!(old.options().protocol, bakeoff_driver::Protocol::MySql);
    }

    #[test]
    fn a_request_round_trips_and_old_fields_default() {
        let r = Request::Hello {
            protocol: PROTOCOL,
            version: "0.1.0".into(),
        };
        let back: Request = serde_json::from_str(line(&r).trim()).unwrap();
        assert_eq!(back, r);
        // A study request from a bakeoff that sends no finished runs still reads.
        let s: Request =
            serde_json::from_str(r#"{"study":{"text":"","stem":"s","platform":"a","later":1}}"#)
                .unwrap();
        assert!(matches!(s, Request::Study { finished, .. } if finished.is_empty()));
        assert_eq!(line(&Request::Ping), "\"ping\"\n");
    }

    #[test]
    fn a_load_part_crosses_as_it_was_given() {
        let workload = WorkloadSpec {
            kind: "oltp_read_write".parse().unwrap(),
            options: Default::default(),
            distribution: bakeoff_workload::Distribution::new("pareto".parse().unwrap()),
            tpcc: Default::default(),
            script: None,
        };
        let r = Request::Load(LoadPart {
            endpoints: vec![Target {
                host: "169.254.77.2".into(),
                port: 3306,
                user: "bakeoff".into(),
                password: Password::new(&Secret::new("s3cret")),
                database: Some("sbtest".into()),
                tls: Some(TargetTls {
                    mode: "VERIFY_IDENTITY".into(),
                    ca_pem: Some("-----BEGIN CERTIFICATE-----".into()),
                    ca_name: Some("the lab's CA for this run".into()),
                    cipher: None,
                }),
                compress: true,
                postgres: false,
            }],
            workload,
            run: RunSpec {
                connections: 40,
                first_tid: 40,
                rate: Some(1500.0),
                ..RunSpec::default()
            },
            threads: 80,
            part: 1,
            parts: 2,
        });
        let back: Request = serde_json::from_str(line(&r).trim()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn a_variant_crosses_as_it_was_given() {
        let variant = Variant {
            allocator: "jemalloc".parse().unwrap(),
            cpus: Some("0-3,8".parse().unwrap()),
            numa: "interleave=0-1".parse().unwrap(),
            settings: vec!["innodb_thread_concurrency=16".parse().unwrap()],
        };
        let r = Request::ServerStart {
            binary: None,
            options: vec![],
            variant,
            listen: Some([169, 254, 77, 2].into()),
            clients: vec![[169, 254, 77, 3].into()],
            start_timeout_s: Some(120),
            engine: Some(bakeoff_server::Engine::PostgreSql),
            tls: Some(bakeoff_server::ServerTls {
                ca_pem: "ca".into(),
                cert_pem: "cert".into(),
                key_pem: "key".into(),
            }),
        };
        let back: Request = serde_json::from_str(line(&r).trim()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn passwords_never_show_in_debug() {
        let r = Request::Load(LoadPart {
            endpoints: vec![Target {
                host: "169.254.77.2".into(),
                port: 3306,
                user: "bakeoff".into(),
                password: Password::new(&Secret::new("s3cret-pw")),
                database: None,
                tls: None,
                compress: false,
                postgres: false,
            }],
            workload: WorkloadSpec {
                kind: "oltp_point_select".parse().unwrap(),
                options: Default::default(),
                distribution: bakeoff_workload::Distribution::new("uniform".parse().unwrap()),
                tpcc: Default::default(),
                script: None,
            },
            run: RunSpec::default(),
            threads: 1,
            part: 0,
            parts: 1,
        });
        let debug = format!("{r:?}");
        assert!(
            !debug.contains("s3cret-pw") && debug.contains("***"),
            "{debug}"
        );
        // On the wire it is the password itself.
        assert!(line(&r).contains("\"s3cret-pw\""));
        let up: Reply = serde_json::from_str(
            r#"{"server_up":{"id":0,"address":"169.254.77.2","port":1,"user":"u","password":"s3cret-pw","database":"d","version":"v","binary":"b","pid":null,"checks":[]}}"#,
        )
        .unwrap();
        assert!(!format!("{up:?}").contains("s3cret-pw"));
    }

    #[test]
    fn a_line_over_the_limit_is_refused_naming_it() {
        let mut buf = Vec::new();
        let mut r = std::io::BufReader::with_capacity(16, &b"short\n"[..]);
        assert!(read_line(&mut r, &mut buf, 1 << 20).unwrap());
        assert_eq!(buf, b"short\n");
        assert!(!read_line(&mut r, &mut buf, 1 << 20).unwrap());
        let long = vec![b'x'; (2 << 20) + 10];
        let mut r = std::io::BufReader::with_capacity(4096, &long[..]);
        let e = read_line(&mut r, &mut buf, 2 << 20).unwrap_err();
        assert!(e.to_string().contains("limit of 2 MiB"), "{e}");
        // A line exactly at the limit (newline included) is fine.
        let mut exact = vec![b'y'; 1 << 20];
        exact.push(b'\n');
        let mut r = std::io::BufReader::with_capacity(4096, &exact[..]);
        assert!(read_line(&mut r, &mut buf, 1 << 20).unwrap());
    }
}
