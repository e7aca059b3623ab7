//! Little-endian integers and the protocol's length-encoded integers and strings.

use crate::ProtoError;

/// A cursor over one packet payload. Every read checks bounds and says what it was reading.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Reader { buf, pos: 0, what }
    }

    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        if self.buf.len() - self.pos < n {
            return Err(ProtoError::malformed(
                self.what,
                format!("needs {n} more bytes at offset {}", self.pos),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, ProtoError> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, ProtoError> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, ProtoError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Length-encoded integer; `None` for the NULL marker 0xfb (text rows).
    pub fn lenenc(&mut self) -> Result<Option<u64>, ProtoError> {
        let first = self.u8()?;
        let v = match first {
            0xfb => return Ok(None),
            0xfc => self.u16()? as u64,
            0xfd => {
                let b = self.bytes(3)?;
                u32::from_le_bytes([b[0], b[1], b[2], 0]) as u64
            }
            0xfe => {
                let b = self.bytes(8)?;
                u64::from_le_bytes(b.try_into().expect("8 bytes"))
            }
            0xff => {
                return Err(ProtoError::malformed(
                    self.what,
                    "0xff is not a length-encoded integer",
                ))
            }
            n => n as u64,
        };
        Ok(Some(v))
    }

    pub fn lenenc_int(&mut self) -> Result<u64, ProtoError> {
        self.lenenc()?
            .ok_or_else(|| ProtoError::malformed(self.what, "unexpected NULL length"))
    }

    /// Length-encoded string; `None` for SQL NULL.
    pub fn lenenc_bytes(&mut self) -> Result<Option<&'a [u8]>, ProtoError> {
        match self.lenenc()? {
            None => Ok(None),
            Some(n) => Ok(Some(self.bytes(n as usize)?)),
        }
    }

    /// NUL-terminated string (the NUL is consumed, not returned).
    pub fn nul_str(&mut self) -> Result<&'a [u8], ProtoError> {
        let rest = self.remaining();
        match rest.iter().position(|&b| b == 0) {
            Some(i) => {
                self.pos += i + 1;
                Ok(&rest[..i])
            }
            None => Err(ProtoError::malformed(
                self.what,
                "string is not NUL-terminated",
            )),
        }
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let r = self.remaining();
        self.pos = self.buf.len();
        r
    }
}

pub fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    if v < 0xfb {
        out.push(v as u8);
    } else if v <= 0xffff {
        out.push(0xfc);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v <= 0xff_ffff {
        out.push(0xfd);
        out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xfe);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

pub fn put_lenenc_bytes(out: &mut Vec<u8>, s: &[u8]) {
    put_lenenc(out, s.len() as u64);
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips_every_width() {
        for v in [
            0u64,
            250,
            251,
            0xffff,
            0x1_0000,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, v);
            let mut r = Reader::new(&out, "test");
            assert_eq!(r.lenenc().unwrap(), Some(v), "value {v}");
            assert!(r.is_empty());
        }
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut r = Reader::new(&[0xfc, 1], "test");
        assert!(matches!(r.lenenc(), Err(ProtoError::Malformed { .. })));
        let mut r = Reader::new(b"abc", "test");
        assert!(r.nul_str().is_err());
    }
}
