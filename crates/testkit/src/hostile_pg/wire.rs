//! The hostile server's wire: protocol v3 messages read and written over a plain, TLS or
//! upstream (client-side TLS) connection, and what it notes of what it received.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

pub(super) type ServerTls = Option<Arc<rustls::ServerConfig>>;

pub(super) enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
    Up(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Conn {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(b),
            Conn::Tls(s) => s.read(b),
            Conn::Up(s) => s.read(b),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(b),
            Conn::Tls(s) => s.write(b),
            Conn::Up(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
            Conn::Up(s) => s.flush(),
        }
    }
}

/// A message: type byte, length, body.
pub fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

pub(super) fn auth(code: i32, rest: &[u8]) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    b.extend_from_slice(rest);
    msg(b'R', &b)
}

/// A frontend message after the startup: (type, body).
pub(super) fn read_msg(c: &mut impl Read) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    c.read_exact(&mut head)?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0; len.saturating_sub(4).min(1 << 20)];
    c.read_exact(&mut body)?;
    Ok((head[0], body))
}

/// The startup packet (or an SSLRequest): its body after the length.
pub(super) fn read_startup(c: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    c.read_exact(&mut len)?;
    let mut body = vec![
        0;
        (u32::from_be_bytes(len) as usize)
            .saturating_sub(4)
            .min(1 << 16)
    ];
    c.read_exact(&mut body)?;
    Ok(body)
}

pub(super) const SSL_REQUEST: [u8; 4] = [0x04, 0xd2, 0x16, 0x2f];

/// The client's opening: an SSLRequest answered (TLS, or N), then its startup packet.
pub(super) fn open(
    s: TcpStream,
    tls: &ServerTls,
    log: &Mutex<Vec<String>>,
) -> std::io::Result<(Conn, Vec<u8>)> {
    let mut plain = s;
    let mut first = read_startup(&mut plain)?;
    let mut conn = Conn::Plain(plain.try_clone()?);
    if first.starts_with(&SSL_REQUEST) {
        note(log, "ssl".into());
        match tls {
            Some(cfg) => {
                plain.write_all(b"S")?;
                let server =
                    rustls::ServerConnection::new(cfg.clone()).map_err(std::io::Error::other)?;
                conn = Conn::Tls(Box::new(rustls::StreamOwned::new(server, plain)));
            }
            None => plain.write_all(b"N")?,
        }
        first = read_startup(&mut conn)?;
    }
    let user = startup_value(&first, "user").unwrap_or_default();
    note(log, format!("startup {user}"));
    Ok((conn, first))
}

pub(super) fn startup_value(body: &[u8], key: &str) -> Option<String> {
    let mut parts = body.get(4..)?.split(|&b| b == 0);
    while let Some(k) = parts.next() {
        let v = parts.next()?;
        if k == key.as_bytes() {
            return Some(String::from_utf8_lossy(v).into_owned());
        }
    }
    None
}

pub(super) fn note(log: &Mutex<Vec<String>>, what: String) {
    if let Ok(mut l) = log.lock() {
        l.push(what);
    }
}

pub(super) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b.strip_suffix(&[0]).unwrap_or(b)).into_owned()
}
