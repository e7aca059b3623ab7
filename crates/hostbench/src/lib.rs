//! Host probes: the machine measured as sysbench measures it, so the figures can sit beside
//! published sysbench numbers and beside the database results of a study.
//!
//! - [`cpu`]: primes by trial division, events per second.
//! - [`memory`]: passes over a block, MiB/s.
//! - [`fileio`]: 16 KiB block I/O over a set of files, with fsync.
//! - [`locks`]: sysbench's threads and mutex tests, the scheduler and mutexes under contention.
//! - [`steadiness`]: how much each CPU's speed varies from one short slice to the next.
//!
//! All run on [`runner::run`]: OS threads, one [`runner::Worker`] each, latency per event into
//! the same windows and histograms as the load engine. What it must not do: print or exit.

mod checksum;
pub mod cpu;
pub mod fileio;
pub mod locks;
pub mod memory;
pub mod profile;
pub mod runner;
pub mod steadiness;

pub use runner::{
    run, ProbeObserver, ProbeResult, ProbeSpec, ProbeTick, Quiet, ThreadTotals, Worker,
};
