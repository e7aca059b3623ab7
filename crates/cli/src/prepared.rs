//! What `prepare` reports when it is done: its phases, the CPU each side spent, the redo log
//! the server wrote, and which of them held the load back: where the time went.

use bakeoff_study::tables::Spent;
use bakeoff_workload::dataset::Prepared;
use serde_json::{json, Value};

/// A side whose CPUs were busy at least this share of the time was what held the load back.
const BUSY: f64 = 0.75;

/// What held the load back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// The server's CPUs were busy: a faster load needs a faster or wider server.
    ServerCpu,
    /// The client's CPUs were busy: give bakeoff more CPUs (--client-cpus).
    ClientCpu,
    /// Neither side's CPUs were full: the server waited (redo log, page flushing, locks, I/O).
    Waiting,
    /// The server's process is not known here (TCP), and the client was not busy.
    Unknown,
}

impl Limit {
    fn key(self) -> &'static str {
        match self {
            Limit::ServerCpu => "server_cpu",
            Limit::ClientCpu => "client_cpu",
            Limit::Waiting => "waiting",
            Limit::Unknown => "unknown",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Limit::ServerCpu => "the server's CPUs (busy through the load)",
            Limit::ClientCpu => "the client's CPUs (give bakeoff more with --client-cpus)",
            Limit::Waiting => {
                "waits in the server (no side's CPUs were full: redo log, page flushing, locks or I/O)"
            }
            Limit::Unknown => "not known (the server's process cannot be read from here)",
        }
    }
}

/// Which side held back `seconds` of work that cost `spent`.
pub(crate) fn limit(seconds: f64, spent: &Spent) -> Limit {
    let busy = |cpu: f64, cpus: u32| cpu / seconds.max(1e-9) / f64::from(cpus.max(1));
    match spent.server {
        Some((s, cpus)) if busy(s, cpus) >= BUSY => Limit::ServerCpu,
        _ if busy(spent.client_seconds, spent.client_cpus) >= BUSY => Limit::ClientCpu,
        Some(_) => Limit::Waiting,
        None => Limit::Unknown,
    }
}

/// The whole prepare's seconds, never zero (rates divide by it).
fn seconds(p: &Prepared) -> f64 {
    (p.load + p.index).as_secs_f64().max(1e-9)
}

/// The report's text: a headline and where the time went.
pub(crate) fn text(p: &Prepared, spent: &Spent) -> String {
    let secs = seconds(p);
    let rows = p.rows.max(1) as f64;
    let per_row = |cpu: f64| cpu / rows * 1e6;
    let mut out = format!(
        "Prepared {} rows in {} table(s) in {secs:.2} s ({:.0} rows/s)\n    load {:.2} s, secondary indexes {:.2} s",
        p.rows,
        p.tables,
        p.rows as f64 / secs,
        p.load.as_secs_f64(),
        p.index.as_secs_f64()
    );
    if let Some(b) = p.redo_bytes {
        out += &format!(
            ", redo log {:.0} MiB ({:.0} bytes a row)",
            b as f64 / 1048576.0,
            b as f64 / rows
        );
    }
    out += "\n    CPU: ";
    if let Some((s, cpus)) = spent.server {
        out += &format!(
            "server {s:.2} s ({:.2} us a row, {:.1} of its {} busy), ",
            per_row(s),
            s / secs,
            cpus_word(cpus)
        );
    }
    out += &format!(
        "client {:.2} s ({:.2} us a row, {:.1} of its {} busy)\n    held back by: {}",
        spent.client_seconds,
        per_row(spent.client_seconds),
        spent.client_seconds / secs,
        cpus_word(spent.client_cpus),
        limit(secs, spent).words()
    );
    out
}

fn cpus_word(n: u32) -> String {
    if n == 1 {
        "1 CPU".into()
    } else {
        format!("{n} CPUs")
    }
}

/// The report as one JSON object, for scripts.
pub(crate) fn json(p: &Prepared, spent: &Spent) -> Value {
    let secs = seconds(p);
    json!({
        "tables": p.tables,
        "rows": p.rows,
        "seconds": secs,
        "rows_per_second": p.rows as f64 / secs,
        "load_seconds": p.load.as_secs_f64(),
        "index_seconds": p.index.as_secs_f64(),
        "redo_bytes": p.redo_bytes,
        "client_cpu_seconds": spent.client_seconds,
        "client_cpus": spent.client_cpus,
        "server_cpu_seconds": spent.server.map(|s| s.0),
        "server_cpus": spent.server.map(|s| s.1),
        "limit": limit(secs, spent).key(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spent(client: f64, server: Option<(f64, u32)>) -> Spent {
        Spent {
            client_seconds: client,
            client_cpus: 4,
            server,
        }
    }

    #[test]
    fn the_side_whose_cpus_were_busy_is_the_limit() {
        // 10 s of work: a server busy 11 of its 12 CPUs, a client 1 of its 4.
        assert_eq!(
            limit(10.0, &spent(10.0, Some((110.0, 12)))),
            Limit::ServerCpu
        );
        assert_eq!(
            limit(10.0, &spent(36.0, Some((60.0, 12)))),
            Limit::ClientCpu
        );
        assert_eq!(limit(10.0, &spent(10.0, Some((60.0, 12)))), Limit::Waiting);
        assert_eq!(limit(10.0, &spent(10.0, None)), Limit::Unknown);
        assert_eq!(limit(10.0, &spent(36.0, None)), Limit::ClientCpu);
    }

    #[test]
    fn the_text_gives_each_phase_and_each_side_per_row() {
        let p = Prepared {
            tables: 4,
            rows: 1_000_000,
            load: Duration::from_millis(1600),
            index: Duration::from_millis(400),
            redo_bytes: Some(264 * 1_000_000),
            local_infile: true,
        };
        let t = text(&p, &spent(0.4, Some((3.2, 2))));
        assert!(
            t.starts_with("Prepared 1000000 rows in 4 table(s) in 2.00 s (500000 rows/s)"),
            "{t}"
        );
        assert!(
            t.contains("load 1.60 s, secondary indexes 0.40 s, redo log 252 MiB (264 bytes a row)"),
            "{t}"
        );
        assert!(
            t.contains("server 3.20 s (3.20 us a row, 1.6 of its 2 CPUs busy)"),
            "{t}"
        );
        assert!(
            t.contains("client 0.40 s (0.40 us a row, 0.2 of its 4 CPUs busy)"),
            "{t}"
        );
        assert!(
            t.ends_with("held back by: the server's CPUs (busy through the load)"),
            "{t}"
        );
        let j = json(&p, &spent(0.4, Some((3.2, 2))));
        assert_eq!(j["limit"], "server_cpu");
        assert_eq!(j["redo_bytes"], 264_000_000);
    }
}
