//! Randomness for secrets: the load account's password, the names of private directories,
//! the tokens bakeoff writes on the tables it creates.
//!
//! It comes from the kernel's getrandom(2) and nowhere else. There is no fallback: a password
//! made of whatever a failed read left in the buffer (zeros) is a password anyone can guess,
//! so when the kernel cannot give randomness the caller fails (a server start does).

use std::io;

/// `bytes` random bytes as lowercase hex (twice as many characters).
pub fn random_hex(bytes: usize) -> io::Result<String> {
    hex_from(bytes, fill)
}

fn hex_from(bytes: usize, fill: impl FnOnce(&mut [u8]) -> io::Result<()>) -> io::Result<String> {
    let mut buf = vec![0u8; bytes];
    fill(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Fill `buf` from getrandom(2), retrying interrupted and short reads.
fn fill(buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: the pointer and length describe `rest`, a live, writable slice.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(io::Error::new(
                e.kind(),
                format!("the kernel gave no randomness (getrandom: {e})"),
            ));
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_read_is_an_error_not_a_guessable_value() {
        let failed = hex_from(16, |_| Err(io::Error::other("no entropy")));
        assert!(failed.is_err(), "{failed:?}");
    }

    #[test]
    fn values_are_hex_of_the_asked_length_and_differ() {
        let (a, b) = (random_hex(16).unwrap(), random_hex(16).unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
        assert_ne!(a, "0".repeat(32));
    }
}
