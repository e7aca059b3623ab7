//! TLS for a lab server that listens for other hosts (`ServerSpec::listen`): its load account
//! over TCP requires TLS, with a certificate made for this run of bakeoff and checked by every
//! client against this run's own CA.
//!
//! The CA is made in memory when the first such server starts (one per bakeoff process: a
//! study, or one `bakeoff run`); its key never leaves the process. Each server gets a
//! certificate naming the one address it listens on, so clients check it with
//! VERIFY_IDENTITY; a server on another host gets its key over the ssh session that starts
//! it, as its password travels. ECDSA P-256 (rcgen's default): quick to make, and what every
//! MariaDB and MySQL built with OpenSSL or wolfSSL takes.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use bakeoff_driver::{SslMode, Tls};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

/// What a listening server is started with: its certificate and key, and the CA that signed
/// them. Debug hides the key.
#[derive(Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ServerTls {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_pem", &format!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"***")
            .finish()
    }
}

impl ServerTls {
    /// How a client reaches the server over TCP: TLS, the certificate checked against this
    /// run's CA and naming the address connected to.
    pub fn client(&self) -> Tls {
        let mut t = Tls::new(SslMode::VerifyIdentity);
        t.ca_pem = Some(bakeoff_driver::PemCa {
            name: "the lab's CA for this run".into(),
            pem: Arc::from(self.ca_pem.as_str()),
        });
        t
    }
}

/// This run's CA.
pub struct LabCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// The CA of this process, made on first use.
pub fn lab_ca() -> Result<&'static LabCa, String> {
    static CA: OnceLock<Result<LabCa, String>> = OnceLock::new();
    CA.get_or_init(LabCa::new).as_ref().map_err(Clone::clone)
}

impl LabCa {
    fn new() -> Result<LabCa, String> {
        let failed = |e: rcgen::Error| format!("making the lab's CA for this run: {e}");
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(
            DnType::CommonName,
            format!("bakeoff lab CA (process {})", std::process::id()),
        );
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().map_err(failed)?;
        let issuer = CertifiedIssuer::self_signed(params, key).map_err(failed)?;
        Ok(LabCa { issuer })
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate and key for a server listening on `address`, signed by this CA.
    pub fn server_tls(&self, address: IpAddr) -> Result<ServerTls, String> {
        let failed = |e: rcgen::Error| format!("making a certificate for {address}: {e}");
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
        params.subject_alt_names = vec![SanType::IpAddress(address)];
        params
            .distinguished_name
            .push(DnType::CommonName, format!("bakeoff lab server {address}"));
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(failed)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(failed)?;
        Ok(ServerTls {
            ca_pem: self.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_ca_per_run_signs_a_certificate_for_each_address() {
        let ca = lab_ca().unwrap();
        assert!(std::ptr::eq(ca, lab_ca().unwrap()), "one CA per process");
        let a = ca.server_tls([169, 254, 77, 2].into()).unwrap();
        let b = ca.server_tls([169, 254, 77, 3].into()).unwrap();
        assert_eq!(a.ca_pem, b.ca_pem);
        assert_ne!(a.cert_pem, b.cert_pem);
        assert!(a.key_pem.contains("PRIVATE KEY"));
        assert!(
            !format!("{a:?}").contains("PRIVATE KEY"),
            "Debug hides the key"
        );
        let client = a.client();
        assert_eq!(client.mode, SslMode::VerifyIdentity);
        client.check().expect("the CA is usable as a client's root");
    }
}
