//! The host probes' arguments: sysbench's built-in tests (cpu, memory, fileio, threads,
//! mutex) with sysbench's option names and defaults.

use clap::{Args, Subcommand};

use super::values::{parse_bool, parse_seconds, parse_size, Format, Seconds};

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// sysbench cpu: count primes below --cpu-max-prime by trial division, per event.
    Cpu(CpuArgs),
    /// sysbench memory: one pass over a block per event, word by word.
    Memory(MemoryArgs),
    /// sysbench fileio: block I/O over files in a directory bakeoff creates and marks
    /// (prepare, then run, then cleanup).
    Fileio(FileioArgs),
    /// sysbench threads: per event, --thread-yields times lock one of --thread-locks mutexes,
    /// yield the CPU, unlock: the scheduler under contention.
    Threads(ThreadsArgs),
    /// sysbench mutex: one event per thread of --mutex-locks locks of random mutexes among
    /// --mutex-num, --mutex-loops empty iterations before each.
    Mutex(MutexArgs),
}

#[derive(Debug, Args)]
pub struct ThreadsArgs {
    /// Yields (each inside a lock and unlock) per event.
    #[arg(long, default_value_t = 1000)]
    pub thread_yields: u32,
    /// Mutexes the events take in turn.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub thread_locks: u32,
    #[command(flatten)]
    pub probe: ProbeArgs,
}

#[derive(Debug, Args)]
pub struct MutexArgs {
    /// Mutexes to pick from at random.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub mutex_num: u32,
    /// Locks each thread takes (its one event).
    #[arg(long, default_value_t = 50_000)]
    pub mutex_locks: u32,
    /// Empty loop iterations before each lock.
    #[arg(long, default_value_t = 10_000)]
    pub mutex_loops: u32,
    #[command(flatten)]
    pub probe: ProbeArgs,
}

#[derive(Debug, Args)]
pub struct FileioArgs {
    /// prepare (write the files), run (the test), cleanup (remove them).
    #[arg(value_parser = ["prepare", "run", "cleanup"])]
    pub command: String,
    /// The directory for the files; bakeoff creates and marks it, and refuses one it did not
    /// create.
    #[arg(long, default_value = "bakeoff-fileio")]
    pub file_dir: std::path::PathBuf,
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub file_num: u32,
    #[arg(long, default_value = "16K", value_parser = parse_size)]
    pub file_block_size: u64,
    #[arg(long, default_value = "2G", value_parser = parse_size)]
    pub file_total_size: u64,
    /// seqwr, seqrewr, seqrd, rndrd, rndwr or rndrw (needed for run).
    #[arg(long)]
    pub file_test_mode: Option<String>,
    /// Only sync is built (async and mmap are not).
    #[arg(long, default_value = "sync", value_parser = ["sync"])]
    pub file_io_mode: String,
    /// Extra open flags, a list of sync, dsync, direct.
    #[arg(long, default_value = "", value_delimiter = ',')]
    pub file_extra_flags: Vec<String>,
    /// Every N requests, fsync every file (0: never).
    #[arg(long, default_value_t = 100)]
    pub file_fsync_freq: u64,
    /// fsync after every write (then no periodic or final fsyncs).
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "off", default_missing_value = "on")]
    pub file_fsync_all: bool,
    /// fsync every file at the end of the test.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "on", default_missing_value = "on")]
    pub file_fsync_end: bool,
    #[arg(long, default_value = "fsync", value_parser = ["fsync", "fdatasync"])]
    pub file_fsync_mode: String,
    /// Reads per write in rndrw.
    #[arg(long, default_value_t = 1.5)]
    pub file_rw_ratio: f64,
    #[command(flatten)]
    pub probe: ProbeArgs,
}

/// Options every host probe takes (sysbench's general options).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Run")]
pub struct ProbeArgs {
    /// Threads; a list (1,2,4,8) runs the probe once per count.
    #[arg(long, default_value = "1", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Vec<u32>,
    /// Seconds to run; 0 = no limit.
    #[arg(long, default_value_t = 10)]
    pub time: u64,
    /// Stop after this many events; 0 = no limit.
    #[arg(long, default_value_t = 0)]
    pub events: u64,
    /// Print a line every N seconds; 0 = only the final report.
    #[arg(long, default_value_t = 0)]
    pub report_interval: u64,
    /// Take sysbench's full report at these seconds into the run (a list: 10,20), each over
    /// the time since the one before; the final report then covers the time after the last.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, default_value = "")]
    pub report_checkpoints: Seconds,
    /// Check what can be checked, as sysbench's --validate: fileio writes each block with its
    /// checksum and offset and checks them on every read; other tests only say so.
    #[arg(long, num_args = 0..=1, default_missing_value = "on", default_value = "off", value_parser = parse_bool)]
    pub validate: bool,
    /// Percentile in the report (1-100; 0 disables).
    #[arg(long, default_value_t = 95.0)]
    pub percentile: f64,
    /// Events per second arriving at random (Poisson), as sysbench's --rate: latency then
    /// counts the wait for a free thread; 0 = each thread runs events back to back.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    /// Print the latency histogram before the report, as sysbench's --histogram.
    #[arg(long, num_args = 0..=1, default_missing_value = "on", default_value = "off", value_parser = parse_bool)]
    pub histogram: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// CPUs the probe's threads run on, as taskset takes them (0-3).
    #[arg(long, value_name = "LIST")]
    pub client_cpus: Option<String>,
}

#[derive(Debug, Args)]
pub struct CpuArgs {
    /// Upper limit for the primes each event counts.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(3..))]
    pub cpu_max_prime: u64,
    #[command(flatten)]
    pub probe: ProbeArgs,
}

#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// Block size (a power of 2, at least 8): 1K, 1M ...
    #[arg(long, default_value = "1K", value_parser = parse_size)]
    pub memory_block_size: u64,
    /// Total bytes to pass over, shared by the threads: 100G ...
    #[arg(long, default_value = "100G", value_parser = parse_size)]
    pub memory_total_size: u64,
    /// One block for all threads (global) or one per thread (local).
    #[arg(long, default_value = "global", value_parser = ["global", "local"])]
    pub memory_scope: String,
    #[arg(long, default_value = "write", value_parser = ["read", "write", "none"])]
    pub memory_oper: String,
    #[arg(long, default_value = "seq", value_parser = ["seq", "rnd"])]
    pub memory_access_mode: String,
    #[command(flatten)]
    pub probe: ProbeArgs,
}
