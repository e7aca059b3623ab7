//! The compressed protocol (`--mysql-compression=on`, CLIENT_COMPRESS): after the handshake,
//! the bytes of the ordinary packets travel inside compressed frames, zlib's deflate.
//!
//! A frame is a 7-byte header (3 bytes: the payload's length on the wire; 1: the frame's own
//! sequence number, which starts from 0 with each command as the packets' does; 3: the length
//! before compression, 0 when the payload was sent as it is) and the payload. Short writes
//! (under 50 bytes, as libmysqlclient's threshold) and writes that would not shrink go as
//! they are. Framing sits between the packets (`conn.rs`) and the stream (plain or TLS), so
//! the packet code does not know: it reads and writes packet bytes either way.

use std::io::{self, Read, Write};

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;

use crate::net::transport::Stream;

const HEADER: usize = 7;
/// The largest payload of one frame (as the packets' own limit).
const MAX_FRAME: usize = (1 << 24) - 1;
/// Writes shorter than this are not worth compressing (libmysqlclient's MIN_COMPRESS_LENGTH).
const MIN_COMPRESS: usize = 50;

/// One connection's compression state.
#[derive(Default)]
pub(super) struct Compressed {
    /// The next frame's sequence number.
    seq: u8,
    /// Decompressed bytes not yet handed to the packet reader: `plain[at..]`.
    plain: Vec<u8>,
    at: usize,
    /// Frame bytes read from the stream, not yet a whole frame.
    raw: Vec<u8>,
    /// Reused for writes.
    out: Vec<u8>,
    scratch: Vec<u8>,
    /// What one socket read lands in before it joins `raw`. On the heap, never an array in
    /// the read's future: an async fn keeps a local held across an await inside its future,
    /// and every statement's future (which embeds this one) is moved, a memcpy of its whole
    /// size, each time it is made: a 16 KiB array made every execute a 17 KiB copy, 11% of a
    /// Lua point-select run's client CPU.
    chunk: Vec<u8>,
}

impl Compressed {
    /// A new command starts: its frames are numbered from 0.
    pub(super) fn new_command(&mut self) {
        self.seq = 0;
    }

    /// Read decompressed bytes into `buf` (at least one, unless the stream ended: 0); a frame
    /// may inflate to `cap` bytes at most (`--max-packet`).
    pub(super) async fn read(
        &mut self,
        stream: &mut Stream,
        buf: &mut [u8],
        cap: usize,
    ) -> io::Result<usize> {
        while self.at == self.plain.len() {
            if !self.next_frame(stream, cap).await? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.plain.len() - self.at);
        buf[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }

    /// Read one whole frame and decompress it into `plain`; false at the end of the stream.
    /// It inflates to its header's length at most, and that length is within `cap` (plus a
    /// packet header): a few KiB of zlib can claim gigabytes.
    async fn next_frame(&mut self, stream: &mut Stream, cap: usize) -> io::Result<bool> {
        if self.chunk.is_empty() {
            self.chunk = vec![0; 16 * 1024];
        }
        let (len, seq, ulen) = loop {
            if self.raw.len() >= HEADER {
                let h = &self.raw[..HEADER];
                let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
                let ulen = u32::from_le_bytes([h[4], h[5], h[6], 0]) as usize;
                if self.raw.len() >= HEADER + len {
                    break (len, h[3], ulen);
                }
            }
            let n = stream.read(&mut self.chunk).await?;
            if n == 0 {
                return Ok(false);
            }
            self.raw.extend_from_slice(&self.chunk[..n]);
        };
        self.seq = seq.wrapping_add(1);
        self.plain.clear();
        self.at = 0;
        let payload = &self.raw[HEADER..HEADER + len];
        if ulen == 0 {
            self.plain.extend_from_slice(payload);
        } else {
            if ulen > cap.saturating_add(bakeoff_proto::packet::HEADER) {
                return Err(bad(format!(
                    "a compressed frame of {ulen} bytes inflated, over the {cap}-byte cap (--max-packet sets it)"
                )));
            }
            self.plain.reserve(ulen);
            // One byte past the stated length is enough to know the frame lied.
            ZlibDecoder::new(payload)
                .take(ulen as u64 + 1)
                .read_to_end(&mut self.plain)
                .map_err(|e| bad(format!("a compressed frame did not inflate: {e}")))?;
            if self.plain.len() != ulen {
                let got = match self.plain.len() > ulen {
                    true => format!("more than {ulen}"),
                    false => self.plain.len().to_string(),
                };
                return Err(bad(format!(
                    "a compressed frame inflated to {got} bytes where its header said {ulen}"
                )));
            }
        }
        self.raw.drain(..HEADER + len);
        Ok(true)
    }

    /// Frame `bytes` (whole packets) and write them.
    pub(super) async fn write_all(&mut self, stream: &mut Stream, bytes: &[u8]) -> io::Result<()> {
        self.frame(bytes)?;
        stream.write_all(&self.out).await
    }

    /// `bytes` as frames in `out`, without I/O (also for a goodbye sent from a drop).
    pub(super) fn frame(&mut self, bytes: &[u8]) -> io::Result<&[u8]> {
        self.out.clear();
        for part in bytes.chunks(MAX_FRAME) {
            self.scratch.clear();
            let compressed = part.len() >= MIN_COMPRESS && {
                let mut z = ZlibEncoder::new(&mut self.scratch, Compression::default());
                z.write_all(part)?;
                z.finish()?;
                self.scratch.len() < part.len()
            };
            let (payload, ulen) = match compressed {
                true => (&self.scratch[..], part.len()),
                false => (part, 0),
            };
            self.out
                .extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
            self.out.push(self.seq);
            self.out
                .extend_from_slice(&(ulen as u32).to_le_bytes()[..3]);
            self.out.extend_from_slice(payload);
            self.seq = self.seq.wrapping_add(1);
        }
        Ok(&self.out)
    }
}

fn bad(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_writes_go_as_they_are_and_long_ones_deflated_with_both_lengths() {
        let mut c = Compressed::default();
        let short = c.frame(b"\x01\x00\x00\x00\x0e").unwrap().to_vec();
        assert_eq!(short, b"\x05\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0e");
        let long = vec![b'a'; 1000];
        let framed = c.frame(&long).unwrap().to_vec();
        let len = u32::from_le_bytes([framed[0], framed[1], framed[2], 0]) as usize;
        assert_eq!(framed[3], 1, "the second frame of the command");
        assert_eq!(
            u32::from_le_bytes([framed[4], framed[5], framed[6], 0]),
            1000
        );
        assert!(len < 100 && framed.len() == HEADER + len);
        let mut back = Vec::new();
        ZlibDecoder::new(&framed[HEADER..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, long);
        c.new_command();
        assert_eq!(c.frame(b"x").unwrap()[3], 0);
    }
}
