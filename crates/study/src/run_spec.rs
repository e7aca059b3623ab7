//! What a series' run is asked to do (its connections, client threads, ticks and seed), and how
//! long the rest of an invocation will take.

use std::time::{Duration, Instant};

use bakeoff_engine::{ClientWait, RunSpec};
use bakeoff_server::placement::ClientPlacement;
use bakeoff_server::Engine;

use crate::matrix::{estimate, series, Series};
use crate::StudySpec;

/// How series `s` runs at `threads` for `time`, its load placed at `client`.
pub(crate) fn run_spec(
    spec: &StudySpec,
    client: &ClientPlacement,
    s: &Series,
    threads: u32,
    time: Duration,
) -> RunSpec {
    let mut client_threads = client.cpu_count().min(threads);
    // Beside PostgreSQL's backends on the same CPUs, the client needs threads enough
    // not to be starved by the scheduler (see `threads_beside_processes`).
    let processes = spec.variant(s.variant).engine == Engine::PostgreSql;
    if processes && !client.apart {
        client_threads = bakeoff_engine::threads_beside_processes(client_threads, threads);
    }
    // A Lua script's calls block its thread: one per connection (the engine insists too).
    let script = spec.workloads[s.workload].spec.script.as_ref();
    if script.is_some_and(|x| x.blocks()) {
        client_threads = threads.max(1);
    }
    RunSpec {
        connections: threads,
        client_threads,
        time: Some(time),
        client_wait: spec.client_wait.unwrap_or(ClientWait::auto(client.apart)),
        // Short runs get quarter-second ticks, so the report's trend test has enough of
        // them to judge a run of a few seconds by.
        tick: match time <= Duration::from_secs(8) {
            true => Duration::from_millis(250),
            false => Duration::from_secs(1),
        },
        // Reproducible per run: the study's seed and where the run sits in it.
        seed: spec.seed
            ^ (u64::from(s.repetition) << 48)
            ^ ((s.variant as u64) << 32)
            ^ ((s.workload as u64) << 24)
            ^ u64::from(threads),
        ..RunSpec::default()
    }
}

/// Time left: the average of this invocation's runs so far times the runs left; before the
/// first run, the study's own estimate, scaled.
pub(crate) fn remaining(spec: &StudySpec, started: Instant, done: usize, todo: usize) -> Duration {
    let left = todo.saturating_sub(done) as u32;
    if done == 0 {
        let runs = (series(spec).len() * spec.threads.len()).max(1) as u32;
        return estimate(spec) / runs * left;
    }
    started.elapsed() / done as u32 * left
}
