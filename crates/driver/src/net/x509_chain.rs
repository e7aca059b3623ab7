//! The rules OpenSSL applies along a chain, for the chains `x509.rs` checks itself (a version
//! 1 server certificate, which webpki cannot parse): the server's own keyUsage and
//! extendedKeyUsage, where it has them, must allow a TLS server; each CA's keyUsage must allow
//! keyCertSign, its pathLenConstraint bounds the CAs below it, its extendedKeyUsage must allow
//! serverAuth (OpenSSL's purpose check for an SSL server's chain), and its nameConstraints
//! bound the names of every certificate below it (subjectAltName DNS names and addresses,
//! and the server's common name when it has no DNS name in a subjectAltName); a kind of name
//! constraint bakeoff does not check refuses the chain. An extension that cannot be read
//! refuses its certificate.

use std::net::IpAddr;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, NameConstraints};

/// `chain[0]` is the server's certificate, then each CA up to the trusted root. A refusal
/// names the certificate at fault by its place in `chain`, and says why. An extension that
/// cannot be read (malformed, or there twice) refuses its certificate, as OpenSSL's does.
pub(super) fn chain_rules(chain: &[&X509Certificate<'_>]) -> Result<(), (usize, String)> {
    server_purpose(chain[0]).map_err(|why| (0, why))?;
    for (i, ca) in chain.iter().enumerate().skip(1) {
        ca_rules(ca, i, chain).map_err(|why| (i, why))?;
    }
    Ok(())
}

fn unreadable(what: &str, e: impl std::fmt::Display) -> String {
    format!("has a {what} extension OpenSSL could not use either ({e}): reissue it")
}

/// The server's own certificate, where it has these extensions: a keyUsage for TLS
/// (digitalSignature, keyEncipherment or keyAgreement) and an extendedKeyUsage with
/// serverAuth (or one of the two Server Gated Crypto purposes OpenSSL takes for it).
fn server_purpose(c: &X509Certificate<'_>) -> Result<(), String> {
    if let Some(ku) = c.key_usage().map_err(|e| unreadable("keyUsage", e))? {
        let k = ku.value;
        if !(k.digital_signature() || k.key_encipherment() || k.key_agreement()) {
            return Err("has a keyUsage that allows no TLS key exchange (OpenSSL: unsupported certificate purpose)".into());
        }
    }
    eku_serves(c)
}

/// OpenSSL's SSL server purpose: an extendedKeyUsage, where there is one, names serverAuth or
/// Server Gated Crypto (Microsoft's or Netscape's); anyExtendedKeyUsage alone does not do.
fn eku_serves(c: &X509Certificate<'_>) -> Result<(), String> {
    const SGC: [&str; 2] = ["1.3.6.1.4.1.311.10.3.3", "2.16.840.1.113730.4.1"];
    let Some(eku) = c
        .extended_key_usage()
        .map_err(|e| unreadable("extendedKeyUsage", e))?
    else {
        return Ok(());
    };
    let sgc = eku
        .value
        .other
        .iter()
        .any(|o| SGC.contains(&o.to_id_string().as_str()));
    match eku.value.server_auth || sgc {
        true => Ok(()),
        false => Err("has an extendedKeyUsage without serverAuth: it may not vouch for a server (OpenSSL: unsupported certificate purpose)".into()),
    }
}

/// CA `i` of `chain`: keyUsage, pathlen, purpose, name constraints.
fn ca_rules(
    ca: &X509Certificate<'_>,
    i: usize,
    chain: &[&X509Certificate<'_>],
) -> Result<(), String> {
    if let Some(ku) = ca.key_usage().map_err(|e| unreadable("keyUsage", e))? {
        if !ku.value.key_cert_sign() {
            return Err("has a keyUsage without keyCertSign: it may not sign certificates (OpenSSL: invalid CA certificate)".into());
        }
    }
    let constraints = ca
        .basic_constraints()
        .map_err(|e| unreadable("basicConstraints", e))?;
    // The CAs between this one and the server's certificate.
    let below = (i - 1) as u32;
    if let Some(n) = constraints
        .and_then(|b| b.value.path_len_constraint)
        .filter(|n| below > *n)
    {
        return Err(format!(
            "allows {n} CA certificate(s) below it (pathlen:{n}) and has {below} (OpenSSL: path length constraint exceeded)"
        ));
    }
    eku_serves(ca)?;
    let Some(nc) = ca
        .name_constraints()
        .map_err(|e| unreadable("nameConstraints", e))?
    else {
        return Ok(());
    };
    if let Some(kind) = unchecked_kind(nc.value) {
        return Err(format!(
            "constrains the names below it by {kind}, which bakeoff does not check: reissue the CA with DNS or IP address constraints only, or give the server a version 3 certificate (checked in full)"
        ));
    }
    for (j, lower) in chain[..i].iter().enumerate() {
        if let Some((name, how)) = outside(nc.value, &names(lower, j == 0)) {
            let whose = match j {
                0 => "the server's certificate",
                _ => "a CA certificate below it",
            };
            return Err(format!(
                "constrains the names below it, and {whose} names {name} {how} (OpenSSL: {} subtree violation)",
                if how == "outside them" { "permitted" } else { "excluded" }
            ));
        }
    }
    Ok(())
}

/// A kind of name constraint other than DNS names and addresses (a directory name, an
/// email, a URI...), where a CA has one: bakeoff does not check those, so it refuses.
fn unchecked_kind(nc: &NameConstraints<'_>) -> Option<&'static str> {
    let all = nc
        .permitted_subtrees
        .iter()
        .chain(nc.excluded_subtrees.iter())
        .flatten();
    all.map(|s| &s.base).find_map(|b| match b {
        GeneralName::DNSName(_) | GeneralName::IPAddress(_) => None,
        GeneralName::DirectoryName(_) => Some("directory name"),
        GeneralName::RFC822Name(_) => Some("email address"),
        GeneralName::URI(_) => Some("URI"),
        _ => Some("a kind of name"),
    })
}

/// A name a certificate carries.
enum Name {
    Dns(String),
    Ip(IpAddr),
}

/// Its subjectAltName's DNS names and addresses; for the server's own, its common names when
/// no DNS name is there (OpenSSL checks those too).
fn names(c: &X509Certificate<'_>, server: bool) -> Vec<Name> {
    let mut out: Vec<Name> = Vec::new();
    if let Ok(Some(san)) = c.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                GeneralName::DNSName(d) => out.push(Name::Dns(d.to_ascii_lowercase())),
                GeneralName::IPAddress(b) => out.extend(address(b).map(Name::Ip)),
                _ => {}
            }
        }
    }
    if server && !out.iter().any(|n| matches!(n, Name::Dns(_))) {
        let cns = c.subject().iter_common_name();
        out.extend(
            cns.filter_map(|a| a.as_str().ok())
                // OpenSSL's cn2dnsid: letters, digits, '-' and '.', with a dot in it; an
                // address in the common name is such a name too.
                .filter(|cn| {
                    cn.contains('.')
                        && cn
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
                })
                .map(|cn| Name::Dns(cn.to_ascii_lowercase())),
        );
    }
    out
}

/// An address as a certificate holds it (4 or 16 bytes).
fn address(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => <[u8; 4]>::try_from(b).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(b).ok().map(IpAddr::from),
        _ => None,
    }
}

/// The first of `names` the constraints leave out, printable, and how (outside the permitted
/// subtrees, or inside an excluded one).
fn outside(nc: &NameConstraints<'_>, names: &[Name]) -> Option<(String, &'static str)> {
    let permitted = nc.permitted_subtrees.as_deref().unwrap_or_default();
    let excluded = nc.excluded_subtrees.as_deref().unwrap_or_default();
    names.iter().find_map(|name| {
        let within = |base: &GeneralName<'_>| match (name, base) {
            (Name::Dns(n), GeneralName::DNSName(b)) => Some(dns_within(n, b)),
            (Name::Ip(a), GeneralName::IPAddress(b)) => Some(ip_within(*a, b)),
            _ => None,
        };
        let kinds: Vec<bool> = permitted.iter().filter_map(|s| within(&s.base)).collect();
        let not_permitted = !kinds.is_empty() && !kinds.contains(&true);
        let is_excluded = excluded.iter().any(|s| within(&s.base) == Some(true));
        let shown = || match name {
            Name::Dns(d) => bakeoff_proto::printable(d),
            Name::Ip(a) => a.to_string(),
        };
        match (is_excluded, not_permitted) {
            (true, _) => Some((shown(), "inside an excluded one")),
            (_, true) => Some((shown(), "outside them")),
            _ => None,
        }
    })
}

/// RFC 5280's DNS subtree: the base itself or a name below it; `.base` only below it.
fn dns_within(name: &str, base: &str) -> bool {
    let base = base.to_ascii_lowercase();
    if base.is_empty() {
        return true;
    }
    match base.strip_prefix('.') {
        Some(_) => name.ends_with(&base),
        None => name == base || name.ends_with(&format!(".{base}")),
    }
}

/// An address against a subtree's address and mask (8 bytes for IPv4, 32 for IPv6).
fn ip_within(a: IpAddr, base: &[u8]) -> bool {
    let bytes: Vec<u8> = match a {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    };
    if base.len() != 2 * bytes.len() {
        return false;
    }
    let (net, mask) = base.split_at(bytes.len());
    bytes
        .iter()
        .zip(net.iter().zip(mask))
        .all(|(b, (n, m))| b & m == n & m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_and_address_subtrees_are_rfc_5280s() {
        assert!(dns_within("db.example.test", "example.test"));
        assert!(dns_within("example.test", "example.test"));
        assert!(!dns_within("badexample.test", "example.test"));
        assert!(!dns_within("example.test", ".example.test"));
        assert!(dns_within("a.example.test", ".example.test"));
        let net = [10, 1, 0, 0, 255, 255, 0, 0];
        assert!(ip_within("10.1.2.3".parse().unwrap(), &net));
        assert!(!ip_within("10.2.2.3".parse().unwrap(), &net));
        assert!(!ip_within("::1".parse().unwrap(), &net));
    }
}
