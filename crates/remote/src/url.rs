//! Where something runs: `local` (this machine) or `ssh://[user@]host[:port]`.

use std::fmt;

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
        // [v6]:port, v6 alone, host:port, host
        let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
            let (h, after) = inner
                .split_once(']')
                .ok_or_else(|| bad("an unclosed '['"))?;
            (h, after.strip_prefix(':'))
        } else if hostport.matches(':').count() == 1 {
            let (h, p) = hostport.split_once(':').unwrap_or((hostport, ""));
            (h, Some(p))
        } else {
            (hostport, None)
        };
        if host.is_empty() || host.starts_with('-') {
            return Err(bad("no host name"));
        }
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .map_err(|_| bad("the port is not a number"))?,
            ),
            None => None,
        };
        if user.as_deref().is_some_and(|u| u.starts_with('-')) {
            return Err(bad("a user name cannot start with '-'"));
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
        ] {
            let e = HostUrl::parse(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("ssh://[user@]host"), "{e}");
        }
    }
}
