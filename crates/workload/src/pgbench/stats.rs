//! What pgbench counts: per script its transactions done, failed and retried with their
//! latencies, per command its time, failures and retries (-r), and one transaction as its
//! log line (-l) sees it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One command's figures for `-r`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CommandStats {
    pub seconds: f64,
    pub count: u64,
    pub failures: u64,
    pub retries: u64,
}

/// One script's transactions, as pgbench's report counts them.
#[derive(Debug, Clone, Default)]
pub struct ScriptStats {
    pub done: u64,
    pub failed: u64,
    pub serialization_failures: u64,
    pub deadlock_failures: u64,
    /// Retries, and transactions retried at least once.
    pub retries: u64,
    pub retried: u64,
    /// Transactions done over --latency-limit.
    pub late: u64,
    /// Under --rate: transactions skipped for starting later than --latency-limit after
    /// their scheduled start, and the schedule lag of those started (sum, max; seconds).
    pub skipped: u64,
    pub lag_sum: f64,
    pub lag_max: f64,
    /// Latency of the transactions done: sum, sum of squares (seconds), min, max.
    pub sum: f64,
    pub sum2: f64,
    pub min: f64,
    pub max: f64,
    pub commands: Vec<CommandStats>,
}

impl ScriptStats {
    /// Nothing counted yet, for a script of `commands` commands.
    pub fn empty(commands: usize) -> ScriptStats {
        ScriptStats {
            commands: vec![CommandStats::default(); commands],
            ..ScriptStats::default()
        }
    }

    /// A transaction that ended after `tries` tries: its retries counted.
    pub(super) fn tried(&mut self, tries: u32) {
        if tries > 1 {
            self.retried += 1;
            self.retries += (tries - 1) as u64;
        }
    }

    /// Every script's figures together (the report's totals).
    pub fn total(all: &[ScriptStats]) -> ScriptStats {
        let mut t = ScriptStats::default();
        for s in all {
            t.add(s);
        }
        t
    }

    /// `o`'s figures added to these.
    pub fn add(&mut self, o: &ScriptStats) {
        self.done += o.done;
        self.failed += o.failed;
        self.serialization_failures += o.serialization_failures;
        self.deadlock_failures += o.deadlock_failures;
        self.retries += o.retries;
        self.retried += o.retried;
        self.late += o.late;
        self.skipped += o.skipped;
        self.lag_sum += o.lag_sum;
        self.lag_max = self.lag_max.max(o.lag_max);
        self.sum += o.sum;
        self.sum2 += o.sum2;
        if o.done > 0 {
            self.min = if self.done == o.done {
                o.min
            } else {
                self.min.min(o.min)
            };
        }
        self.max = self.max.max(o.max);
        self.commands.resize(
            o.commands.len().max(self.commands.len()),
            CommandStats::default(),
        );
        for (a, b) in self.commands.iter_mut().zip(&o.commands) {
            a.seconds += b.seconds;
            a.count += b.count;
            a.failures += b.failures;
            a.retries += b.retries;
        }
    }

    pub(super) fn record(&mut self, seconds: f64) {
        self.min = if self.done == 0 {
            seconds
        } else {
            self.min.min(seconds)
        };
        self.max = self.max.max(seconds);
        self.done += 1;
        self.sum += seconds;
        self.sum2 += seconds * seconds;
    }
}

/// One transaction as `-l` logs it.
#[derive(Debug, Clone, Copy)]
pub struct Logged {
    pub client: u32,
    pub number: u64,
    pub script: usize,
    /// When it ended, and how long it took.
    pub end: std::time::SystemTime,
    pub latency: Duration,
    /// Under --rate: how late it started against its schedule.
    pub lag: Option<Duration>,
    /// "skipped", or the failure's kind; None: done.
    pub failed: Option<&'static str>,
    pub retries: u32,
}

/// What -P's lines need between ticks, counted as transactions end (only when -P asks):
/// failed, skipped, retried transactions, retries, the schedule lag (us) with its count, and
/// the done transactions' latency sums (us and us squared, as pgbench sums them, so a line's
/// mean and stddev are pgbench's exact ones). Sums wrap; a tick's difference does not.
#[derive(Debug, Default)]
pub struct Live {
    pub failed: AtomicU64,
    pub skipped: AtomicU64,
    pub retried: AtomicU64,
    pub retries: AtomicU64,
    pub lag_us: AtomicU64,
    pub lagged: AtomicU64,
    pub done: AtomicU64,
    pub latency_us: AtomicU64,
    pub latency_us2: AtomicU64,
}

/// Where each counter is in [`Live::read`]'s reading.
pub mod at {
    pub const FAILED: usize = 0;
    pub const SKIPPED: usize = 1;
    pub const RETRIED: usize = 2;
    pub const RETRIES: usize = 3;
    pub const LAG_US: usize = 4;
    pub const LAGGED: usize = 5;
    pub const DONE: usize = 6;
    pub const LATENCY_US: usize = 7;
    pub const LATENCY_US2: usize = 8;
}

impl Live {
    pub(super) fn add(counter: &AtomicU64, n: u64) {
        if n > 0 {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A transaction done in `us` microseconds.
    pub(super) fn done_in(&self, us: u64) {
        self.done.fetch_add(1, Ordering::Relaxed);
        self.latency_us.fetch_add(us, Ordering::Relaxed);
        self.latency_us2
            .fetch_add(us.wrapping_mul(us), Ordering::Relaxed);
    }

    /// Every counter, read (and the reading left for the next tick's difference), in the
    /// order of [`at`].
    pub fn read(&self) -> [u64; 9] {
        [
            &self.failed,
            &self.skipped,
            &self.retried,
            &self.retries,
            &self.lag_us,
            &self.lagged,
            &self.done,
            &self.latency_us,
            &self.latency_us2,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }
}
