//! The wire of a scripted MySQL server, for the seams no real server shows (auth plugins
//! MariaDB lacks, hostile answers): a packet, and a greeting (HandshakeV10).

/// One packet: 3-byte length, sequence number, payload.
pub fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    p.push(seq);
    p.extend_from_slice(payload);
    p
}

/// A server's greeting: its version, capability flags, the 20-byte nonce and the default
/// auth plugin (connection id 7, utf8mb4, autocommit status).
pub fn greeting(version: &str, caps: u32, nonce: &[u8; 20], plugin: &str) -> Vec<u8> {
    let mut p = vec![10];
    p.extend_from_slice(version.as_bytes());
    p.push(0);
    p.extend_from_slice(&7u32.to_le_bytes());
    p.extend_from_slice(&nonce[..8]);
    p.push(0);
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&2u16.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(&nonce[8..]);
    p.push(0);
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p
}

/// Read one packet's payload (a scripted server reading what the client sent).
pub fn read_packet(s: &mut impl std::io::Read) -> std::io::Result<Vec<u8>> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h)?;
    let mut p = vec![0; u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize];
    s.read_exact(&mut p)?;
    Ok(p)
}
