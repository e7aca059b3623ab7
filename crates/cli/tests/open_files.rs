//! The open-files limit, checked before any client is built: `bakeoff pgbench` refuses as
//! pgbench 15 does (its soft limit against -c plus three, in C's int arithmetic, as it reads
//! -c), beside the real pgbench; `bakeoff run`, sysbench's grammar and a sysbench script's run
//! name the limit and what to do. Each child gets its limit from `setrlimit` before it execs,
//! and every run is bounded: a client count that would be built before the check shows as a
//! timeout or a capped address space, never as memory this machine gives away.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::pgbench::real_pgbench;

/// How long a refusal may take: it comes before anything is connected or built.
const PROMPT: Duration = Duration::from_secs(5);

/// A child's stdout and stderr, its exit code, and how long it ran; killed after 20 s.
struct Ran {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    took: Duration,
}

/// Run `program args` with the open-files limit `nofile` (soft, hard; `None`: this
/// process's), its address space capped at 4 GiB.
fn run(program: &str, args: &[&str], nofile: Option<(u64, u64)>) -> Ran {
    let mut c = Command::new(program);
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("PGHOST")
        .env_remove("PGPORT")
        .env_remove("PGDATABASE");
    // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let cap = 4 << 30;
            let space = libc::rlimit {
                rlim_cur: cap,
                rlim_max: cap,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &space) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some((soft, hard)) = nofile {
                let files = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &files) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = c.spawn().unwrap_or_else(|e| panic!("{program}: {e}"));
    // The pipes are read as the child runs (a refusal says little; a run may say more).
    let read = |mut p: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?}: still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    Ran {
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        code: status.code(),
        took,
    }
}

fn bakeoff() -> &'static str {
    env!("CARGO_BIN_EXE_bakeoff")
}

/// This process's hard open-files limit (a child may lower its soft limit under it).
fn hard_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_max
}

/// pgbench's line and bakeoff's `pgbench` line, run alike; their output and exit codes must
/// be the same, and bakeoff's refusal prompt.
fn beside_pgbench(args: &[&str], nofile: Option<(u64, u64)>) -> Ran {
    let theirs = run(real_pgbench().to_str().unwrap(), args, nofile);
    let mut ours_args = vec!["pgbench"];
    ours_args.extend_from_slice(args);
    let ours = run(bakeoff(), &ours_args, nofile);
    assert_eq!(
        (ours.code, ours.stdout.as_str(), ours.stderr.as_str()),
        (theirs.code, theirs.stdout.as_str(), theirs.stderr.as_str()),
        "{args:?} with open files {nofile:?}: bakeoff, then pgbench"
    );
    assert!(
        ours.took < PROMPT,
        "{args:?}: bakeoff took {:?} to refuse",
        ours.took
    );
    ours
}

#[test]
fn pgbench_refuses_a_client_count_near_int_max_at_once_in_its_words() {
    // pgbench's sum wraps: it asks for a negative number of files, and still refuses.
    let ran = beside_pgbench(
        &["-c", "2147483647", "-n", "-S", "-h", "/nonexistent", "x"],
        None,
    );
    assert_eq!(ran.code, Some(1));
    assert!(
        ran.stderr.starts_with(
            "pgbench: error: need at least -2147483646 open files, but system limit is "
        ) && ran.stderr.ends_with(
            "\npgbench: hint: Reduce number of clients, or use limit/ulimit to increase the system limit.\n"
        ),
        "{}",
        ran.stderr
    );
    for c in ["2147483645", "2147483644"] {
        beside_pgbench(&["-c", c, "-n", "-S", "-h", "/nonexistent", "x"], None);
    }
}

#[test]
fn pgbench_checks_its_soft_open_files_limit_as_it_reads_c() {
    // The soft limit is what pgbench checks, never raises: a higher hard limit changes nothing.
    let low = Some((100, hard_limit()));
    let ran = beside_pgbench(&["-c", "200", "-n", "-S", "-h", "/nonexistent", "x"], low);
    assert_eq!(
        ran.stderr,
        "pgbench: error: need at least 203 open files, but system limit is 100\n\
         pgbench: hint: Reduce number of clients, or use limit/ulimit to increase the system limit.\n"
    );
    for args in [
        // One over: 98 clients need 101.
        &["-c", "98", "-n", "-h", "/nonexistent", "x"][..],
        // Exactly the limit: pgbench goes on (and fails to connect, as both say).
        &["-c", "97", "-n", "-h", "/nonexistent", "x"],
        // As it reads -c: with -i too, before an option it would refuse later.
        &["-i", "-c", "200", "-h", "/nonexistent", "x"],
        &["-c", "200", "-j", "0", "x"],
        // An option refused before -c is read is what it says.
        &["-j", "0", "-c", "200", "x"],
        // Each -c is checked as it comes.
        &["-c", "200", "-c", "5", "-n", "-h", "/nonexistent", "x"],
    ] {
        beside_pgbench(args, low);
    }
}

/// A run refused for its connections: exit `code`, the limit and what to do in its message,
/// before anything is connected.
fn refused_for_files(args: &[&str], code: i32) {
    let ran = run(bakeoff(), args, Some((100, 100)));
    // sysbench's grammar says its FATAL lines on stdout, as sysbench does.
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, Some(code), "{args:?}: {said}");
    assert!(
        said.contains("open files, but the limit here is 100 (hard 100)")
            && said.contains("raise it (ulimit -n ")
            && said.contains("or use fewer connections"),
        "{args:?}: {said}"
    );
    assert!(ran.took < PROMPT, "{args:?}: took {:?}", ran.took);
}

#[test]
fn runs_with_more_connections_than_the_limit_allows_name_it_and_what_to_do() {
    let socket = "--mysql-socket=/nonexistent/mysqld.sock";
    // bakeoff's grammar and sysbench's, a native workload: before the server is reached.
    refused_for_files(&["run", "oltp_read_only", "--threads=200", socket], 2);
    refused_for_files(&["oltp_read_only", "--threads=200", socket, "run"], 1);
    // A sysbench script of one's own: its threads are never started.
    let dir = bakeoff_testkit::scratch::dir("open-files");
    let script = dir.join("events.lua");
    std::fs::write(&script, "function event()\nend\n").unwrap();
    let script = script.to_str().unwrap();
    refused_for_files(&[script, "--threads=200", "--time=1", "run"], 1);
}
