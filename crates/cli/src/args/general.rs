//! The options every load command takes: the run's (`GeneralArgs`), the embedded server's and
//! its variant's.

use bakeoff_server::variant::{self, Allocator, Setting, Variant};
use clap::Args;

use super::values::*;

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Run")]
pub struct GeneralArgs {
    /// Connections, each with one event in flight (sysbench's threads; mysqlslap's
    /// --concurrency).
    #[arg(long, visible_alias = "concurrency", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub threads: u32,
    /// Seconds to run; 0 = no time limit. [default: 10; with --iterations: no limit, and a
    /// given value caps each iteration]
    #[arg(long)]
    pub time: Option<u64>,
    /// Stop after this many events; 0 = no limit.
    #[arg(long, default_value_t = 0)]
    pub events: u64,
    /// Events per second, Poisson arrivals; latency then counts from each event's intended
    /// start. 0 = as fast as the connections go (closed loop).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Seconds of load before measuring starts (statistics reset after them; sysbench master's
    /// --warmup-time). The run then lasts --time more.
    #[arg(long, default_value_t = 0)]
    pub warmup_time: u64,
    /// Before the run, read every table into the buffer pool (as `bakeoff prewarm`).
    #[arg(long)]
    pub prewarm: bool,
    /// Serve live metrics for Prometheus at http://ADDR/metrics while the run goes
    /// (OpenMetrics: throughput, latency percentiles, errors, the server's CPU and memory,
    /// each tick). PORT alone listens on loopback only; HOST:PORT as given.
    #[arg(long, value_name = "[HOST:]PORT")]
    pub metrics_addr: Option<String>,
    /// Fixed work, mysqlslap's way: run the whole job this many times, each connection running
    /// --events-per-connection events, and report seconds per iteration (min/avg/max; the
    /// clock includes connecting, as mysqlslap's does).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: Option<u32>,
    /// Fixed work: events each connection runs per iteration [default: 1]. Implies
    /// --iterations=1 when that is not given.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub events_per_connection: Option<u64>,
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
    /// Percentile in sysbench's report lines (1-100; 0 disables).
    #[arg(long, default_value_t = 95.0)]
    pub percentile: f64,
    /// Print sysbench's latency histogram after the run.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "off", default_missing_value = "on")]
    pub histogram: bool,
    /// Seconds (or N% of --time) an in-flight event may outlast the end before the run stops
    /// waiting for it (sysbench's --forced-shutdown; "off" = 5 s).
    #[arg(long, default_value = "off")]
    pub forced_shutdown: String,
    /// Key distribution: uniform, gaussian, special, pareto, zipfian. The default, special,
    /// is sysbench 1.0.20's; sysbench master defaults to uniform.
    #[arg(long, default_value = "special")]
    pub rand_type: String,
    /// Seed for the event generators; 0 = from the clock.
    #[arg(long, default_value_t = 0)]
    pub rand_seed: u64,
    #[arg(long, default_value_t = 12, hide_short_help = true)]
    pub rand_spec_iter: u32,
    #[arg(long, default_value_t = 1.0, hide_short_help = true)]
    pub rand_spec_pct: f64,
    #[arg(long, default_value_t = 75.0, hide_short_help = true)]
    pub rand_spec_res: f64,
    #[arg(long, default_value_t = 0.2, hide_short_help = true)]
    pub rand_pareto_h: f64,
    #[arg(long, default_value_t = 0.8, hide_short_help = true)]
    pub rand_zipfian_exp: f64,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// OS threads driving the connections (default: the client's CPUs, at most --threads;
    /// beside a PostgreSQL on the same CPUs, at least one per 64 connections, so the client
    /// keeps its share of CPU among the server's processes).
    #[arg(long)]
    pub client_threads: Option<u32>,
    /// CPUs bakeoff's load runs on, as taskset takes them (0-3, 12-15). Default: when the
    /// embedded server has --cpus, the CPUs outside it (if any are left); else anywhere.
    /// Covers the run, prepare, prewarm and fixed work.
    #[arg(long, value_name = "LIST")]
    pub client_cpus: Option<String>,
    /// Spread the load over other machines (repeat it: --client-host ssh://load1 --client-host
    /// ssh://load2; `local` is this one), reached with ssh as --server-host is: the connections
    /// are split between them in blocks, all start at one barrier, and every second's figures
    /// are merged (latency histograms bucket for bucket). The server (embedded, --server-host
    /// or --mysql-host) must be reachable from them over TCP. Fixed work (--iterations) splits
    /// each iteration's connections the same way.
    #[arg(long, value_name = "ADDRESS")]
    pub client_host: Vec<String>,
    /// Scheduling policy of the client threads: batch (SCHED_BATCH: responses do not preempt
    /// the server on a shared machine, so the client costs less CPU per query) or normal.
    #[arg(long, default_value = "batch", value_parser = ["batch", "normal"])]
    pub client_sched: String,
    /// How client threads wait for responses: sleep (in epoll_wait; the server pays to wake
    /// them), poll (keep polling the sockets: the server never wakes the client, which keeps
    /// its CPUs busy; its idle polling is not counted as client CPU), or auto: poll when the
    /// client's CPUs are known to be none of the server's (the server pinned with --cpus, or
    /// a server on --mysql-socket pinned by taskset), else sleep.
    #[arg(long, default_value = "auto", value_parser = ["auto", "sleep", "poll"])]
    pub client_wait: String,
    /// Connections used by prepare (default: two per CPU, at least 4).
    #[arg(long)]
    pub prepare_threads: Option<u32>,
    #[command(flatten)]
    pub embedded: EmbeddedArgs,
}

/// The server bakeoff starts itself when no --mysql-host/--mysql-socket is given.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Embedded server")]
pub struct EmbeddedArgs {
    /// The database, as sysbench names its drivers: mysql (MariaDB, or MySQL) or pgsql
    /// (PostgreSQL: the embedded server is postgres from PATH, else the newest of
    /// /usr/lib/postgresql/N/bin).
    #[arg(long, default_value = "mysql", value_parser = ["mysql", "pgsql"])]
    pub db_driver: String,
    /// The server binary: mariadbd/mysqld, or postgres (default: mariadbd from PATH or
    /// /usr/sbin; with --db-driver=pgsql, postgres). The engine is read from the binary.
    #[arg(long)]
    pub server_binary: Option<std::path::PathBuf>,
    /// An extra server option, e.g. --server-option=innodb_buffer_pool_size=2G (passed as is;
    /// --set also checks the running value).
    #[arg(long = "server-option")]
    pub server_options: Vec<String>,
    #[command(flatten)]
    pub variant: VariantArgs,
    /// Start the server variant on another machine, over ssh (ssh://[user@]host[:port]; ssh is
    /// `ssh` or $BAKEOFF_SSH, with your keys and ~/.ssh/config), and drive it from here over
    /// TCP: it listens only on the address this machine reaches it by, with a fresh password
    /// that never appears on a command line and an account for this machine only. The
    /// variant is applied and verified there; the server stops when bakeoff ends or the link
    /// goes. bakeoff copies itself to a machine of its own OS and architecture.
    #[arg(long, value_name = "ADDRESS")]
    pub server_host: Option<String>,
    /// Seconds the server may take from launch to answering an authenticated SELECT 1 (a new
    /// datadir's initializer gets as long again), here or on --server-host; a study file says
    /// server_start_timeout. Raise it for a large buffer pool or a slow disk.
    #[arg(long, value_name = "SECONDS", default_value_t = bakeoff_server::DEFAULT_START_TIMEOUT_S, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub server_start_timeout: u64,
}

/// How the embedded server is set up; each axis is verified on the running process.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Server variant (embedded server; each one verified after start)")]
pub struct VariantArgs {
    /// Memory allocator preloaded into the server: glibc, jemalloc, tcmalloc, mimalloc, or a
    /// path to a .so (checked in /proc/PID/maps: a failed preload is otherwise silent).
    #[arg(long, default_value = "glibc")]
    pub allocator: Allocator,
    /// CPUs the server may run on, as taskset takes them: 0, 0-1, 0,2 (checked in
    /// Cpus_allowed_list). With --instances, one list per instance separated by '/': 0-3/4-7.
    #[arg(long)]
    pub cpus: Option<String>,
    /// NUMA memory policy: default, interleave=NODES, bind=NODES, preferred=NODE or localalloc
    /// (NODES like 0-1, or all), as numactl sets it (checked in /proc/PID/numa_maps). With
    /// --instances, one per instance separated by '/', or bind=each (instance i on node i).
    #[arg(long, default_value = "default")]
    pub numa: String,
    /// Servers of this variant, the connections spread over them round-robin and the results
    /// added up (the one-instance-per-NUMA-node study); each gets its own copy of the tables.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub instances: u32,
    /// A server variable for the run, checked against the running value (the server may lower
    /// some quietly); repeatable: --set innodb_adaptive_hash_index=OFF --set max_connections=2000
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub settings: Vec<Setting>,
}

impl VariantArgs {
    /// One variant per instance; the error names the option at fault.
    pub fn variants(&self) -> Result<Vec<Variant>, String> {
        let base = Variant {
            allocator: self.allocator.clone(),
            settings: self.settings.clone(),
            ..Variant::default()
        };
        variant::instance_variants(&base, self.instances, self.cpus.as_deref(), &self.numa)
    }

    /// Whether anything differs from a plain default server.
    pub fn is_default(&self) -> bool {
        self.allocator == Allocator::Glibc
            && self.cpus.is_none()
            && self.numa == "default"
            && self.settings.is_empty()
            && self.instances == 1
    }
}
