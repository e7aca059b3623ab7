//! What a PostgreSQL login may be: libpq's `channel_binding` and libpq 16's `require_auth`,
//! read as libpq reads them (URL and service keys, PGCHANNELBINDING and PGREQUIREAUTH), with
//! libpq's words for a bad value.

/// libpq's `channel_binding`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ChannelBinding {
    /// `n` in SCRAM's header: never bind.
    Disable,
    /// Bind when TLS is up and the server offers SCRAM-SHA-256-PLUS (libpq's default).
    #[default]
    Prefer,
    /// Refuse a login that is not SCRAM bound to the TLS channel.
    Require,
}

impl ChannelBinding {
    pub fn parse(word: &str) -> Result<ChannelBinding, String> {
        match word {
            "disable" => Ok(ChannelBinding::Disable),
            "prefer" => Ok(ChannelBinding::Prefer),
            "require" => Ok(ChannelBinding::Require),
            _ => Err(format!("invalid channel_binding value: \"{word}\"")),
        }
    }
}

/// A way the server may log the client in, as `require_auth` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AuthMethod {
    /// No exchange at all (trust, peer).
    None,
    /// The password in clear.
    Password,
    Md5,
    ScramSha256,
    Gss,
    Sspi,
}

impl AuthMethod {
    fn parse(word: &str) -> Option<AuthMethod> {
        Some(match word {
            "none" => AuthMethod::None,
            "password" => AuthMethod::Password,
            "md5" => AuthMethod::Md5,
            "scram-sha-256" => AuthMethod::ScramSha256,
            "gss" => AuthMethod::Gss,
            "sspi" => AuthMethod::Sspi,
            _ => return None,
        })
    }

    const ALL: [AuthMethod; 6] = [
        AuthMethod::None,
        AuthMethod::Password,
        AuthMethod::Md5,
        AuthMethod::ScramSha256,
        AuthMethod::Gss,
        AuthMethod::Sspi,
    ];

    /// What libpq says the server asked for, when refusing it.
    pub fn requested(self) -> &'static str {
        match self {
            AuthMethod::None => "server did not complete authentication",
            AuthMethod::Password => "server requested a cleartext password",
            AuthMethod::Md5 => "server requested a hashed password",
            AuthMethod::ScramSha256 => "server requested SASL authentication",
            AuthMethod::Gss => "server requested GSSAPI authentication",
            AuthMethod::Sspi => "server requested SSPI authentication",
        }
    }
}

/// libpq 16's `require_auth`: the methods the server may use, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequireAuth {
    pub text: String,
    allowed: Vec<AuthMethod>,
}

impl RequireAuth {
    /// A comma-separated list of methods, all plain (only these) or all negated with `!`
    /// (any but these), as libpq 16 reads it.
    pub fn parse(text: &str) -> Result<RequireAuth, String> {
        let words: Vec<&str> = text.split(',').collect();
        let negated = words.first().is_some_and(|w| w.starts_with('!'));
        let mut named = Vec::new();
        for w in &words {
            let (neg, name) = match w.strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, *w),
            };
            if neg != negated {
                return Err(match negated {
                    true => format!("negative require_auth method \"{w}\" cannot be mixed with non-negative methods"),
                    false => format!("require_auth method \"{w}\" cannot be mixed with negative methods"),
                });
            }
            let m = AuthMethod::parse(name)
                .ok_or_else(|| format!("invalid require_auth value: \"{name}\""))?;
            if named.contains(&m) {
                return Err(format!(
                    "require_auth method \"{name}\" is specified more than once"
                ));
            }
            named.push(m);
        }
        let allowed = match negated {
            false => named,
            true => AuthMethod::ALL
                .into_iter()
                .filter(|m| !named.contains(m))
                .collect(),
        };
        Ok(RequireAuth {
            text: text.to_string(),
            allowed,
        })
    }

    pub fn allows(&self, m: AuthMethod) -> bool {
        self.allowed.contains(&m)
    }

    /// Whether the user named this method as allowed, in so many words (not by negation).
    pub fn names(&self, m: AuthMethod) -> bool {
        !self.text.starts_with('!') && self.allows(m)
    }

    /// libpq's refusal when the server asks for `m`; None when it may.
    pub fn refusal(&self, m: AuthMethod) -> Option<String> {
        (!self.allows(m)).then(|| {
            format!(
                "authentication method requirement \"{}\" failed: {}",
                self.text,
                m.requested()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_auth_reads_as_libpq_16() {
        let r = RequireAuth::parse("scram-sha-256").unwrap();
        assert!(r.allows(AuthMethod::ScramSha256) && !r.allows(AuthMethod::None));
        assert_eq!(
            r.refusal(AuthMethod::Password).unwrap(),
            "authentication method requirement \"scram-sha-256\" failed: server requested a cleartext password"
        );
        let r = RequireAuth::parse("!password,!md5").unwrap();
        assert!(r.allows(AuthMethod::None) && r.allows(AuthMethod::ScramSha256));
        assert!(!r.allows(AuthMethod::Md5) && !r.names(AuthMethod::ScramSha256));
        assert!(RequireAuth::parse("md5,password")
            .unwrap()
            .names(AuthMethod::Md5));
        for (bad, says) in [
            ("scram", "invalid require_auth value: \"scram\""),
            ("md5,!password", "cannot be mixed with negative"),
            ("!md5,password", "cannot be mixed with non-negative"),
            ("md5,md5", "more than once"),
        ] {
            let e = RequireAuth::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert_eq!(
            ChannelBinding::parse("maybe").unwrap_err(),
            "invalid channel_binding value: \"maybe\""
        );
    }
}
