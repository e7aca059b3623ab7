//! The auth plugins no server here can show: no MySQL server can be installed on this machine
//! (MariaDB has neither caching_sha2_password nor sha256_password), so a scripted server
//! speaks their exchanges, and judges the client with what the test holds and the client
//! does not: its own RSA private key (the password encrypted by bakeoff is decrypted by
//! OpenSSL's command line, not by the library that encrypted it) and, for caching_sha2's fast
//! path, PyMySQL's scramble (an independent client implementation, Debian's python3-pymysql)
//! as the oracle.
//!
//! Each scenario is one connect: the server's greeting names a plugin, may switch to another,
//! may ask for full authentication and send its public key when asked; it ends with OK when
//! what it received is right, else with an error saying what it got.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use bakeoff_driver::{AuthOptions, Conn, ConnectOptions, Endpoint};
use bakeoff_testkit::scripted;

const PASSWORD: &str = "s3cret-pässword";
const NONCE: &[u8; 20] = b"abcdefghij0123456789";

/// The scripted server's RSA key pair, made by OpenSSL's command line.
fn keys() -> &'static (PathBuf, PathBuf) {
    static K: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    K.get_or_init(|| {
        let dir = bakeoff_testkit::scratch::dir("rsa");
        let (private, public) = (dir.join("key.pem"), dir.join("pub.pem"));
        openssl(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            private.to_str().unwrap(),
        ]);
        openssl(&[
            "pkey",
            "-in",
            private.to_str().unwrap(),
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ]);
        (private, public)
    })
}

fn openssl(args: &[&str]) -> Vec<u8> {
    let o = Command::new("openssl")
        .args(args)
        .output()
        .expect("these tests need OpenSSL's command line: `apt-get install openssl` (scripts/test installs it)");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// What the client sent, decrypted with the server's private key by OpenSSL (OAEP, SHA-1),
/// then XOR the nonce: the password and its NUL when the client did it right.
fn decrypt(blob: &[u8]) -> Vec<u8> {
    let dir = keys().0.parent().unwrap().to_path_buf();
    let file = dir.join(format!("blob-{}", rand_suffix()));
    std::fs::write(&file, blob).unwrap();
    let plain = openssl(&[
        "pkeyutl",
        "-decrypt",
        "-inkey",
        keys().0.to_str().unwrap(),
        "-pkeyopt",
        "rsa_padding_mode:oaep",
        "-in",
        file.to_str().unwrap(),
    ]);
    plain
        .iter()
        .zip(NONCE.iter().cycle())
        .map(|(p, n)| p ^ n)
        .collect()
}

/// caching_sha2_password's fast-path scramble as PyMySQL computes it.
fn pymysql_scramble() -> Vec<u8> {
    let py = "import sys, pymysql._auth as a; sys.stdout.write(a.scramble_caching_sha2(sys.argv[1].encode(), sys.argv[2].encode()).hex())";
    let o = Command::new("/usr/bin/python3")
        .args(["-c", py, PASSWORD, std::str::from_utf8(NONCE).unwrap()])
        .output()
        .expect(
            "the oracle needs Debian's python3 with python3-pymysql (scripts/test installs it)",
        );
    assert!(
        o.status.success(),
        "PyMySQL: {} (install python3-pymysql: scripts/test does)",
        String::from_utf8_lossy(&o.stderr)
    );
    let hex = String::from_utf8(o.stdout).unwrap();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// One MySQL packet on a stream.
struct Wire<S: Read + Write> {
    s: S,
    seq: u8,
}

impl<S: Read + Write> Wire<S> {
    fn send(&mut self, payload: &[u8]) {
        self.s
            .write_all(&scripted::packet(self.seq, payload))
            .unwrap();
        self.seq = self.seq.wrapping_add(1);
    }
    fn recv(&mut self) -> Vec<u8> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).unwrap();
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        self.seq = h[3].wrapping_add(1);
        let mut p = vec![0; len];
        self.s.read_exact(&mut p).unwrap();
        p
    }
    fn ok(&mut self) {
        self.send(&[0, 0, 0, 2, 0, 0, 0]);
    }
    fn err(&mut self, why: &str) {
        let mut p = vec![0xff, 0x15, 0x04, b'#'];
        p.extend_from_slice(b"28000");
        p.extend_from_slice(why.as_bytes());
        self.send(&p);
    }
}

fn greeting(plugin: &str) -> Vec<u8> {
    let caps: u32 = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000 | 0x200000;
    scripted::greeting("8.4.0-scripted", caps, NONCE, plugin)
}

/// The auth response in a HandshakeResponse41.
fn auth_response(p: &[u8]) -> Vec<u8> {
    let user_end = 32 + p[32..].iter().position(|&b| b == 0).unwrap();
    let len = p[user_end + 1] as usize;
    p[user_end + 2..user_end + 2 + len].to_vec()
}

fn public_key_packet() -> Vec<u8> {
    let mut p = vec![1];
    p.extend_from_slice(&std::fs::read(&keys().1).unwrap());
    p
}

fn password_nul() -> Vec<u8> {
    let mut v = PASSWORD.as_bytes().to_vec();
    v.push(0);
    v
}

/// The server's side of each scenario.
#[derive(Clone, Copy)]
enum Script {
    /// caching_sha2 asks for full authentication; the client asks for the key (2), gets it,
    /// sends the password encrypted.
    Sha2KeyAsked,
    /// Full authentication with the key given to the client beforehand.
    Sha2KeyKnown,
    /// Full authentication over a unix socket: the password as it is.
    Sha2OnSocket,
    /// The fast path: the scramble must equal PyMySQL's.
    Sha2Fast,
    /// A switch to sha256_password: the client asks for the key (1), sends it encrypted.
    Sha256Switch,
    /// A switch to mysql_clear_password.
    Cleartext,
}

fn serve<S: Read + Write>(s: S, script: Script) {
    let mut w = Wire { s, seq: 0 };
    let first = match script {
        Script::Sha256Switch | Script::Cleartext => "mysql_native_password",
        _ => "caching_sha2_password",
    };
    w.send(&greeting(first));
    let response = auth_response(&w.recv());
    let verdict = |got: &[u8], want: &[u8], w: &mut Wire<S>| {
        if got == want {
            w.ok()
        } else {
            w.err(&format!("got {got:?}"))
        }
    };
    match script {
        Script::Sha2Fast => {
            let want = pymysql_scramble();
            if response == want {
                w.send(&[1, 3]);
                w.ok();
            } else {
                w.err(&format!("scramble {response:?} is not PyMySQL's {want:?}"));
            }
        }
        Script::Sha2KeyAsked | Script::Sha2KeyKnown | Script::Sha2OnSocket => {
            w.send(&[1, 4]);
            let mut got = w.recv();
            if matches!(script, Script::Sha2KeyAsked) {
                if got != [2] {
                    return w.err(&format!("expected a key request (2), got {got:?}"));
                }
                w.send(&public_key_packet());
                got = w.recv();
            }
            let got = match script {
                Script::Sha2OnSocket => got,
                _ => decrypt(&got),
            };
            verdict(&got, &password_nul(), &mut w);
        }
        Script::Sha256Switch => {
            let mut sw = vec![0xfe];
            sw.extend_from_slice(b"sha256_password\0");
            sw.extend_from_slice(NONCE);
            sw.push(0);
            w.send(&sw);
            let req = w.recv();
            if req != [1] {
                return w.err(&format!("expected a key request (1), got {req:?}"));
            }
            w.send(&public_key_packet());
            let got = decrypt(&w.recv());
            verdict(&got, &password_nul(), &mut w);
        }
        Script::Cleartext => {
            let mut sw = vec![0xfe];
            sw.extend_from_slice(b"mysql_clear_password\0");
            w.send(&sw);
            let got = w.recv();
            verdict(&got, &password_nul(), &mut w);
        }
    }
}

/// Connect to a scripted server over TCP (or a unix socket) with `auth`; the client's result.
fn connect(script: Script, auth: AuthOptions, unix: bool) -> Result<(), String> {
    let dir = bakeoff_testkit::scratch::dir("auth");
    let endpoint;
    let server = if unix {
        let path = dir.join(format!("s{}.sock", rand_suffix()));
        let l = UnixListener::bind(&path).unwrap();
        endpoint = Endpoint::Unix(path);
        std::thread::spawn(move || serve(l.accept().unwrap().0, script))
    } else {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        endpoint = Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port: l.local_addr().unwrap().port(),
        };
        std::thread::spawn(move || serve(l.accept().unwrap().0, script))
    };
    let mut opts = ConnectOptions::new(endpoint, "bench", PASSWORD);
    opts.auth = auth;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(async {
        Conn::connect(&opts)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    });
    let _ = server.join();
    r
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn key_file() -> &'static Path {
    &keys().1
}

#[test]
fn caching_sha2_fast_path_matches_pymysql() {
    connect(Script::Sha2Fast, AuthOptions::default(), false).expect("fast path");
}

#[test]
fn caching_sha2_full_auth_encrypts_with_the_key_asked_for_or_given() {
    let asked = AuthOptions {
        get_server_public_key: true,
        ..Default::default()
    };
    connect(Script::Sha2KeyAsked, asked, false).expect("key asked for");
    let known = AuthOptions {
        server_public_key: Some(key_file().to_path_buf()),
        ..Default::default()
    };
    connect(Script::Sha2KeyKnown, known, false).expect("key given");
    connect(Script::Sha2OnSocket, AuthOptions::default(), true).expect("on a unix socket");
    let e = connect(Script::Sha2KeyKnown, AuthOptions::default(), false).unwrap_err();
    for says in [
        "--mysql-server-public-key-path",
        "--mysql-get-server-public-key",
        "TLS",
    ] {
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn sha256_password_asks_for_the_key_only_when_told_and_encrypts() {
    // A server (or anyone in the middle of a plain connection) that switches to
    // sha256_password and sends its own key would get the password: refused unasked.
    let e = connect(Script::Sha256Switch, AuthOptions::default(), false).unwrap_err();
    assert!(
        e.contains("--mysql-get-server-public-key") && e.contains("sha256_password"),
        "{e}"
    );
    let asked = AuthOptions {
        get_server_public_key: true,
        ..Default::default()
    };
    connect(Script::Sha256Switch, asked, false).expect("sha256_password, key asked for");
}

#[test]
fn the_cleartext_plugin_only_when_asked_and_never_on_plain_tcp() {
    let e = connect(Script::Cleartext, AuthOptions::default(), true).unwrap_err();
    assert!(e.contains("--mysql-enable-cleartext-plugin"), "{e}");
    let asked = AuthOptions {
        cleartext: true,
        ..Default::default()
    };
    let e = connect(Script::Cleartext, asked.clone(), false).unwrap_err();
    assert!(e.contains("plain TCP"), "{e}");
    connect(Script::Cleartext, asked, true).expect("over a unix socket, when asked");
}
