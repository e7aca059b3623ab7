//! fileio's `--validate`, as sysbench does it: a block written under validation ends with the
//! CRC-32 of the bytes before it and the block's offset in its file (4 + 8 bytes, in the
//! machine's byte order, as sysbench stores them), and a block read under validation must
//! carry both. sysbench's files and bakeoff's therefore check each other's.

use bakeoff_workload::Rng;

/// The checksum and the offset at the end of a block.
const TRAILER: usize = 4 + 8;

/// Fill `block` (the block at `pos` of its file) with random bytes, then its trailer. A
/// request too short to hold a trailer (the tail of a file) is written as it is.
pub(crate) fn seal(block: &mut [u8], pos: u64, rng: &mut Rng) {
    let Some(body) = block.len().checked_sub(TRAILER) else {
        return;
    };
    for chunk in block[..body].chunks_mut(8) {
        let r = rng.next_u64().to_ne_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
    let crc = crc32fast::hash(&block[..body]);
    block[body..body + 4].copy_from_slice(&crc.to_ne_bytes());
    block[body + 4..].copy_from_slice(&pos.to_ne_bytes());
}

/// Check a block read from `pos` of `file`: sysbench's words when it fails.
pub(crate) fn verify(block: &[u8], pos: u64, file: u32) -> Result<(), String> {
    let Some(body) = block.len().checked_sub(TRAILER) else {
        return Ok(());
    };
    let word = |at: usize, n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&block[at..at + n]);
        u64::from_ne_bytes(b)
    };
    let failed = format!("Validation failed on file {file}, block offset {pos}, exiting...");
    let crc = crc32fast::hash(&block[..body]);
    let stored = word(body, 4) as u32;
    if crc != stored {
        return Err(format!(
            "Checksum mismatch in block with offset: {pos}\n    Calculated value: {crc:#x}    Stored value: {stored:#x}\n{failed}"
        ));
    }
    let stored = word(body + 4, 8);
    if stored != pos {
        return Err(format!(
            "Offset mismatch in block:\n   Actual offset: {pos}    Stored offset: {stored}\n{failed}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_block_verifies_and_a_changed_or_moved_one_does_not() {
        let mut rng = Rng::seeded(7);
        let mut block = vec![0u8; 16384];
        seal(&mut block, 32768, &mut rng);
        assert_eq!(verify(&block, 32768, 0), Ok(()));
        let moved = verify(&block, 16384, 3).unwrap_err();
        assert!(moved.starts_with("Offset mismatch in block:"), "{moved}");
        assert!(moved.contains("Stored offset: 32768"), "{moved}");
        block[100] ^= 1;
        let changed = verify(&block, 32768, 2).unwrap_err();
        assert!(changed.starts_with("Checksum mismatch in block with offset: 32768"));
        assert!(changed.ends_with("Validation failed on file 2, block offset 32768, exiting..."));
    }

    #[test]
    fn the_trailer_is_sysbenchs_crc32_then_offset() {
        let mut rng = Rng::seeded(1);
        let mut block = vec![0u8; 64];
        seal(&mut block, 5, &mut rng);
        // zlib's CRC-32 of the body, as sysbench's crc32(0, buf, len - 12).
        let crc = crc32fast::hash(&block[..52]);
        assert_eq!(&block[52..56], &crc.to_ne_bytes());
        assert_eq!(&block[56..], &5u64.to_ne_bytes());
        // A zero-filled block (a prepare without --validate) fails, as it does in sysbench.
        assert!(verify(&[0u8; 64], 0, 0).is_err());
    }
}
