//! The guides' command blocks run as written: every ```sh block of a guide is given to bash
//! in a scratch directory, with `bakeoff` on PATH and what the guide's prose says the reader
//! has (a server started with `bakeoff server start`, its socket in `SOCK` and its password in
//! `BAKEOFF_MYSQL_PASSWORD`; a script the guide shows in a ```lua block, written where its
//! name says). A renamed option, a changed default or a command that no longer works fails
//! here, not on a reader's machine.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A guide's fenced blocks in order: (language, text, the prose just before it).
fn blocks(guide: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let (mut lang, mut body, mut prose) = (None::<String>, String::new(), String::new());
    for line in guide.lines() {
        match (&lang, line.strip_prefix("```")) {
            (None, Some(l)) => {
                lang = Some(l.trim().to_string());
                body.clear();
            }
            (Some(l), Some(_)) => {
                out.push((l.clone(), body.clone(), prose.clone()));
                lang = None;
                prose.clear();
            }
            (Some(_), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    out
}

/// The file a ```lua or ```sql block is, by the backticked `NAME.lua` (`.sql`) in the prose
/// before it.
fn script_name(prose: &str, lang: &str) -> Option<String> {
    let ext = format!(".{lang}");
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|w| w.ends_with(&ext) && !w.contains(' '))
        .map(str::to_string)
}

/// `bakeoff server start`, kept up until dropped (Ctrl-C, as a reader stops it): its socket
/// and the password from the client file it prints.
struct Started {
    child: Child,
    socket: String,
    /// Its TCP address (`127.0.0.1:PORT`).
    tcp: String,
    password: String,
}

impl Drop for Started {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

fn server_start(bakeoff: &Path, args: &[&str]) -> Started {
    let child = Command::new(bakeoff)
        .args(["server", "start"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Held from the start, so that a failure below still stops the server (a panic here
    // once left one running after the test).
    let mut started = Started {
        child,
        socket: String::new(),
        tcp: String::new(),
        password: String::new(),
    };
    let mut out = BufReader::new(started.child.stdout.take().unwrap());
    let (mut socket, mut cnf, mut tcp) = (None, None, None);
    let mut said = String::new();
    while socket.is_none() || cnf.is_none() {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "server start said: {said}"
        );
        said.push_str(&line);
        let value = |k: &str| line.trim().strip_prefix(k).map(|v| v.trim().to_string());
        socket = socket.or(value("socket:"));
        tcp = tcp.or(value("tcp:"));
        cnf = cnf.or(value("credentials:").and_then(|v| v.split(' ').next().map(str::to_string)));
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let text = std::fs::read_to_string(cnf.unwrap()).unwrap();
    // MariaDB's client file (password=...) or PostgreSQL's password file (host:port:db:user:pw).
    let password = text
        .lines()
        .find_map(|l| l.strip_prefix("password="))
        .or_else(|| text.lines().next().and_then(|l| l.rsplit(':').next()))
        .expect("the credentials file holds the password")
        .to_string();
    started.socket = socket.unwrap();
    started.tcp = tcp.unwrap_or_default();
    started.password = password;
    started
}

/// How a guide is run: its server (`bakeoff server start` with `server`), what its prose
/// says to have done before a block (by a word of the block), and the example values its
/// text printed that stand for the reader's own (replaced by this run's).
struct Guide<'a> {
    file: &'a str,
    server: &'a [&'a str],
    before: &'a [(&'a str, &'a str)],
    /// A command that starts the server the guide's reader starts: the test started it.
    starts_server: Option<&'a str>,
    examples: fn(&Started) -> Vec<(String, String)>,
    /// Sizes and durations the test makes smaller (an hour's run, a hundred warehouses),
    /// in commands and study files alike: what runs is the guide's command otherwise.
    shrink: &'a [(&'a str, &'a str)],
    /// Whether the reader has the server's password in `BAKEOFF_MYSQL_PASSWORD` (the guide
    /// says to set it); it is in `GUIDE_PASSWORD` for `before` either way.
    password_env: bool,
    /// Commands not run, by a word of theirs, each with why (another machine, a server
    /// elsewhere). Each must still be in the guide.
    skip: &'a [(&'a str, &'a str)],
}

/// What a guide asks of its reader, in order: files to write, commands to run (each with the
/// output the guide shows after it, if any).
enum Step {
    Write(String, String),
    Run(String, Option<String>),
}

/// The guide's steps: ```sh blocks run whole; in a bare block each `$ ` line is a command and
/// the lines up to the next one its output; ```lua, ```sql and ```toml blocks are files,
/// named by the backticked `NAME.lua` (`.sql`, `.toml`) in the prose before them.
fn steps(text: &str) -> Vec<Step> {
    let all = blocks(text);
    let mut out = Vec::new();
    for (i, (lang, body, prose)) in all.iter().enumerate() {
        match lang.as_str() {
            "lua" | "sql" => {
                let name =
                    script_name(prose, lang).expect("a script block names its file before it");
                out.push(Step::Write(name, body.clone()));
            }
            "toml" => {
                // `examples/NAME.toml` is read where the reader stands, as NAME.toml.
                if let Some(name) = script_name(prose, lang) {
                    let name = name.rsplit('/').next().unwrap_or(&name).to_string();
                    out.push(Step::Write(name, body.clone()));
                }
            }
            "sh" => {
                let shown = all
                    .get(i + 1)
                    .filter(|b| b.0 == "text")
                    .map(|b| b.1.clone());
                out.push(Step::Run(body.clone(), shown));
            }
            "" => {
                let mut command: Option<(String, String)> = None;
                for line in body.lines() {
                    match line.strip_prefix("$ ") {
                        Some(c) => {
                            if let Some((c, shown)) = command.take() {
                                out.push(Step::Run(c, Some(shown)));
                            }
                            command = Some((format!("{c}\n"), String::new()));
                        }
                        None => {
                            if let Some((_, shown)) = command.as_mut() {
                                shown.push_str(line);
                                shown.push('\n');
                            }
                        }
                    }
                }
                if let Some((c, shown)) = command {
                    out.push(Step::Run(c, Some(shown)));
                }
            }
            _ => {}
        }
    }
    out
}

/// Run every command of the guide as written (but for `shrink` and `skip`); a command whose
/// shown output is an error must fail with that error.
fn run_guide(g: Guide<'_>) {
    let guide = g.file;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("docs/src/guide").join(guide)).unwrap();
    let bakeoff = PathBuf::from(env!("CARGO_BIN_EXE_bakeoff"));
    let dir = bakeoff_testkit::scratch::dir(&format!("guide-{guide}"));
    let server = server_start(&bakeoff, g.server);
    let mut examples = (g.examples)(&server);
    examples.extend(g.shrink.iter().map(|(a, b)| (a.to_string(), b.to_string())));
    let real = |text: &str| {
        let mut text = text.to_string();
        for (example, real) in &examples {
            text = text.replace(example.as_str(), real);
        }
        text
    };
    // Blocks that only export variables hold for the blocks after them, as in a shell.
    let mut exported = String::new();
    let path = format!(
        "{}:{}",
        bakeoff.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bash = |script: &str| {
        let mut c = Command::new("bash");
        c.args(["-e", "-o", "pipefail", "-c", script])
            .current_dir(&dir)
            .env("PATH", &path)
            .env("SOCK", &server.socket)
            .env("EXAMPLES", root.join("examples"))
            .env("GUIDE_PASSWORD", &server.password)
            .env_remove("BAKEOFF_MYSQL_PASSWORD")
            .env_remove("MYSQL_PWD");
        if g.password_env {
            c.env("BAKEOFF_MYSQL_PASSWORD", &server.password);
        }
        c.output().unwrap()
    };
    let (mut ran, mut skipped) = (0, vec![false; g.skip.len()]);
    for step in steps(&text) {
        let (body, shown) = match step {
            Step::Write(name, body) => {
                std::fs::write(dir.join(name), real(&body)).unwrap();
                continue;
            }
            Step::Run(body, shown) => (body, shown),
        };
        if Some(body.trim()) == g.starts_server {
            continue;
        }
        if let Some(i) = g.skip.iter().position(|(word, _)| body.contains(word)) {
            skipped[i] = true;
            continue;
        }
        for (word, first) in g.before {
            if body.contains(word) {
                let o = bash(first);
                assert!(
                    o.status.success(),
                    "{first}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        }
        let body = real(&body);
        if body.lines().all(|l| l.starts_with("export ")) {
            exported.push_str(&body);
            ran += 1;
            continue;
        }
        let o = bash(&format!("{exported}{body}"));
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        // The output the guide shows next: an error there is what the command must give.
        let shown = shown.unwrap_or_default();
        // A study file's problem is `FILE:LINE:COL: message`: the message must be said, up to
        // a parenthesis (what follows may name this machine's paths).
        fn problem(l: &str) -> Option<&str> {
            let (_, rest) = l.split_once(".toml:")?;
            let message = rest.splitn(3, ':').nth(2)?.trim();
            // ... and before a version number, this machine's too.
            let end = message
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(message.len());
            message[..end].split(" (").next()
        }
        // bakeoff's own refusal is its one line, `bakeoff: why` (its notes come among output).
        let refused = {
            let mut lines = shown.lines().filter(|l| !l.trim().is_empty());
            match (lines.next(), lines.next()) {
                (Some(l), None) => l.strip_prefix("bakeoff: "),
                _ => None,
            }
        };
        let error = shown
            .lines()
            .find_map(|l| l.split_once("error: ").map(|(_, e)| e))
            .or(refused)
            .map(|e| e.split('"').next().unwrap_or(e))
            .or_else(|| shown.lines().find_map(problem));
        match error {
            Some(said) => assert!(
                !o.status.success() && err.contains(said),
                "{guide}: {body}: expected '{said}'\n{out}\n{err}"
            ),
            None => assert!(
                o.status.success(),
                "{guide}'s command failed:\n{body}\n--- stdout\n{out}\n--- stderr\n{err}"
            ),
        }
        ran += 1;
    }
    assert!(ran > 0, "{guide} has no command");
    for ((word, why), seen) in g.skip.iter().zip(skipped) {
        assert!(
            seen,
            "{guide}: no command holds `{word}` (skipped: {why}) any more"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// For sysbench users: the embedded server, prepare/run/cleanup against your own, JSON with
/// jq, a Lua script, variants, fixed work, a rate, the host probes.
#[test]
fn the_sysbench_guides_blocks_run_as_written() {
    run_guide(Guide {
        file: "sysbench-users.md",
        server: &[],
        // "`point.lua`, on the tables of `bakeoff oltp_read_only --mysql-socket=$SOCK prepare`".
        before: &[(
            "point.lua help",
            "bakeoff oltp_read_only --mysql-socket=$SOCK prepare",
        )],
        starts_server: None,
        examples: |_| Vec::new(),
        shrink: &[],
        password_env: true,
        skip: &[],
    });
}

/// For pgbench users: the throwaway PostgreSQL, libpq's variables with the paths it printed
/// (the guide's example paths stand for this run's), initialize, the built-in and own
/// scripts, retries, a rate, and the refusal of a TLS mode that has no CA.
#[test]
fn the_pgbench_guides_blocks_run_as_written() {
    run_guide(Guide {
        file: "pgbench-users.md",
        server: &["--db-driver=pgsql"],
        before: &[],
        starts_server: Some("bakeoff server start --db-driver=pgsql"),
        examples: |s| {
            // socket: DIR/.s.PGSQL.PORT
            let (dir, port) = s
                .socket
                .rsplit_once("/.s.PGSQL.")
                .expect("a PostgreSQL socket");
            vec![
                (
                    "/tmp/bakeoff-23615-bedc3ed96363808a".into(),
                    dir.to_string(),
                ),
                ("33355".into(), port.to_string()),
            ]
        },
        shrink: &[],
        password_env: true,
        skip: &[],
    });
}

/// For HammerDB and sysbench-tpcc users: TPC-C on the embedded MariaDB and PostgreSQL, then
/// prepare, run, check and cleanup on a server of the reader's (the test's), and paced
/// terminals; a warehouse and seconds where the guide says tens and minutes.
#[test]
fn the_tpcc_guides_commands_run_as_written() {
    run_guide(Guide {
        file: "tpcc.md",
        server: &[],
        before: &[],
        starts_server: None,
        examples: |s| vec![("/run/mysqld/mysqld.sock".into(), s.socket.clone())],
        shrink: &[
            ("--warehouses=100", "--warehouses=1"),
            ("--warehouses=10", "--warehouses=1"),
            ("--connections=16", "--connections=4"),
            ("--connections=32", "--connections=4"),
            ("--connections=64", "--connections=4 --time=2 --rampup=0"),
            ("--time=120 --rampup=30", "--time=2 --rampup=0"),
            ("--time=1200 --rampup=120", "--time=2 --rampup=0"),
            ("--time=300", "--time=2 --rampup=0"),
        ],
        password_env: true,
        skip: &[],
    });
}

/// For PostgreSQL users: one run with variant options, the server kept up, a study and its
/// answer, a settings mistake caught by `study check`; a second where the guide says five and
/// one block where its study has three.
#[test]
fn the_postgresql_guides_commands_run_as_written() {
    run_guide(Guide {
        file: "postgresql.md",
        server: &["--db-driver=pgsql"],
        before: &[],
        starts_server: Some("bakeoff server start --db-driver=pgsql"),
        examples: |_| Vec::new(),
        shrink: &[
            ("--time 5", "--time 1"),
            ("repetitions = 3", "repetitions = 1"),
            ("duration = 3", "duration = 1"),
            ("warmup = 2", "warmup = 0"),
            ("threads = [4, 16]", "threads = [4]"),
        ],
        password_env: true,
        skip: &[(
            "sslmode=verify-full",
            "a server elsewhere and its CA: the URL's forms are tested against the suite's own PostgreSQL in pgsql.rs and tls.rs",
        )],
    });
}

/// Watching a run: `--metrics-addr` on a run and on a study (the allocators example, cut to
/// two allocators, one CPU set, one thread count and a second a run: the guide's is minutes).
#[test]
fn the_live_metrics_guides_commands_run_as_written() {
    run_guide(Guide {
        file: "live-metrics.md",
        server: &[],
        before: &[(
            "allocators.toml",
            "sed -e 's/^repetitions = .*/repetitions = 1/; s/^duration = .*/duration = 1/; s/^warmup = .*/warmup = 0/; s/^threads = .*/threads = [1]/; s/^table_size = .*/table_size = 1000/; s/^allocator = .*/allocator = [\"glibc\", \"jemalloc\"]/; s/^cpus = .*/cpus = [\"0\"]/' $EXAMPLES/allocators.toml > allocators.toml",
        )],
        starts_server: None,
        examples: |_| Vec::new(),
        shrink: &[("--threads=64 --time=3600", "--threads=4 --time=1")],
        password_env: true,
        skip: &[],
    });
}

/// Across machines: the study on a named machine (this one), two machines' databases merged
/// and compared, a study whose servers and load are on hosts (checked, which contacts none).
/// The ARM side is this machine with `platform = "arm"`, as the guide says its own was.
#[test]
fn the_many_machines_guides_commands_run_as_written() {
    const SSH: &str =
        "machines reached over ssh: the same commands run against network namespaces in hosts.rs";
    run_guide(Guide {
        file: "many-machines.md",
        server: &[],
        before: &[(
            "bakeoff merge x86/tiny.db arm/tiny.db",
            "mkdir -p x86 arm && bakeoff study run tiny.toml --db x86/tiny.db >/dev/null 2>&1 && sed 's/platform = \"x86\"/platform = \"arm\"/' tiny.toml > arm.toml && bakeoff study run arm.toml --db arm/tiny.db >/dev/null 2>&1",
        )],
        starts_server: None,
        examples: |_| Vec::new(),
        shrink: &[
            ("duration = 2\nrepetitions = 2\nthreads = [4, 16]", "duration = 1\nrepetitions = 2\nthreads = [4]"),
            ("table_size = 10000", "table_size = 1000"),
        ],
        password_env: true,
        skip: &[
            ("ssh://bench@c6i", SSH),
            ("--server-host ssh://root@db1", SSH),
        ],
    });
}

/// Servers you run: a password in a URL refused, then prepare, run and cleanup over TCP with
/// an option file against a MariaDB kept running (the test's, as the guide's was), and the
/// managed study checked (which contacts no server).
#[test]
fn the_given_servers_guides_commands_run_as_written() {
    run_guide(Guide {
        file: "given-servers.md",
        server: &[],
        before: &[(
            "bench.cnf",
            "printf '[client]\\nuser=sbtest\\npassword=%s\\n' \"$GUIDE_PASSWORD\" > bench.cnf",
        )],
        starts_server: None,
        examples: |s| vec![("127.0.0.1:35493".into(), s.tcp.clone())],
        shrink: &[("--time 5", "--time 1")],
        password_env: false,
        skip: &[],
    });
}

/// MySQL beside MariaDB: a study that names engine "mysql" with Debian's mysqld (MariaDB's
/// link) is refused at its line. (Installing MySQL under /opt is the reader's, not a test's.)
#[test]
fn the_mysql_guides_commands_run_as_written() {
    run_guide(Guide {
        file: "mysql.md",
        server: &[],
        before: &[],
        starts_server: None,
        examples: |_| Vec::new(),
        shrink: &[],
        password_env: true,
        skip: &[],
    });
}

/// Writing and running studies: check (and a file's mistakes), plan, run and resume, compare,
/// the report page, export, a Lua script's study, the studies a database holds, before and
/// after. Runs of a second, two blocks where the guide has four or six; the databases the
/// guide reads but does not make (the durability study's, a tiny study's week apart) are
/// made first, as its prose says they were.
#[test]
fn the_studies_guides_commands_run_as_written() {
    // The tiny study of "Across machines", for the databases a week apart.
    macro_rules! tiny {
        () => {
            "test -f tiny.toml || printf 'name = \"tiny\"\\nduration = 1\\nthreads = [4]\\n[dataset]\\ntable_size = 1000\\n[[workload]]\\nname = \"oltp_point_select\"\\n' > tiny.toml"
        };
    }
    run_guide(Guide {
        file: "studies.md",
        server: &[],
        before: &[
            ("tiny.toml", tiny!()),
            (
                "today.db",
                concat!(
                    tiny!(),
                    "; test -f today.db || bakeoff study run tiny.toml --db today.db >/dev/null 2>&1"
                ),
            ),
            (
                "compare durability.db",
                "bakeoff study run durability.toml >/dev/null 2>&1",
            ),
            (
                "examples/lua-script.toml",
                "mkdir -p examples && cp -r $EXAMPLES/scripts examples/ && sed -e 's/^duration = .*/duration = 1/; s/^repetitions = .*/repetitions = 2/' $EXAMPLES/lua-script.toml > examples/lua-script.toml",
            ),
        ],
        starts_server: None,
        examples: |_| Vec::new(),
        shrink: &[
            ("duration = 3 ", "duration = 1 "),
            ("warmup = 1 ", "warmup = 0 "),
            ("repetitions = 4 ", "repetitions = 2 "),
            ("duration = 2\nwarmup = 1\nrepetitions = 6", "duration = 1\nwarmup = 0\nrepetitions = 2"),
        ],
        password_env: true,
        skip: &[],
    });
}

/// Every guide is one of the above: a new guide gets its test when it is written.
#[test]
fn every_guide_has_its_commands_run_here() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let this = include_str!("guides.rs");
    for e in std::fs::read_dir(root.join("docs/src/guide"))
        .unwrap()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            this.contains(&format!("file: \"{name}\"")),
            "{name} has no test in guides.rs that runs its commands"
        );
    }
}
