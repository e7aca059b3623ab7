//! pgbench 15's command line, read as its getopt_long reads it: short options bundled or
//! with their value attached (`-nS`, `-c64`), long ones by any unique prefix
//! (`--clien=3`), options after the database name, and its messages for bad values.

use bakeoff_workload::pgbench::QueryMode;

/// A script to run: a built-in's name or a file, with its weight.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptArg {
    Builtin(String, u32),
    File(String, u32),
}

#[derive(Debug, Clone, Default)]
pub struct PgbenchArgs {
    pub init: bool,
    pub init_steps: Option<String>,
    pub fillfactor: u32,
    pub no_vacuum: bool,
    pub quiet: bool,
    pub scale: Option<u32>,
    pub foreign_keys: bool,
    pub index_tablespace: Option<String>,
    pub partition_method: Option<String>,
    pub partitions: u32,
    pub tablespace: Option<String>,
    pub unlogged: bool,
    pub scripts: Vec<ScriptArg>,
    pub clients: u32,
    pub connect: bool,
    pub debug: bool,
    pub defines: Vec<(String, String)>,
    pub jobs: u32,
    pub log: bool,
    /// Milliseconds.
    pub latency_limit: Option<f64>,
    pub mode: Option<QueryMode>,
    pub progress: u32,
    pub report_per_command: bool,
    pub rate: Option<f64>,
    pub transactions: Option<u64>,
    pub time: Option<u64>,
    pub vacuum_all: bool,
    pub aggregate_interval: Option<u32>,
    pub failures_detailed: bool,
    pub log_prefix: Option<String>,
    pub max_tries: Option<u32>,
    /// bakeoff's own `--max-packet`: the longest message a server may send (bytes).
    pub max_packet: Option<usize>,
    /// bakeoff's own `--stall-timeout`: seconds a statement may wait before the run ends.
    pub stall_timeout: Option<u64>,
    pub progress_timestamp: bool,
    /// The run's seed: PGBENCH_RANDOM_SEED's, then --random-seed's, else drawn from the
    /// clock, set as pgbench sets it, while the command line is read.
    pub seed: u64,
    pub sampling_rate: Option<f64>,
    pub show_script: Option<String>,
    pub verbose_errors: bool,
    pub host: Option<String>,
    pub port: Option<String>,
    pub username: Option<String>,
    pub dbname: Option<String>,
    /// An option only -i takes was given (pgbench's initialization_option_set).
    pub init_options: bool,
    /// An option only a run takes was given (pgbench's benchmarking_option_set).
    pub bench_options: bool,
}

/// What the command line asks for.
pub enum Parsed {
    Run(Box<PgbenchArgs>),
    Help,
    Version,
}

/// A refusal: pgbench's message, and whether its hint line follows.
#[derive(Debug)]
pub struct Refused {
    pub message: String,
    pub hint: bool,
    /// Said by getopt itself, under the program's path, not as "pgbench: error:".
    pub getopt: bool,
}

fn refuse<T>(message: String) -> Result<T, Refused> {
    Err(Refused {
        message,
        hint: false,
        getopt: false,
    })
}

/// Long options: name, short letter it stands for (or a name of its own), takes a value.
const LONG: &[(&str, &str, bool)] = &[
    ("builtin", "b", true),
    ("client", "c", true),
    ("connect", "C", false),
    ("debug", "d", false),
    ("define", "D", true),
    ("file", "f", true),
    ("fillfactor", "F", true),
    ("host", "h", true),
    ("initialize", "i", false),
    ("init-steps", "I", true),
    ("jobs", "j", true),
    ("log", "l", false),
    ("latency-limit", "L", true),
    ("no-vacuum", "n", false),
    ("port", "p", true),
    ("progress", "P", true),
    ("protocol", "M", true),
    ("quiet", "q", false),
    ("report-per-command", "r", false),
    ("rate", "R", true),
    ("scale", "s", true),
    ("select-only", "S", false),
    ("skip-some-updates", "N", false),
    ("time", "T", true),
    ("transactions", "t", true),
    ("username", "U", true),
    ("vacuum-all", "v", false),
    ("unlogged-tables", "unlogged-tables", false),
    ("tablespace", "tablespace", true),
    ("index-tablespace", "index-tablespace", true),
    ("sampling-rate", "sampling-rate", true),
    ("aggregate-interval", "aggregate-interval", true),
    ("progress-timestamp", "progress-timestamp", false),
    ("log-prefix", "log-prefix", true),
    ("foreign-keys", "foreign-keys", false),
    ("random-seed", "random-seed", true),
    ("show-script", "show-script", true),
    ("partitions", "partitions", true),
    ("partition-method", "partition-method", true),
    ("failures-detailed", "failures-detailed", false),
    ("max-tries", "max-tries", true),
    ("verbose-errors", "verbose-errors", false),
    ("help", "?", false),
    ("version", "V", false),
];

/// Short letters that take a value.
const SHORT_WITH_VALUE: &str = "bcDfFhIjLMpPRsTtU";
const SHORT_FLAGS: &str = "CdilnNqrSv?V";

/// Read pgbench's command line (without the program name).
pub fn parse(argv: &[String]) -> Result<Parsed, Refused> {
    // pgbench looks at its first argument for these before anything else.
    match argv.first().map(String::as_str) {
        Some("--help" | "-?") => return Ok(Parsed::Help),
        Some("--version" | "-V") => return Ok(Parsed::Version),
        _ => {}
    }
    // pgbench sets the seed from the environment first, then from each --random-seed as it
    // comes, saying each: so the line is there even when a later option is refused.
    let from_env = std::env::var("PGBENCH_RANDOM_SEED").ok();
    let seed = set_seed(
        from_env.as_deref(),
        "PGBENCH_RANDOM_SEED environment variable",
    )?;
    let mut a = PgbenchArgs {
        seed,
        clients: 1,
        jobs: 1,
        fillfactor: 100,
        ..PgbenchArgs::default()
    };
    let mut positional = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        i += 1;
        if arg == "--" {
            positional.extend(argv[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let (key, takes) = long_option(name)?;
            let value = match (takes, inline) {
                (true, Some(v)) => Some(v),
                (true, None) if i < argv.len() => {
                    i += 1;
                    Some(argv[i - 1].clone())
                }
                (true, None) => {
                    return getopt_error(format!("option '--{name}' requires an argument"))
                }
                (false, Some(_)) => {
                    return getopt_error(format!("option '--{name}' doesn't allow an argument"))
                }
                (false, None) => None,
            };
            if let Some(p) = apply(&mut a, key, value)? {
                return Ok(p);
            }
            continue;
        }
        if arg.len() > 1 && arg.starts_with('-') {
            let letters: Vec<char> = arg[1..].chars().collect();
            let mut k = 0;
            while k < letters.len() {
                let c = letters[k];
                k += 1;
                if SHORT_WITH_VALUE.contains(c) {
                    let rest: String = letters[k..].iter().collect();
                    let value = if !rest.is_empty() {
                        rest
                    } else if i < argv.len() {
                        i += 1;
                        argv[i - 1].clone()
                    } else {
                        return getopt_error(format!("option requires an argument -- '{c}'"));
                    };
                    if let Some(p) = apply(&mut a, &c.to_string(), Some(value))? {
                        return Ok(p);
                    }
                    break;
                }
                if !SHORT_FLAGS.contains(c) {
                    return getopt_error(format!("invalid option -- '{c}'"));
                }
                if let Some(p) = apply(&mut a, &c.to_string(), None)? {
                    return Ok(p);
                }
            }
            continue;
        }
        positional.push(arg.clone());
    }
    if positional.len() > 1 {
        return Err(Refused {
            message: format!(
                "too many command-line arguments (first is \"{}\")",
                positional[1]
            ),
            hint: true,
            getopt: false,
        });
    }
    a.dbname = positional.into_iter().next();
    check(&a)?;
    Ok(Parsed::Run(Box::new(a)))
}

/// glibc's getopt messages go out under the program's path, then pgbench's hint.
fn getopt_error<T>(message: String) -> Result<T, Refused> {
    Err(Refused {
        message,
        hint: true,
        getopt: true,
    })
}

/// bakeoff's own long options, beside pgbench's: taken by their whole name only, so that
/// every abbreviation pgbench takes means what it means to pgbench.
const OWN: &[(&str, &str, bool)] = &[
    ("max-packet", "max-packet", true),
    ("stall-timeout", "stall-timeout", true),
];

fn long_option(name: &str) -> Result<(&'static str, bool), Refused> {
    if let Some(&(_, key, takes)) = LONG.iter().chain(OWN).find(|l| l.0 == name) {
        return Ok((key, takes));
    }
    let found: Vec<_> = LONG.iter().filter(|l| l.0.starts_with(name)).collect();
    match found.as_slice() {
        [one] => Ok((one.1, one.2)),
        [] => getopt_error(format!("unrecognized option '--{name}'")),
        _ => getopt_error(format!("option '--{name}' is ambiguous")),
    }
}

fn int_in(v: &str, option: &str, lo: i64, hi: i64) -> Result<i64, Refused> {
    let t = v.trim_start();
    let n: i64 = match t.parse() {
        Ok(n) => n,
        Err(_)
            if !t.is_empty()
                && t.trim_start_matches(['-', '+'])
                    .bytes()
                    .all(|b| b.is_ascii_digit()) =>
        {
            i64::MAX
        }
        Err(_) => return refuse(format!("invalid value \"{v}\" for option {option}")),
    };
    if n < lo || n > hi {
        return refuse(format!("{option} must be in range {lo}..{hi}"));
    }
    Ok(n)
}

const INT_MAX: i64 = i32::MAX as i64;

/// pgbench's limit on scripts (MAX_SCRIPTS).
const MAX_SCRIPTS: usize = 128;

/// The options pgbench takes only with -i, and only without it (by their keys here).
const INIT_ONLY: &[&str] = &[
    "I",
    "F",
    "q",
    "foreign-keys",
    "index-tablespace",
    "tablespace",
    "unlogged-tables",
    "partitions",
    "partition-method",
];
const BENCH_ONLY: &[&str] = &[
    "b",
    "f",
    "S",
    "N",
    "c",
    "j",
    "C",
    "r",
    "t",
    "T",
    "l",
    "L",
    "M",
    "P",
    "R",
    "D",
    "v",
    "sampling-rate",
    "aggregate-interval",
    "progress-timestamp",
    "log-prefix",
    "random-seed",
    "failures-detailed",
    "max-tries",
    "verbose-errors",
];

/// One option; `Some` when it ends the parse (help, version).
fn apply(a: &mut PgbenchArgs, key: &str, v: Option<String>) -> Result<Option<Parsed>, Refused> {
    let v = v.unwrap_or_default();
    a.init_options |= INIT_ONLY.contains(&key);
    a.bench_options |= BENCH_ONLY.contains(&key);
    if matches!(key, "b" | "f" | "S" | "N") && a.scripts.len() >= MAX_SCRIPTS {
        return refuse(format!("at most {MAX_SCRIPTS} SQL scripts are allowed"));
    }
    match key {
        "?" => return Ok(Some(Parsed::Help)),
        "V" => return Ok(Some(Parsed::Version)),
        "b" => a.scripts.push(weighted(&v, true)?),
        "f" => a.scripts.push(weighted(&v, false)?),
        "S" => a.scripts.push(ScriptArg::Builtin("select-only".into(), 1)),
        "N" => a
            .scripts
            .push(ScriptArg::Builtin("simple-update".into(), 1)),
        // pgbench 15.20 names the option so here; 15.18 and older printed "-c/--clients".
        "c" => {
            a.clients = int_in(&v, "-c/--client", 1, INT_MAX)? as u32;
            super::files::room_for(a.clients).or_else(refuse)?;
        }
        "C" => a.connect = true,
        "d" => a.debug = true,
        "D" => {
            let Some((name, value)) = v
                .split_once('=')
                .filter(|(n, val)| !n.is_empty() && !val.is_empty())
            else {
                return refuse(format!("invalid variable definition: \"{v}\""));
            };
            // pgbench refuses the name as it reads the option (its putVariable's check).
            if !bakeoff_workload::pgbench::expr::valid_name(name) {
                return refuse(format!("option: invalid variable name: \"{name}\""));
            }
            a.defines.push((name.to_string(), value.to_string()));
        }
        "F" => a.fillfactor = int_in(&v, "-F/--fillfactor", 10, 100)? as u32,
        "h" => a.host = Some(v),
        "i" => a.init = true,
        "I" => {
            init_steps_valid(&v)?;
            a.init_steps = Some(v);
        }
        "j" => a.jobs = int_in(&v, "-j/--jobs", 1, INT_MAX)? as u32,
        "l" => a.log = true,
        "L" => {
            let ms: f64 = v.trim().parse().unwrap_or(0.0);
            if ms <= 0.0 {
                return refuse(format!("invalid latency limit: \"{v}\""));
            }
            a.latency_limit = Some(ms);
        }
        "n" => a.no_vacuum = true,
        "p" => a.port = Some(v),
        "P" => a.progress = int_in(&v, "-P/--progress", 1, INT_MAX)? as u32,
        "M" => {
            a.mode = Some(match v.as_str() {
                "simple" => QueryMode::Simple,
                "extended" => QueryMode::Extended,
                "prepared" => QueryMode::Prepared,
                _ => return refuse(format!("invalid query mode (-M): \"{v}\"")),
            })
        }
        "q" => a.quiet = true,
        "r" => a.report_per_command = true,
        "R" => {
            let tps: f64 = v.trim().parse().unwrap_or(0.0);
            if tps <= 0.0 {
                return refuse(format!("invalid rate limit: \"{v}\""));
            }
            a.rate = Some(tps);
        }
        "s" => a.scale = Some(int_in(&v, "-s/--scale", 1, INT_MAX)? as u32),
        "t" => a.transactions = Some(int_in(&v, "-t/--transactions", 1, INT_MAX)? as u64),
        "T" => a.time = Some(int_in(&v, "-T/--time", 1, INT_MAX)? as u64),
        "U" => a.username = Some(v),
        "v" => a.vacuum_all = true,
        "unlogged-tables" => a.unlogged = true,
        "tablespace" => a.tablespace = Some(v),
        "index-tablespace" => a.index_tablespace = Some(v),
        "sampling-rate" => {
            let r: f64 = v.trim().parse().unwrap_or(0.0);
            if r <= 0.0 || r > 1.0 {
                return refuse(format!("invalid sampling rate: \"{v}\""));
            }
            a.sampling_rate = Some(r);
        }
        "aggregate-interval" => {
            a.aggregate_interval = Some(int_in(&v, "--aggregate-interval", 1, INT_MAX)? as u32)
        }
        "progress-timestamp" => a.progress_timestamp = true,
        "log-prefix" => a.log_prefix = Some(v),
        "foreign-keys" => a.foreign_keys = true,
        "random-seed" => a.seed = set_seed(Some(&v), "--random-seed option")?,
        "show-script" => a.show_script = Some(v),
        "partitions" => a.partitions = int_in(&v, "--partitions", 0, INT_MAX)? as u32,
        "partition-method" => {
            if v != "range" && v != "hash" {
                return refuse(format!(
                    "invalid partition method, expecting \"range\" or \"hash\", got: \"{v}\""
                ));
            }
            a.partition_method = Some(v);
        }
        "failures-detailed" => a.failures_detailed = true,
        "max-tries" => {
            let n: i64 = v.trim().parse().unwrap_or(0);
            if n < 0 {
                return refuse(format!("invalid number of maximum tries: \"{v}\""));
            }
            a.max_tries = Some(n as u32);
        }
        "verbose-errors" => a.verbose_errors = true,
        "stall-timeout" => match v.trim().parse::<u64>() {
            Ok(s) if s > 0 => a.stall_timeout = Some(s),
            _ => {
                return refuse(format!(
                    "bakeoff's option --stall-timeout: '{v}' is not a number of seconds above 0"
                ))
            }
        },
        "max-packet" => match bakeoff_driver::parse_max_packet(&v) {
            Ok(bytes) => a.max_packet = Some(bytes),
            Err(e) => return refuse(format!("bakeoff's option --max-packet: {e}")),
        },
        _ => return refuse(format!("unknown option {key}")),
    }
    Ok(None)
}

/// `NAME[@W]` for -b and -f: the weight an integer from 0 to INT_MAX.
fn weighted(v: &str, builtin: bool) -> Result<ScriptArg, Refused> {
    let (name, weight) = match v.rsplit_once('@') {
        Some((n, w)) => {
            // strtol's reading: blanks first, a sign; nothing may follow the digits.
            let w: i64 = match w.trim_start().parse() {
                Ok(w) => w,
                Err(_) => return refuse(format!("invalid weight specification: @{w}")),
            };
            if !(0..=INT_MAX).contains(&w) {
                return refuse(format!(
                    "weight specification out of range (0 .. {INT_MAX}): {w}"
                ));
            }
            (n.to_string(), w as u32)
        }
        None => (v.to_string(), 1),
    };
    Ok(match builtin {
        true => ScriptArg::Builtin(name, weight),
        false => ScriptArg::File(name, weight),
    })
}

/// The checks pgbench makes once every option is read, in its order.
fn check(a: &PgbenchArgs) -> Result<(), Refused> {
    if a.init && a.bench_options {
        return refuse(
            "some of the specified options cannot be used in initialization (-i) mode".into(),
        );
    }
    if !a.init && a.init_options {
        return refuse("some of the specified options cannot be used in benchmarking mode".into());
    }
    if a.partition_method.is_some() && a.partitions == 0 {
        return refuse("--partition-method requires greater than zero --partitions".into());
    }
    if a.transactions.is_some() && a.time.is_some() {
        return refuse(
            "specify either a number of transactions (-t) or a duration (-T), not both".into(),
        );
    }
    if a.sampling_rate.is_some() && !a.log {
        return refuse(
            "log sampling (--sampling-rate) is allowed only when logging transactions (-l)".into(),
        );
    }
    if a.aggregate_interval.is_some() && a.sampling_rate.is_some() {
        return refuse("log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time".into());
    }
    if a.aggregate_interval.is_some() && !a.log {
        return refuse("log aggregation is allowed only when actually logging transactions".into());
    }
    if a.log_prefix.is_some() && !a.log {
        return refuse(
            "log file prefix (--log-prefix) is allowed only when logging transactions (-l)".into(),
        );
    }
    if let (Some(agg), Some(t)) = (a.aggregate_interval, a.time) {
        if agg as u64 > t {
            return refuse(format!(
                "number of seconds for aggregation ({agg}) must not be higher than test duration ({t})"
            ));
        }
        if t % agg as u64 != 0 {
            return refuse(format!(
                "duration ({t}) must be a multiple of aggregation interval ({agg})"
            ));
        }
    }
    if a.progress_timestamp && a.progress == 0 {
        return refuse("--progress-timestamp is allowed only under --progress".into());
    }
    if a.max_tries == Some(0) && a.latency_limit.is_none() && a.time.is_none() {
        return refuse("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)".into());
    }
    Ok(())
}

/// pgbench's checkInitSteps, as it reads -I.
fn init_steps_valid(steps: &str) -> Result<(), Refused> {
    if steps.is_empty() {
        return refuse("no initialization steps specified".into());
    }
    match steps.chars().find(|c| !"dtgGvpf ".contains(*c)) {
        Some(bad) => refuse(format!(
            "unrecognized initialization step \"{bad}\"\npgbench: detail: Allowed step characters are: \"dtgGvpf\"."
        )),
        None => Ok(()),
    }
}

/// A seed as pgbench's set_random_seed takes it: "time" (the default), "rand" or an unsigned
/// integer (as sscanf's %lu reads one); one that was given is said (pgbench's info line, with
/// what "time" or "rand" drew).
fn set_seed(given: Option<&str>, whence: &str) -> Result<u64, Refused> {
    let seed = match given {
        None | Some("time" | "rand") => drawn(),
        Some(s) => match bakeoff_workload::pgbench::c_ulong(s) {
            Some(n) => n,
            None => return refuse(format!("unrecognized random seed option \"{s}\"\npgbench: detail: Expecting an unsigned integer, \"time\" or \"rand\".\npgbench: error: error while setting random seed from {whence}")),
        },
    };
    if given.is_some() {
        eprintln!("pgbench: setting random seed to {seed}");
    }
    Ok(seed)
}

fn drawn() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ std::process::id() as u64
}
