//! What the client answers in the authentication exchange, plugin by plugin: the scramble
//! plugins answer once; the ones that need the password itself get it only over a secure
//! transport (TLS or a unix socket, as the server counts them), else encrypted with the
//! server's RSA key (from a file, or asked of the server where that is allowed); the
//! cleartext plugin only when asked for. No I/O here: `login.rs` sends what this returns.

use bakeoff_proto::auth;

use crate::ConnectOptions;

/// One connect's authentication state.
pub(super) struct Exchange<'a> {
    opts: &'a ConnectOptions,
    password: Vec<u8>,
    pub(super) plugin: String,
    nonce: Vec<u8>,
    /// TLS or a unix socket: the password may travel as it is.
    secure: bool,
    /// The server's public key was asked for; the next AuthMoreData carries it.
    key_requested: bool,
}

/// What to do with an AuthMoreData packet.
pub(super) enum More {
    /// Nothing to send: an OK follows (caching_sha2's fast path succeeded).
    Wait,
    Send(Vec<u8>),
}

impl<'a> Exchange<'a> {
    pub(super) fn new(
        opts: &'a ConnectOptions,
        password: &[u8],
        plugin: &str,
        nonce: &[u8],
        secure: bool,
    ) -> Self {
        Exchange {
            opts,
            password: password.to_vec(),
            plugin: plugin.to_string(),
            nonce: nonce.to_vec(),
            secure,
            key_requested: false,
        }
    }

    /// The handshake response's auth data for the server's default plugin. One bakeoff does
    /// not speak (or the cleartext one, which must not be answered unasked) is answered as
    /// native: the server then switches to the account's plugin, which is judged then.
    pub(super) fn first(&mut self) -> Vec<u8> {
        match self.answer() {
            Ok(data) => data,
            Err(_) => {
                self.plugin = auth::NATIVE.to_string();
                self.answer().unwrap_or_default()
            }
        }
    }

    /// The answer to an auth switch to `plugin` with `nonce`.
    pub(super) fn switch(&mut self, plugin: &str, nonce: &[u8]) -> Result<Vec<u8>, String> {
        self.plugin = plugin.to_string();
        self.nonce = nonce.to_vec();
        self.key_requested = false;
        self.answer()
    }

    fn answer(&mut self) -> Result<Vec<u8>, String> {
        match self.plugin.as_str() {
            auth::SHA256 if self.password.is_empty() => Ok(vec![0]),
            // Asking for the key hands the password to whoever answers with one (a hostile
            // server, or anyone in the middle of a plain connection): only when told to.
            auth::SHA256 => {
                self.whole_password(auth::SHA256, self.opts.auth.get_server_public_key)
            }
            auth::CLEARTEXT => self.cleartext(),
            p => auth::scramble(p, &self.password, &self.nonce).ok_or_else(|| {
                format!(
                    "the account uses auth plugin '{p}', which bakeoff does not speak; it speaks {}",
                    auth::SPOKEN.join(", ")
                )
            }),
        }
    }

    /// An AuthMoreData packet (`data` after its 0x01 marker).
    pub(super) fn more(&mut self, data: &[u8]) -> Result<More, String> {
        if self.key_requested {
            self.key_requested = false;
            return auth::rsa_encrypted_password(&self.password, &self.nonce, data).map(More::Send);
        }
        match (self.plugin.as_str(), data) {
            (auth::CACHING_SHA2, [3]) => Ok(More::Wait),
            // Full authentication: the server has no cached hash for this account yet.
            (auth::CACHING_SHA2, [4]) => self
                .whole_password(auth::CACHING_SHA2, self.opts.auth.get_server_public_key)
                .map(More::Send),
            (p, _) => Err(format!(
                "the server sent {p} data bakeoff did not expect ({} bytes)",
                data.len()
            )),
        }
    }

    /// The password itself, for `plugin`: as it is over a secure transport; otherwise
    /// encrypted with the key in `--mysql-server-public-key-path`, or with the server's key
    /// asked for (request byte 1 for sha256_password, 2 for caching_sha2) when `may_ask`.
    fn whole_password(&mut self, plugin: &str, may_ask: bool) -> Result<Vec<u8>, String> {
        if self.secure {
            return Ok(auth::cleartext(&self.password));
        }
        if let Some(path) = &self.opts.auth.server_public_key {
            let pem = std::fs::read(path)
                .map_err(|e| format!("--mysql-server-public-key-path {}: {e}", path.display()))?;
            return auth::rsa_encrypted_password(&self.password, &self.nonce, &pem)
                .map_err(|e| format!("{} ({})", e, path.display()));
        }
        if may_ask {
            self.key_requested = true;
            return Ok(vec![if plugin == auth::SHA256 { 1 } else { 2 }]);
        }
        let why = match plugin {
            auth::SHA256 => "it always does",
            _ => "the server holds no cached hash for this account yet",
        };
        Err(format!(
            "{plugin} needs the password itself ({why}), which bakeoff sends only over TLS (--mysql-ssl=REQUIRED or stricter) or a unix socket, or encrypted with the server's RSA key: give the key with --mysql-server-public-key-path=FILE, or let bakeoff ask the server for it with --mysql-get-server-public-key (in a server URL: server-public-key-path=FILE, get-server-public-key=true), trusting whoever answers"
        ))
    }

    fn cleartext(&self) -> Result<Vec<u8>, String> {
        if !self.opts.auth.cleartext {
            return Err("the account uses mysql_clear_password, which sends the password as it is: bakeoff answers it only when asked, with --mysql-enable-cleartext-plugin (in a server URL: enable-cleartext-plugin=true), as the MySQL client does".into());
        }
        if !self.secure {
            return Err("the account uses mysql_clear_password, which sends the password as it is, and this connection is plain TCP: bakeoff sends it only over TLS (--mysql-ssl=REQUIRED or stricter) or a unix socket".into());
        }
        Ok(auth::cleartext(&self.password))
    }
}
