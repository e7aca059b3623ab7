//! Certificates as OpenSSL takes them, where webpki refuses: X.509 version 1, which
//! `openssl x509 -req` makes when no extension file is given (MySQL's manual makes its server
//! and client certificates so, and libmariadb, sysbench's client, takes them).
//!
//! webpki still checks every version 3 chain. This module checks the chains webpki cannot
//! parse, with OpenSSL's rules as far as a server's chain needs them:
//! - a version 1 certificate is taken as the server's own, or as a CA only when it signed
//!   itself (a root in the CA file); an intermediate must be version 3 and say CA:TRUE;
//! - every certificate of the chain within its validity dates;
//! - signatures by a fixed list: RSA PKCS#1 with SHA-256/384/512, ECDSA with SHA-256/384,
//!   Ed25519 (no SHA-1, refused at OpenSSL's default security level too);
//! - names (VERIFY_IDENTITY): the subjectAltName's DNS names and IP addresses, the common name
//!   only when the certificate has no subjectAltName;
//! - along the chain, each CA's keyUsage, pathLenConstraint, extendedKeyUsage and
//!   nameConstraints (`x509_chain.rs`).
//!
//! The handshake's own signature is checked with the certificate's key in every mode.

use std::net::IpAddr;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, SubjectPublicKeyInfoDer, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::oid_registry as oid;
use x509_parser::prelude::FromDer;
use x509_parser::x509::{SubjectPublicKeyInfo, X509Version};

/// Why a chain was refused: the certificate at fault (described, with its file when it came
/// from one), and what was wrong.
#[derive(Debug, PartialEq)]
pub(crate) struct Refusal {
    pub certificate: String,
    pub why: String,
}

/// Whether webpki cannot take this certificate: X.509 version 1 (or not a certificate at all,
/// which the full check then names).
pub(crate) fn is_v1(der: &[u8]) -> bool {
    X509Certificate::from_der(der).is_ok_and(|(_, c)| c.version() == X509Version::V1)
}

/// Check `end_entity`'s chain to one of `roots` (the CA file `ca`), as OpenSSL does, and its
/// names against `host` when given (VERIFY_IDENTITY).
pub(crate) fn verify_chain(
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    roots: &[CertificateDer<'_>],
    ca: &str,
    now: UnixTime,
    host: Option<&ServerName<'_>>,
) -> Result<(), Refusal> {
    let server = parse(end_entity, "the server's certificate")?;
    let described = |c: &X509Certificate<'_>, role: &str| describe(c, role);
    in_date(
        &server,
        now,
        &described(&server, "the server's certificate"),
    )?;
    let sent: Vec<X509Certificate<'_>> = intermediates
        .iter()
        .map(|c| parse(c, "a certificate the server sent"))
        .collect::<Result<_, _>>()?;
    let trusted: Vec<X509Certificate<'_>> = roots
        .iter()
        .map(|c| parse(c, &format!("a certificate in {ca}")))
        .collect::<Result<_, _>>()?;
    let mut current = &server;
    let mut path: Vec<&X509Certificate<'_>> = vec![&server];
    // A chain longer than this is a loop or not a server's.
    for _ in 0..8 {
        let role = format!("the CA certificate in {ca}");
        if let Some(root) = issuer(current, &trusted, &role)? {
            ca_ok(root, &described(root, &role))?;
            in_date(root, now, &described(root, &role))?;
            path.push(root);
            // A CA file may hold an intermediate beside its root: OpenSSL goes on to the
            // self-signed one, and holds the chain to its rules too.
            if !self_signed(root) {
                current = root;
                continue;
            }
            super::x509_chain::chain_rules(&path).map_err(|(i, why)| Refusal {
                certificate: describe(path[i], "the CA certificate"),
                why,
            })?;
            return match host {
                Some(h) => names_ok(&server, h),
                None => Ok(()),
            };
        }
        let role = "an intermediate certificate the server sent";
        match issuer(current, &sent, role)? {
            // A root the server sent that is not in the CA file: OpenSSL's "self-signed
            // certificate in certificate chain".
            Some(next) if next.subject().as_raw() == next.issuer().as_raw() => {
                return Err(Refusal {
                    certificate: described(next, "the server's chain ends at"),
                    why: format!(
                        "which is self-signed and not in {ca} (unknown CA): give that CA with --mysql-ssl-ca"
                    ),
                })
            }
            Some(next) => {
                ca_ok(next, &described(next, role))?;
                in_date(next, now, &described(next, role))?;
                current = next;
                path.push(next);
            }
            None => {
                return Err(Refusal {
                    certificate: described(current, "the server's chain ends at"),
                    why: format!(
                        "which is not signed by the CA in {ca} (unknown CA): give the CA that signed it with --mysql-ssl-ca"
                    ),
                })
            }
        }
    }
    Err(Refusal {
        certificate: described(&server, "the server's certificate"),
        why: "has a chain of more than 8 certificates".into(),
    })
}

fn parse<'a>(der: &'a CertificateDer<'_>, role: &str) -> Result<X509Certificate<'a>, Refusal> {
    X509Certificate::from_der(der.as_ref())
        .map(|(_, c)| c)
        .map_err(|e| Refusal {
            certificate: role.to_string(),
            why: format!("is not a certificate OpenSSL could read either: {e}"),
        })
}

/// "the server's certificate CN=db1 (X.509 version 1)".
fn describe(c: &X509Certificate<'_>, role: &str) -> String {
    let cn: Vec<String> = c
        .subject()
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .map(bakeoff_proto::printable)
        .collect();
    let version = c.version().0 + 1;
    match cn.first() {
        Some(cn) => format!("{role} CN={cn} (X.509 version {version})"),
        None => format!("{role} (X.509 version {version})"),
    }
}

/// The certificate among `candidates` whose subject is `child`'s issuer and whose key signed
/// it; Err when one has the name but not the signature.
fn issuer<'c>(
    child: &X509Certificate<'_>,
    candidates: &'c [X509Certificate<'c>],
    role: &str,
) -> Result<Option<&'c X509Certificate<'c>>, Refusal> {
    let named: Vec<&X509Certificate<'_>> = candidates
        .iter()
        .filter(|c| c.subject().as_raw() == child.issuer().as_raw())
        .collect();
    if named.is_empty() {
        return Ok(None);
    }
    accepted_algorithm(child)?;
    match named
        .iter()
        .find(|c| child.verify_signature(Some(c.public_key())).is_ok())
    {
        Some(c) => Ok(Some(c)),
        None => Err(Refusal {
            certificate: describe(child, "the certificate"),
            why: format!(
                "has a signature that does not verify against {role} of its issuer's name"
            ),
        }),
    }
}

/// The signature algorithms OpenSSL takes at its default security level that a server's
/// chain uses.
fn accepted_algorithm(c: &X509Certificate<'_>) -> Result<(), Refusal> {
    let alg = &c.signature_algorithm.algorithm;
    let accepted = [
        oid::OID_PKCS1_SHA256WITHRSA,
        oid::OID_PKCS1_SHA384WITHRSA,
        oid::OID_PKCS1_SHA512WITHRSA,
        oid::OID_SIG_ECDSA_WITH_SHA256,
        oid::OID_SIG_ECDSA_WITH_SHA384,
        oid::OID_SIG_ED25519,
    ];
    match accepted.contains(alg) {
        true => Ok(()),
        false => Err(Refusal {
            certificate: describe(c, "the certificate"),
            why: format!(
                "is signed with algorithm {alg}, which bakeoff does not take (RSA PKCS#1 with SHA-256/384/512, ECDSA with SHA-256/384, Ed25519): reissue it with one of those"
            ),
        }),
    }
}

/// May this certificate sign others? A version 1 one only when it signed itself (OpenSSL's
/// check_ca); a version 3 one unless it says CA:FALSE, and an intermediate must say CA:TRUE.
fn self_signed(c: &X509Certificate<'_>) -> bool {
    c.subject().as_raw() == c.issuer().as_raw() && c.verify_signature(Some(c.public_key())).is_ok()
}

fn ca_ok(c: &X509Certificate<'_>, described: &str) -> Result<(), Refusal> {
    let self_signed = self_signed(c);
    let refused = |why: &str| {
        Err(Refusal {
            certificate: described.to_string(),
            why: why.to_string(),
        })
    };
    if c.version() == X509Version::V1 {
        return match self_signed {
            true => Ok(()),
            false => refused("is version 1 and not self-signed: OpenSSL takes a version 1 certificate as a CA only as a self-signed root; reissue it as a version 3 CA (basicConstraints=CA:TRUE)"),
        };
    }
    match c.basic_constraints().ok().flatten().map(|b| b.value.ca) {
        Some(true) => Ok(()),
        None if self_signed => Ok(()),
        _ => refused(
            "is not a CA certificate (no basicConstraints CA:TRUE): it cannot sign the server's",
        ),
    }
}

fn in_date(c: &X509Certificate<'_>, now: UnixTime, described: &str) -> Result<(), Refusal> {
    let now = now.as_secs() as i64;
    let v = c.validity();
    let why = if now < v.not_before.timestamp() {
        format!(
            "is not valid before {} (is this machine's clock right?)",
            v.not_before
        )
    } else if now > v.not_after.timestamp() {
        format!(
            "has expired on {}: it needs a renewed certificate",
            v.not_after
        )
    } else {
        return Ok(());
    };
    Err(Refusal {
        certificate: described.to_string(),
        why,
    })
}

/// VERIFY_IDENTITY: `host` among the subjectAltName's names, or the common names when there
/// is no subjectAltName (OpenSSL's X509_check_host, then X509_check_ip, as libmariadb calls
/// them).
fn names_ok(c: &X509Certificate<'_>, host: &ServerName<'_>) -> Result<(), Refusal> {
    let (text, ip) = match host {
        ServerName::DnsName(d) => (d.as_ref().to_string(), None),
        ServerName::IpAddress(a) => {
            let a = IpAddr::from(*a);
            (a.to_string(), Some(a))
        }
        _ => (String::new(), None),
    };
    let san = c.subject_alternative_name().ok().flatten();
    let presented: Vec<String> = match &san {
        Some(san) => san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some(d.to_string()),
                GeneralName::IPAddress(b) => ip_of(b).map(|a| a.to_string()),
                _ => None,
            })
            .collect(),
        None => c
            .subject()
            .iter_common_name()
            .filter_map(|a| a.as_str().ok().map(str::to_string))
            .collect(),
    };
    let matches = |name: &str| match ip {
        Some(a) => name.parse::<IpAddr>().is_ok_and(|n| n == a),
        None => dns_matches(name, &text),
    };
    // Without a subjectAltName, OpenSSL compares an address with the common name as text.
    let cn_text = san.is_none() && presented.iter().any(|n| n.eq_ignore_ascii_case(&text));
    if presented.iter().any(|n| matches(n)) || cn_text {
        return Ok(());
    }
    let shown: Vec<String> = presented
        .iter()
        .map(|n| bakeoff_proto::printable(n))
        .collect();
    Err(Refusal {
        certificate: describe(c, "the server's certificate"),
        why: format!(
            "does not name {text} (it names {}): connect by one of those names, or check the CA only with --mysql-ssl=VERIFY_CA",
            if shown.is_empty() { "nothing".to_string() } else { shown.join(", ") }
        ),
    })
}

fn ip_of(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => <[u8; 4]>::try_from(b).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(b).ok().map(IpAddr::from),
        _ => None,
    }
}

/// A DNS name against a presented one, case-insensitively; `*.` stands for exactly one
/// leftmost label.
fn dns_matches(presented: &str, host: &str) -> bool {
    let (p, h) = (presented.to_ascii_lowercase(), host.to_ascii_lowercase());
    match p.strip_prefix("*.") {
        Some(rest) => h
            .split_once('.')
            .is_some_and(|(label, tail)| !label.is_empty() && tail == rest),
        None => p == h,
    }
}

/// The handshake's signature, checked with the key of a certificate webpki cannot parse (the
/// same check webpki makes for the others: the scheme's algorithm for the key's kind).
pub(crate) fn handshake_signature(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algorithms: &WebPkiSupportedAlgorithms,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    let bad = || Error::InvalidCertificate(CertificateError::BadEncoding);
    let (_, c) = X509Certificate::from_der(cert.as_ref()).map_err(|_| bad())?;
    let spki = c.public_key();
    if tls13 {
        let der = SubjectPublicKeyInfoDer::from(spki.raw);
        return rustls::crypto::verify_tls13_signature_with_raw_key(message, &der, dss, algorithms);
    }
    let key_alg = algorithm_identifier(spki).ok_or_else(bad)?;
    let candidates = algorithms
        .mapping
        .iter()
        .filter(|(scheme, _)| *scheme == dss.scheme)
        .flat_map(|(_, algs)| algs.iter());
    for alg in candidates {
        if alg.public_key_alg_id().as_ref() != key_alg {
            continue;
        }
        return alg
            .verify_signature(&spki.subject_public_key.data, message, dss.signature())
            .map(|()| HandshakeSignatureValid::assertion())
            .map_err(|_| Error::InvalidCertificate(CertificateError::BadSignature));
    }
    Err(Error::General(format!(
        "the server signed the handshake with {:?}, which bakeoff's TLS does not check for its certificate's key",
        dss.scheme
    )))
}

/// The key's AlgorithmIdentifier as webpki compares it: the DER contents of the SEQUENCE
/// that opens the SubjectPublicKeyInfo.
fn algorithm_identifier<'a>(spki: &SubjectPublicKeyInfo<'a>) -> Option<&'a [u8]> {
    let (inside, _) = super::der::der_inner(spki.raw)?;
    Some(super::der::der_inner(inside)?.0)
}

/// Does `key` (the public half of a client's private key) belong to `cert`? Compared as the
/// SubjectPublicKeyInfo both carry.
pub(crate) fn key_matches(cert: &CertificateDer<'_>, key: &SubjectPublicKeyInfoDer<'_>) -> bool {
    X509Certificate::from_der(cert.as_ref()).is_ok_and(|(_, c)| c.public_key().raw == key.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;

    /// The manual's certificates (bakeoff_testkit::tls::make_manual_pki), made once.
    fn pki() -> &'static std::path::Path {
        static PKI: std::sync::OnceLock<bakeoff_testkit::tls::Pki> = std::sync::OnceLock::new();
        &PKI.get_or_init(|| bakeoff_testkit::tls::make_manual_pki("x509"))
            .dir
    }

    fn cert(name: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_file(pki().join(name)).unwrap()
    }

    /// Now, once the certificates exist (made at first use: before, they are not valid yet).
    fn now() -> UnixTime {
        pki();
        UnixTime::now()
    }

    fn days(n: i64) -> UnixTime {
        let at = now().as_secs() as i64 + n * 86_400;
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(at as u64))
    }

    /// `server`'s chain (with `sent` intermediates) against the CA file `ca`, at `at`, for
    /// `host`: Ok, or the refusal in words.
    fn check(
        server: &str,
        sent: &[&str],
        ca: &str,
        at: UnixTime,
        host: Option<&str>,
    ) -> Result<(), String> {
        let sent: Vec<_> = sent.iter().map(|s| cert(s)).collect();
        let host = host.map(|h| ServerName::try_from(h.to_string()).unwrap());
        verify_chain(&cert(server), &sent, &[cert(ca)], ca, at, host.as_ref())
            .map_err(|r| format!("{} {}", r.certificate, r.why))
    }

    #[test]
    fn the_manuals_version_1_server_certificate_verifies_against_its_ca() {
        assert!(is_v1(cert("server-cert.pem").as_ref()));
        assert_eq!(check("server-cert.pem", &[], "ca.pem", now(), None), Ok(()));
        assert_eq!(
            check("server-cert.pem", &[], "ca.pem", now(), Some("localhost")),
            Ok(())
        );
        assert_eq!(
            check(
                "by-v1root-cert.pem",
                &[],
                "v1root.pem",
                now(),
                Some("LOCALHOST")
            ),
            Ok(())
        );
    }

    #[test]
    fn a_wrong_name_a_wrong_ca_an_expired_one_and_a_version_1_intermediate_are_refused() {
        let wrong_name = check("server-cert.pem", &[], "ca.pem", now(), Some("127.0.0.1"));
        assert!(
            wrong_name
                .as_ref()
                .is_err_and(|e| e.contains("does not name 127.0.0.1 (it names localhost)")),
            "{wrong_name:?}"
        );
        let wrong_ca = check("server-cert.pem", &[], "other-ca.pem", now(), None);
        assert!(
            wrong_ca
                .as_ref()
                .is_err_and(|e| e.contains("not signed by the CA in other-ca.pem (unknown CA)")),
            "{wrong_ca:?}"
        );
        let expired = check("server-cert.pem", &[], "ca.pem", days(4000), None);
        assert!(
            expired
                .as_ref()
                .is_err_and(|e| e.starts_with("the server's certificate CN=localhost")
                    && e.contains("has expired on")),
            "{expired:?}"
        );
        let early = check("server-cert.pem", &[], "ca.pem", days(-2), None);
        assert!(
            early
                .as_ref()
                .is_err_and(|e| e.contains("is not valid before")),
            "{early:?}"
        );
        let inter = check(
            "by-inter-cert.pem",
            &["inter-cert.pem"],
            "ca.pem",
            now(),
            None,
        );
        assert!(
            inter.as_ref().is_err_and(|e| e
                .starts_with("an intermediate certificate the server sent CN=intermediate")
                && e.contains("is version 1 and not self-signed")),
            "{inter:?}"
        );
    }

    /// Four chains OpenSSL refuses above a version 1 server certificate, refused here for the
    /// same reason; the same chain with none of their faults taken by both.
    #[test]
    fn a_version_1_servers_chain_is_held_to_openssls_ca_rules() {
        use bakeoff_testkit::tls::{make_chain_pki, openssl_verifies};
        let pki = make_chain_pki("x509-rules");
        let at = |name: &str| CertificateDer::from_pem_file(pki.dir.join(name)).unwrap();
        let check = |sub: &str, root: &str| {
            let leaf = at(&format!("leaf-{sub}.pem"));
            assert!(
                is_v1(leaf.as_ref()),
                "{sub}: the server's certificate is version 1"
            );
            let host = ServerName::try_from("db.example.test").unwrap();
            let sent = [at(&format!("sub-{sub}.pem"))];
            verify_chain(
                &leaf,
                &sent,
                &[at(root)],
                root,
                UnixTime::now(),
                Some(&host),
            )
            .map_err(|r| format!("{} {}", r.certificate, r.why))
        };
        let files = |sub: &str| (format!("sub-{sub}.pem"), format!("leaf-{sub}.pem"));
        let (sub, leaf) = files("good");
        assert!(openssl_verifies(&pki.dir, "ca.pem", &sub, &leaf));
        assert_eq!(check("good", "ca.pem"), Ok(()));
        for (bad, root, says) in [
            ("nc", "ca.pem", "permitted subtree violation"),
            ("ku", "ca.pem", "without keyCertSign"),
            ("eku", "ca.pem", "without serverAuth"),
            ("anyeku", "ca.pem", "without serverAuth"),
            ("deep", "root0.pem", "pathlen:0"),
        ] {
            let (sub, leaf) = files(bad);
            assert!(
                !openssl_verifies(&pki.dir, root, &sub, &leaf),
                "{bad}: OpenSSL takes it"
            );
            let r = check(bad, root);
            assert!(r.as_ref().is_err_and(|e| e.contains(says)), "{bad}: {r:?}");
        }
        // A common name that is an address is a DNS name to the constraints, as to OpenSSL.
        assert!(!openssl_verifies(
            &pki.dir,
            "ca.pem",
            "sub-nc.pem",
            "leaf-ncip.pem"
        ));
        let ip = ServerName::try_from("10.1.2.3").unwrap();
        let sent = [at("sub-nc.pem")];
        let r = verify_chain(
            &at("leaf-ncip.pem"),
            &sent,
            &[at("ca.pem")],
            "ca.pem",
            UnixTime::now(),
            Some(&ip),
        );
        assert!(
            r.as_ref().is_err_and(|e| e.why.contains("10.1.2.3")),
            "{r:?}"
        );
        // An intermediate in the CA file beside its root: the root's pathlen still holds.
        assert!(!openssl_verifies(
            &pki.dir,
            "deep-bundle.pem",
            "sub-deep.pem",
            "leaf-deep.pem"
        ));
        let trusted = [at("sub-deep.pem"), at("root0.pem")];
        let host = ServerName::try_from("db.example.test").unwrap();
        let r = verify_chain(
            &at("leaf-deep.pem"),
            &[],
            &trusted,
            "deep-bundle.pem",
            UnixTime::now(),
            Some(&host),
        );
        assert!(
            r.as_ref().is_err_and(|e| e.why.contains("pathlen:0")),
            "{r:?}"
        );
    }

    #[test]
    fn a_client_key_is_matched_to_its_certificate() {
        let provider = rustls::crypto::ring::default_provider();
        let key = |name: &str| {
            let der = rustls::pki_types::PrivateKeyDer::from_pem_file(pki().join(name)).unwrap();
            provider.key_provider.load_private_key(der).unwrap()
        };
        let client = cert("client-cert.pem");
        assert!(key_matches(
            &client,
            &key("client-key.pem").public_key().unwrap()
        ));
        assert!(!key_matches(
            &client,
            &key("server-key.pem").public_key().unwrap()
        ));
    }

    #[test]
    fn a_wildcard_stands_for_one_leftmost_label() {
        assert!(dns_matches("*.example.com", "db1.example.com"));
        assert!(dns_matches("DB1.example.com", "db1.EXAMPLE.com"));
        assert!(!dns_matches("*.example.com", "example.com"));
        assert!(!dns_matches("*.example.com", "a.b.example.com"));
        assert!(!dns_matches("db1.example.com", "db2.example.com"));
    }
}
