//! A client host's part of a load spread over several hosts: open this host's connections,
//! say ready, wait at the barrier for `Go`, then stream every tick's window (bucket for
//! bucket) and this host's own CPU, and the whole part at the end.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bakeoff_engine::{run_sampled, Observer, Tick};
use bakeoff_remote::wire::{HostLoad, LoadPart, LoadTick, Reply, Target};
use bakeoff_server::placement::launch_cpus;
use bakeoff_telemetry::{Sampler, Window};
use bakeoff_workload::{SessionContext, Source, Unique};

use super::out::Out;

/// The barrier: bakeoff's word once every client host is ready.
#[derive(Default)]
pub(super) struct Gate(AtomicU8);

const WAITING: u8 = 0;
const GO: u8 = 1;
const CALLED_OFF: u8 = 2;

impl Gate {
    pub(super) fn go(&self) {
        self.0.store(GO, Ordering::SeqCst);
    }
    pub(super) fn call_off(&self) {
        self.0.store(CALLED_OFF, Ordering::SeqCst);
    }
    pub(super) fn reset(&self) {
        self.0.store(WAITING, Ordering::SeqCst);
    }
}

/// Run this host's part (its gate was reset when the request was read); the reply that
/// ends it (`Loaded`, or `Error`).
pub(super) fn run_part(p: LoadPart, out: &Out, interrupt: &AtomicBool, gate: &Gate) -> Reply {
    let ctx = Arc::new(SessionContext::new(
        p.endpoints.iter().map(Target::options).collect(),
        p.workload,
        p.threads,
        // Hosts share the run's seed; each walks its own share of the unique values.
        Unique::share(p.run.seed, p.part, p.parts),
        p.run.seed,
    ));
    let mut run = p.run;
    // This host's CPUs are the client's: as many load threads as it may use.
    let cpus = u32::try_from(launch_cpus().len()).unwrap_or(1).max(1);
    run.client_threads = cpus.min(run.connections.max(1));
    if ctx.blocks() {
        // A Lua script's calls block its thread: one per connection.
        run.client_threads = run.connections.max(1);
    }
    // Hosts start together at a gate after connecting, each by its own clock: a time that
    // counted the connecting would end each host at its own moment. One host's option only.
    run.time_includes_connecting = false;
    let mut sampler = Sampler::new(Vec::new(), run.client_threads);
    let mut obs = Streaming {
        out,
        gate,
        interrupt,
    };
    match run_sampled(ctx, &run, interrupt, &mut obs, Some(&mut sampler)) {
        Ok(r) => Reply::Loaded {
            result: Box::new(HostLoad {
                status: r.status,
                setup_seconds: r.setup_seconds,
                elapsed_seconds: r.elapsed_seconds,
                window: r.window,
                telemetry: r.telemetry,
                connections: r.connections,
                unfinished_events: r.unfinished_events,
            }),
        },
        Err(e) => Reply::Error {
            message: e.to_string(),
        },
    }
}

struct Streaming<'a> {
    out: &'a Out,
    gate: &'a Gate,
    interrupt: &'a AtomicBool,
}

impl Observer for Streaming<'_> {
    fn on_ready(&mut self) -> bool {
        if self.out.send(&Reply::LoadReady).is_err() {
            return false;
        }
        // Polled: the start lands within a millisecond of `Go`, and a lost link (which sets
        // `interrupt`) releases it too.
        loop {
            match self.gate.0.load(Ordering::SeqCst) {
                GO => return true,
                CALLED_OFF => return false,
                _ if self.interrupt.load(Ordering::Relaxed) => return false,
                _ => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }

    fn on_window(&mut self, t: &Tick, w: &Window) {
        let _ = self.out.send(&Reply::LoadTick {
            tick: Box::new(LoadTick {
                t: t.t,
                threads: t.threads,
                queue_length: t.queue_length,
                concurrency: t.concurrency,
                window: w.clone(),
                telemetry: t.telemetry.clone(),
            }),
        });
    }
}
