//! sysbench 1.0.20's options: names, kinds, defaults and help lines, set by set, as its
//! `--help` and `TEST help` print them. The text is the interface (scripts grep it), so it is
//! sysbench's own; the table and the layout code are bakeoff's.

/// How an option takes its value, and how help shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Int,
    Str,
    Bool,
    List,
    Size,
    File,
    Double,
}

impl Kind {
    fn shown(self) -> &'static str {
        match self {
            Kind::Int | Kind::Double => "=N",
            Kind::Str => "=STRING",
            Kind::Bool => "[=on|off]",
            Kind::List => "=[LIST,...]",
            Kind::Size => "=SIZE",
            Kind::File => "=FILENAME",
        }
    }
}

/// One option: name, kind, default (None: no default shown), help.
pub(crate) type Opt = (&'static str, Kind, Option<&'static str>, &'static str);

use Kind::*;

pub(crate) const GENERAL: &[Opt] = &[
    ("threads", Int, Some("1"), "number of threads to use"),
    ("events", Int, Some("0"), "limit for total number of events"),
    ("time", Int, Some("10"), "limit for total execution time in seconds"),
    ("forced-shutdown", Str, Some("off"), "number of seconds to wait after the --time limit before forcing shutdown, or 'off' to disable"),
    ("thread-stack-size", Size, Some("64K"), "size of stack per thread"),
    ("rate", Int, Some("0"), "average transactions rate. 0 for unlimited rate"),
    ("report-interval", Int, Some("0"), "periodically report intermediate statistics with a specified interval in seconds. 0 disables intermediate reports"),
    ("report-checkpoints", List, Some(""), "dump full statistics and reset all counters at specified points in time. The argument is a list of comma-separated values representing the amount of time in seconds elapsed from start of test when report checkpoint(s) must be performed. Report checkpoints are off by default."),
    ("debug", Bool, Some("off"), "print more debugging info"),
    ("validate", Bool, Some("off"), "perform validation checks where possible"),
    ("help", Bool, Some("off"), "print help and exit"),
    ("version", Bool, Some("off"), "print version and exit"),
    ("config-file", File, None, "File containing command line options"),
    ("tx-rate", Int, Some("0"), "deprecated alias for --rate"),
    ("max-requests", Int, Some("0"), "deprecated alias for --events"),
    ("max-time", Int, Some("0"), "deprecated alias for --time"),
    ("num-threads", Int, Some("1"), "deprecated alias for --threads"),
];

pub(crate) const RAND: &[Opt] = &[
    (
        "rand-type",
        Str,
        Some("special"),
        "random numbers distribution {uniform,gaussian,special,pareto}",
    ),
    (
        "rand-spec-iter",
        Int,
        Some("12"),
        "number of iterations used for numbers generation",
    ),
    (
        "rand-spec-pct",
        Int,
        Some("1"),
        "percentage of values to be treated as 'special' (for special distribution)",
    ),
    (
        "rand-spec-res",
        Int,
        Some("75"),
        "percentage of 'special' values to use (for special distribution)",
    ),
    (
        "rand-seed",
        Int,
        Some("0"),
        "seed for random number generator. When 0, the current time is used as a RNG seed.",
    ),
    (
        "rand-pareto-h",
        Double,
        Some("0.2"),
        "parameter h for pareto distribution",
    ),
];

pub(crate) const LOG: &[Opt] = &[(
    "verbosity",
    Int,
    Some("3"),
    "verbosity level {5 - debug, 0 - only critical messages}",
)];

pub(crate) const REPORT: &[Opt] = &[
    ("percentile", Int, Some("95"), "percentile to calculate in latency statistics (1-100). Use the special value of 0 to disable percentile calculations"),
    ("histogram", Bool, Some("off"), "print latency histogram in report"),
];

pub(crate) const DB: &[Opt] = &[
    (
        "db-driver",
        Str,
        Some("mysql"),
        "specifies database driver to use ('help' to get list of available drivers)",
    ),
    (
        "db-ps-mode",
        Str,
        Some("auto"),
        "prepared statements usage mode {auto, disable}",
    ),
    (
        "db-debug",
        Bool,
        Some("off"),
        "print database-specific debug information",
    ),
];

pub(crate) const MYSQL: &[Opt] = &[
    ("mysql-host", List, Some("localhost"), "MySQL server host"),
    ("mysql-port", List, Some("3306"), "MySQL server port"),
    ("mysql-socket", List, None, "MySQL socket"),
    ("mysql-user", Str, Some("sbtest"), "MySQL user"),
    ("mysql-password", Str, Some(""), "MySQL password"),
    ("mysql-db", Str, Some("sbtest"), "MySQL database name"),
    (
        "mysql-ssl",
        Bool,
        Some("off"),
        "use SSL connections, if available in the client library",
    ),
    (
        "mysql-ssl-cipher",
        Str,
        Some(""),
        "use specific cipher for SSL connections",
    ),
    (
        "mysql-compression",
        Bool,
        Some("off"),
        "use compression, if available in the client library",
    ),
    (
        "mysql-debug",
        Bool,
        Some("off"),
        "trace all client library calls",
    ),
    (
        "mysql-ignore-errors",
        List,
        Some("1213,1020,1205"),
        "list of errors to ignore, or \"all\"",
    ),
    (
        "mysql-dry-run",
        Bool,
        Some("off"),
        "Dry run, pretend that all MySQL client API calls are successful without executing them",
    ),
];

/// sysbench's PostgreSQL driver options (`--db-driver=pgsql`).
pub(crate) const PGSQL: &[Opt] = &[
    (
        "pgsql-host",
        Str,
        Some("localhost"),
        "PostgreSQL server host",
    ),
    ("pgsql-port", Int, Some("5432"), "PostgreSQL server port"),
    ("pgsql-user", Str, Some("sbtest"), "PostgreSQL user"),
    ("pgsql-password", Str, Some(""), "PostgreSQL password"),
    ("pgsql-db", Str, Some("sbtest"), "PostgreSQL database name"),
];

pub(crate) const CPU: &[Opt] = &[(
    "cpu-max-prime",
    Int,
    Some("10000"),
    "upper limit for primes generator",
)];

pub(crate) const MEMORY: &[Opt] = &[
    (
        "memory-block-size",
        Size,
        Some("1K"),
        "size of memory block for test",
    ),
    (
        "memory-total-size",
        Size,
        Some("100G"),
        "total size of data to transfer",
    ),
    (
        "memory-scope",
        Str,
        Some("global"),
        "memory access scope {global,local}",
    ),
    (
        "memory-hugetlb",
        Bool,
        Some("off"),
        "allocate memory from HugeTLB pool",
    ),
    (
        "memory-oper",
        Str,
        Some("write"),
        "type of memory operations {read, write, none}",
    ),
    (
        "memory-access-mode",
        Str,
        Some("seq"),
        "memory access mode {seq,rnd}",
    ),
];

pub(crate) const FILEIO: &[Opt] = &[
    ("file-num", Int, Some("128"), "number of files to create"),
    (
        "file-block-size",
        Int,
        Some("16384"),
        "block size to use in all IO operations",
    ),
    (
        "file-total-size",
        Size,
        Some("2G"),
        "total size of files to create",
    ),
    (
        "file-test-mode",
        Str,
        None,
        "test mode {seqwr, seqrewr, seqrd, rndrd, rndwr, rndrw}",
    ),
    (
        "file-io-mode",
        Str,
        Some("sync"),
        "file operations mode {sync,async,mmap}",
    ),
    (
        "file-async-backlog",
        Int,
        Some("128"),
        "number of asynchronous operatons to queue per thread",
    ),
    (
        "file-extra-flags",
        List,
        Some(""),
        "list of additional flags to use to open files {sync,dsync,direct}",
    ),
    (
        "file-fsync-freq",
        Int,
        Some("100"),
        "do fsync() after this number of requests (0 - don't use fsync())",
    ),
    (
        "file-fsync-all",
        Bool,
        Some("off"),
        "do fsync() after each write operation",
    ),
    (
        "file-fsync-end",
        Bool,
        Some("on"),
        "do fsync() at the end of test",
    ),
    (
        "file-fsync-mode",
        Str,
        Some("fsync"),
        "which method to use for synchronization {fsync, fdatasync}",
    ),
    (
        "file-merged-requests",
        Int,
        Some("0"),
        "merge at most this number of IO requests if possible (0 - don't merge)",
    ),
    (
        "file-rw-ratio",
        Double,
        Some("1.5"),
        "reads/writes ratio for combined test",
    ),
];

pub(crate) const THREADS: &[Opt] = &[
    (
        "thread-yields",
        Int,
        Some("1000"),
        "number of yields to do per request",
    ),
    ("thread-locks", Int, Some("8"), "number of locks per thread"),
];

pub(crate) const MUTEX: &[Opt] = &[
    ("mutex-num", Int, Some("4096"), "total size of mutex array"),
    (
        "mutex-locks",
        Int,
        Some("50000"),
        "number of mutex locks to do per thread",
    ),
    (
        "mutex-loops",
        Int,
        Some("10000"),
        "number of empty loops to do outside mutex lock",
    ),
];

/// oltp_common.lua's options, as its `help` prints them (sorted, with underscores).
pub(crate) const OLTP: &[Opt] = &[
    ("auto_inc", Bool, Some("on"), "Use AUTO_INCREMENT column as Primary Key (for MySQL), or its alternatives in other DBMS. When disabled, use client-generated IDs"),
    ("create_secondary", Bool, Some("on"), "Create a secondary index in addition to the PRIMARY KEY"),
    ("delete_inserts", Int, Some("1"), "Number of DELETE/INSERT combinations per transaction"),
    ("distinct_ranges", Int, Some("1"), "Number of SELECT DISTINCT queries per transaction"),
    ("index_updates", Int, Some("1"), "Number of UPDATE index queries per transaction"),
    ("mysql_storage_engine", Str, Some("innodb"), "Storage engine, if MySQL is used"),
    ("non_index_updates", Int, Some("1"), "Number of UPDATE non-index queries per transaction"),
    ("order_ranges", Int, Some("1"), "Number of SELECT ORDER BY queries per transaction"),
    ("pgsql_variant", Str, None, "Use this PostgreSQL variant when running with the PostgreSQL driver. The only currently supported variant is 'redshift'. When enabled, create_secondary is automatically disabled, and delete_inserts is set to 0"),
    ("point_selects", Int, Some("10"), "Number of point SELECT queries per transaction"),
    ("range_selects", Bool, Some("on"), "Enable/disable all range SELECT queries"),
    ("range_size", Int, Some("100"), "Range size for range SELECT queries"),
    ("secondary", Bool, Some("off"), "Use a secondary index in place of the PRIMARY KEY"),
    ("simple_ranges", Int, Some("1"), "Number of simple range SELECT queries per transaction"),
    ("skip_trx", Bool, Some("off"), "Don't start explicit transactions and execute all queries in the AUTOCOMMIT mode"),
    ("sum_ranges", Int, Some("1"), "Number of SELECT SUM() queries per transaction"),
    ("table_size", Int, Some("10000"), "Number of rows per table"),
    ("tables", Int, Some("1"), "Number of tables"),
];

/// The built-in tests in sysbench's order: name, description, options.
pub(crate) const TESTS: &[(&str, &str, &[Opt])] = &[
    ("fileio", "File I/O test", FILEIO),
    ("cpu", "CPU performance test", CPU),
    ("memory", "Memory functions speed test", MEMORY),
    ("threads", "Threads subsystem performance test", THREADS),
    ("mutex", "Mutex performance test", MUTEX),
];

/// sysbench 1.1's TLS files, taken beside 1.0.20's switch (which also takes the MySQL client's
/// modes), and the MySQL client's options for the auth plugins that send the password whole:
/// taken, but not in 1.0.20's help, which a parser of it must find unchanged.
const MYSQL_BEYOND_1_0: &[Opt] = &[
    ("mysql-ssl-ca", Str, None, "CA file for SSL connections"),
    (
        "mysql-ssl-cert",
        Str,
        None,
        "client certificate file for SSL connections",
    ),
    (
        "mysql-ssl-key",
        Str,
        None,
        "client private key file for SSL connections",
    ),
    (
        "mysql-get-server-public-key",
        Bool,
        Some("off"),
        "ask the server for its RSA key (caching_sha2_password without TLS)",
    ),
    (
        "mysql-server-public-key-path",
        Str,
        None,
        "the server's RSA public key (PEM)",
    ),
    (
        "mysql-enable-cleartext-plugin",
        Bool,
        Some("off"),
        "answer mysql_clear_password (over TLS or a unix socket only)",
    ),
];

/// bakeoff's own, taken on a line in sysbench's grammar and not in its help: the longest
/// message a server may send (a hostile server's announced length is refused by it).
const BAKEOFF_OWN: &[Opt] = &[
    (
        "max-packet",
        Size,
        Some("1G"),
        "the longest message a server may send (bakeoff's own)",
    ),
    (
        "stall-timeout",
        Int,
        Some("0"),
        "seconds a statement of the run may wait before the server counts as stalled; 0: no limit (bakeoff's own)",
    ),
];

/// The options every test takes (sysbench registers them before it knows the test).
pub(crate) fn global() -> impl Iterator<Item = &'static Opt> {
    [
        GENERAL,
        RAND,
        LOG,
        REPORT,
        DB,
        MYSQL,
        MYSQL_BEYOND_1_0,
        PGSQL,
        BAKEOFF_OWN,
    ]
    .into_iter()
    .flatten()
}

/// An option set as sysbench prints it: `  --name=KIND` padded to the widest, the help, the
/// default in brackets.
pub(crate) fn print_set(set: &[Opt]) -> String {
    let shown: Vec<String> = set
        .iter()
        .map(|(n, k, ..)| format!("--{n}{}", k.shown()))
        .collect();
    let width = shown.iter().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (s, (_, _, default, help)) in shown.iter().zip(set) {
        let default = default.map(|d| format!(" [{d}]")).unwrap_or_default();
        out += &format!("  {s:width$} {help}{default}\n");
    }
    out
}

/// `sysbench --help`, with only the drivers bakeoff speaks.
pub(crate) fn general_help() -> String {
    let mut out = String::from("Usage:\n  sysbench [options]... [testname] [command]\n\n");
    out += "Commands implemented by most tests: prepare run cleanup help\n\n";
    out += "General options:\n";
    out += &print_set(GENERAL);
    out += "\nPseudo-Random Numbers Generator options:\n";
    out += &print_set(RAND);
    out += "\nLog options:\n";
    out += &print_set(LOG);
    out += "\n";
    out += &print_set(REPORT);
    out += "\nGeneral database options:\n\n";
    out += &print_set(DB);
    out += "\n\nCompiled-in database drivers:\n  mysql - MySQL driver\n  pgsql - PostgreSQL driver\n\nmysql options:\n";
    out += &print_set(MYSQL);
    out += "\npgsql options:\n";
    out += &print_set(PGSQL);
    out += "\nCompiled-in tests:\n";
    for (name, about, _) in TESTS {
        out += &format!("  {name} - {about}\n");
    }
    out += "\nSee 'sysbench <testname> help' for a list of options for each test.\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_pads_to_its_widest_option_and_shows_defaults_in_brackets() {
        assert_eq!(
            print_set(THREADS),
            "  --thread-yields=N number of yields to do per request [1000]\n  --thread-locks=N  number of locks per thread [8]\n"
        );
        let mysql = print_set(MYSQL);
        assert!(
            mysql.contains("  --mysql-socket=[LIST,...]        MySQL socket\n"),
            "{mysql}"
        );
        assert!(general_help()
            .contains("  --config-file=FILENAME          File containing command line options\n"));
    }
}
