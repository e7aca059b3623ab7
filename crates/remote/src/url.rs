//! Where something runs: `local` (this machine) or `ssh://[user@]host[:port]`.

use std::fmt;

/// What a host or user name may hold, as said in errors.
const NAME_RULE: &str =
    "may hold only letters, digits, '.', '_' and '-', and may not start with '-'";

/// An IPv6 address, with an optional zone (`fe80::1%eth0`) made of name characters.
fn is_ipv6(s: &str) -> bool {
    let (addr, zone) = s.split_once('%').unwrap_or((s, ""));
    addr.parse::<std::net::Ipv6Addr>().is_ok()
        && zone
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostUrl {
    Local,
    Ssh {
        user: Option<String>,
        host: String,
        port: Option<u16>,
    },
}

impl HostUrl {
    /// Parse `s`; the error says what was wrong and what a good one looks like.
    pub fn parse(s: &str) -> Result<HostUrl, String> {
        let bad = |why: &str| {
            format!("host '{s}': {why}; write \"local\" or \"ssh://[user@]host[:port]\" (e.g. ssh://bench@db1 or ssh://db1:2222)")
        };
        if s == "local" {
            return Ok(HostUrl::Local);
        }
        let rest = s
            .strip_prefix("ssh://")
            .ok_or_else(|| bad("not an ssh:// address"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains('/') {
            return Err(bad("a path is not allowed"));
        }
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
            Some(_) => return Err(bad("the user before '@' is empty")),
            None => (None, rest),
        };
        // [v6]:port, [v6], host:port, host
        let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
            let (h, after) = inner
                .split_once(']')
                .ok_or_else(|| bad("an unclosed '['"))?;
            if !is_ipv6(h) {
                return Err(bad(&format!("'[{h}]' is not an IPv6 address")));
            }
            let port = match after {
                "" => None,
                a => Some(
                    a.strip_prefix(':')
                        .ok_or_else(|| bad("only ':port' may follow ']'"))?,
                ),
            };
            (h, port)
        } else {
            match hostport.split_once(':') {
                // Two or more: an IPv6 address without brackets, refused by the name rule.
                Some((h, p)) if !p.contains(':') => (h, Some(p)),
                _ => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host name"));
        }
        let name_ok = |n: &str| {
            !n.starts_with('-')
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        };
        // ssh expands a host name into ProxyCommand and the like through a shell: only names
        // that no shell reads twice get through (and none ssh would take for an option).
        if !hostport.starts_with('[') && !name_ok(host) {
            return Err(bad(&format!(
                "host name '{host}' {NAME_RULE}{}",
                if host.contains(':') {
                    " (an IPv6 address goes in brackets: ssh://[fe80::1])"
                } else {
                    ""
                }
            )));
        }
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
            ),
            None => None,
        };
        if let Some(u) = user.as_deref().filter(|u| !name_ok(u)) {
            return Err(bad(&format!("user name '{u}' {NAME_RULE}")));
        }
        Ok(HostUrl::Ssh {
            user,
            host: host.to_string(),
            port,
        })
    }

    /// ssh's destination argument: `user@host` or `host`.
    pub fn destination(&self) -> Option<String> {
        match self {
            HostUrl::Local => None,
            HostUrl::Ssh { user, host, .. } => Some(match user {
                Some(u) => format!("{u}@{host}"),
                None => host.clone(),
            }),
        }
    }
}

impl fmt::Display for HostUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostUrl::Local => f.write_str("local"),
            HostUrl::Ssh { port, .. } => {
                write!(f, "ssh://{}", self.destination().unwrap_or_default())?;
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        assert_eq!(HostUrl::parse("local").unwrap(), HostUrl::Local);
        let u = HostUrl::parse("ssh://bench@load1:2222").unwrap();
        assert_eq!(u.destination().unwrap(), "bench@load1");
        assert_eq!(u.to_string(), "ssh://bench@load1:2222");
        let v = HostUrl::parse("ssh://[fe80::1]:22").unwrap();
        assert_eq!(v.destination().unwrap(), "fe80::1");
        let z = HostUrl::parse("ssh://bench@[fe80::1%eth0]").unwrap();
        assert_eq!(z.destination().unwrap(), "bench@fe80::1%eth0");
        assert!(HostUrl::parse("ssh://db-1.lab_a.example:2222").is_ok());
        assert_eq!(
            HostUrl::parse("ssh://db1").unwrap().to_string(),
            "ssh://db1"
        );
    }

    #[test]
    fn refuses_what_ssh_would_misread() {
        for bad in [
            "db1",
            "ssh://",
            "ssh://-oProxyCommand=x",
            "ssh://a:b",
            "ssh://u@h/p",
            "ssh://h:0",
            "ssh://[db1]",
            "ssh://[::1]x",
        ] {
            let e = HostUrl::parse(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("ssh://[user@]host"), "{e}");
        }
    }

    #[test]
    fn names_a_shell_would_read_twice_are_refused_with_the_rule() {
        for bad in [
            "ssh://db1;touch${IFS}x",
            "ssh://$(id)",
            "ssh://db`id`",
            "ssh://db1%h",
            "ssh://a'b",
            "ssh://a b",
            "ssh://x$(id)@db1",
            "ssh://-oProxyCommand=x@db1",
            "ssh://fe80::1",
        ] {
            let e = HostUrl::parse(bad).unwrap_err();
            assert!(
                e.contains("only letters, digits, '.', '_' and '-'"),
                "{bad}: {e}"
            );
        }
        assert!(HostUrl::parse("ssh://fe80::1")
            .unwrap_err()
            .contains("brackets"));
    }
}
