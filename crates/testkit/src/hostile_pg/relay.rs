//! The hostile server's relay mode: a relay in the middle of a real server's login.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};

use super::wire::{msg, note, open, read_msg, text, Conn, ServerTls, SSL_REQUEST};

/// Pass one client on to the real server at `to`, as a relay in the middle would.
pub(super) fn relay(
    s: TcpStream,
    to: SocketAddr,
    tls_upstream: bool,
    then: &str,
    log: &Mutex<Vec<String>>,
    tls: ServerTls,
) -> std::io::Result<()> {
    let (mut client, startup) = open(s, &tls, log)?;
    let mut up_plain = TcpStream::connect(to)?;
    let mut up = match tls_upstream {
        false => Conn::Plain(up_plain),
        true => {
            let mut req = 8u32.to_be_bytes().to_vec();
            req.extend_from_slice(&SSL_REQUEST);
            up_plain.write_all(&req)?;
            let mut a = [0u8; 1];
            up_plain.read_exact(&mut a)?;
            let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(std::io::Error::other)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert))
            .with_no_client_auth();
            let name = rustls::pki_types::ServerName::try_from("localhost")
                .map_err(std::io::Error::other)?;
            let conn = rustls::ClientConnection::new(Arc::new(cfg), name)
                .map_err(std::io::Error::other)?;
            Conn::Up(Box::new(rustls::StreamOwned::new(conn, up_plain)))
        }
    };
    let mut packet = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
    packet.extend_from_slice(&startup);
    up.write_all(&packet)?;
    loop {
        let (kind, mut body) = read_msg(&mut up)?;
        if kind == b'R' && body.starts_with(&10i32.to_be_bytes()) {
            // Strike -PLUS: a relay cannot bind the client's channel to the server's.
            let kept: Vec<u8> = body[4..]
                .split(|&b| b == 0)
                .filter(|m| !m.is_empty() && !m.ends_with(b"-PLUS"))
                .flat_map(|m| m.iter().copied().chain([0]))
                .chain([0])
                .collect();
            body = 10i32.to_be_bytes().iter().copied().chain(kept).collect();
        }
        let done = kind == b'Z';
        if kind == b'R' && body.starts_with(&0i32.to_be_bytes()) {
            note(log, "logged in".into());
        }
        if done {
            // In: the session is the relay's now.
            up.write_all(&msg(b'Q', format!("{then}\0").as_bytes()))?;
            loop {
                let (k, b) = read_msg(&mut up)?;
                if k == b'E' {
                    note(log, format!("its statement failed: {}", text(&b)));
                }
                if k == b'Z' {
                    note(log, format!("ran {then}"));
                    return Ok(());
                }
            }
        }
        client.write_all(&msg(kind, &body))?;
        if kind == b'E' {
            return Ok(());
        }
        if kind == b'R'
            && !body.starts_with(&0i32.to_be_bytes())
            && !body.starts_with(&12i32.to_be_bytes())
        {
            let (k, b) = read_msg(&mut client)?;
            if k == b'p' {
                note(log, format!("passed on {}", text(&b)));
            }
            up.write_all(&msg(k, &b))?;
        }
    }
}

/// Accepts any certificate: the relay's own upstream leg.
#[derive(Debug)]
struct AnyCert;

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
