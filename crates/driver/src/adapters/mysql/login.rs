//! The connection phase: the greeting, TLS, and the authentication exchange with the plugins
//! bakeoff speaks.

use bakeoff_proto::{auth, caps, mariadb_caps, Handshake, HandshakeResponse, ProtoError};

use super::conn::Conn;
use super::tls::TlsSession;
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
        let password = opts.password.expose().as_bytes();
        let mut plugin = hs.auth_plugin.clone();
        let scramble = auth::scramble(&plugin, password, &hs.nonce).unwrap_or_else(|| {
            // Unknown default plugin: answer as native; the server then switches us to the
            // account's real plugin, which we may know.
            plugin = auth::NATIVE.to_string();
            auth::scramble(auth::NATIVE, password, &hs.nonce).unwrap_or_default()
        });
        let mut payload = Vec::with_capacity(128);
        let mariadb_caps = hs.mariadb_caps & mariadb_caps::CLIENT;
        self.cache_metadata = mariadb_caps & mariadb_caps::CACHE_METADATA != 0;
        let mut capabilities = caps::CLIENT & hs.capabilities | caps::PROTOCOL_41;
        if opts.database.is_some() {
            // Also in the SSLRequest: the server keeps the flags of the first of the two.
            capabilities |= caps::CONNECT_WITH_DB;
        }
        if self.tls_wanted(opts, &hs)? {
            capabilities |= caps::SSL;
            self.start_tls(opts, capabilities, mariadb_caps).await?;
        }
        HandshakeResponse {
            capabilities,
            mariadb_caps,
            user: &opts.user,
            auth_response: &scramble,
            database: opts.database.as_deref(),
            auth_plugin: &plugin,
        }
        .encode(&mut payload);
        self.send_payload(&payload, "handshake").await?;
        self.finish_auth(opts, &plugin).await
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

    /// Follow the server through auth switches and caching_sha2's extra round trips.
    async fn finish_auth(
        &mut self,
        opts: &ConnectOptions,
        plugin: &str,
    ) -> Result<(), DriverError> {
        let user = opts.user.clone();
        let password = opts.password.expose().as_bytes().to_vec();
        let mut plugin = plugin.to_string();
        for _ in 0..4 {
            let p = self.read_owned("authentication").await?;
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => {
                    let e = bakeoff_proto::parse_err(&p).map_err(|e| self.proto(e))?;
                    return Err(DriverError::Auth { user, reason: e.to_string() });
                }
                Some(0xfe) => {
                    let (name, nonce) = bakeoff_proto::parse_auth_switch(&p).map_err(|e| self.proto(e))?;
                    let resp = auth::scramble(&name, &password, &nonce).ok_or_else(|| DriverError::Auth {
                        user: user.clone(),
                        reason: format!("the account uses auth plugin '{name}', which bakeoff does not speak; it speaks {}", auth::SPOKEN.join(", ")),
                    })?;
                    plugin = name;
                    self.send_payload(&resp, "authentication").await?;
                }
                Some(0x01) if plugin == auth::CACHING_SHA2 => match p.get(1) {
                    Some(3) => continue, // fast auth succeeded; OK follows
                    Some(4) if self.stream.is_unix() || self.tls().is_some() => {
                        // Full authentication: the password itself, over a transport that
                        // is secure (TLS, or a unix socket, which the server counts as such).
                        let mut pw = password.clone();
                        pw.push(0);
                        self.send_payload(&pw, "authentication").await?;
                    }
                    _ => {
                        return Err(DriverError::Auth {
                            user,
                            reason: "caching_sha2_password needs full authentication, which bakeoff does over TLS or a unix socket; connect with --mysql-ssl=REQUIRED (or a stricter mode) or --mysql-socket".into(),
                        })
                    }
                },
                _ => {
                    return Err(self.proto(ProtoError::Unexpected { first: p[0], state: "authenticating" }));
                }
            }
        }
        Err(DriverError::Auth {
            user,
            reason: "too many authentication round trips".into(),
        })
    }
}
