//! The little DER reading the TLS code does by hand: an item's tag, its content, what follows.

/// One DER item: its tag, the whole item, and what follows it.
pub(super) fn der_item(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (_, rest) = der_inner(b)?;
    let whole_len = b.len() - rest.len();
    Some((*b.first()?, &b[..whole_len], rest))
}

/// An item's content, and what follows the item.
pub(super) fn der_inner(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let len0 = *b.get(1)? as usize;
    let (len, head) = if len0 < 0x80 {
        (len0, 2)
    } else {
        let n = len0 & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let len = b
            .get(2..2 + n)?
            .iter()
            .fold(0usize, |a, &x| a << 8 | x as usize);
        (len, 2 + n)
    };
    let content = b.get(head..head + len)?;
    Some((content, &b[head + len..]))
}
