//! A hostile server: what it can make bakeoff hold or wait for. A scripted server (no real one
//! sends these) greets, accepts any login, then answers the first statement with a packet of
//! 1 GiB in continuation frames, a compressed frame whose zlib inflates to 1 GiB, or silence.
//! `bakeoff prepare` runs against it as a child process with a 1 MiB cap; its peak resident
//! memory (ru_maxrss from wait4, the kernel's VmHWM) must stay within the cap plus 8 MiB over
//! the same command's peak against a server that refuses at once, and the error must name
//! the bound.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bakeoff_testkit::scripted::{greeting as greeting_of, packet, read_packet};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// An error packet instead of a greeting: the baseline, nothing held.
    Refuse,
    /// 1 GiB of continuation packets (16 MiB - 1 each).
    HugePacket,
    /// One compressed frame whose header says 1000 bytes and whose zlib inflates to 1 GiB.
    ZlibBomb,
    /// One compressed frame whose header says 16 MiB - 1, its zlib as above.
    ZlibHuge,
    /// Logged in, then no answer at all (until the client leaves).
    Silent,
    /// An error whose message clears the screen and retitles the terminal.
    Escapes,
}

fn greeting(compress: bool) -> Vec<u8> {
    let mut caps: u32 = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000;
    if compress {
        caps |= 0x20;
    }
    greeting_of(
        "10.11.0-hostile",
        caps,
        b"abcdefghijklmnopqrst",
        "mysql_native_password",
    )
}

/// 1 GiB of zeros as zlib (about 1 MiB), made once.
fn bomb() -> &'static [u8] {
    static B: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 16 << 20];
        for _ in 0..(GIB / (16 << 20)) {
            z.write_all(&zeros).unwrap();
        }
        z.finish().unwrap()
    })
}

fn serve(mut s: TcpStream, how: Hostile) -> std::io::Result<()> {
    if let Hostile::Refuse = how {
        let mut err = vec![0xff, 0x10, 0x04, b'#'];
        err.extend_from_slice(b"08004Too many connections");
        return s.write_all(&packet(0, &err));
    }
    let compress = matches!(how, Hostile::ZlibBomb | Hostile::ZlibHuge);
    s.write_all(&packet(0, &greeting(compress)))?;
    read_packet(&mut s)?;
    s.write_all(&packet(2, &[0, 0, 0, 2, 0, 0, 0]))?;
    // The first command (compressed or not, its bytes are not needed).
    let mut first = [0u8; 64];
    let _ = s.read(&mut first)?;
    match how {
        Hostile::HugePacket => {
            let chunk = vec![b'x'; (1 << 24) - 1];
            for seq in 0..(GIB / ((1 << 24) - 1)) as u8 + 1 {
                s.write_all(&packet(seq + 1, &chunk))?;
            }
        }
        Hostile::ZlibBomb | Hostile::ZlibHuge => {
            let z = bomb();
            let said: u32 = match how {
                Hostile::ZlibBomb => 1000,
                _ => (1 << 24) - 1,
            };
            let mut frame = (z.len() as u32).to_le_bytes()[..3].to_vec();
            frame.push(0);
            frame.extend_from_slice(&said.to_le_bytes()[..3]);
            s.write_all(&frame)?;
            s.write_all(z)?;
        }
        Hostile::Escapes => {
            // Every command gets it, until the client gives up.
            let mut err = vec![0xff, 0x28, 0x04, b'#'];
            err.extend_from_slice(b"42000boom\x1b[2J\x1b]0;pwned\x07\nFATAL: fake line");
            loop {
                s.write_all(&packet(1, &err))?;
                read_packet(&mut s)?;
            }
        }
        Hostile::Silent | Hostile::Refuse => {}
    }
    // Hold the connection until the client leaves.
    let _ = s.read(&mut first);
    Ok(())
}

/// `bakeoff prepare` against a scripted server acting `how`: its exit code, stderr, peak
/// resident memory in bytes and wall time.
fn prepare(how: Hostile, extra: &[&str]) -> (i32, String, u64, Duration) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    if matches!(how, Hostile::ZlibBomb | Hostile::ZlibHuge) {
        bomb();
    }
    let server = std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            let _ = serve(s, how);
        }
    });
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "prepare",
            "oltp_point_select",
            "--tables=1",
            "--table-size=10",
        ])
        .args(["--mysql-host=127.0.0.1", &format!("--mysql-port={port}")])
        .args(["--mysql-user=u", "--max-packet=1M"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bakeoff");
    let (status, peak) = wait_with_peak(child.id());
    let wall = started.elapsed();
    let mut err = String::new();
    child.stderr.unwrap().read_to_string(&mut err).unwrap();
    let _ = server.join();
    (status, err, peak, wall)
}

/// Wait for the child and read its peak resident set from the kernel (wait4's ru_maxrss).
fn wait_with_peak(pid: u32) -> (i32, u64) {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    assert_eq!(r, pid as i32, "wait4");
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 * 1024)
}

/// Refused with the cap named, and held no more than the cap plus 8 MiB over the baseline.
fn refused_within_the_cap(how: Hostile, extra: &[&str], says: &str) {
    let (_, _, base, _) = prepare(Hostile::Refuse, extra);
    let (code, err, peak, _) = prepare(how, extra);
    assert_ne!(code, 0, "{how:?}: {err}");
    assert!(err.contains(says), "{how:?}: '{says}' missing from: {err}");
    let grew = peak.saturating_sub(base);
    assert!(
        grew <= MIB + 8 * MIB,
        "{how:?}: peak {} MiB against {} MiB refused at once: grew {} MiB, over the 1 MiB cap + 8 MiB",
        peak / MIB,
        base / MIB,
        grew / MIB
    );
}

#[test]
fn a_gigabyte_packet_is_refused_at_its_header_within_the_cap() {
    refused_within_the_cap(Hostile::HugePacket, &[], "over the 1048576-byte cap");
}

#[test]
fn a_zlib_bomb_inflates_no_further_than_its_frame_says() {
    let c = ["--mysql-compression=on"];
    refused_within_the_cap(Hostile::ZlibBomb, &c, "more than 1000 bytes");
    refused_within_the_cap(Hostile::ZlibHuge, &c, "over the 1048576-byte cap");
}

#[test]
fn a_silent_server_ends_prepare_with_the_timeout_named() {
    let (code, err, _, wall) = prepare(Hostile::Silent, &["--read-timeout=1"]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("did not answer within 1 s") && err.contains("--read-timeout"),
        "{err}"
    );
    assert!(wall < Duration::from_secs(20), "took {wall:?}");
}

#[test]
fn a_servers_escape_sequences_are_written_out_not_sent_to_the_terminal() {
    let (code, err, _, _) = prepare(Hostile::Escapes, &[]);
    assert_ne!(code, 0, "{err}");
    assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err:?}");
    assert!(
        err.contains("boom\\x1b[2J\\x1b]0;pwned\\x07\\x0aFATAL"),
        "{err:?}"
    );
}

/// While bakeoff waits on a silent server, its command line (what `ps` shows) holds x's where
/// the password was, and it may write no core file.
#[test]
fn a_password_on_the_command_line_is_blanked_and_no_core_is_dumped() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            let _ = serve(s, Hostile::Silent);
        }
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["prepare", "oltp_point_select", "--mysql-host=127.0.0.1"])
        .arg(format!("--mysql-port={port}"))
        .args([
            "--mysql-user=u",
            "--mysql-password=hunter2",
            "--read-timeout=3",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
    let _ = child.wait();
    let _ = server.join();
    let shown = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("--mysql-password=xxxxxxx"), "{shown}");
    let core = limits
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .unwrap();
    assert_eq!(core.split_whitespace().nth(4), Some("0"), "{core}");
}
