//! The server's own counters (SHOW GLOBAL STATUS), read over a connection of their own with a
//! short timeout: a hung server must not stall the coordinator that ticks the run.

use std::collections::BTreeMap;
use std::time::Duration;

use bakeoff_driver::{Conn, ConnectOptions};

/// Counter families kept (deltas); everything else in SHOW STATUS is noise for a run report.
const COUNTERS: [&str; 4] = [
    "Com_",
    "Innodb_rows_",
    "Handler_",
    "Innodb_buffer_pool_read",
];
/// Gauges kept as values, not deltas.
pub(crate) const GAUGES: [&str; 2] = ["Threads_running", "Threads_connected"];

const TIMEOUT: Duration = Duration::from_millis(250);

pub(crate) struct StatusReader {
    opts: ConnectOptions,
    rt: tokio::runtime::Runtime,
    conn: Option<Conn>,
}

impl StatusReader {
    pub fn new(opts: ConnectOptions) -> Option<StatusReader> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        Some(StatusReader {
            opts,
            rt,
            conn: None,
        })
    }

    /// The kept counters and gauges, or None when the server did not answer in time.
    pub fn read(&mut self) -> Option<BTreeMap<String, i64>> {
        let opts = &self.opts;
        let mut conn = self.conn.take();
        let result = self.rt.block_on(async {
            tokio::time::timeout(TIMEOUT, async {
                if conn.is_none() {
                    conn = Some(Conn::connect(opts).await.ok()?);
                }
                let rows = conn.as_mut()?.query_rows("SHOW GLOBAL STATUS").await.ok()?;
                Some(rows)
            })
            .await
            .ok()
            .flatten()
        });
        // A connection that timed out mid-statement is not reused.
        if result.is_some() {
            self.conn = conn;
        }
        let mut out = BTreeMap::new();
        for row in result? {
            let (Some(Some(name)), Some(Some(value))) = (row.first(), row.get(1)) else {
                continue;
            };
            let keep =
                COUNTERS.iter().any(|p| name.starts_with(p)) || GAUGES.contains(&name.as_str());
            if let (true, Ok(v)) = (keep, value.parse::<i64>()) {
                out.insert(name.clone(), v);
            }
        }
        Some(out)
    }
}
