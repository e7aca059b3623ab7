//! Authentication scrambles for the plugins bakeoff speaks.
//!
//! - `mysql_native_password`: SHA1(pw) XOR SHA1(scramble || SHA1(SHA1(pw))).
//! - `caching_sha2_password` (MySQL 8 default), fast path: SHA256(pw) XOR
//!   SHA256(SHA256(SHA256(pw)) || scramble). Its full-auth path needs TLS or RSA; over a
//!   unix socket the server accepts the cleartext password, which the driver sends there only.
//! - `unix_socket` / `auth_socket`: the server checks the peer's uid; the client sends nothing.
//! - `client_ed25519` (MariaDB's ed25519 accounts): an Ed25519 signature of the server's
//!   32-byte nonce, with the key expanded as Ed25519 expands a seed, from the password itself
//!   (of any length): SHA-512(password), clamped.
//! - `sha256_password`, and `caching_sha2_password`'s full authentication: the password
//!   itself (NUL-terminated) over TLS or a unix socket; on a plain connection the same bytes
//!   XOR the nonce (repeated), encrypted with the server's RSA public key (OAEP with SHA-1, as
//!   MySQL 8.0.5 and later decrypt it): [`rsa_encrypted_password`].
//! - `mysql_clear_password`: the password itself, NUL-terminated ([`cleartext`]); the driver
//!   sends it only when asked and only over TLS or a unix socket.

use sha1::{Digest, Sha1};
use sha2::Sha256;

pub const NATIVE: &str = "mysql_native_password";
pub const CACHING_SHA2: &str = "caching_sha2_password";
pub const UNIX_SOCKET: &str = "unix_socket";
pub const AUTH_SOCKET: &str = "auth_socket";
pub const ED25519: &str = "client_ed25519";
pub const SHA256: &str = "sha256_password";
pub const CLEARTEXT: &str = "mysql_clear_password";

/// The plugins bakeoff answers, for the message that names an unknown one.
pub const SPOKEN: &[&str] = &[
    NATIVE,
    CACHING_SHA2,
    SHA256,
    ED25519,
    CLEARTEXT,
    UNIX_SOCKET,
    AUTH_SOCKET,
];

/// The auth response for `plugin`, or `None` if bakeoff does not speak it.
pub fn scramble(plugin: &str, password: &[u8], nonce: &[u8]) -> Option<Vec<u8>> {
    // Servers send the 20-byte nonce of the SHA plugins NUL-terminated in some places; the
    // NUL is not part of it. ed25519's 32 random bytes come as they are (and may end in 0).
    let scramble20 = nonce.strip_suffix(&[0]).unwrap_or(nonce);
    match plugin {
        NATIVE => Some(native(password, scramble20)),
        CACHING_SHA2 => Some(caching_sha2(password, scramble20)),
        UNIX_SOCKET | AUTH_SOCKET => Some(Vec::new()),
        ED25519 => Some(ed25519(password, nonce).to_vec()),
        _ => None,
    }
}

/// The password as the plugins that send it whole take it: NUL-terminated.
pub fn cleartext(password: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(password.len() + 1);
    v.extend_from_slice(password);
    v.push(0);
    v
}

/// The password (NUL-terminated) XOR the nonce, encrypted with the server's RSA public key
/// (PEM: `BEGIN PUBLIC KEY` as MySQL sends it, or PKCS#1's `BEGIN RSA PUBLIC KEY`), with
/// OAEP padding (SHA-1), as `sha256_password` and `caching_sha2_password` take it on a
/// plain connection.
pub fn rsa_encrypted_password(
    password: &[u8],
    nonce: &[u8],
    public_key_pem: &[u8],
) -> Result<Vec<u8>, String> {
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::pkcs8::DecodePublicKey;
    let nonce = nonce.strip_suffix(&[0]).unwrap_or(nonce);
    if nonce.is_empty() {
        return Err("the server sent no nonce to encrypt the password with".into());
    }
    let pem = std::str::from_utf8(public_key_pem)
        .map_err(|_| "the server's public key is not PEM text".to_string())?
        .trim_matches(char::from(0))
        .trim();
    let key = rsa::RsaPublicKey::from_public_key_pem(pem)
        .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(pem))
        .map_err(|e| format!("the server's public key is not an RSA key in PEM ({e})"))?;
    let plain: Vec<u8> = cleartext(password)
        .iter()
        .zip(nonce.iter().cycle())
        .map(|(p, n)| p ^ n)
        .collect();
    key.encrypt(&mut rsa::rand_core::OsRng, rsa::Oaep::new::<Sha1>(), &plain)
        .map_err(|e| format!("encrypting the password with the server's public key failed: {e} (a password that long needs a larger key)"))
}

fn native(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha1::digest(password);
    let h2 = Sha1::digest(h1);
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(h2);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

fn caching_sha2(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha256::digest(password);
    let h2 = Sha256::digest(h1);
    let mut h = Sha256::new();
    h.update(h2);
    h.update(nonce);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

fn ed25519(password: &[u8], nonce: &[u8]) -> [u8; 64] {
    use ed25519_dalek::hazmat::{raw_sign, ExpandedSecretKey};
    let expanded: [u8; 64] = sha2::Sha512::digest(password).into();
    let key = ExpandedSecretKey::from_bytes(&expanded);
    let public = ed25519_dalek::VerifyingKey::from(&key);
    raw_sign::<sha2::Sha512>(&key, nonce, &public).to_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_scramble_matches_a_known_vector() {
        // Vector computed independently with Python's hashlib for password "secret" and
        // nonce b"abcdefghijklmnopqrst".
        let got = native(b"secret", b"abcdefghijklmnopqrst");
        let hex: String = got.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, NATIVE_VECTOR);
    }

    const NATIVE_VECTOR: &str = include_str!("../testdata/native_secret.hex");

    /// With a 32-byte password, the key is expanded exactly as Ed25519 expands a seed, so RFC
    /// 8032's test 1 (that seed, the empty message) is the vector; any other length is
    /// checked against a real MariaDB (driver/tests/auth.rs).
    #[test]
    fn ed25519_signs_as_rfc_8032_with_the_password_as_the_seed() {
        let seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let want = hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
        assert_eq!(ed25519(&seed, b"").to_vec(), want);
        assert_eq!(scramble(ED25519, &seed, b"").unwrap(), want);
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn empty_password_sends_empty_response() {
        assert!(scramble(NATIVE, b"", b"x").unwrap().is_empty());
        assert!(scramble(CACHING_SHA2, b"", b"x").unwrap().is_empty());
        assert!(scramble("dialog", b"pw", b"x").is_none());
    }
}
