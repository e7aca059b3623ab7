//! Ctrl-C on a study: one press (as a terminal or `timeout -s INT` delivers it, to bakeoff and
//! its process group at once) stops cleanly; a second press later abandons, killing what
//! bakeoff started and removing its run directories. Either way no process bakeoff started and
//! no run directory is left, and the study resumes with the runs it stored.
//!
//! A server whose stop takes long is made here by stopping it (SIGSTOP): the one thing a real
//! server will not do on cue is take its time.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STUDY: &str = "duration = 2\nthreads = [2]\norder = \"sequential\"\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nallocator = [\"glibc\", \"jemalloc\"]\n";

/// A study of two runs, each on a server of its own, in a directory whose `tmp` holds every
/// run directory bakeoff makes (TMPDIR), so that what is left there is what it left.
struct Trial {
    dir: PathBuf,
}

impl Trial {
    fn new(name: &str) -> Trial {
        let dir = bakeoff_testkit::scratch::dir(name);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::write(dir.join("study.toml"), STUDY).unwrap();
        Trial { dir }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
        c.args(["study", "run"])
            .arg(self.dir.join("study.toml"))
            .env("TMPDIR", self.dir.join("tmp"))
            .env_remove("BAKEOFF_DB");
        c
    }

    /// Start the study in a process group of its own (as a shell's job is), stderr read.
    fn start(&self) -> (Child, std::io::Lines<BufReader<std::process::ChildStderr>>) {
        let mut child = self
            .command()
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bakeoff study run");
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        (child, lines)
    }

    /// Run the study to its end: its stderr.
    fn resume(&self) -> String {
        let o = self.command().output().expect("run bakeoff study run");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(0), "resumed study: {err}");
        err
    }

    /// The lines `compare` opens with, before its first blank line.
    fn compare_head(&self) -> String {
        let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
            .arg("compare")
            .arg(self.dir.join("study.db"))
            .output()
            .expect("run bakeoff compare");
        let out = String::from_utf8_lossy(&o.stdout);
        out.lines()
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Processes whose command line names this trial's directory (servers, initializers).
    fn processes(&self) -> Vec<String> {
        let mark = self.dir.join("tmp").display().to_string();
        bakeoff_testkit::procs::living()
            .iter()
            .filter(|p| p.cmdline.contains(&mark))
            .map(|p| format!("{} {}", p.pid, p.cmdline))
            .collect()
    }

    /// What is left in TMPDIR after bakeoff exits: its run directories would be here.
    fn leftovers(&self) -> Vec<String> {
        std::fs::read_dir(self.dir.join("tmp"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn assert_nothing_left(&self, what: &str) {
        // Killed processes are gone when bakeoff says so; a server's own children may take a
        // moment longer to be reaped by init.
        let until = Instant::now() + Duration::from_secs(5);
        while !self.processes().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            self.processes(),
            Vec::<String>::new(),
            "{what}: processes left"
        );
        assert_eq!(
            self.leftovers(),
            Vec::<String>::new(),
            "{what}: run directories left"
        );
    }
}

/// Read stderr until a line starting with `prefix`; every line read, joined.
fn until_line(lines: &mut impl Iterator<Item = std::io::Result<String>>, prefix: &str) -> String {
    let mut seen = String::new();
    for line in lines.by_ref().map_while(Result::ok) {
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with(prefix) {
            return seen;
        }
    }
    panic!("no line starting {prefix:?} in:\n{seen}");
}

fn sigint(pid: i32) {
    // SAFETY: signalling a child of this test (or its group).
    unsafe { libc::kill(pid, libc::SIGINT) };
}

fn server_pid(trial: &Trial) -> i32 {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(p) = trial
            .processes()
            .iter()
            .find(|p| p.contains("mariadbd") && !p.contains("--bootstrap"))
        {
            return p.split(' ').next().unwrap().parse().unwrap();
        }
        assert!(Instant::now() < until, "no server started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn rest(child: Child, lines: impl Iterator<Item = std::io::Result<String>>) -> (i32, String) {
    let err: Vec<String> = lines.map_while(Result::ok).collect();
    let mut child = child;
    let code = child.wait().unwrap().code().unwrap_or(-1);
    (code, err.join("\n"))
}

#[test]
fn one_press_by_the_group_stops_cleanly_and_the_study_resumes_with_its_run() {
    let trial = Trial::new("interrupt-once");
    let (child, mut lines) = trial.start();
    until_line(&mut lines, "[1/2");
    // The signal `timeout -s INT` sends: to bakeoff, then to its group, at once.
    let pid = child.id() as i32;
    sigint(pid);
    sigint(-pid);
    let (code, err) = rest(child, lines);
    assert_eq!(code, 130, "{err}");
    assert!(
        err.contains("bakeoff: stopping cleanly; Ctrl-C again to abandon at once"),
        "{err}"
    );
    assert!(
        !err.contains("bakeoff: abandoning"),
        "one press, not two: {err}"
    );
    trial.assert_nothing_left("one press");
    // compare opens with the study's state: not whole, and how to go on.
    assert!(
        trial.compare_head().contains(
            "incomplete: 1 of 2 runs; resume with `bakeoff study run` and its study file"
        ),
        "{}",
        trial.compare_head()
    );
    // And in JSON, as facts.
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["compare", "--format", "json"])
        .arg(trial.dir.join("study.db"))
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("compare's JSON");
    let whole = &json["opening"]["completeness"];
    assert_eq!(
        (
            whole["runs"].as_u64(),
            whole["planned"].as_u64(),
            whole["complete"].as_bool()
        ),
        (Some(1), Some(2), Some(false)),
        "{json}"
    );
    let resumed = trial.resume();
    assert!(resumed.contains("1 of 2 runs to do"), "{resumed}");
    assert!(resumed.contains("1 ok, 0 failed"), "{resumed}");
    trial.assert_nothing_left("resumed");
    assert!(
        trial.compare_head().contains("complete: all 2 runs"),
        "{}",
        trial.compare_head()
    );
}

#[test]
fn a_second_press_abandons_kills_what_it_started_and_the_study_resumes() {
    let trial = Trial::new("interrupt-twice");
    let (child, mut lines) = trial.start();
    until_line(&mut lines, "[1/2");
    // The second run's server, stopped: its clean stop would wait the shutdown's bounds.
    let server = server_pid(&trial);
    // SAFETY: a process of this test's bakeoff; SIGSTOP harms nothing else.
    unsafe { libc::kill(server, libc::SIGSTOP) };
    let pid = child.id() as i32;
    sigint(pid);
    std::thread::sleep(Duration::from_millis(700));
    let pressed = Instant::now();
    // The second press as `timeout -s INT` delivers it, to bakeoff and its group at once: one
    // press, not a third that would leave without cleaning up.
    sigint(pid);
    sigint(-pid);
    let (code, err) = rest(child, lines);
    assert_eq!(code, 130, "{err}");
    assert!(
        pressed.elapsed() < Duration::from_secs(12),
        "abandoning waited for the stop it abandons: {:?}",
        pressed.elapsed()
    );
    assert!(
        err.contains("bakeoff: abandoning: killing what it started"),
        "{err}"
    );
    let said = err
        .lines()
        .find(|l| l.starts_with("bakeoff: abandoned (exit 130): killed "))
        .unwrap_or_else(|| panic!("what it abandoned, said: {err}"));
    assert!(
        said.contains("removed 1 run directory")
            && said.contains("the results database and every run already stored are kept"),
        "{said}"
    );
    trial.assert_nothing_left("two presses");
    let resumed = trial.resume();
    assert!(resumed.contains("1 of 2 runs to do"), "{resumed}");
    assert!(resumed.contains("1 ok, 0 failed"), "{resumed}");
}

#[test]
fn nothing_is_left_by_a_press_while_a_datadir_is_made() {
    // Pressed twice during the first server's start (mariadb-install-db and its children):
    // the initializer's whole group goes, not only the shell the parent-death signal reaches.
    let trial = Trial::new("interrupt-init");
    let (child, lines) = trial.start();
    let until = Instant::now() + Duration::from_secs(30);
    while !trial.processes().iter().any(|p| p.contains("--bootstrap")) {
        assert!(Instant::now() < until, "no initializer seen");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id() as i32;
    sigint(pid);
    std::thread::sleep(Duration::from_millis(600));
    sigint(pid);
    let (code, err) = rest(child, lines);
    assert_eq!(code, 130, "{err}");
    trial.assert_nothing_left("pressed during initialization");
}
