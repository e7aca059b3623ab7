//! Connection phase: the server's Handshake v10 and the client's HandshakeResponse41.

use crate::codec::{put_lenenc_bytes, Reader};
use crate::{caps, ProtoError};

/// The server's greeting.
#[derive(Debug, Clone)]
pub struct Handshake {
    pub server_version: String,
    pub connection_id: u32,
    pub capabilities: u32,
    /// MariaDB's extended capabilities (bits 32-63 of its capability set, shifted down); 0
    /// from MySQL.
    pub mariadb_caps: u32,
    /// The nonce for the auth scramble (parts 1 and 2 joined, 20 bytes usually).
    pub nonce: Vec<u8>,
    pub auth_plugin: String,
}

impl Handshake {
    pub fn parse(payload: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(payload, "handshake");
        let version = r.u8()?;
        if version == 0xff {
            // Refused before the handshake, e.g. "Too many connections" or "host blocked".
            return Err(ProtoError::malformed(
                "handshake",
                "server refused the connection",
            ));
        }
        if version != 10 {
            return Err(ProtoError::Unsupported(format!(
                "handshake protocol version {version}"
            )));
        }
        let server_version = crate::printable(&String::from_utf8_lossy(r.nul_str()?));
        let connection_id = r.u32()?;
        let mut nonce = r.bytes(8)?.to_vec();
        r.u8()?; // filler
        let cap_low = r.u16()? as u32;
        let mut capabilities = cap_low;
        let mut auth_plugin = String::from(crate::auth::NATIVE);
        let mut mariadb_caps = 0;
        if !r.is_empty() {
            r.u8()?; // character set
            r.u16()?; // status flags
            capabilities |= (r.u16()? as u32) << 16;
            let nonce_len = r.u8()? as usize;
            let reserved = r.bytes(10)?;
            // MariaDB keeps its extended capabilities in the last 4 reserved bytes, to be read
            // only when CLIENT_MYSQL (bit 0) is clear: the server is then MariaDB.
            if cap_low & caps::LONG_PASSWORD == 0 {
                mariadb_caps =
                    u32::from_le_bytes([reserved[6], reserved[7], reserved[8], reserved[9]]);
            }
            if capabilities & caps::SECURE_CONNECTION != 0 {
                let n = nonce_len.saturating_sub(8).max(13);
                let part2 = r.bytes(n.min(r.remaining().len()))?;
                nonce.extend_from_slice(part2.strip_suffix(&[0]).unwrap_or(part2));
            }
            if capabilities & caps::PLUGIN_AUTH != 0 && !r.is_empty() {
                let rest = r.rest();
                let name = rest.strip_suffix(&[0]).unwrap_or(rest);
                auth_plugin = String::from_utf8_lossy(name).into_owned();
            }
        }
        if capabilities & caps::PROTOCOL_41 == 0 {
            return Err(ProtoError::Unsupported(
                "server without protocol 4.1".into(),
            ));
        }
        Ok(Handshake {
            server_version,
            connection_id,
            capabilities,
            mariadb_caps,
            nonce,
            auth_plugin,
        })
    }
}

/// What the client answers: who it is and the auth response for the server's plugin.
pub struct HandshakeResponse<'a> {
    pub capabilities: u32,
    /// MariaDB's extended capabilities asked for (0 for any other server); sent in the
    /// filler's last 4 bytes, which MariaDB reads when CLIENT_MYSQL is clear.
    pub mariadb_caps: u32,
    pub user: &'a str,
    pub auth_response: &'a [u8],
    pub database: Option<&'a str>,
    pub auth_plugin: &'a str,
}

/// utf8mb4_general_ci: understood by MySQL 5.5+ and every MariaDB.
pub const CHARSET_UTF8MB4: u8 = 45;

impl HandshakeResponse<'_> {
    /// SSLRequest: the response's fixed head alone (capabilities with CLIENT_SSL, max packet,
    /// character set, filler), after which the client starts TLS.
    pub fn ssl_request(capabilities: u32, mariadb_caps: u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&(capabilities | caps::SSL).to_le_bytes());
        out.extend_from_slice(&(16u32 << 20).to_le_bytes());
        out.push(CHARSET_UTF8MB4);
        out.extend_from_slice(&[0u8; 19]);
        out.extend_from_slice(&mariadb_caps.to_le_bytes());
    }

    /// The payload (no frame header).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut capabilities = self.capabilities;
        if self.database.is_some() {
            capabilities |= caps::CONNECT_WITH_DB;
        }
        out.extend_from_slice(&capabilities.to_le_bytes());
        out.extend_from_slice(&(16u32 << 20).to_le_bytes()); // max packet size: 16 MiB
        out.push(CHARSET_UTF8MB4);
        out.extend_from_slice(&[0u8; 19]);
        out.extend_from_slice(&self.mariadb_caps.to_le_bytes());
        out.extend_from_slice(self.user.as_bytes());
        out.push(0);
        put_lenenc_bytes(out, self.auth_response);
        if let Some(db) = self.database {
            out.extend_from_slice(db.as_bytes());
            out.push(0);
        }
        out.extend_from_slice(self.auth_plugin.as_bytes());
        out.push(0);
    }
}

/// The server asks for another plugin (0xfe): its name and the new nonce.
pub fn parse_auth_switch(payload: &[u8]) -> Result<(String, Vec<u8>), ProtoError> {
    let mut r = Reader::new(payload, "auth switch");
    r.u8()?;
    if r.is_empty() {
        // Old-style switch to mysql_old_password: long dead, not supported.
        return Err(ProtoError::Unsupported(
            "mysql_old_password authentication".into(),
        ));
    }
    let plugin = String::from_utf8_lossy(r.nul_str()?).into_owned();
    // As sent: a plugin's data may end in a 0 that is part of it (see auth::scramble).
    Ok((plugin, r.rest().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A MariaDB 10.11 greeting as captured on loopback (version string shortened).
    fn mariadb_greeting() -> Vec<u8> {
        let mut p = vec![10];
        p.extend_from_slice(b"5.5.5-10.11.6-MariaDB\0");
        p.extend_from_slice(&42u32.to_le_bytes());
        p.extend_from_slice(b"abcdefgh\0");
        // MariaDB leaves CLIENT_MYSQL (bit 0) clear and puts its extended capabilities
        // (progress, bulk, extended and cached metadata: 0x1d) in the last 4 reserved bytes.
        let caps = (caps::CLIENT | caps::DEPRECATE_EOF) & !caps::LONG_PASSWORD;
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0; 6]);
        p.extend_from_slice(&0x1du32.to_le_bytes());
        p.extend_from_slice(b"ijklmnopqrst\0");
        p.extend_from_slice(b"mysql_native_password\0");
        p
    }

    #[test]
    fn parses_a_mariadb_greeting() {
        let h = Handshake::parse(&mariadb_greeting()).unwrap();
        assert_eq!(h.server_version, "5.5.5-10.11.6-MariaDB");
        assert_eq!(h.connection_id, 42);
        assert_eq!(h.nonce, b"abcdefghijklmnopqrst");
        assert_eq!(h.auth_plugin, "mysql_native_password");
        assert_eq!(h.mariadb_caps, 0x1d);
    }

    #[test]
    fn a_server_with_client_mysql_set_has_no_extended_capabilities() {
        let mut g = mariadb_greeting();
        // The low capability bytes follow version, id, 8 nonce bytes and a filler.
        let at = 1 + b"5.5.5-10.11.6-MariaDB\0".len() + 4 + 9;
        g[at] |= caps::LONG_PASSWORD as u8;
        assert_eq!(Handshake::parse(&g).unwrap().mariadb_caps, 0);
    }

    #[test]
    fn extended_capabilities_go_in_the_fillers_last_four_bytes() {
        let mut out = Vec::new();
        HandshakeResponse {
            capabilities: caps::PROTOCOL_41,
            mariadb_caps: crate::mariadb_caps::CACHE_METADATA,
            user: "u",
            auth_response: &[],
            database: None,
            auth_plugin: "p",
        }
        .encode(&mut out);
        // caps (4), max packet (4), charset (1), then 23 filler bytes.
        assert_eq!(&out[9..28], &[0u8; 19]);
        assert_eq!(&out[28..32], &0x10u32.to_le_bytes());
    }

    #[test]
    fn truncated_greeting_is_an_error() {
        let g = mariadb_greeting();
        assert!(Handshake::parse(&g[..20]).is_err());
    }

    #[test]
    fn response_carries_user_db_and_plugin() {
        let mut out = Vec::new();
        HandshakeResponse {
            capabilities: caps::CLIENT,
            mariadb_caps: 0,
            user: "sbtest",
            auth_response: &[1, 2, 3],
            database: Some("sbtest"),
            auth_plugin: "mysql_native_password",
        }
        .encode(&mut out);
        let flags = u32::from_le_bytes(out[..4].try_into().unwrap());
        assert_ne!(flags & caps::CONNECT_WITH_DB, 0);
        assert_eq!(&out[32..39], b"sbtest\0");
        assert_eq!(&out[39..43], &[3, 1, 2, 3]);
        assert!(out.ends_with(b"sbtest\0mysql_native_password\0"));
    }
}
