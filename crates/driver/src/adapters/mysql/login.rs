//! The connection phase: the greeting, TLS, and the authentication exchange with the plugins
//! bakeoff speaks.

use bakeoff_proto::{caps, mariadb_caps, Handshake, HandshakeResponse, ProtoError};

use super::auth::{Exchange, More};
use super::conn::Conn;
use crate::net::tls::TlsSession;
use crate::{ConnectOptions, DriverError, SslMode};

impl Conn {
    pub(super) async fn handshake(&mut self, opts: &ConnectOptions) -> Result<(), DriverError> {
        let greeting = self.read_owned("handshake").await?;
        if greeting.first() == Some(&0xff) {
            let e = bakeoff_proto::parse_err(&greeting).map_err(|e| self.proto(e))?;
            return Err(DriverError::Server(e));
        }
        let hs = Handshake::parse(&greeting).map_err(|e| self.proto(e))?;
        self.server_version = hs.server_version.clone();
        self.connection_id = hs.connection_id;
        let mut payload = Vec::with_capacity(128);
        let mariadb_caps = hs.mariadb_caps & mariadb_caps::CLIENT;
        self.cache_metadata = mariadb_caps & mariadb_caps::CACHE_METADATA != 0;
        let mut capabilities = caps::CLIENT & hs.capabilities | caps::PROTOCOL_41;
        if !opts.multi_statements {
            capabilities &= !caps::MULTI_STATEMENTS;
        }
        if opts.database.is_some() {
            // Also in the SSLRequest: the server keeps the flags of the first of the two.
            capabilities |= caps::CONNECT_WITH_DB;
        }
        if opts.compress {
            if hs.capabilities & caps::COMPRESS == 0 {
                return Err(self.proto(ProtoError::Unsupported(
                    "--mysql-compression=on: the server does not offer the compressed protocol (its have_compress is NO)".into(),
                )));
            }
            capabilities |= caps::COMPRESS;
        }
        if self.tls_wanted(opts, &hs)? {
            capabilities |= caps::SSL;
            self.start_tls(opts, capabilities, mariadb_caps).await?;
        }
        // Run for every connect when it is a command (IAM tokens expire in minutes).
        let password = opts.password_now().map_err(|reason| DriverError::Auth {
            user: opts.user.clone(),
            reason,
        })?;
        let secure = self.stream.is_unix() || self.tls().is_some();
        let mut login = Exchange::new(
            opts,
            password.expose().as_bytes(),
            &hs.auth_plugin,
            &hs.nonce,
            secure,
        );
        let first = login.first();
        HandshakeResponse {
            capabilities,
            mariadb_caps,
            user: &opts.user,
            auth_response: &first,
            database: opts.database.as_deref(),
            auth_plugin: &login.plugin,
        }
        .encode(&mut payload);
        self.send_payload(&payload, "handshake").await?;
        self.finish_auth(&opts.user, login).await?;
        // Everything after the handshake's OK travels in compressed frames.
        if opts.compress {
            self.zip = Some(Box::default());
        }
        Ok(())
    }

    /// Whether to ask for TLS: as the mode says, if the server offers it; a mode that
    /// requires it fails on a server that does not.
    fn tls_wanted(&self, opts: &ConnectOptions, hs: &Handshake) -> Result<bool, DriverError> {
        let mode = opts.tls.mode;
        let offered = hs.capabilities & caps::SSL != 0;
        if mode >= SslMode::Required && !offered {
            return Err(self.tls_failed(format!(
                "--mysql-ssl={} needs TLS, and the server does not offer it (its have_ssl is not YES: it was started without ssl-cert and ssl-key)",
                mode.name()
            )));
        }
        Ok(mode != SslMode::Disabled && offered)
    }

    /// SSLRequest (the first 32 bytes of the handshake response, CLIENT_SSL set), then the
    /// TLS handshake; the handshake response follows over TLS.
    async fn start_tls(
        &mut self,
        opts: &ConnectOptions,
        capabilities: u32,
        mariadb_caps: u32,
    ) -> Result<(), DriverError> {
        let config = opts.tls.client_config().map_err(|e| self.tls_failed(e))?;
        let host = match &opts.endpoint {
            crate::Endpoint::Tcp { host, .. } => host.clone(),
            crate::Endpoint::Unix(_) => "localhost".to_string(),
        };
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|_| self.tls_failed(format!("'{host}' is not a host name TLS can check")))?;
        let mut request = Vec::with_capacity(32);
        HandshakeResponse::ssl_request(capabilities, mariadb_caps, &mut request);
        self.send_payload(&request, "TLS request").await?;
        self.stream
            .start_tls(config, name)
            .await
            .map_err(|e| self.tls_failed(e))
    }

    fn tls_failed(&self, reason: String) -> DriverError {
        DriverError::Tls {
            endpoint: self.endpoint.clone(),
            reason,
        }
    }

    /// The TLS version and cipher this connection agreed on; None when it is plain.
    pub fn tls(&self) -> Option<TlsSession> {
        self.stream.tls_session()
    }

    /// Follow the server through auth switches, AuthMoreData round trips (caching_sha2's
    /// status, a public key asked for) and the final OK or error.
    async fn finish_auth(
        &mut self,
        user: &str,
        mut login: Exchange<'_>,
    ) -> Result<(), DriverError> {
        let failed = |reason: String| DriverError::Auth {
            user: user.to_string(),
            reason,
        };
        for _ in 0..6 {
            let p = self.read_owned("authentication").await?;
            let send = match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => {
                    let e = bakeoff_proto::parse_err(&p).map_err(|e| self.proto(e))?;
                    // An unknown database (ER_BAD_DB_ERROR) is refused at login, but the
                    // credentials were good: said as the server's error, not as a failed login.
                    if e.code == 1049 {
                        return Err(DriverError::Server(e));
                    }
                    return Err(failed(e.to_string()));
                }
                Some(0xfe) => {
                    let (name, nonce) =
                        bakeoff_proto::parse_auth_switch(&p).map_err(|e| self.proto(e))?;
                    login.switch(&name, &nonce).map_err(failed)?
                }
                Some(0x01) => match login.more(&p[1..]).map_err(failed)? {
                    More::Wait => continue,
                    More::Send(data) => data,
                },
                _ => {
                    return Err(self.proto(ProtoError::Unexpected {
                        first: p.first().copied().unwrap_or(0),
                        state: "authenticating",
                    }));
                }
            };
            self.send_payload(&send, "authentication").await?;
        }
        Err(failed("too many authentication round trips".into()))
    }
}
