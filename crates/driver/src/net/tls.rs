//! TLS (rustls): the client configuration for a [`Tls`](crate::Tls) (made once per option
//! set), the certificate checks of each `SslMode`, and what a failed check says: which
//! certificate, which host, what was wrong.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, Error, SignatureScheme};
use sha2::{Digest, Sha256};

use super::der::{der_inner, der_item};
use super::x509;
use crate::{SslMode, Tls};

/// A [`Tls`]'s client configuration, made on first use and shared by the clones of its
/// options; a configuration that cannot be made (a missing file) says why to every connect.
#[derive(Clone, Default)]
pub(crate) struct ConfigCache(Arc<OnceLock<Result<Arc<ClientConfig>, String>>>);

impl std::fmt::Debug for ConfigCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConfigCache")
    }
}

/// The protocol version and cipher suite a connection agreed on, as the MySQL client's
/// `Ssl_version` and `Ssl_cipher` name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSession {
    pub version: String,
    pub cipher: String,
}

impl Tls {
    /// The client configuration, or why it cannot be made (names the file or the option).
    pub(crate) fn client_config(&self) -> Result<Arc<ClientConfig>, String> {
        self.config
            .0
            .get_or_init(|| build(self).map(Arc::new))
            .clone()
    }

    /// Check the options without connecting: the files read, the ciphers known.
    pub fn check(&self) -> Result<(), String> {
        match self.mode {
            SslMode::Disabled => Ok(()),
            _ => self.client_config().map(|_| ()),
        }
    }
}

fn build(t: &Tls) -> Result<ClientConfig, String> {
    let provider = Arc::new(provider(t.cipher.as_deref())?);
    let versions = versions(&provider);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("--mysql-ssl-cipher: {e}"))?;
    let verify = t.verifies();
    // The CA: a file, or PEM text (the lab's CA for this run, as client hosts get it).
    let ca: Option<(Roots, String)> = match (&t.ca, &t.ca_pem, verify) {
        (Some(path), _, true) => Some((roots(path)?, path.display().to_string())),
        (None, Some(ca), true) => Some((roots_of_pem(ca)?, ca.name.clone())),
        (None, None, true) => {
            return Err(format!(
                "--mysql-ssl={} checks the server's certificate against a CA: give the CA's certificate with --mysql-ssl-ca=FILE",
                t.mode.name()
            ))
        }
        (_, _, false) => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match ca {
        Some((roots, label)) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots.store, provider.clone())
                .build()
                .map_err(|e| format!("{label}: {e}"))?;
            Arc::new(Checked {
                inner: Checker::WebPki {
                    webpki,
                    names: t.mode == SslMode::VerifyIdentity,
                    roots: roots.certs,
                },
                ca: Some(label),
                algorithms: provider.signature_verification_algorithms,
            })
        }
        None => Arc::new(Checked {
            inner: Checker::Unchecked,
            ca: None,
            algorithms: provider.signature_verification_algorithms,
        }),
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&t.cert, &t.key) {
        (Some(cert), Some(key)) => {
            builder.with_client_cert_resolver(client_identity(&provider, cert, key)?)
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => {
            return Err("--mysql-ssl-cert needs its key: give --mysql-ssl-key=FILE".into())
        }
        (None, Some(_)) => {
            return Err("--mysql-ssl-key needs its certificate: give --mysql-ssl-cert=FILE".into())
        }
    };
    Ok(config)
}

/// ring's suites, or those `cipher` names: OpenSSL's names (ECDHE-RSA-AES128-GCM-SHA256, as
/// the MySQL client takes them) or IANA's (TLS_AES_128_GCM_SHA256), `:`-separated.
fn provider(cipher: Option<&str>) -> Result<CryptoProvider, String> {
    let mut p = ring::default_provider();
    let Some(wanted) = cipher.filter(|c| !c.trim().is_empty()) else {
        return Ok(p);
    };
    let mut suites = Vec::new();
    for name in wanted
        .split([':', ','])
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let found = p
            .cipher_suites
            .iter()
            .find(|s| names_of(s).iter().any(|n| n.eq_ignore_ascii_case(name)));
        match found {
            Some(s) => suites.push(*s),
            None => {
                let known: Vec<String> = p
                    .cipher_suites
                    .iter()
                    .map(|s| names_of(s)[0].clone())
                    .collect();
                return Err(format!(
                    "--mysql-ssl-cipher: '{name}' is not a cipher suite bakeoff's TLS has; it has {}",
                    known.join(", ")
                ));
            }
        }
    }
    p.cipher_suites = suites;
    Ok(p)
}

/// A suite's OpenSSL name first, then its IANA name.
fn names_of(s: &rustls::SupportedCipherSuite) -> [String; 2] {
    let iana = format!("{:?}", s.suite());
    let openssl = match iana.as_str() {
        "TLS13_AES_128_GCM_SHA256" => "TLS_AES_128_GCM_SHA256".to_string(),
        "TLS13_AES_256_GCM_SHA384" => "TLS_AES_256_GCM_SHA384".to_string(),
        "TLS13_CHACHA20_POLY1305_SHA256" => "TLS_CHACHA20_POLY1305_SHA256".to_string(),
        other => other
            .trim_start_matches("TLS_")
            .replace("_WITH_", "_")
            .replace("AES_128", "AES128")
            .replace("AES_256", "AES256")
            .replace('_', "-"),
    };
    [openssl, iana]
}

/// The protocol versions the chosen suites can use.
fn versions(p: &CryptoProvider) -> Vec<&'static rustls::SupportedProtocolVersion> {
    let mut v = Vec::new();
    if p.cipher_suites.iter().any(|s| s.tls13().is_some()) {
        v.push(&rustls::version::TLS13);
    }
    if p.cipher_suites.iter().any(|s| s.tls13().is_none()) {
        v.push(&rustls::version::TLS12);
    }
    v
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{}: no certificate in it (PEM expected)",
            path.display()
        ));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| format!("{}: {e} (a PEM private key expected)", path.display()))
}

/// The client's certificate and key, as a resolver that always offers them: rustls' own
/// loader parses the certificate with webpki, which refuses the version 1 certificates
/// MySQL's manual makes, so the key is matched to the certificate here.
fn client_identity(
    provider: &CryptoProvider,
    cert: &Path,
    key: &Path,
) -> Result<Arc<dyn rustls::client::ResolvesClientCert>, String> {
    let certs = certificates(cert)?;
    let signing = provider
        .key_provider
        .load_private_key(private_key(key)?)
        .map_err(|e| format!("{}: {e}", key.display()))?;
    let matches = signing
        .public_key()
        .is_none_or(|spki| x509::key_matches(&certs[0], &spki));
    if !matches {
        return Err(format!(
            "{} is not the key of {}: give the key made with that certificate",
            key.display(),
            cert.display()
        ));
    }
    let identity = rustls::sign::CertifiedKey::new(certs, signing);
    Ok(Arc::new(ClientIdentity(Arc::new(identity))))
}

#[derive(Debug)]
struct ClientIdentity(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for ClientIdentity {
    fn resolve(
        &self,
        _: &[&[u8]],
        _: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
    fn has_certs(&self) -> bool {
        true
    }
}

/// A CA file's certificates: webpki's trust anchors, and the certificates themselves for the
/// chains webpki cannot parse (see `x509`).
struct Roots {
    store: Arc<rustls::RootCertStore>,
    certs: Vec<CertificateDer<'static>>,
}

fn roots_of_pem(ca: &crate::PemCa) -> Result<Roots, String> {
    let certs = CertificateDer::pem_slice_iter(ca.pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", ca.name))?;
    store_of(certs, &ca.name)
}

fn roots(path: &Path) -> Result<Roots, String> {
    store_of(certificates(path)?, &path.display().to_string())
}

/// The roots a verifier trusts: every certificate of the CA named `name`.
fn store_of(certs: Vec<CertificateDer<'static>>, name: &str) -> Result<Roots, String> {
    let mut roots = rustls::RootCertStore::empty();
    for c in &certs {
        roots
            .add(c.clone())
            .map_err(|e| format!("{name}: not a CA certificate: {e}"))?;
    }
    Ok(Roots {
        store: Arc::new(roots),
        certs,
    })
}

/// A mode's certificate check, whose failures name the certificate (subject and SHA-256
/// fingerprint) and the CA file.
#[derive(Debug)]
struct Checked {
    inner: Checker,
    ca: Option<String>,
    /// The handshake's signatures are checked with the provider's algorithms in every mode.
    algorithms: WebPkiSupportedAlgorithms,
}

#[derive(Debug)]
enum Checker {
    /// PREFERRED and REQUIRED: any certificate, as the MySQL client takes it; the handshake's
    /// signatures are still checked, so the session is with the key the certificate has.
    Unchecked,
    /// VERIFY_CA and VERIFY_IDENTITY (`names`); a chain webpki cannot parse is checked with
    /// OpenSSL's rules against the CA file's certificates (`x509`).
    WebPki {
        webpki: Arc<WebPkiServerVerifier>,
        names: bool,
        roots: Vec<CertificateDer<'static>>,
    },
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Checker::WebPki {
            webpki,
            names,
            roots,
        } = &self.inner
        else {
            return Ok(ServerCertVerified::assertion());
        };
        let as_openssl = || {
            let host = names.then_some(server_name);
            let ca = self.ca.as_deref().unwrap_or("the CA given");
            x509::verify_chain(end_entity, intermediates, roots, ca, now, host)
                .map(|()| ServerCertVerified::assertion())
                .map_err(|r| {
                    Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(
                        Arc::new(Problem {
                            certificate: r.certificate,
                            why: r.why,
                        }),
                    )))
                })
        };
        if x509::is_v1(end_entity.as_ref()) {
            return as_openssl();
        }
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Ok(ok) => Ok(ok),
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !names => Ok(ServerCertVerified::assertion()),
            // A version 1 certificate further up the chain: OpenSSL's rules say why.
            Err(Error::InvalidCertificate(CertificateError::Other(o)))
                if format!("{o:?}").contains("UnsupportedCertVersion") =>
            {
                as_openssl()
            }
            Err(Error::InvalidCertificate(e)) => Err(Error::InvalidCertificate(
                CertificateError::Other(rustls::OtherError(Arc::new(Problem {
                    certificate: describe(end_entity),
                    why: why(&e, self.ca.as_deref(), server_name),
                }))),
            )),
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        match x509::is_v1(cert.as_ref()) {
            true => x509::handshake_signature(message, cert, dss, &self.algorithms, false),
            false => rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms),
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        match x509::is_v1(cert.as_ref()) {
            true => x509::handshake_signature(message, cert, dss, &self.algorithms, true),
            false => rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms),
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A certificate that failed its check: which one, and what was wrong with it.
#[derive(Debug)]
struct Problem {
    certificate: String,
    why: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.certificate, self.why)
    }
}

impl std::error::Error for Problem {}

fn why(e: &CertificateError, ca: Option<&str>, host: &ServerName<'_>) -> String {
    let host = host.to_str();
    let ca = ca.unwrap_or("the CA given");
    match e {
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            let when = match e {
                CertificateError::ExpiredContext { not_after, .. } => format!(" on {}", date(*not_after)),
                _ => String::new(),
            };
            format!("has expired{when}: the server needs a renewed certificate")
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "is not valid yet (is this machine's clock right?)".into()
        }
        CertificateError::UnknownIssuer => format!(
            "is not signed by the CA in {ca} (unknown CA): give the CA that signed it with --mysql-ssl-ca"
        ),
        CertificateError::NotValidForNameContext { presented, .. } => format!(
            "does not name {host} (it names {}): connect by one of those names, or check the CA only with --mysql-ssl=VERIFY_CA",
            presented.join(", ")
        ),
        CertificateError::NotValidForName => format!(
            "does not name {host}: connect by a name it has, or check the CA only with --mysql-ssl=VERIFY_CA"
        ),
        CertificateError::BadSignature => format!("has a signature that does not verify against {ca}"),
        CertificateError::Revoked => "has been revoked".into(),
        other => format!("was refused: {other:?}"),
    }
}

/// A UTC date from seconds since the epoch (civil-from-days, Howard Hinnant's algorithm).
fn date(t: UnixTime) -> String {
    let days = (t.as_secs() / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// "the server's certificate CN=db1.internal (SHA-256 AB:CD:...)": the fingerprint is what
/// `openssl x509 -noout -fingerprint -sha256 -in FILE` prints for it.
fn describe(cert: &CertificateDer<'_>) -> String {
    let fp: Vec<String> = Sha256::digest(cert.as_ref())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    // The name is the server's to choose: shown without its control characters.
    match subject_cn(cert.as_ref()).map(|cn| bakeoff_proto::printable(&cn)) {
        Some(cn) => format!(
            "the server's certificate CN={cn} (SHA-256 {})",
            fp.join(":")
        ),
        None => format!("the server's certificate (SHA-256 {})", fp.join(":")),
    }
}

/// The subject's common name: Certificate > tbsCertificate > subject (the sixth field, the
/// fifth without the optional version) > the value after OID 2.5.4.3.
fn subject_cn(der: &[u8]) -> Option<String> {
    let cert = der_inner(der)?.0;
    let mut tbs = der_inner(cert)?.0;
    let mut fields = Vec::new();
    while !tbs.is_empty() && fields.len() < 6 {
        let (tag, whole, rest) = der_item(tbs)?;
        fields.push((tag, whole));
        tbs = rest;
    }
    let at = if fields.first()?.0 == 0xa0 { 5 } else { 4 };
    let subject = fields.get(at)?.1;
    let cn_oid = [0x06, 0x03, 0x55, 0x04, 0x03];
    let i = subject.windows(cn_oid.len()).position(|w| w == cn_oid)?;
    let (_, value, _) = der_item(&subject[i + cn_oid.len()..])?;
    let (content, _) = der_inner(value)?;
    Some(String::from_utf8_lossy(content).into_owned())
}

/// What a failed handshake says, the certificate's problem first when there is one.
pub(crate) fn handshake_error(e: &Error) -> String {
    match e {
        Error::InvalidCertificate(CertificateError::Other(o)) => o.0.to_string(),
        Error::InvalidCertificate(c) => format!("the server's certificate was refused: {c:?}"),
        other => other.to_string(),
    }
}
