//! Connecting: TLS first when asked for (SSLRequest, as libpq's sslmode), then the startup
//! message and the login the server asks for: trust and peer (nothing to send), cleartext,
//! md5, SCRAM-SHA-256. Kerberos, GSS and SSPI are refused by name.

use super::auth::{end_point_hash, md5_answer, Binding, Scram};
use super::conn::PgConn;
use super::fields::server_error;
use super::io::invalid;
use super::message as m;
use crate::net::transport::Stream;
use crate::{AuthMethod, ChannelBinding, ConnectOptions, DriverError, Endpoint, SslMode};

impl PgConn {
    /// Connect and log in, bounded by `opts.connect_timeout`.
    pub async fn connect(opts: &ConnectOptions) -> Result<PgConn, DriverError> {
        let endpoint = opts.endpoint.to_string();
        let attempt = async {
            let stream =
                Stream::connect(&opts.endpoint)
                    .await
                    .map_err(|source| DriverError::Connect {
                        endpoint: endpoint.clone(),
                        source,
                    })?;
            PgConn::greet(stream, opts, endpoint.clone()).await
        };
        match tokio::time::timeout(opts.connect_timeout, attempt).await {
            Ok(r) => r,
            Err(_) => Err(DriverError::ConnectTimeout {
                endpoint,
                secs: opts.connect_timeout.as_secs_f64(),
                attempts: 1,
                last: "no answer".into(),
            }),
        }
    }

    /// Connect with blocking socket I/O and no runtime (a script's `connect()`); drive its
    /// calls with [`complete`](crate::complete).
    pub fn connect_blocking(opts: &ConnectOptions) -> Result<PgConn, DriverError> {
        let endpoint = opts.endpoint.to_string();
        let stream =
            Stream::connect_blocking(&opts.endpoint, opts.connect_timeout).map_err(|source| {
                DriverError::Connect {
                    endpoint: endpoint.clone(),
                    source,
                }
            })?;
        // The login within the connect timeout, as the runtime's connect has it.
        let bound = crate::net::stream::deadline_on_this_thread(opts.connect_timeout);
        let r = crate::complete(PgConn::greet(stream, opts, endpoint.clone()));
        drop(bound);
        r.map_err(|e| e.at_login(&endpoint, opts.connect_timeout))
    }

    async fn greet(
        stream: Stream,
        opts: &ConnectOptions,
        endpoint: String,
    ) -> Result<PgConn, DriverError> {
        let mut conn = PgConn::new(stream, opts, endpoint);
        conn.maybe_tls(opts).await?;
        conn.login(opts).await?;
        conn.in_login = false;
        conn.farewell = true;
        Ok(conn)
    }

    /// SSLRequest over TCP when the mode asks for TLS; the server answers one byte.
    async fn maybe_tls(&mut self, opts: &ConnectOptions) -> Result<(), DriverError> {
        let mode = opts.tls.mode;
        let Endpoint::Tcp { host, .. } = &opts.endpoint else {
            return Ok(()); // a unix socket: libpq never asks for TLS on one
        };
        if mode == SslMode::Disabled {
            return Ok(());
        }
        self.wbuf.clear();
        m::ssl_request(&mut self.wbuf);
        self.send("TLS request").await?;
        let mut answer = [0u8; 1];
        let n = self
            .stream
            .read(&mut answer)
            .await
            .map_err(|e| self.io("TLS request", e))?;
        match (n, answer[0]) {
            (1, b'S') => {}
            (1, b'N') if mode < SslMode::Required => return Ok(()),
            (1, b'N') => {
                return Err(self.tls_failed(format!(
                    "sslmode={} needs TLS, and the server does not offer it (its ssl is off)",
                    libpq_name(mode)
                )))
            }
            _ => {
                return Err(self.io(
                    "TLS request",
                    invalid("the server's answer to SSLRequest is neither S nor N".into()),
                ))
            }
        }
        let config = opts.tls.client_config().map_err(|e| self.tls_failed(e))?;
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|_| self.tls_failed(format!("'{host}' is not a host name TLS can check")))?;
        let r = self.stream.start_tls(config, name).await;
        r.map_err(|e| self.tls_failed(e))
    }

    async fn login(&mut self, opts: &ConnectOptions) -> Result<(), DriverError> {
        let database = opts.database.as_deref().unwrap_or(&opts.user);
        let app = opts.application_name.as_deref().unwrap_or("bakeoff");
        let mut params = vec![
            ("user", opts.user.as_str()),
            ("database", database),
            ("client_encoding", "UTF8"),
            ("application_name", app),
        ];
        if let Some(o) = opts.server_options.as_deref() {
            params.push(("options", o));
        }
        self.wbuf.clear();
        m::startup(&mut self.wbuf, &params);
        self.send("startup").await?;
        let mut scram: Option<Scram> = None;
        loop {
            let msg = self.read_msg("login").await?;
            let body = self.body(msg).to_vec();
            match msg.kind {
                b'R' => {
                    let mut f = m::Fields(&body);
                    let code = f.i32().unwrap_or(-1);
                    let rest = f.rest();
                    self.authenticate(opts, code, rest, &mut scram).await?;
                }
                b'S' => {
                    let mut f = m::Fields(&body);
                    if f.cstr() == Some(b"server_version") {
                        let v = f.cstr().unwrap_or_default();
                        self.server_version = crate::printable(&String::from_utf8_lossy(v));
                    }
                }
                b'K' => {
                    let mut f = m::Fields(&body);
                    self.backend_pid = f.i32().unwrap_or(0) as u32;
                }
                b'Z' => {
                    self.tx_status = body.first().copied().unwrap_or(b'I');
                    return Ok(());
                }
                b'E' => {
                    let e = server_error(&body);
                    // 28P01 wrong password, 28000 no pg_hba.conf entry or role.
                    return Err(match e.sql_state.as_str() {
                        "28P01" | "28000" => DriverError::Auth {
                            user: opts.user.clone(),
                            reason: crate::printable(&e.message),
                        },
                        _ => DriverError::Server(e),
                    });
                }
                _ => {}
            }
        }
    }

    /// One Authentication message: answer it, or refuse what bakeoff does not do, what the
    /// options forbid (`require_auth`, `channel_binding`), and a password where someone other
    /// than the server could read it (`password_policy`).
    async fn authenticate(
        &mut self,
        opts: &ConnectOptions,
        code: i32,
        data: &[u8],
        scram: &mut Option<Scram>,
    ) -> Result<(), DriverError> {
        let auth_err = |reason: String| DriverError::Auth {
            user: opts.user.clone(),
            reason,
        };
        let asked = match code {
            0 => None,
            3 => Some(AuthMethod::Password),
            5 => Some(AuthMethod::Md5),
            10..=12 => Some(AuthMethod::ScramSha256),
            7 | 8 => Some(AuthMethod::Gss),
            9 => Some(AuthMethod::Sspi),
            _ => None,
        };
        if let (Some(m), Some(r)) = (asked, &opts.auth.require_auth) {
            r.refusal(m).map_or(Ok(()), |e| Err(auth_err(e)))?;
        }
        let require_binding = opts.auth.channel_binding == ChannelBinding::Require;
        if require_binding && matches!(code, 3 | 5 | 7 | 8 | 9) {
            return Err(auth_err(
                "channel binding required but not supported by server's authentication request"
                    .into(),
            ));
        }
        self.wbuf.clear();
        match code {
            0 => return self.logged_in(opts, scram.as_ref()).map_err(auth_err),
            3 => {
                self.password_policy(opts, AuthMethod::Password).map_err(auth_err)?;
                let pw = opts.password_now().map_err(auth_err)?;
                m::password(&mut self.wbuf, pw.expose().as_bytes());
            }
            5 => {
                self.password_policy(opts, AuthMethod::Md5).map_err(auth_err)?;
                let salt = data.get(..4).ok_or_else(|| auth_err("md5 request without its salt".into()))?;
                let pw = opts.password_now().map_err(auth_err)?;
                let answer = md5_answer(&opts.user, pw.expose(), salt);
                m::password(&mut self.wbuf, answer.as_bytes());
            }
            10 => {
                let binding = self.binding(opts, data).map_err(auth_err)?;
                let pw = opts.password_now().map_err(auth_err)?;
                let nonce = crate::random_hex(18).map_err(|e| auth_err(format!("no randomness for SCRAM's nonce: {e}")))?;
                let s = Scram::new(pw.expose(), nonce, binding);
                m::sasl_initial(&mut self.wbuf, s.binding().mechanism(), &s.client_first());
                *scram = Some(s);
            }
            11 => {
                let s = scram.as_mut().ok_or_else(|| auth_err("SASL continue before SASL began".into()))?;
                let answer = s.client_final(data).map_err(auth_err)?;
                m::sasl_response(&mut self.wbuf, &answer);
            }
            12 => {
                let s = scram.as_mut().ok_or_else(|| auth_err("SASL final before SASL began".into()))?;
                return s.check_server_final(data).map_err(auth_err);
            }
            2 | 7 | 8 | 9 => {
                return Err(auth_err(format!(
                    "the server asks for {} authentication, which bakeoff does not do; give the account scram-sha-256, md5, trust or peer in pg_hba.conf",
                    match code { 2 => "Kerberos V5", 9 => "SSPI", _ => "GSSAPI" }
                )))
            }
            other => return Err(auth_err(format!("unknown authentication request {other}"))),
        }
        self.send("login").await
    }

    /// AuthenticationOk: the login is over. Refused when a SCRAM exchange began and the
    /// server has not proved it knows the password (stricter than libpq, which accepts it
    /// unless require_auth forbids it), when no exchange took place and require_auth wants
    /// one, and when channel_binding=require and the login was not bound.
    fn logged_in(&self, opts: &ConnectOptions, scram: Option<&Scram>) -> Result<(), String> {
        if let Some(s) = scram {
            if !s.verified() {
                return Err("the server says the login succeeded before proving it knows the password (SCRAM's last step skipped): a server that does not have the password, or a relay, would do that".into());
            }
        }
        if let (None, Some(r)) = (scram, &opts.auth.require_auth) {
            // Only trust and peer end without any exchange; cleartext and md5 were checked
            // when asked for.
            if self.auth_method.is_none() {
                r.refusal(AuthMethod::None).map_or(Ok(()), Err)?;
            }
        }
        let bound = scram.is_some_and(|s| matches!(s.binding(), Binding::EndPoint(_)));
        if opts.auth.channel_binding == ChannelBinding::Require && !bound {
            return Err(
                "channel binding required, but server authenticated client without channel binding"
                    .into(),
            );
        }
        Ok(())
    }

    /// Which SCRAM to speak and how to bind it: -PLUS over TLS when the server offers it
    /// (never plain SCRAM beside it), `y` over TLS when it offers only plain SCRAM, `n`
    /// without TLS or with channel_binding=disable, as libpq does.
    fn binding(&self, opts: &ConnectOptions, data: &[u8]) -> Result<Binding, String> {
        let offered: Vec<&[u8]> = data.split(|&b| b == 0).filter(|s| !s.is_empty()).collect();
        let plus = offered.contains(&&b"SCRAM-SHA-256-PLUS"[..]);
        let plain = offered.contains(&&b"SCRAM-SHA-256"[..]);
        let cert = self.stream.peer_certificate();
        let mode = opts.auth.channel_binding;
        // libpq's safeguard: -PLUS offered where there is no TLS to bind to is someone in the
        // middle who stripped TLS and passed the offer on.
        if plus && cert.is_none() {
            return Err(
                "server offered SCRAM-SHA-256-PLUS authentication over a non-SSL connection".into(),
            );
        }
        if mode == ChannelBinding::Require {
            if cert.is_none() {
                return Err("channel binding required, but SSL not in use".into());
            }
            if !plus {
                return Err("channel binding is required, but server did not offer an authentication method that supports channel binding".into());
            }
        }
        match (cert, mode) {
            (Some(c), ChannelBinding::Prefer | ChannelBinding::Require) if plus => {
                Ok(Binding::EndPoint(end_point_hash(&c)))
            }
            _ if !plain => Err(format!(
                "the server offers SASL mechanisms bakeoff does not speak here: {}",
                offered
                    .iter()
                    .map(|s| crate::printable(&String::from_utf8_lossy(s)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            (Some(_), ChannelBinding::Prefer) => Ok(Binding::NotOffered),
            _ => Ok(Binding::Unsupported),
        }
    }

    /// A password (in clear, or md5's answer a relay could replay) goes only where no one else
    /// can take it: a unix socket, a loopback address, or TLS whose certificate was verified;
    /// or where the user allowed it in so many words (require_auth naming the method, or
    /// sslmode=disable). Stricter than libpq, which sends either to any server.
    fn password_policy(&mut self, opts: &ConnectOptions, m: AuthMethod) -> Result<(), String> {
        self.auth_method = Some(m);
        let verified = opts.tls.mode >= SslMode::VerifyCa && self.stream.tls_session().is_some();
        let allowed = opts.auth.require_auth.as_ref().is_some_and(|r| r.names(m))
            || opts.tls.mode == SslMode::Disabled;
        if self.local(opts) || verified || allowed {
            return Ok(());
        }
        let (what, key) = match m {
            AuthMethod::Md5 => (
                "an md5 answer to its salt, which a relay in the middle can pass on",
                "md5",
            ),
            _ => ("the password in clear", "password"),
        };
        Err(format!(
            "the server asks for {what}, over TCP to a server whose certificate was not verified (sslmode={}): use sslmode=verify-full with the server's CA (sslrootcert=FILE or PGSSLROOTCERT), or a unix socket; or allow it with require_auth={key} (or sslmode=disable)",
            libpq_name(opts.tls.mode)
        ))
    }

    /// A unix socket or a loopback address: no one between this process and the server.
    fn local(&self, opts: &ConnectOptions) -> bool {
        match &opts.endpoint {
            Endpoint::Unix(_) => true,
            Endpoint::Tcp { host, .. } => {
                host == "localhost"
                    || host
                        .trim_matches(['[', ']'])
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|a| a.is_loopback())
            }
        }
    }

    fn tls_failed(&self, reason: String) -> DriverError {
        DriverError::Tls {
            endpoint: self.endpoint.clone(),
            reason: libpq_words(&reason),
        }
    }

    /// The TLS version and cipher this connection agreed on; None when it is plain.
    pub fn tls(&self) -> Option<crate::TlsSession> {
        self.stream.tls_session()
    }
}

/// The TLS layer is MySQL's and PostgreSQL's alike and names MySQL's options in what it
/// says; on a PostgreSQL connection the same advice names libpq's.
fn libpq_words(reason: &str) -> String {
    const NAMES: [(&str, &str); 8] = [
        ("--mysql-ssl-ca=FILE", "sslrootcert=FILE"),
        ("--mysql-ssl-ca", "sslrootcert=FILE"),
        ("--mysql-ssl-cert=FILE", "sslcert=FILE"),
        ("--mysql-ssl-cert", "sslcert"),
        ("--mysql-ssl-key=FILE", "sslkey=FILE"),
        ("--mysql-ssl-key", "sslkey"),
        ("--mysql-ssl=VERIFY_CA", "sslmode=verify-ca"),
        ("--mysql-ssl=VERIFY_IDENTITY", "sslmode=verify-full"),
    ];
    NAMES
        .iter()
        .fold(reason.to_string(), |text, (mysql, libpq)| {
            text.replace(mysql, libpq)
        })
}

/// libpq's name for a mode.
pub fn libpq_name(mode: SslMode) -> &'static str {
    match mode {
        SslMode::Disabled => "disable",
        SslMode::Preferred => "prefer",
        SslMode::Required => "require",
        SslMode::VerifyCa => "verify-ca",
        SslMode::VerifyIdentity => "verify-full",
    }
}

#[cfg(test)]
mod words_tests {
    #[test]
    fn tls_advice_names_libpqs_options() {
        let said = super::libpq_words("is not signed by the CA in x (unknown CA): give the CA that signed it with --mysql-ssl-ca; or check the CA only with --mysql-ssl=VERIFY_CA");
        assert!(!said.contains("--mysql"), "{said}");
        assert!(
            said.contains("sslrootcert=FILE") && said.contains("sslmode=verify-ca"),
            "{said}"
        );
    }
}
