//! What a connection talks over: the plain socket, or TLS on it once the handshake asked for
//! it. rustls is sans-IO: records are read from and written to the plain socket with its own
//! waits (reactor or poll), so TLS works the same on both kinds of connection.

use std::io::{self, Read, Write};
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

use super::stream::{send_now, Plain};
use super::tls::{handshake_error, TlsSession};
use crate::Endpoint;

pub enum Stream {
    Plain(Plain),
    Tls(Box<TlsStream>),
    /// Only while a stream changes kind (see `replace`): never read or written.
    Detached,
}

pub struct TlsStream {
    io: Plain,
    tls: ClientConnection,
    /// Records read from the socket, `raw[at..len]` not yet handed to rustls.
    raw: Box<[u8]>,
    at: usize,
    len: usize,
    out: Vec<u8>,
}

fn detached() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the connection was closed")
}

impl Stream {
    pub async fn connect(endpoint: &Endpoint) -> io::Result<Stream> {
        Plain::connect(endpoint).await.map(Stream::Plain)
    }

    pub fn connect_blocking(
        endpoint: &Endpoint,
        timeout: std::time::Duration,
    ) -> io::Result<Stream> {
        Plain::connect_blocking(endpoint, timeout).map(Stream::Plain)
    }

    /// The same stream with blocking waits (see `stream.rs`).
    pub fn make_blocking(&mut self) -> io::Result<()> {
        *self = match std::mem::replace(self, Stream::Detached) {
            Stream::Plain(p) => Stream::Plain(p.into_blocking()?),
            Stream::Tls(mut t) => {
                let io = std::mem::replace(&mut t.io, Plain::Detached);
                t.io = io.into_blocking()?;
                Stream::Tls(t)
            }
            Stream::Detached => return Err(detached()),
        };
        Ok(())
    }

    /// TLS from here on: the handshake with `name` as the server's name, checked as `config`
    /// says. An error is the certificate's problem or the handshake's, in words.
    pub async fn start_tls(
        &mut self,
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> Result<(), String> {
        let Stream::Plain(_) = self else {
            return Err("TLS was already started".into());
        };
        let Stream::Plain(io) = std::mem::replace(self, Stream::Detached) else {
            unreachable!("checked above")
        };
        let tls = ClientConnection::new(config, name).map_err(|e| e.to_string())?;
        let mut t = Box::new(TlsStream {
            io,
            tls,
            raw: vec![0; 18 * 1024].into_boxed_slice(),
            at: 0,
            len: 0,
            out: Vec::with_capacity(18 * 1024),
        });
        let r = t.handshake().await;
        *self = Stream::Tls(t);
        r
    }

    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(p) => p.read(buf).await,
            Stream::Tls(t) => t.read(buf).await,
            Stream::Detached => Err(detached()),
        }
    }

    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(p) => p.write_all(buf).await,
            Stream::Tls(t) => t.write_all(buf).await,
            Stream::Detached => Err(detached()),
        }
    }

    /// Send `buf` now if the socket takes it whole, never waiting (a goodbye from a drop);
    /// over TLS as a record, followed by TLS's own goodbye.
    pub fn send_now(&mut self, buf: &[u8]) -> bool {
        match self {
            Stream::Plain(p) => send_now(p.raw_fd(), buf),
            Stream::Tls(t) => {
                let mut out = Vec::new();
                if t.tls.writer().write_all(buf).is_err() {
                    return false;
                }
                t.tls.send_close_notify();
                while t.tls.wants_write() {
                    if t.tls.write_tls(&mut out).is_err() {
                        return false;
                    }
                }
                send_now(t.io.raw_fd(), &out)
            }
            Stream::Detached => false,
        }
    }

    fn plain(&self) -> Option<&Plain> {
        match self {
            Stream::Plain(p) => Some(p),
            Stream::Tls(t) => Some(&t.io),
            Stream::Detached => None,
        }
    }

    pub fn is_unix(&self) -> bool {
        self.plain().is_some_and(Plain::is_unix)
    }

    /// Its reads wait in the socket (poll), where no runtime's timer reaches.
    pub fn is_blocking(&self) -> bool {
        self.plain().is_some_and(Plain::is_blocking)
    }

    pub fn peer_pid(&self) -> Option<u32> {
        self.plain().and_then(Plain::peer_pid)
    }

    /// The server's own certificate (DER), over TLS: what `tls-server-end-point` hashes.
    pub fn peer_certificate(&self) -> Option<Vec<u8>> {
        let Stream::Tls(t) = self else {
            return None;
        };
        Some(t.tls.peer_certificates()?.first()?.to_vec())
    }

    /// The TLS version and cipher agreed on, over TLS.
    pub fn tls_session(&self) -> Option<TlsSession> {
        let Stream::Tls(t) = self else {
            return None;
        };
        let version = match t.tls.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
            other => format!("{other:?}"),
        };
        let cipher = format!("{:?}", t.tls.negotiated_cipher_suite()?.suite());
        Some(TlsSession { version, cipher })
    }
}

impl TlsStream {
    async fn handshake(&mut self) -> Result<(), String> {
        while self.tls.is_handshaking() {
            self.flush().await.map_err(|e| e.to_string())?;
            if !self.tls.is_handshaking() {
                break;
            }
            if self.tls.wants_read() {
                match self.take_records().await {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(
                            "the server closed the connection during the TLS handshake".into()
                        )
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        // The client's last flight (TLS 1.2's Finished, or a certificate) may still be queued.
        self.flush().await.map_err(|e| e.to_string())
    }

    /// Hand rustls the next records, reading the socket when none are left over: false at
    /// the end of the stream. rustls's refusals are InvalidData, in words.
    async fn take_records(&mut self) -> io::Result<bool> {
        if self.at == self.len {
            let n = self.io.read(&mut self.raw).await?;
            if n == 0 {
                return Ok(false);
            }
            (self.at, self.len) = (0, n);
        }
        let mut records = &self.raw[self.at..self.len];
        let used = self.tls.read_tls(&mut records)?;
        self.at += used;
        if let Err(e) = self.tls.process_new_packets() {
            // Tell the server why (an alert), best effort, before giving up.
            let _ = self.flush().await;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                handshake_error(&e),
            ));
        }
        Ok(true)
    }

    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if !self.take_records().await? {
                return Ok(0);
            }
            // Post-handshake messages may want an answer (a key update).
            self.flush().await?;
        }
    }

    /// rustls takes a limited amount of plaintext at a time (64 KiB): a larger write (LOAD
    /// DATA's chunks) goes a record batch at a time.
    async fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = self.tls.writer().write(buf)?;
            buf = &buf[n..];
            self.flush().await?;
        }
        Ok(())
    }

    /// Write every record rustls has queued.
    async fn flush(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            self.out.clear();
            self.tls.write_tls(&mut self.out)?;
            self.io.write_all(&self.out).await?;
        }
        Ok(())
    }
}
