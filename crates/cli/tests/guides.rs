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
        password: String::new(),
    };
    let mut out = BufReader::new(started.child.stdout.take().unwrap());
    let (mut socket, mut cnf) = (None, None);
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
    /// A block that starts the server the guide's reader starts: the test started it.
    starts_server: Option<&'a str>,
    examples: fn(&Started) -> Vec<(String, String)>,
}

/// Run every block of the guide as written; a block whose shown output is an error must fail
/// with that error.
fn run_guide(g: Guide<'_>) {
    let guide = g.file;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("docs/src/guide").join(guide)).unwrap();
    let bakeoff = PathBuf::from(env!("CARGO_BIN_EXE_bakeoff"));
    let dir = bakeoff_testkit::scratch::dir(&format!("guide-{guide}"));
    let server = server_start(&bakeoff, g.server);
    let examples = (g.examples)(&server);
    // Blocks that only export variables hold for the blocks after them, as in a shell.
    let mut exported = String::new();
    let path = format!(
        "{}:{}",
        bakeoff.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bash = |script: &str| {
        Command::new("bash")
            .args(["-e", "-o", "pipefail", "-c", script])
            .current_dir(&dir)
            .env("PATH", &path)
            .env("SOCK", &server.socket)
            .env("BAKEOFF_MYSQL_PASSWORD", &server.password)
            .output()
            .unwrap()
    };
    let mut ran = 0;
    let all = blocks(&text);
    for (i, (lang, body, prose)) in all.iter().enumerate() {
        match lang.as_str() {
            "lua" | "sql" => {
                let name =
                    script_name(prose, lang).expect("a script block names its file before it");
                std::fs::write(dir.join(name), body).unwrap();
            }
            "sh" if Some(body.trim()) == g.starts_server => {}
            "sh" => {
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
                let mut body = body.clone();
                for (example, real) in &examples {
                    body = body.replace(example.as_str(), real);
                }
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
                // The output the guide shows next: an error there is what the block must give.
                let shown = all
                    .get(i + 1)
                    .filter(|b| b.0 == "text")
                    .map(|b| b.1.as_str());
                let error = shown
                    .and_then(|t| t.lines().find_map(|l| l.split_once("error: ")))
                    .map(|(_, e)| e);
                match error {
                    Some(e) => {
                        let said = e.split('"').next().unwrap_or(e);
                        assert!(
                            !o.status.success() && err.contains(said),
                            "{guide}: {body}: expected '{said}'\n{out}\n{err}"
                        );
                    }
                    None => assert!(
                        o.status.success(),
                        "{guide}'s block failed:\n{body}\n--- stdout\n{out}\n--- stderr\n{err}"
                    ),
                }
                ran += 1;
            }
            _ => {}
        }
    }
    assert!(ran > 0, "{guide} has no sh block");
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
    });
}
