//! What a pgbench client says and records of a transaction's outcome: the live counters,
//! a retryable failure's messages, the per-transaction log.

use std::time::{Duration, Instant};

use super::session::PgbenchSession;
use super::stats::{Live, Logged};

impl PgbenchSession {
    /// A transaction that ran to its end: its latency, lateness, tries and log line.
    pub(super) fn completed(
        &mut self,
        s: usize,
        started: Instant,
        lag: Option<Duration>,
        tries: u32,
    ) {
        let took = started.elapsed();
        let st = &mut self.stats[s];
        st.record(took.as_secs_f64());
        if self.src.latency_limit.is_some_and(|l| took > l) {
            st.late += 1;
        }
        st.tried(tries);
        self.live_tries(tries, false);
        if let Some(live) = &self.src.live {
            live.done_in(took.as_micros() as u64);
        }
        self.log(s, started, lag, None, tries - 1);
    }

    /// -P's counters for a transaction that ended after `tries` tries, `failed` or done.
    pub(super) fn live_tries(&self, tries: u32, failed: bool) {
        if let Some(live) = &self.src.live {
            Live::add(&live.failed, failed as u64);
            Live::add(&live.retried, (tries > 1) as u64);
            Live::add(&live.retries, tries as u64 - 1);
        }
    }

    /// --verbose-errors' lines for a try that failed with a retryable error: the error, then
    /// whether the transaction is tried again (with the tries so far, of how many, and under
    /// a latency limit the share of it used).
    pub(super) fn say_retryable(
        &self,
        s: usize,
        pc: usize,
        said: &str,
        tries: u32,
        retry: bool,
        started: Instant,
    ) {
        let Some(info) = &self.src.on_verbose else {
            return;
        };
        let tid = self.tid;
        info(&format!(
            "client {tid} got an error in command {pc} (SQL) of script {s}; {said}"
        ));
        let what = match retry {
            true => "repeats the transaction after the error",
            false => "ends the failed transaction",
        };
        let mut line = format!("client {tid} {what} (try {tries}");
        if self.src.max_tries > 0 {
            line.push_str(&format!("/{}", self.src.max_tries));
        }
        if let Some(limit) = self.src.latency_limit {
            let used = 100.0 * started.elapsed().as_secs_f64() / limit.as_secs_f64();
            line.push_str(&format!(
                ", {used:.3}% of the maximum time of tries was used"
            ));
        }
        line.push(')');
        info(&line);
    }

    pub(super) fn log(
        &self,
        s: usize,
        started: Instant,
        lag: Option<Duration>,
        failed: Option<&'static str>,
        retries: u32,
    ) {
        if let Some(f) = &self.src.on_transaction {
            let entry = Logged {
                client: self.tid,
                number: self.transactions + 1,
                script: s,
                end: std::time::SystemTime::now(),
                latency: started.elapsed(),
                lag,
                failed,
                retries,
            };
            f(self.tid, &entry);
        }
    }
}
