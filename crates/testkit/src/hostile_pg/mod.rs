//! A hostile PostgreSQL (protocol v3) for the seams no real server shows: a login of its own
//! choosing (trust, cleartext, md5, SCRAM offered with or without -PLUS and then skipped or
//! broken), TLS with a certificate the test makes, chosen answers to statements (a huge
//! header, rows claiming more columns than they hold, endless notices, COPY OUT, escape
//! sequences, a stall), and a relay mode that terminates TLS itself and passes the login
//! on to a real server. What it received is kept in [`Hostile::seen`].

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};

use wire::{auth, msg, note, open, read_msg, text, Conn, ServerTls};

mod relay;
mod wire;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server logs the client in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// AuthenticationOk at once.
    Trust,
    /// Asks for the password in clear, then says Ok.
    Cleartext,
    /// Asks for md5's answer, then says Ok.
    Md5,
    /// Offers these SASL mechanisms, then deviates as `Skip` says (it does not know the
    /// password, so it never completes SCRAM properly).
    Scram(Vec<&'static str>, Skip),
    /// A message header claiming this many bytes, and nothing after it.
    HugeHeader(u32),
    /// Nothing at all after the startup message, for a minute.
    Silent,
    /// ParameterStatus messages after the startup message, without end: a read never blocks.
    Chatter,
}

/// Where a hostile SCRAM exchange leaves the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// AuthenticationOk right after the client's first message.
    OkAfterFirst,
    /// Its first message, then AuthenticationOk after the client's proof (no server final).
    OkAfterProof,
    /// Its first message, then a server final with a wrong signature.
    WrongSignature,
}

/// What the server answers a statement that contains a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A header claiming this many bytes, then a stall.
    HugeHeader(u32),
    /// This many DataRows of 7 bytes each, each claiming 32,767 columns.
    WideRows(u32),
    /// This many NoticeResponses, then the statement's end.
    Notices(u32),
    /// CopyOutResponse and endless CopyData.
    CopyOut,
    /// An error whose message holds terminal escape sequences.
    Escapes,
    /// Nothing, ever.
    Stall,
    /// One row of one column holding this text.
    Value(&'static str),
    /// The statement done, and the session said to be in a transaction block (`T`).
    InTransaction,
}

/// The script.
#[derive(Debug, Clone)]
pub struct Script {
    pub login: Login,
    /// Answer an SSLRequest with TLS (a certificate from the lab's CA for 127.0.0.1).
    pub tls: bool,
    pub answers: Vec<(&'static str, Answer)>,
}

/// A running hostile server.
pub struct Hostile {
    pub port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    /// The CA that signed its certificate (PEM), when it speaks TLS.
    pub ca_pem: Option<String>,
}

impl Hostile {
    /// What it received: `ssl`, `startup USER`, `password TEXT`, `sasl MECHANISM FIRST`,
    /// `proof TEXT`, `query TEXT`, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Start a scripted server on 127.0.0.1 (any port), serving every connection.
    pub fn start(script: Script) -> Hostile {
        Hostile::start_at("127.0.0.1", script)
    }

    /// The same on `address` (one that [`in_private_net`] made, say).
    pub fn start_at(address: &str, script: Script) -> Hostile {
        let (tls, ca_pem) = server_tls(script.tls);
        let (listener, port, seen) = listen(address);
        let log = seen.clone();
        std::thread::spawn(move || {
            for s in listener.incoming().flatten() {
                let (script, log, tls) = (script.clone(), log.clone(), tls.clone());
                std::thread::spawn(move || {
                    let _ = serve(s, &script, &log, tls);
                });
            }
        });
        Hostile { port, seen, ca_pem }
    }

    /// A relay to the real server at `to`: it answers TLS with a certificate of its own
    /// (from its own CA), passes the startup and the login on (over TLS to the server when
    /// `tls_upstream`), with `-PLUS` struck from the mechanisms the server offers, and once
    /// logged in sends `then` as its own statement before it hangs up.
    pub fn relay(to: SocketAddr, tls_upstream: bool, then: &'static str) -> Hostile {
        let (tls, ca_pem) = server_tls(true);
        let (listener, port, seen) = listen("127.0.0.1");
        let log = seen.clone();
        std::thread::spawn(move || {
            for s in listener.incoming().flatten() {
                let (log, tls) = (log.clone(), tls.clone());
                std::thread::spawn(move || {
                    let _ = relay::relay(s, to, tls_upstream, then, &log, tls);
                });
            }
        });
        Hostile { port, seen, ca_pem }
    }
}

fn listen(address: &str) -> (TcpListener, u16, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind((address, 0)).expect("bind a hostile server");
    let port = l.local_addr().expect("its port").port();
    (l, port, Arc::new(Mutex::new(Vec::new())))
}

/// A certificate for 127.0.0.1 from a CA made here, and the CA's PEM.
fn server_tls(on: bool) -> (ServerTls, Option<String>) {
    if !on {
        return (None, None);
    }
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    leaf.subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &ca).unwrap();
    let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], der)
        .unwrap();
    (Some(Arc::new(config)), Some(ca.pem()))
}

/// The address of a network of its own (a namespace, with a link-local address on its
/// loopback device that exists nowhere else): `f` runs on a thread inside it, and what it
/// binds, connects and spawns stays inside. An address that is not a loopback one, for what
/// bakeoff treats otherwise (a password to a remote host). Needs root, as CI has.
pub fn in_private_net<T: Send>(f: impl FnOnce(&str) -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: unshare has no memory effects; it moves this thread alone.
                let r = unsafe { libc::unshare(libc::CLONE_NEWNET) };
                assert_eq!(
                    r,
                    0,
                    "unshare(CLONE_NEWNET) needs root: {}",
                    std::io::Error::last_os_error()
                );
                let address = "169.254.99.1";
                for args in [
                    &["link", "set", "lo", "up"][..],
                    &["addr", "add", &format!("{address}/32"), "dev", "lo"],
                ] {
                    let ok = std::process::Command::new("ip").args(args).status();
                    assert!(
                        ok.is_ok_and(|s| s.success()),
                        "ip {args:?} (apt-get install iproute2)"
                    );
                }
                f(address)
            })
            .join()
            .expect("the private network's thread")
    })
}

/// A connection, plain or TLS.
fn serve(
    s: TcpStream,
    script: &Script,
    log: &Mutex<Vec<String>>,
    tls: ServerTls,
) -> std::io::Result<()> {
    let (mut c, _) = open(s, &tls, log)?;
    if !login(&mut c, &script.login, log)? {
        return Ok(());
    }
    let mut ready = msg(b'S', b"server_version\x0015.0\x00");
    ready.extend(msg(b'K', &[0, 0, 0, 7, 0, 0, 0, 9]));
    ready.extend(msg(b'Z', b"I"));
    c.write_all(&ready)?;
    loop {
        let (kind, body) = read_msg(&mut c)?;
        match kind {
            b'X' => return Ok(()),
            b'Q' => {
                let sql = text(&body);
                note(log, format!("query {sql}"));
                let answer = script.answers.iter().find(|(k, _)| sql.contains(k));
                match answer {
                    Some((_, a)) => answer_with(&mut c, a)?,
                    None => {
                        let mut out = msg(b'C', b"SELECT 0\x00");
                        out.extend(msg(b'Z', b"I"));
                        c.write_all(&out)?;
                    }
                }
            }
            _ => {}
        }
    }
}

/// The script's login; whether the client is in.
fn login(c: &mut Conn, how: &Login, log: &Mutex<Vec<String>>) -> std::io::Result<bool> {
    match how {
        Login::Trust => c.write_all(&auth(0, &[]))?,
        Login::Cleartext | Login::Md5 => {
            let (code, rest): (i32, &[u8]) = match how {
                Login::Md5 => (5, b"salt"),
                _ => (3, b""),
            };
            c.write_all(&auth(code, rest))?;
            let (_, body) = read_msg(c)?;
            note(log, format!("password {}", text(&body)));
            c.write_all(&auth(0, &[]))?;
        }
        Login::Scram(mechanisms, skip) => {
            let mut list = Vec::new();
            for m in mechanisms {
                list.extend_from_slice(m.as_bytes());
                list.push(0);
            }
            list.push(0);
            c.write_all(&auth(10, &list))?;
            let (_, body) = read_msg(c)?;
            let mut f = body.split(|&b| b == 0);
            let mechanism = text(f.next().unwrap_or_default());
            let first =
                String::from_utf8_lossy(body.get(mechanism.len() + 5..).unwrap_or_default())
                    .into_owned();
            note(log, format!("sasl {mechanism} {first}"));
            if *skip == Skip::OkAfterFirst {
                c.write_all(&auth(0, &[]))?;
                return Ok(true);
            }
            let nonce = first.split("r=").nth(1).unwrap_or("").to_string();
            let server_first = format!("r={nonce}hostile,s=c2FsdHNhbHQ=,i=4096");
            c.write_all(&auth(11, server_first.as_bytes()))?;
            let (_, proof) = read_msg(c)?;
            note(log, format!("proof {}", text(&proof)));
            match skip {
                Skip::WrongSignature => {
                    let fin = "v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
                    let mut out = auth(12, fin.as_bytes());
                    out.extend(auth(0, &[]));
                    c.write_all(&out)?;
                }
                _ => c.write_all(&auth(0, &[]))?,
            }
        }
        Login::Silent => {
            std::thread::sleep(Duration::from_secs(60));
            return Ok(false);
        }
        Login::Chatter => {
            let one = msg(b'S', b"application_name\0x\0");
            let batch: Vec<u8> = (0..100).flat_map(|_| one.clone()).collect();
            loop {
                c.write_all(&batch)?;
            }
        }
        Login::HugeHeader(len) => {
            let mut m = vec![b'R'];
            m.extend_from_slice(&len.to_be_bytes());
            c.write_all(&m)?;
            std::thread::sleep(Duration::from_secs(30));
            return Ok(false);
        }
    }
    Ok(true)
}

fn answer_with(c: &mut Conn, a: &Answer) -> std::io::Result<()> {
    match a {
        Answer::HugeHeader(len) => {
            let mut m = vec![b'D'];
            m.extend_from_slice(&len.to_be_bytes());
            c.write_all(&m)?;
            std::thread::sleep(Duration::from_secs(30));
        }
        Answer::WideRows(n) => {
            let mut head = 1i16.to_be_bytes().to_vec();
            head.extend_from_slice(b"x\x00");
            head.extend_from_slice(&[0; 4 + 2 + 4 + 2 + 4 + 2]);
            c.write_all(&msg(b'T', &head))?;
            let row = msg(b'D', &32767i16.to_be_bytes());
            let batch: Vec<u8> = (0..1000).flat_map(|_| row.clone()).collect();
            for _ in 0..n / 1000 {
                c.write_all(&batch)?;
            }
            let mut end = msg(b'C', b"SELECT 1\x00");
            end.extend(msg(b'Z', b"I"));
            c.write_all(&end)?;
        }
        Answer::Notices(n) => {
            let notice = msg(b'N', b"SNOTICE\x00C00000\x00Mnotice\x00\x00");
            for _ in 0..*n {
                c.write_all(&notice)?;
            }
            let mut end = msg(b'C', b"SELECT 0\x00");
            end.extend(msg(b'Z', b"I"));
            c.write_all(&end)?;
        }
        Answer::CopyOut => {
            c.write_all(&msg(b'H', &[0, 0, 0]))?;
            let data = msg(b'd', &[b'x'; 1000]);
            loop {
                c.write_all(&data)?;
            }
        }
        Answer::Escapes => {
            let mut out = msg(
                b'E',
                b"SERROR\x00C42000\x00M\x1b]0;owned\x07\x1b[2J\x00\x00",
            );
            out.extend(msg(b'Z', b"I"));
            c.write_all(&out)?;
        }
        Answer::Stall => std::thread::sleep(Duration::from_secs(60)),
        Answer::InTransaction => {
            let mut out = msg(b'C', b"BEGIN\x00");
            out.extend(msg(b'Z', b"T"));
            c.write_all(&out)?;
        }
        Answer::Value(v) => {
            let mut head = 1i16.to_be_bytes().to_vec();
            head.extend_from_slice(b"v\x00");
            head.extend_from_slice(&[0; 4 + 2]);
            head.extend_from_slice(&25u32.to_be_bytes());
            head.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0]);
            let mut row = 1i16.to_be_bytes().to_vec();
            row.extend_from_slice(&(v.len() as i32).to_be_bytes());
            row.extend_from_slice(v.as_bytes());
            let mut out = msg(b'T', &head);
            out.extend(msg(b'D', &row));
            out.extend(msg(b'C', b"SELECT 1\x00"));
            out.extend(msg(b'Z', b"I"));
            c.write_all(&out)?;
        }
    }
    Ok(())
}
