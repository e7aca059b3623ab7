//! What a study reports as it runs, how it ends, and where its results go: the results
//! database here, or, on a remote host, the agent's stream back to the bakeoff that asked.

use std::collections::HashSet;
use std::time::Duration;

use bakeoff_store::{ProbeRecord, Row, RunKey, RunRecord, Store, StoreError};

/// What the runner tells whoever shows progress. Every method has a no-op default.
pub trait StudyObserver {
    /// A run starts: how many of the study's runs are behind it, how many in all, and an
    /// estimate of the time left.
    fn on_run_start(&mut self, _done: usize, _total: usize, _what: &str, _left: Duration) {}
    fn on_tick(&mut self, _tps: f64) {}
    /// A tick (or, by turns, a server's slice) closed, with all it recorded: what a live
    /// metrics endpoint serves. Called beside `on_tick`.
    fn on_window(
        &mut self,
        _window: &bakeoff_telemetry::WindowSummary,
        _telemetry: Option<&bakeoff_telemetry::Telemetry>,
    ) {
    }
    fn on_run_done(&mut self, _record: &RunRecord) {}
    fn on_note(&mut self, _note: &str) {}
    /// Where loading's rows go as tables load (rows done, rows in all), called from the
    /// loader: None says nothing.
    fn loading(&self) -> Option<&(dyn Fn(u64, u64) + Sync)> {
        None
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StudyOutcome {
    pub ok: usize,
    pub failed: usize,
    pub invalid: usize,
    /// Finished in an earlier invocation.
    pub resumed: usize,
    pub interrupted: bool,
}

impl StudyOutcome {
    /// Count a run kept, by its status.
    pub(crate) fn count(&mut self, r: &RunRecord) {
        match r.status.as_str() {
            "ok" => self.ok += 1,
            "invalid" => self.invalid += 1,
            "interrupted" => self.interrupted = true,
            _ => self.failed += 1,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Results that could not be handed on (an agent's link back to bakeoff was lost).
    #[error("{0}")]
    Results(String),
    /// A client host of `[hosts] clients` could not be reached or set up.
    #[error("{0}; the study did not start its runs (what is stored stays)")]
    Hosts(String),
}

/// Where the runner puts what it measures, and learns what is already done: the results
/// database here, or, on a remote host, the agent's stream back to the bakeoff that asked.
pub trait Results {
    /// Runs that need not run again.
    fn finished(&self) -> Result<HashSet<RunKey>, StudyError>;
    /// (probe, threads) pairs already measured.
    fn probes_done(&self) -> Result<HashSet<(String, u32)>, StudyError>;
    /// Keep one run; it must be durable when this returns.
    fn record(&mut self, r: &RunRecord) -> Result<(), StudyError>;
    fn record_probe(&mut self, p: &ProbeRecord) -> Result<(), StudyError>;
    /// Keep a turn-taking block's runs: all of them or none where the store can (here, one
    /// transaction); elsewhere one after another.
    fn record_block(&mut self, runs: &[RunRecord]) -> Result<(), StudyError> {
        runs.iter().try_for_each(|r| self.record(r))
    }
    /// Every run kept so far, as `Store::runs` rows (what an auto study judges its
    /// precision by).
    fn rows(&self) -> Result<Vec<Row>, StudyError>;
}

/// Study `study` of a results database.
pub struct StoredStudy<'s> {
    pub store: &'s mut Store,
    pub study: i64,
}

impl Results for StoredStudy<'_> {
    fn finished(&self) -> Result<HashSet<RunKey>, StudyError> {
        Ok(self.store.finished(self.study)?)
    }
    fn probes_done(&self) -> Result<HashSet<(String, u32)>, StudyError> {
        Ok(self.store.probes_done(self.study)?)
    }
    fn record(&mut self, r: &RunRecord) -> Result<(), StudyError> {
        self.store.record(self.study, r)?;
        Ok(())
    }
    fn record_probe(&mut self, p: &ProbeRecord) -> Result<(), StudyError> {
        Ok(self.store.record_probe(self.study, p)?)
    }
    fn record_block(&mut self, runs: &[RunRecord]) -> Result<(), StudyError> {
        self.store.record_all(self.study, runs)?;
        Ok(())
    }
    fn rows(&self) -> Result<Vec<Row>, StudyError> {
        Ok(self.store.runs(Some(self.study))?)
    }
}
