//! The command line: sysbench 1.0's option names (after `legacy::normalize`), with sysbench's
//! defaults, plus bakeoff's own options.

use clap::{Args, Parser, Subcommand, ValueEnum};

mod connection;
mod general;
mod probes;
mod tpcc;
mod values;
pub use connection::*;
pub use general::*;
pub use probes::*;
pub use tpcc::*;
pub use values::*;

const ABOUT: &str = "Database bake-offs from one command: a sysbench-compatible load engine that stays out of the way.";

const LONG_ABOUT: &str = "\
Database bake-offs from one command: a sysbench-compatible load engine that stays out of the way.

Without --mysql-host or --mysql-socket, `bakeoff run` starts its own MariaDB (mariadbd from
Debian's mariadb-server) in a throwaway directory, loads the tables, runs, reports and stops it.

sysbench command lines work unchanged after `bakeoff`, 1.0 and 0.5 alike:
  bakeoff oltp_read_only --threads=8 --time=30 --report-interval=1 run
  bakeoff --test=oltp.lua --num-threads=64 --oltp-tables-count=8 --max-time=120 run

Examples:
  bakeoff run oltp_point_select --threads=64 --time=30 --tables=4 --table-size=100000
  bakeoff run oltp_read_write --mysql-socket=/run/mysqld/mysqld.sock --format=json
  bakeoff prepare oltp_read_only --mysql-host=127.0.0.1 --tables=8 --table-size=1000000

Fixed work, mysqlslap's way (1000 connections x 50 events, 50 times; min/avg/max seconds):
  bakeoff run oltp_point_select --concurrency=1000 --events-per-connection=50 --iterations=50";

/// bakeoff's version and the commit it was built from (build.rs), as `--version` says it.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BAKEOFF_COMMIT"),
    ")"
);

#[derive(Debug, Parser)]
#[command(name = "bakeoff", version = VERSION, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the tables and load them (parallel load; secondary index built after the load).
    ///
    /// Ends with where the time went: the load and index phases, the redo log the server
    /// wrote, the CPU each side spent per row, and which side held the load back (the
    /// server's CPUs, the client's, or waits in the server). --format=json prints that as one
    /// object on stdout instead of sysbench's messages.
    Prepare(LoadArgs),
    /// Run a workload and report (on the embedded MariaDB unless a server is given).
    Run(LoadArgs),
    /// Drop the tables bakeoff created (recorded in bakeoff_tables), and nothing else.
    Cleanup(LoadArgs),
    /// Load the tables into the buffer pool: every row through the primary key and the
    /// secondary index (sysbench 1.0's prewarm; master calls it warmup).
    #[command(visible_alias = "warmup")]
    Prewarm(LoadArgs),
    /// TPC-C, natively: the specification's five transactions on MariaDB, MySQL or
    /// PostgreSQL, reported as NOPM and TPM as HammerDB reports them.
    #[command(subcommand, long_about = tpcc::TPCC_HELP)]
    Tpcc(TpccCommand),
    /// Start a server variant of your own to work against.
    #[command(subcommand)]
    Server(ServerCommand),
    /// Studies: a whole bake-off declared in one TOML file.
    #[command(subcommand)]
    Study(StudyCommand),
    /// Host probes, as sysbench measures them: cpu (primes), memory (block passes), fileio
    /// (16 KiB blocks with fsync). `--threads=1,2,4,8` sweeps.
    #[command(subcommand)]
    Host(HostCommand),
    /// pgbench 15's command line against PostgreSQL (`bakeoff pgbench --help` lists its options)
    #[command(disable_help_flag = true)]
    Pgbench {
        /// pgbench's options and database name, as pgbench takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Every variant of a study against its baseline along the study's axes (allocator=jemalloc
    /// cpus=0-11 against allocator=glibc cpus=0-11) at every thread count: a few sentences
    /// made from the data, then the throughput ratio and the CPU per transaction ratio, each
    /// with its interval at the study's family level and its verdict, run-to-run variation,
    /// p99, each curve's peak, saturation point and best throughput within a p99 limit, and
    /// the runs that failed or need care.
    Compare {
        #[command(flatten)]
        results: ResultsArgs,
        /// text: the sentences, the table and the `in short:` lines; json: the whole model
        /// (every comparison with its ratio, interval, level, verdict and cost), for other tools.
        #[arg(long, value_enum, default_value = "text", hide_possible_values = true)]
        format: Format,
    },
    /// One self-contained HTML page that works offline: per workload the answer in a few
    /// sentences, throughput (every repetition shown) and its ratio to the baseline (one chart
    /// per slice, intervals at the study's family level), latency percentiles and server CPU per transaction against
    /// threads, each cell's run over time; server RSS and VSZ growth over the study; the
    /// comparison table; curve analysis; cost per million transactions; host probes; failed
    /// runs, warnings and the environment. Optionally every chart as its own file.
    Report {
        #[command(flatten)]
        results: ResultsArgs,
        /// The HTML file [default: beside the database, DB.html].
        #[arg(short = 'o', long)]
        output: Option<std::path::PathBuf>,
        /// Also write every chart to DIR, one file each (DIR/<workload>-throughput.svg, ...).
        #[arg(long, value_name = "DIR")]
        charts: Option<std::path::PathBuf>,
        /// The charts' file format: svg, or png (rendered at 2x for blog posts and slides).
        #[arg(long, value_enum, default_value = "svg", requires = "charts")]
        format: ChartFormat,
    },
    /// Put results databases side by side in one (x86 and ARM, two instance types): every
    /// study of each input is copied with its runs, ticks and probes. Then `bakeoff report
    /// all.db` shows the same study from each machine as variants named by platform (the
    /// study file's `platform`) or host. Merging a database twice copies nothing new.
    Merge {
        /// The results databases to merge.
        #[arg(required = true, num_args = 1..)]
        inputs: Vec<std::path::PathBuf>,
        /// The database to merge into (created if missing; its own studies are kept).
        #[arg(short = 'o', long)]
        output: std::path::PathBuf,
    },
    /// What bakeoff starts on another machine over ssh: reads requests on stdin and answers
    /// on stdout, one JSON line each; stops everything it started when stdin closes. Not for
    /// use by hand.
    #[command(hide = true)]
    Agent,
    /// Write a results database's runs as CSV or JSON (one row per run), for pandas,
    /// spreadsheets and other tools.
    Export {
        /// The results database.
        db: std::path::PathBuf,
        #[arg(long, value_parser = ["csv", "json"], default_value = "csv")]
        format: String,
        /// What to write: runs (one row per run), ticks (one row per tick of every run) or
        /// probes (the host probes' figures).
        #[arg(long, value_parser = ["runs", "ticks", "probes"], default_value = "runs")]
        what: String,
    },
    /// Print the shell completion script for SHELL, from the same definitions as --help:
    /// `bakeoff completions bash > ~/.local/share/bash-completion/completions/bakeoff`
    /// (zsh: a file `_bakeoff` on your $fpath; fish: ~/.config/fish/completions/bakeoff.fish).
    /// scripts/install writes all three.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print bakeoff's man page (roff), from the same definitions as --help; with --dir, write
    /// it and one page per command (bakeoff-run.1, bakeoff-study-run.1, ...) there.
    /// `bakeoff man | man -l -` reads it now; scripts/install puts the pages where `man`
    /// finds them.
    Man {
        /// Write every page to DIR (created if missing) instead of the main one to stdout.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum StudyCommand {
    /// Validate a study file and print its expanded matrix and an estimated duration; every
    /// problem at once, each as FILE:LINE:COLUMN.
    Check {
        /// The study file (TOML).
        file: std::path::PathBuf,
    },
    /// Size a study before running it: first the machine (a pinned loop timed for 10 s: how
    /// far and for how long its CPUs change speed), then a short pilot of its blocks (results
    /// thrown away), then how many blocks make every comparison as precise as the study asks
    /// (its `precision`, or half its equivalence margin: 2.5%) at the study's family level,
    /// and how long they take with its servers taking turns and one at a time, each with the
    /// range the pilot's few blocks leave open.
    Plan {
        /// The study file (TOML).
        file: std::path::PathBuf,
        /// Blocks in the pilot (each runs every variant's series once).
        #[arg(long, default_value_t = 3)]
        pilot_blocks: u32,
    },
    /// Run a study unattended, or resume it: runs already stored (failed ones too) are not
    /// redone. Results go to SQLite, committed after every run, or every block where its
    /// servers take turns. Ctrl-C keeps what finished; the run under way (the block, where
    /// servers take turns) is run again when the same command resumes.
    Run {
        /// The study file (TOML).
        file: std::path::PathBuf,
        /// Results database [default: beside the study file, FILE.db].
        #[arg(long)]
        db: Option<std::path::PathBuf>,
        /// Start a new study in the database even if one of this name exists (needed after
        /// editing the file, so old and new results are not mixed).
        #[arg(long)]
        new: bool,
        /// Run the whole study on another machine instead, over ssh (server and load both
        /// there): NAME=ssh://[user@]host[:port], or NAME=local. Give it once per machine
        /// (--on x86=ssh://bench@c6i --on arm=ssh://bench@c7g): they run at once, every run
        /// comes back into this one database with NAME as its platform (so compare, report
        /// and [prices] see them as after `bakeoff merge`), and running it again resumes
        /// each machine. ssh is `ssh` or $BAKEOFF_SSH, with your keys and ~/.ssh/config;
        /// bakeoff copies itself to machines of its own OS and architecture.
        #[arg(long = "on", value_name = "NAME=ADDRESS")]
        on: Vec<String>,
        /// Serve live metrics for Prometheus at http://ADDR/metrics while the study runs
        /// (OpenMetrics, every tick of every run, labelled with the study and the run). PORT
        /// alone listens on loopback only; HOST:PORT as given.
        #[arg(long, value_name = "[HOST:]PORT", conflicts_with = "on")]
        metrics_addr: Option<String>,
    },
    /// The studies a results database holds, oldest first: name, when made, machine, runs ok
    /// and not, last run. `compare DB --study NAME` and `report` read one of them.
    List {
        /// The results database.
        db: std::path::PathBuf,
        /// text: a table; json: one object per study, for other tools.
        #[arg(long, value_enum, default_value = "text", hide_possible_values = true)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Start a server (throwaway datadir, loopback), verify its variant, print how to connect,
    /// and keep it running until Ctrl-C.
    Start(EmbeddedArgs),
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// oltp_read_write, oltp_read_only, oltp_write_only, oltp_point_select, oltp_update_index,
    /// oltp_update_non_index, oltp_insert, oltp_delete, select_random_points,
    /// select_random_ranges, bulk_insert (a sysbench script path or 0.5 name works too); or
    /// your own: a Lua script (mine.lua, its prepare loads the tables) or pgbench scripts
    /// with weights (read.sql@9,tpcb-like@1, on PostgreSQL: --db-driver=pgsql).
    pub workload: String,
    /// An option of your script's: a Lua script's declared option (tables=4), or for pgbench
    /// scripts scale=N (pgbench -i -s) and query_mode=simple|extended|prepared (-M).
    #[arg(long = "script-option", value_name = "NAME=VALUE")]
    pub script_options: Vec<String>,
    #[command(flatten)]
    pub general: GeneralArgs,
    #[command(flatten)]
    pub oltp: OltpArgs,
    #[command(flatten)]
    pub mysql: MysqlArgs,
    /// The workload options given on the command line (not defaulted), by their names
    /// with dashes: the report header lists those the workload ignores.
    #[arg(skip)]
    pub given: Vec<String>,
    /// TPC-C's options, from `bakeoff tpcc`.
    #[arg(skip)]
    pub tpcc: bakeoff_workload::tpcc::TpccOptions,
    /// `bakeoff tpcc run --check`: the consistency conditions after the run.
    #[arg(skip)]
    pub tpcc_check: bool,
}

/// Note which workload options were given on the command line, for the subcommands that
/// take a workload.
pub fn record_given(cli: &mut Cli, matches: &clap::ArgMatches) {
    let (Some((_, sub)), Some(load)) = (matches.subcommand(), cli.command.load_args_mut()) else {
        return;
    };
    load.given = bakeoff_workload::OPTION_NAMES
        .iter()
        .filter(|name| {
            let id = name.replace('-', "_");
            sub.try_get_raw(&id).is_ok()
                && sub.value_source(&id) == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|n| n.to_string())
        .collect();
}

impl Command {
    fn load_args_mut(&mut self) -> Option<&mut LoadArgs> {
        match self {
            Command::Prepare(a) | Command::Run(a) | Command::Cleanup(a) | Command::Prewarm(a) => {
                Some(a)
            }
            _ => None,
        }
    }
}

/// Which results a report or comparison reads, and how it judges them.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// The results database (written by `bakeoff study run`, or by `bakeoff merge`).
    pub db: std::path::PathBuf,
    /// A second results database, for before and after (last week's study against today's,
    /// after an upgrade): every variant of DB is compared with the same variant in AFTER, at
    /// each thread count. The two never ran in the same blocks, so each comparison is
    /// unpaired (ratio of means, Welch's interval), and says so. [default baseline:
    /// database=DB's file name]
    pub after: Option<std::path::PathBuf>,
    /// What each variant is compared with. AXIS=VALUE: the variant with that value and every
    /// other axis equal (allocator=glibc, cpus=0-3, platform=x86); or a whole variant name:
    /// one baseline for all. [default: the first axis at its first value; listed variants
    /// against the first listed]
    #[arg(long, value_name = "AXIS=VALUE|VARIANT")]
    pub baseline: Option<String>,
    /// The study, by name [default: the newest in the database]. Studies of that name from
    /// different machines (after `bakeoff merge`) are shown side by side.
    #[arg(long)]
    pub study: Option<String>,
    /// The p99 latency a throughput must stay within to count as usable, in milliseconds:
    /// each curve reports its best throughput that keeps to it.
    #[arg(long, value_name = "MS", default_value_t = 10.0)]
    pub p99_limit: f64,
    /// Leave suspect runs out of the curves and comparisons (they are listed either way)
    #[arg(long, long_help = exclude_suspect_help())]
    pub exclude_suspect: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChartFormat {
    Svg,
    Png,
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "OLTP workload (sysbench's oltp_common.lua)")]
pub struct OltpArgs {
    #[arg(long, default_value_t = 1)]
    pub tables: u32,
    #[arg(long, default_value_t = 10_000)]
    pub table_size: u32,
    #[arg(long, default_value_t = 100)]
    pub range_size: u32,
    #[arg(long, default_value_t = 10)]
    pub point_selects: u32,
    #[arg(long, default_value_t = 1)]
    pub simple_ranges: u32,
    #[arg(long, default_value_t = 1)]
    pub sum_ranges: u32,
    #[arg(long, default_value_t = 1)]
    pub order_ranges: u32,
    #[arg(long, default_value_t = 1)]
    pub distinct_ranges: u32,
    #[arg(long, default_value_t = 1)]
    pub index_updates: u32,
    #[arg(long, default_value_t = 1)]
    pub non_index_updates: u32,
    #[arg(long, default_value_t = 1)]
    pub delete_inserts: u32,
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "on", default_missing_value = "on")]
    pub range_selects: bool,
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "on", default_missing_value = "on")]
    pub auto_inc: bool,
    /// No BEGIN/COMMIT: every statement autocommits.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "off", default_missing_value = "on")]
    pub skip_trx: bool,
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "off", default_missing_value = "on")]
    pub secondary: bool,
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_value = "on", default_missing_value = "on")]
    pub create_secondary: bool,
    #[arg(long, default_value_t = 10)]
    pub random_points: u32,
    #[arg(long, default_value_t = 10)]
    pub number_of_ranges: u32,
    #[arg(long, default_value_t = 5)]
    pub delta: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_shows_in_debug() {
        let cli = Cli::try_parse_from([
            "bakeoff",
            "run",
            "oltp_point_select",
            "--mysql-socket=/tmp/x.sock",
            "--mysql-password=hunter2",
        ])
        .unwrap();
        let debug = format!("{cli:?}");
        assert!(
            !debug.contains("hunter2") && debug.contains("***"),
            "{debug}"
        );
    }
}

/// `--exclude-suspect`'s long help: the report's own words for what makes a run suspect.
fn exclude_suspect_help() -> String {
    format!(
        "Leave suspect runs out of the curves and comparisons. A run is suspect for {}. They are listed, with why, either way.",
        bakeoff_report::suspect::criteria()
    )
}
