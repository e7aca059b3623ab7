//! The agent's line protocol: one JSON object per line, each way, over the ssh session's
//! stdin (requests) and stdout (replies). Nothing else is ever written to the agent's stdout.
//!
//! Versioning: both sides open with `hello`, naming their protocol number and bakeoff version.
//! A bakeoff talks to an agent of the same protocol number only, and refuses another naming
//! both versions. Within one protocol number, fields may be added (old readers ignore them,
//! new fields carry defaults) but never renamed or given new meanings; a change that needs
//! either takes the next number, and a newer bakeoff that still knows the older number may
//! speak it (the number in the agent's hello says which).

use std::net::IpAddr;

use bakeoff_server::{Check, Variant};
use bakeoff_store::{ProbeRecord, RunKey, RunRecord};
use bakeoff_telemetry::ProcReading;
use serde::{Deserialize, Serialize};

pub const PROTOCOL: u32 = 1;

/// How often bakeoff tells an agent it is still there.
pub const PING_EVERY_S: u64 = 2;
/// An agent that hears nothing for this long takes the link as lost and stops its servers.
pub const SILENCE_S: u64 = 10;

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
    /// (default: the address this ssh session came from). Answered by `ServerUp`.
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
    },
    /// Read server `id`'s process counters (CPU, memory, threads) now. Answered by `Sample`.
    Sample {
        id: u32,
    },
    /// Stop server `id` and remove its directories. Answered by `ServerStopped`.
    ServerStop {
        id: u32,
    },
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
        password: String,
        database: String,
        version: String,
        binary: String,
        pid: Option<u32>,
        checks: Vec<Check>,
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
    /// The request could not be carried out; the agent then waits for the next one.
    Error {
        message: String,
    },
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
        };
        let back: Request = serde_json::from_str(line(&r).trim()).unwrap();
        assert_eq!(back, r);
    }
}
