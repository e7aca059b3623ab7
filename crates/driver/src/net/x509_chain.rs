//! The rules OpenSSL applies along a chain above the server's certificate, for the chains
//! `x509.rs` checks itself (a version 1 server certificate, which webpki cannot parse): each
//! CA's keyUsage, where it has one, must allow keyCertSign; its pathLenConstraint bounds the
//! CAs below it; its extendedKeyUsage, where it has one, must allow serverAuth (OpenSSL's
//! purpose check for an SSL server's chain); its nameConstraints bound the names of every
//! certificate below it (subjectAltName DNS names and addresses, and the server's common
//! name when it has no DNS name in a subjectAltName).

use std::net::IpAddr;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, NameConstraints};

/// `chain[0]` is the server's certificate, then each CA up to the trusted root. A refusal
/// names the CA at fault by its place in `chain`, and says why.
pub(super) fn chain_rules(chain: &[&X509Certificate<'_>]) -> Result<(), (usize, String)> {
    for (i, ca) in chain.iter().enumerate().skip(1) {
        let refused = |why: String| (i, why);
        if let Ok(Some(ku)) = ca.key_usage() {
            if !ku.value.key_cert_sign() {
                return Err(refused(
                    "has a keyUsage without keyCertSign: it may not sign certificates (OpenSSL: invalid CA certificate)".into(),
                ));
            }
        }
        // The CAs between this one and the server's certificate.
        let below = (i - 1) as u32;
        let path_len = ca
            .basic_constraints()
            .ok()
            .flatten()
            .and_then(|b| b.value.path_len_constraint);
        if let Some(n) = path_len.filter(|n| below > *n) {
            return Err(refused(format!(
                "allows {n} CA certificate(s) below it (pathlen:{n}) and has {below} (OpenSSL: path length constraint exceeded)"
            )));
        }
        if let Ok(Some(eku)) = ca.extended_key_usage() {
            if !eku.value.server_auth && !eku.value.any {
                return Err(refused(
                    "has an extendedKeyUsage without serverAuth: it may not vouch for a server (OpenSSL: unsupported certificate purpose)".into(),
                ));
            }
        }
        if let Ok(Some(nc)) = ca.name_constraints() {
            for (j, below) in chain[..i].iter().enumerate() {
                if let Some(name) = outside(nc.value, &names(below, j == 0)) {
                    let whose = match j {
                        0 => "the server's certificate",
                        _ => "a CA certificate below it",
                    };
                    return Err(refused(format!(
                        "constrains the names below it, and {whose} names {name} outside them (OpenSSL: permitted subtree violation)"
                    )));
                }
            }
        }
    }
    Ok(())
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
                .filter(|cn| cn.contains('.') && cn.parse::<IpAddr>().is_err())
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

/// The first of `names` the constraints leave out, printable.
fn outside(nc: &NameConstraints<'_>, names: &[Name]) -> Option<String> {
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
        (not_permitted || is_excluded).then(|| match name {
            Name::Dns(d) => bakeoff_proto::printable(d),
            Name::Ip(a) => a.to_string(),
        })
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
