//! PostgreSQL's password exchanges: md5 (`"md5" + md5(md5(password + user) + salt)`) and
//! SCRAM-SHA-256 (RFC 5802 and 7677), whose last step checks the server's signature, so a
//! server that does not know the password cannot pass as one that does. Over TLS the exchange
//! is bound to the server's certificate when the server offers SCRAM-SHA-256-PLUS
//! (`tls-server-end-point`, RFC 5929), and says `y` when it does not, as libpq does: a relay
//! that terminates TLS with a certificate of its own then cannot pass the login on.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use md5::{Digest, Md5};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The md5 login's answer for `salt`.
pub fn md5_answer(user: &str, password: &str, salt: &[u8]) -> String {
    let inner = hex(&Md5::new()
        .chain_update(password.as_bytes())
        .chain_update(user.as_bytes())
        .finalize());
    let outer = Md5::new()
        .chain_update(inner.as_bytes())
        .chain_update(salt)
        .finalize();
    format!("md5{}", hex(&outer))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    m.update(data);
    m.finalize().into_bytes().into()
}

/// PBKDF2-HMAC-SHA-256 for one 32-byte block (RFC 8018's Hi()).
fn hi(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut first = salt.to_vec();
    first.extend_from_slice(&1u32.to_be_bytes());
    let mut u = hmac(password, &first);
    let mut out = u;
    for _ in 1..iterations {
        u = hmac(password, &u);
        for (o, x) in out.iter_mut().zip(u) {
            *o ^= x;
        }
    }
    out
}

/// What binds an exchange to its TLS channel (RFC 5802's gs2 header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// `n`: no TLS, or channel_binding=disable.
    Unsupported,
    /// `y`: this client binds, but the server offered no -PLUS mechanism over TLS.
    NotOffered,
    /// `p=tls-server-end-point`: the hash of the server's certificate.
    EndPoint(Vec<u8>),
}

impl Binding {
    fn header(&self) -> &'static str {
        match self {
            Binding::Unsupported => "n,,",
            Binding::NotOffered => "y,,",
            Binding::EndPoint(_) => "p=tls-server-end-point,,",
        }
    }

    /// The mechanism name SASLInitialResponse names.
    pub fn mechanism(&self) -> &'static str {
        match self {
            Binding::EndPoint(_) => "SCRAM-SHA-256-PLUS",
            _ => "SCRAM-SHA-256",
        }
    }
}

/// `tls-server-end-point`'s data for a certificate (DER): its hash by the hash of its
/// signature algorithm, SHA-256 where that is MD5 or SHA-1 (RFC 5929 section 4.1). For a
/// certificate whose algorithm names no hash (RSASSA-PSS, Ed25519) PostgreSQL's server
/// cannot bind at all; SHA-256 here then fails the login rather than passing it.
pub fn end_point_hash(cert: &[u8]) -> Vec<u8> {
    use sha2::{Sha224, Sha384, Sha512};
    use x509_parser::prelude::FromDer;
    let oid = x509_parser::certificate::X509Certificate::from_der(cert)
        .ok()
        .map(|(_, c)| c.signature_algorithm.algorithm.to_id_string());
    match oid.as_deref() {
        // sha224WithRSAEncryption, ecdsa-with-SHA224
        Some("1.2.840.113549.1.1.14" | "1.2.840.10045.4.3.1") => Sha224::digest(cert).to_vec(),
        // sha384WithRSAEncryption, ecdsa-with-SHA384
        Some("1.2.840.113549.1.1.12" | "1.2.840.10045.4.3.3") => Sha384::digest(cert).to_vec(),
        // sha512WithRSAEncryption, ecdsa-with-SHA512
        Some("1.2.840.113549.1.1.13" | "1.2.840.10045.4.3.4") => Sha512::digest(cert).to_vec(),
        _ => Sha256::digest(cert).to_vec(),
    }
}

/// One SCRAM-SHA-256 exchange, client side.
pub struct Scram {
    password: String,
    nonce: String,
    first_bare: String,
    binding: Binding,
    /// The server's signature to expect, once the proof is sent.
    server_signature: Option<[u8; 32]>,
    /// The server's final message carried that signature.
    verified: bool,
}

/// The most PBKDF2 iterations a server may ask for: PostgreSQL's default is 4096, and a
/// hostile server must not hold a connect's CPU for minutes.
const MAX_ITERATIONS: u32 = 1 << 20;

impl Scram {
    /// `nonce`: printable random characters, no comma.
    pub fn new(password: &str, nonce: String, binding: Binding) -> Scram {
        // The user name goes in the startup message; SCRAM's is left empty, as libpq does.
        let first_bare = format!("n=,r={nonce}");
        Scram {
            password: password.to_string(),
            nonce,
            first_bare,
            binding,
            server_signature: None,
            verified: false,
        }
    }

    /// SASLInitialResponse's data.
    pub fn client_first(&self) -> Vec<u8> {
        format!("{}{}", self.binding.header(), self.first_bare).into_bytes()
    }

    /// The binding this exchange uses.
    pub fn binding(&self) -> &Binding {
        &self.binding
    }

    /// Whether the server's final message proved it knows the password.
    pub fn verified(&self) -> bool {
        self.verified
    }

    /// `c=`: the gs2 header, and the channel's data when bound.
    fn channel(&self) -> String {
        let mut c = self.binding.header().as_bytes().to_vec();
        if let Binding::EndPoint(hash) = &self.binding {
            c.extend_from_slice(hash);
        }
        B64.encode(c)
    }

    /// The proof for the server's first message (`r=...,s=...,i=...`).
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(server_first)
            .map_err(|_| "SCRAM: the server's message is not UTF-8")?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for part in text.split(',') {
            match part.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = B64.decode(v).ok(),
                Some(("i", v)) => iterations = v.parse::<u32>().ok(),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(
                "SCRAM: the server's first message lacks its nonce, salt or iteration count".into(),
            );
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("SCRAM: the server's nonce does not extend the client's".into());
        }
        if iterations == 0 || iterations > MAX_ITERATIONS {
            return Err(format!(
                "SCRAM: the server asks for {iterations} iterations, outside 1..={MAX_ITERATIONS}"
            ));
        }
        let salted = hi(self.password.as_bytes(), &salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key: [u8; 32] = Sha256::digest(client_key).into();
        let without_proof = format!("c={},r={nonce}", self.channel());
        let auth_message = format!("{},{},{}", self.first_bare, text, without_proof);
        let signature = hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac(&salted, b"Server Key");
        self.server_signature = Some(hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// The server's final message must carry the signature only the password's holder makes.
    pub fn check_server_final(&mut self, server_final: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(server_final).unwrap_or("");
        if let Some(e) = text.strip_prefix("e=") {
            return Err(format!(
                "SCRAM: the server refused the proof: {}",
                crate::printable(e)
            ));
        }
        let given = text.strip_prefix("v=").and_then(|v| B64.decode(v).ok());
        match (given, self.server_signature) {
            (Some(g), Some(want)) if g == want => {
                self.verified = true;
                Ok(())
            }
            _ => Err("SCRAM: the server's signature is wrong: it does not know the password (or someone answers in its place)".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_answer_is_postgres_own() {
        // SELECT 'md5' || md5(md5('secret' || 'alice') || 'abcd') in psql.
        let inner = hex(&Md5::digest(b"secretalice"));
        let want = format!(
            "md5{}",
            hex(&Md5::digest(format!("{inner}abcd").as_bytes()))
        );
        assert_eq!(md5_answer("alice", "secret", b"abcd"), want);
        assert_eq!(want.len(), 35);
    }

    /// RFC 7677's example exchange (user "user", password "pencil").
    #[test]
    fn scram_matches_rfc_7677() {
        let mut s = Scram::new(
            "pencil",
            "rOprNGfwEbeRWgbNEkqO".into(),
            Binding::Unsupported,
        );
        // The RFC's client-first-bare names the user; ours leaves it empty, as libpq's.
        s.first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO".into();
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let fin = s.client_final(server_first).unwrap();
        assert_eq!(
            String::from_utf8(fin).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert!(s
            .check_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .is_ok());
        assert!(s.verified());
        assert!(s
            .check_server_final(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .is_err());
    }

    #[test]
    fn a_bound_exchange_carries_its_header_and_the_certificates_hash() {
        let hash = vec![1u8; 32];
        let mut s = Scram::new("pw", "abc".into(), Binding::EndPoint(hash.clone()));
        assert!(String::from_utf8(s.client_first())
            .unwrap()
            .starts_with("p=tls-server-end-point,,n=,r=abc"));
        let fin = String::from_utf8(s.client_final(b"r=abcdef,s=AAAA,i=4096").unwrap()).unwrap();
        let mut want = b"p=tls-server-end-point,,".to_vec();
        want.extend_from_slice(&hash);
        assert!(
            fin.starts_with(&format!("c={},r=abcdef,p=", B64.encode(want))),
            "{fin}"
        );
        let mut y = Scram::new("pw", "abc".into(), Binding::NotOffered);
        assert!(String::from_utf8(y.client_first())
            .unwrap()
            .starts_with("y,,"));
        let fin = String::from_utf8(y.client_final(b"r=abcdef,s=AAAA,i=4096").unwrap()).unwrap();
        assert!(fin.starts_with("c=eSws,"), "{fin}");
    }

    #[test]
    fn a_server_nonce_that_does_not_extend_ours_is_refused() {
        let mut s = Scram::new("pw", "abc".into(), Binding::Unsupported);
        assert!(s.client_final(b"r=xyz123,s=AAAA,i=4096").is_err());
        assert!(s.client_final(b"r=abc,s=AAAA,i=4096").is_err());
        assert!(s.client_final(b"r=abcd,s=AAAA,i=99999999").is_err());
    }
}
