//! A MariaDB that takes TCP connections over TLS only (`require_secure_transport=ON`), with a
//! CA, server and client certificates made at test time by OpenSSL's command line (a
//! separate implementation from the rustls client under test).
//!
//! The server's certificate names `db1.test` and 127.0.0.1 only: connecting to `localhost`
//! is a name mismatch, which is what the VERIFY_IDENTITY tests need.

use std::path::{Path, PathBuf};
use std::process::Command;

use bakeoff_server::{Server, ServerSpec, INSTALL_HINT};

/// The files of a test CA.
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    /// The CA that signs the server's and the client's certificates.
    pub fn ca(&self) -> PathBuf {
        self.file("ca.pem")
    }
    /// A CA that signed neither.
    pub fn other_ca(&self) -> PathBuf {
        self.file("other-ca.pem")
    }
    pub fn client_cert(&self) -> PathBuf {
        self.file("client-cert.pem")
    }
    pub fn client_key(&self) -> PathBuf {
        self.file("client-key.pem")
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("the TLS tests make their certificates with OpenSSL's command line, which could not run ({e}): apt-get install openssl")
        });
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for `db1.test` and 127.0.0.1, a client certificate, and a
/// second CA, in a directory the server (which runs as `mysql` under root) can read.
pub fn make_pki(name: &str) -> Pki {
    let dir = crate::scratch::dir(&format!("pki-{name}"));
    let days = ["-days", "30"];
    let req = |key: &str, out: &str, subject: &str| {
        openssl(
            &dir,
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", out, "-subj",
                subject,
            ],
        );
    };
    let ca = |key: &str, out: &str, subject: &str| {
        let mut a = vec![
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", out, "-subj",
            subject,
        ];
        a.extend(days);
        openssl(&dir, &a);
    };
    ca("ca-key.pem", "ca.pem", "/CN=bakeoff test CA");
    ca("other-ca-key.pem", "other-ca.pem", "/CN=another CA");
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:db1.test,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .expect("ext");
    // Version 3 certificates (an extension makes them so): webpki refuses version 1.
    std::fs::write(dir.join("client.ext"), "basicConstraints=CA:FALSE\n").expect("ext");
    for (who, subject) in [("server", "/CN=db1.test"), ("client", "/CN=bakeoff client")] {
        let (key, csr, cert, ext) = (
            format!("{who}-key.pem"),
            format!("{who}.csr"),
            format!("{who}-cert.pem"),
            format!("{who}.ext"),
        );
        req(&key, &csr, subject);
        let mut a = vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-out",
            &cert,
            "-extfile",
            &ext,
        ];
        a.extend(days);
        openssl(&dir, &a);
    }
    readable(&dir);
    Pki { dir }
}

/// Certificates as MySQL's manual makes them ("Creating SSL Certificates and Keys Using
/// openssl"): a CA from `req -x509`, server (CN=localhost) and client certificates from
/// `x509 -req` without an extension file, which makes them X.509 version 1. Beside them, for
/// the refusals: `other-ca.pem`, and `inter-cert.pem`, an intermediate CA made the same way
/// (version 1, so no CA to OpenSSL), which signed `by-inter-cert.pem` (CN=localhost); and
/// `v1root.pem`, a self-signed version 1 root, which signed `by-v1root-cert.pem`.
pub fn make_manual_pki(name: &str) -> Pki {
    let dir = crate::scratch::dir(&format!("manual-pki-{name}"));
    let run = |args: &str| openssl(&dir, &args.split(' ').collect::<Vec<_>>());
    run("genrsa -out ca-key.pem 2048");
    run("req -new -x509 -nodes -days 3600 -key ca-key.pem -out ca.pem -subj /CN=MySQL_CA");
    run("req -x509 -newkey rsa:2048 -nodes -days 30 -keyout other-ca-key.pem -out other-ca.pem -subj /CN=another_CA");
    let signed = |who: &str, subject: &str, ca: &str| {
        run(&format!("req -newkey rsa:2048 -days 3600 -nodes -keyout {who}-key.pem -out {who}-req.pem -subj {subject}"));
        run(&format!("x509 -req -in {who}-req.pem -days 3600 -CA {ca}.pem -CAkey {ca}-key.pem -set_serial 01 -out {who}-cert.pem"));
    };
    signed("server", "/CN=localhost", "ca");
    signed("client", "/CN=client", "ca");
    // x509 -req names the key it signs with `-CAkey`: the intermediate's key is inter-key.pem.
    signed("inter", "/CN=intermediate", "ca");
    std::fs::copy(dir.join("inter-cert.pem"), dir.join("inter.pem")).expect("copy");
    signed("by-inter", "/CN=localhost", "inter");
    // A version 1 root (self-signed by `x509 -req -signkey`), which OpenSSL takes as a CA.
    run("req -newkey rsa:2048 -nodes -keyout v1root-key.pem -out v1root-req.pem -subj /CN=v1root");
    run("x509 -req -in v1root-req.pem -signkey v1root-key.pem -days 30 -out v1root.pem");
    signed("by-v1root", "/CN=localhost", "v1root");
    readable(&dir);
    Pki { dir }
}

/// Chains whose server certificate is version 1 (signed by `x509 -req` without extensions,
/// CN=db.example.test) under version 3 CAs that break one of OpenSSL's chain rules each, and
/// one that breaks none. `ca.pem` is the root; `root0.pem` a root with pathlen:0. Each
/// `sub-NAME.pem` signed `leaf-NAME.pem`: `good` (CA:TRUE, keyCertSign), `nc` (name-constrained
/// to other.test), `ku` (keyUsage without keyCertSign), `eku` (extendedKeyUsage clientAuth
/// only), `anyeku` (extendedKeyUsage anyExtendedKeyUsage only), `deep` (a good sub-CA, but
/// under root0, which allows no CA below it). `leaf-ncip.pem` (CN=10.1.2.3) is signed by
/// `sub-nc` too; `deep-bundle.pem` holds `sub-deep` and `root0`, a CA file with an
/// intermediate beside its root.
pub fn make_chain_pki(name: &str) -> Pki {
    let dir = crate::scratch::dir(&format!("chain-pki-{name}"));
    let run = |args: &str| openssl(&dir, &args.split(' ').collect::<Vec<_>>());
    let ca_ext = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n";
    std::fs::write(dir.join("root0.ext"), "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n").expect("write");
    run("req -x509 -newkey rsa:2048 -nodes -days 30 -keyout ca-key.pem -out ca.pem -subj /CN=chain_root");
    run("req -newkey rsa:2048 -nodes -keyout root0-key.pem -out root0-req.pem -subj /CN=root_pathlen0");
    run("x509 -req -in root0-req.pem -signkey root0-key.pem -days 30 -extfile root0.ext -out root0.pem");
    let subs = [
        ("good", "ca", ca_ext.to_string()),
        (
            "nc",
            "ca",
            format!("{ca_ext}nameConstraints=critical,permitted;DNS:other.test\n"),
        ),
        (
            "ku",
            "ca",
            "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,digitalSignature\n".to_string(),
        ),
        (
            "eku",
            "ca",
            format!("{ca_ext}extendedKeyUsage=clientAuth\n"),
        ),
        (
            "anyeku",
            "ca",
            format!("{ca_ext}extendedKeyUsage=anyExtendedKeyUsage\n"),
        ),
        ("deep", "root0", ca_ext.to_string()),
    ];
    for (i, (sub, root, ext)) in subs.iter().enumerate() {
        std::fs::write(dir.join(format!("sub-{sub}.ext")), ext).expect("write");
        run(&format!("req -newkey rsa:2048 -nodes -keyout sub-{sub}-key.pem -out sub-{sub}-req.pem -subj /CN=sub_{sub}"));
        run(&format!("x509 -req -in sub-{sub}-req.pem -CA {root}.pem -CAkey {root}-key.pem -set_serial {} -days 30 -extfile sub-{sub}.ext -out sub-{sub}.pem", 10 + i));
        run(&format!("req -newkey rsa:2048 -nodes -keyout leaf-{sub}-key.pem -out leaf-{sub}-req.pem -subj /CN=db.example.test"));
        run(&format!("x509 -req -in leaf-{sub}-req.pem -CA sub-{sub}.pem -CAkey sub-{sub}-key.pem -set_serial {} -days 30 -out leaf-{sub}.pem", 20 + i));
    }
    run("req -newkey rsa:2048 -nodes -keyout leaf-ncip-key.pem -out leaf-ncip-req.pem -subj /CN=10.1.2.3");
    run("x509 -req -in leaf-ncip-req.pem -CA sub-nc.pem -CAkey sub-nc-key.pem -set_serial 40 -days 30 -out leaf-ncip.pem");
    let bundle: String = ["sub-deep.pem", "root0.pem"]
        .iter()
        .map(|p| std::fs::read_to_string(dir.join(p)).expect("read"))
        .collect();
    std::fs::write(dir.join("deep-bundle.pem"), bundle).expect("write");
    Pki { dir }
}

/// Whether OpenSSL's own `verify` takes `leaf` with `untrusted` intermediates under `ca`.
pub fn openssl_verifies(dir: &Path, ca: &str, untrusted: &str, leaf: &str) -> bool {
    Command::new("openssl")
        .args([
            "verify",
            "-CAfile",
            ca,
            "-untrusted",
            untrusted,
            "-purpose",
            "sslserver",
            leaf,
        ])
        .current_dir(dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The files readable by the server, which runs as `mysql` under root.
fn readable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).expect("pki dir").flatten() {
        let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o644));
    }
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
}

/// A server with TLS on, refusing plain TCP; its certificates in the returned [`Pki`].
pub fn tls_server(name: &str) -> (Server, Pki) {
    server_with(make_pki(name))
}

/// [`tls_server`] with the manual's certificates ([`make_manual_pki`]).
pub fn manual_tls_server(name: &str) -> (Server, Pki) {
    server_with(make_manual_pki(name))
}

fn server_with(pki: Pki) -> (Server, Pki) {
    let path = |f: &str| pki.file(f).display().to_string();
    let spec = ServerSpec {
        options: vec![
            format!("ssl-ca={}", path("ca.pem")),
            format!("ssl-cert={}", path("server-cert.pem")),
            format!("ssl-key={}", path("server-key.pem")),
            "require-secure-transport=ON".into(),
        ],
        ..ServerSpec::default()
    };
    match Server::start(&spec) {
        Ok(s) => (s, pki),
        Err(e) => panic!("the TLS tests need a real MariaDB server and could not start one: {e}\n\nTo fix: {INSTALL_HINT}"),
    }
}
