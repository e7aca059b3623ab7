//! sysbench command lines, old and new, turned into bakeoff's own argv before clap sees them.
//!
//! Accepted: `bakeoff run WORKLOAD --opt=v` (bakeoff order), `bakeoff --opt=v WORKLOAD run`
//! (sysbench 1.0 order) and 0.4/0.5 lines such as `--test=oltp.lua --num-threads=64 run`.
//! Option names take dashes or underscores; 0.5 names map to their 1.0 meaning
//! (shared/reference/sysbench-behaviour.md section 5.1). Options that only 0.4's built-in test
//! used are accepted and reported as ignored, so a published line runs unchanged.

pub(crate) const COMMANDS: &[&str] = &["prepare", "run", "cleanup", "prewarm"];

/// 0.4/0.5 option names and their 1.0 equivalents.
const RENAMES: &[(&str, &str)] = &[
    ("num-threads", "threads"),
    ("max-time", "time"),
    ("max-requests", "events"),
    ("tx-rate", "rate"),
    ("oltp-table-size", "table-size"),
    ("oltp-tables-count", "tables"),
    ("oltp-point-selects", "point-selects"),
    ("oltp-simple-ranges", "simple-ranges"),
    ("oltp-sum-ranges", "sum-ranges"),
    ("oltp-order-ranges", "order-ranges"),
    ("oltp-distinct-ranges", "distinct-ranges"),
    ("oltp-index-updates", "index-updates"),
    ("oltp-non-index-updates", "non-index-updates"),
    ("oltp-delete-inserts", "delete-inserts"),
    ("oltp-range-size", "range-size"),
    ("oltp-range-selects", "range-selects"),
    ("oltp-skip-trx", "skip-trx"),
    ("oltp-auto-inc", "auto-inc"),
    ("oltp-secondary", "secondary"),
    ("oltp-create-secondary", "create-secondary"),
    ("mysql-table-engine", "mysql-storage-engine"),
    ("oltp-dist-type", "rand-type"),
    ("oltp-dist-iter", "rand-spec-iter"),
    ("oltp-dist-pct", "rand-spec-pct"),
    ("oltp-dist-res", "rand-spec-res"),
];

/// Options with no effect in 1.0 semantics, and why.
const IGNORED: &[(&str, &str)] = &[
    (
        "rand-init",
        "1.0 always seeds from the clock unless --rand-seed is given",
    ),
    (
        "oltp-test-mode",
        "a sysbench 0.4 built-in test option; oltp.lua ignores it",
    ),
    (
        "oltp-nontrx-mode",
        "a sysbench 0.4 built-in test option; oltp.lua ignores it",
    ),
    ("oltp-reconnect-mode", "a sysbench 0.4 option"),
    ("oltp-connect-delay", "a sysbench 0.4 option"),
    ("oltp-user-delay-min", "a sysbench 0.4 option"),
    ("oltp-user-delay-max", "a sysbench 0.4 option"),
    // sysbench 1.0.20's general and driver options that change nothing bakeoff measures.
    (
        "thread-stack-size",
        "bakeoff's client threads multiplex connections and size their own stacks",
    ),
    ("debug", "bakeoff has no debug output mode"),
    (
        "verbosity",
        "bakeoff prints the same report at every verbosity",
    ),
    ("db-debug", "bakeoff has no statement trace"),
    ("mysql-debug", "bakeoff has no client library trace"),
    ("pgsql-host", "in bakeoff's own grammar a PostgreSQL server you run is --server postgresql://USER@HOST:PORT/DB (PGPASSWORD), the embedded one --db-driver=pgsql"),
    ("pgsql-port", "in bakeoff's own grammar a PostgreSQL server you run is --server postgresql://USER@HOST:PORT/DB (PGPASSWORD), the embedded one --db-driver=pgsql"),
    ("pgsql-user", "in bakeoff's own grammar a PostgreSQL server you run is --server postgresql://USER@HOST:PORT/DB (PGPASSWORD), the embedded one --db-driver=pgsql"),
    ("pgsql-password", "in bakeoff's own grammar a PostgreSQL server you run is --server postgresql://USER@HOST:PORT/DB (PGPASSWORD), the embedded one --db-driver=pgsql"),
    ("pgsql-db", "in bakeoff's own grammar a PostgreSQL server you run is --server postgresql://USER@HOST:PORT/DB (PGPASSWORD), the embedded one --db-driver=pgsql"),
    ("pgsql-variant", "bakeoff speaks MySQL/MariaDB"),
];

/// sysbench switches bakeoff accepts when off (their default) and refuses when on, because
/// measuring without what they ask for would mislabel the numbers.
const OFF_ONLY: &[(&str, &str)] = &[
    (
        "mysql-dry-run",
        "bakeoff's native workloads always send their statements; for the client alone, run sysbench's script in sysbench's grammar (bakeoff /usr/share/sysbench/oltp_read_only.lua --mysql-dry-run run), which runs it in Lua against no server",
    ),
];

pub struct Normalized {
    pub argv: Vec<String>,
    /// Notes for the user about translated or ignored options (printed on stderr).
    pub notes: Vec<String>,
    /// Why the line cannot run as asked (an option bakeoff cannot honour, an unreadable
    /// --config-file): printed as a usage error.
    pub refused: Option<String>,
}

/// Rewrite `args` (without the program name). Other subcommands pass through untouched.
/// bakeoff's own commands, which no sysbench line starts with: their arguments pass as they are
/// (`bakeoff study run FILE` must not be read as sysbench's `run`).
pub(crate) const OWN: &[&str] = &[
    "study",
    // TPC-C natively; Percona's script stays `bakeoff tpcc.lua ...` or `./tpcc.lua`.
    "tpcc",
    "server",
    "agent",
    "export",
    "report",
    "compare",
    "merge",
    "host",
    "completions",
    "man",
    "help",
    "--help",
    "-h",
    "--version",
    "-V",
];

pub fn normalize(args: &[String]) -> Normalized {
    let mut notes = Vec::new();
    if args.first().is_some_and(|a| OWN.contains(&a.as_str())) {
        return Normalized {
            argv: args.to_vec(),
            notes,
            refused: None,
        };
    }
    let mut refused = None;
    let expanded;
    let args = match expand_config_files(args) {
        Ok(a) => {
            expanded = a;
            &expanded[..]
        }
        Err(e) => {
            return Normalized {
                argv: args.to_vec(),
                notes,
                refused: Some(e),
            }
        }
    };
    let command_at = args.iter().position(|a| COMMANDS.contains(&a.as_str()));
    let Some(command_at) = command_at else {
        return Normalized {
            argv: args.to_vec(),
            notes,
            refused: None,
        };
    };
    let mut workload: Option<String> = None;
    let mut options = Vec::new();
    let mut read_only: Option<bool> = None;
    for (i, a) in args.iter().enumerate() {
        if i == command_at {
            continue;
        }
        let Some(opt) = a.strip_prefix("--") else {
            if workload.is_none() {
                workload = Some(a.clone());
            } else {
                options.push(a.clone());
            }
            continue;
        };
        let (name, value) = match opt.split_once('=') {
            Some((n, v)) => (n.replace('_', "-"), Some(v.to_string())),
            None => (opt.replace('_', "-"), None),
        };
        if name == "test" {
            workload = value;
            notes.push(
                "--test is sysbench 0.5 syntax; bakeoff takes the workload as a positional name"
                    .into(),
            );
            continue;
        }
        if name == "oltp-read-only" || name == "oltp-write-only" {
            let on = value.as_deref().map(is_on).unwrap_or(true);
            if on {
                let w = if name == "oltp-read-only" {
                    "oltp_read_only"
                } else {
                    "oltp_write_only"
                };
                notes.push(format!("--{name}=on: running {w}, as sysbench 1.0 does"));
                read_only = Some(name == "oltp-read-only");
            }
            continue;
        }
        if let Some((_, why)) = IGNORED.iter().find(|(n, _)| *n == name) {
            notes.push(format!("ignoring --{name}: {why}"));
            continue;
        }
        if let Some((_, why)) = OFF_ONLY.iter().find(|(n, _)| *n == name) {
            if value.as_deref().map_or(true, is_on) {
                refused.get_or_insert(format!("--{name}=on: {why}"));
            }
            continue;
        }
        let name = match RENAMES.iter().find(|(old, _)| *old == name) {
            Some((old, new)) => {
                notes.push(format!("--{old} is read as --{new}"));
                new.to_string()
            }
            None => name,
        };
        options.push(match value {
            Some(v) => format!("--{name}={v}"),
            None => format!("--{name}"),
        });
    }
    let mut workload = workload.unwrap_or_default();
    if let Some(ro) = read_only {
        if matches!(workload.rsplit('/').next(), Some("oltp.lua" | "oltp")) {
            workload = if ro {
                "oltp_read_only"
            } else {
                "oltp_write_only"
            }
            .into();
        }
    }
    // sysbench's built-in tests are bakeoff's host probes: `sysbench cpu run` is
    // `bakeoff host cpu`.
    if matches!(workload.as_str(), "cpu" | "memory" | "threads" | "mutex")
        && args[command_at] == "run"
    {
        let mut argv = vec!["host".to_string(), workload];
        argv.extend(options);
        return Normalized {
            argv,
            notes,
            refused,
        };
    }
    if workload == "fileio" {
        let mut argv = vec!["host".to_string(), workload, args[command_at].clone()];
        argv.extend(options);
        return Normalized {
            argv,
            notes,
            refused,
        };
    }
    let mut argv = vec![args[command_at].clone()];
    if !workload.is_empty() {
        argv.push(workload);
    }
    argv.extend(options);
    Normalized {
        argv,
        notes,
        refused,
    }
}

/// sysbench's `--config-file=FILE`: one option per line (`name=value` or `name`, without the
/// dashes; `#` starts a comment), read as if given on the command line in its place.
pub(crate) fn expand_config_files(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        let file = a
            .strip_prefix("--config-file=")
            .or_else(|| a.strip_prefix("--config_file="));
        let Some(file) = file else {
            out.push(a.clone());
            continue;
        };
        let text = std::fs::read_to_string(file).map_err(|e| {
            format!("--config-file={file}: {e}; give a readable file of name=value lines")
        })?;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if line.starts_with('-') || line.contains(char::is_whitespace) && !line.contains('=') {
                return Err(format!(
                    "{file}:{}: '{line}' is not an option; write name=value, as `threads=8`",
                    n + 1
                ));
            }
            out.push(match line.split_once('=') {
                Some((n, v)) => format!("--{}={}", n.trim(), v.trim()),
                None => format!("--{line}"),
            });
        }
    }
    Ok(out)
}

/// Whether `name` (dashes) is an option this reader takes: a 0.4/0.5 name, one it ignores or
/// refuses with a reason, or one it turns into a workload.
pub(crate) fn known(name: &str) -> bool {
    RENAMES.iter().any(|(old, _)| *old == name)
        || IGNORED.iter().chain(OFF_ONLY).any(|(n, _)| *n == name)
        || matches!(name, "oltp-read-only" | "oltp-write-only" | "test")
}

fn is_on(v: &str) -> bool {
    matches!(v, "on" | "true" | "1" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysbench_builtin_tests_become_host_probes() {
        assert_eq!(
            norm("cpu --threads=2 --cpu-max-prime=20000 run"),
            ["host", "cpu", "--threads=2", "--cpu-max-prime=20000"]
        );
        assert_eq!(
            norm("--test=memory --memory-block-size=1M run"),
            ["host", "memory", "--memory-block-size=1M"]
        );
    }

    fn norm(line: &str) -> Vec<String> {
        normalize(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .argv
    }

    #[test]
    fn the_published_05_line_becomes_a_10_run() {
        let line = "--num-threads=64 --test=oltp.lua --oltp_tables_count=8 --oltp-table-size=1000000 --rand-init=on \
            --report-interval=1 --rand-type=uniform --forced-shutdown=1 --max-time=120 --max-requests=0 \
            --percentile=99 --oltp-point-selects=9 --oltp-simple-ranges=0 --oltp-sum-ranges=0 \
            --oltp-order-ranges=0 --oltp-distinct-ranges=0 --oltp-skip-trx=on --oltp-test-mode=nontrx \
            --oltp-read-only=off --oltp-index-updates=1 --oltp-non-index-updates=0 run";
        let argv = norm(line);
        assert_eq!(argv[..2], ["run", "oltp.lua"]);
        for want in [
            "--threads=64",
            "--tables=8",
            "--table-size=1000000",
            "--time=120",
            "--events=0",
            "--point-selects=9",
            "--skip-trx=on",
            "--index-updates=1",
            "--non-index-updates=0",
        ] {
            assert!(
                argv.contains(&want.to_string()),
                "missing {want} in {argv:?}"
            );
        }
        assert!(!argv.iter().any(|a| a.contains("rand-init")
            || a.contains("test-mode")
            || a.contains("read-only")));
    }

    #[test]
    fn sysbench_10_order_and_bakeoff_order_agree() {
        assert_eq!(
            norm("--threads=4 oltp_read_only run"),
            norm("run oltp_read_only --threads=4")
        );
    }

    #[test]
    fn sysbench_general_and_driver_options_are_accepted() {
        let n = normalize(
            &"oltp_read_only --thread-stack-size=64K --verbosity=5 --mysql-ssl=off --mysql-compression=off --db-debug=off --pgsql-port=5432 --report-checkpoints=10,20 --tables=2 run"
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        );
        assert_eq!(n.refused, None);
        assert_eq!(
            n.argv,
            [
                "run",
                "oltp_read_only",
                "--mysql-ssl=off",
                "--mysql-compression=off",
                "--report-checkpoints=10,20",
                "--tables=2"
            ]
        );
        assert!(n.notes.iter().any(|x| x.contains("thread-stack-size")));
    }

    #[test]
    fn switches_bakeoff_cannot_honour_are_refused_by_name() {
        for line in ["oltp_read_only --mysql-dry-run run"] {
            let args: Vec<String> = line.split_whitespace().map(String::from).collect();
            let why = normalize(&args).refused.expect(line);
            assert!(why.starts_with("--mysql-"), "{why}");
        }
    }

    #[test]
    fn a_config_file_reads_as_its_options() {
        let dir = std::env::temp_dir().join(format!("bakeoff-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("sb.cfg");
        std::fs::write(&f, "# sysbench options\nthreads=8\ntime = 5\nskip_trx\n").unwrap();
        let args = vec![
            format!("--config-file={}", f.display()),
            "oltp_read_only".into(),
            "run".into(),
        ];
        let n = normalize(&args);
        assert_eq!(
            n.argv,
            [
                "run",
                "oltp_read_only",
                "--threads=8",
                "--time=5",
                "--skip-trx"
            ]
        );
        let bad = normalize(&["--config-file=/nonexistent/x.cfg".into(), "run".into()]);
        assert!(bad.refused.unwrap().contains("/nonexistent/x.cfg"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn other_subcommands_pass_through() {
        assert_eq!(norm("--help"), vec!["--help"]);
    }
}
