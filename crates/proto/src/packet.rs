//! Packet framing: 3-byte little-endian payload length, 1-byte sequence id, payload.
//!
//! Payloads of 16 MiB - 1 or more are split into several frames; [`MAX_PAYLOAD`] frames
//! continue in the next one. bakeoff never sends such payloads (a 512 KiB INSERT batch is the
//! largest) and reassembles them when reading.

pub const HEADER: usize = 4;
pub const MAX_PAYLOAD: usize = 0xff_ffff;

/// The header of the frame at the start of `buf`, if all four bytes are there.
pub fn header(buf: &[u8]) -> Option<(usize, u8)> {
    if buf.len() < HEADER {
        return None;
    }
    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], 0]) as usize;
    Some((len, buf[3]))
}

/// Start a frame in `out`: reserves the header, to be filled by [`finish`].
pub fn begin(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0]);
    at
}

/// Fill in the header reserved at `at`, splitting the payload into several frames if it is
/// too large for one. Returns the next sequence id.
pub fn finish(out: &mut Vec<u8>, at: usize, seq: u8) -> u8 {
    let len = out.len() - at - HEADER;
    if len < MAX_PAYLOAD {
        write_header(&mut out[at..at + HEADER], len, seq);
        return seq.wrapping_add(1);
    }
    // Rare path: re-frame the payload in MAX_PAYLOAD chunks (plus an empty trailer when the
    // last chunk is exactly MAX_PAYLOAD, as the protocol requires).
    let payload = out.split_off(at + HEADER);
    out.truncate(at);
    let mut seq = seq;
    let mut last_len = 0;
    for chunk in payload.chunks(MAX_PAYLOAD) {
        let h = begin(out);
        out.extend_from_slice(chunk);
        write_header(&mut out[h..h + HEADER], chunk.len(), seq);
        seq = seq.wrapping_add(1);
        last_len = chunk.len();
    }
    if last_len == MAX_PAYLOAD {
        let h = begin(out);
        write_header(&mut out[h..h + HEADER], 0, seq);
        seq = seq.wrapping_add(1);
    }
    seq
}

fn write_header(h: &mut [u8], len: usize, seq: u8) {
    let l = (len as u32).to_le_bytes();
    h[..3].copy_from_slice(&l[..3]);
    h[3] = seq;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_a_small_payload() {
        let mut out = Vec::new();
        let at = begin(&mut out);
        out.extend_from_slice(b"\x03SELECT 1");
        assert_eq!(finish(&mut out, at, 0), 1);
        assert_eq!(header(&out), Some((9, 0)));
    }

    #[test]
    fn splits_a_huge_payload_with_trailer() {
        let mut out = Vec::new();
        let at = begin(&mut out);
        out.resize(HEADER + MAX_PAYLOAD, 7);
        assert_eq!(finish(&mut out, at, 5), 7);
        assert_eq!(header(&out), Some((MAX_PAYLOAD, 5)));
        assert_eq!(header(&out[HEADER + MAX_PAYLOAD..]), Some((0, 6)));
    }
}
