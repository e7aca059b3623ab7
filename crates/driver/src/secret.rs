//! A password held in memory that no core dump holds: its bytes live in pages of their own,
//! marked MADV_DONTDUMP, zeroed when the last copy goes. Debug and Display print `***`, so it
//! never reaches a log, report or JSON either. (Core dumps as a whole are turned off while a
//! password is held: see [`no_core_dumps`].)

use std::fmt;
use std::sync::Arc;

/// A password. Clones share one allocation.
#[derive(Clone, Default)]
pub struct Secret(Option<Arc<Held>>);

/// Where a password's bytes are: pages of their own; on the heap only when no page could be
/// mapped (the process is out of address space; core dumps are off all the same).
enum Held {
    Pages(Pages),
    Heap(Box<str>),
}

impl Held {
    fn text(&self) -> &str {
        match self {
            Held::Pages(p) => p.text(),
            Held::Heap(s) => s,
        }
    }
}

/// Anonymous pages holding `len` bytes of text, excluded from core dumps.
struct Pages {
    ptr: *mut u8,
    size: usize,
    len: usize,
}

// SAFETY: the pages are written once, in `new`, before they are shared; read-only after.
unsafe impl Send for Pages {}
unsafe impl Sync for Pages {}

impl Pages {
    fn new(text: &str) -> Option<Pages> {
        let size = text.len().div_ceil(page()).max(1) * page();
        // SAFETY: an anonymous private mapping of `size` bytes; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: `ptr` maps `size` >= text.len() writable bytes that nothing else uses.
        unsafe {
            libc::madvise(ptr, size, libc::MADV_DONTDUMP);
            std::ptr::copy_nonoverlapping(text.as_ptr(), ptr.cast(), text.len());
        }
        Some(Pages {
            ptr: ptr.cast(),
            size,
            len: text.len(),
        })
    }

    fn text(&self) -> &str {
        // SAFETY: `len` bytes copied from a &str in `new`, never written since.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.ptr, self.len)) }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once, here; zeroed first so the bytes
        // do not linger in a page the kernel hands out again before it clears it.
        unsafe {
            std::ptr::write_bytes(self.ptr, 0, self.size);
            libc::munmap(self.ptr.cast(), self.size);
        }
    }
}

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    }
}

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        let mut s: String = s.into();
        if s.is_empty() {
            return Secret(None);
        }
        no_core_dumps();
        let Some(pages) = Pages::new(&s) else {
            return Secret(Some(Arc::new(Held::Heap(s.into_boxed_str()))));
        };
        // SAFETY: overwriting the String's own bytes with zeros keeps it valid UTF-8.
        unsafe { s.as_bytes_mut().fill(0) };
        Secret(Some(Arc::new(Held::Pages(pages))))
    }

    pub fn expose(&self) -> &str {
        self.0.as_ref().map_or("", |p| p.text())
    }
}

/// No core file from this process from now on (RLIMIT_CORE 0, soft and hard): a password is
/// held. Pages marked MADV_DONTDUMP are left out even where a crash handler takes the dump
/// through a pipe; this keeps the rest of the heap (the password's transient copies) out too.
/// PR_SET_DUMPABLE is not used: it would lock perf and /proc readers out of the process.
pub fn no_core_dumps() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let zero = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a valid rlimit for this process; failure leaves the limit as it was.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &zero) };
    });
}

impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// From a command line or an environment variable, as is.
impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Secret, Self::Err> {
        Ok(Secret::new(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_lives_in_pages_left_out_of_core_dumps_and_no_core_is_written() {
        let s = Secret::new("hunter2");
        assert_eq!(s.clone().expose(), "hunter2");
        assert_eq!(format!("{s:?} {s}"), "*** ***");
        let Some(Held::Pages(pages)) = s.0.as_deref() else {
            panic!("a password on the heap, not in its own pages");
        };
        let at = pages.ptr as u64;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        // The mapping that holds it (the kernel may have merged it with a neighbour).
        let holds = |l: &str| {
            let range = l.split(' ').next().unwrap_or("");
            let mut ends = range.split('-').map(|h| u64::from_str_radix(h, 16).ok());
            matches!((ends.next(), ends.next()), (Some(Some(a)), Some(Some(b))) if a <= at && at < b)
        };
        let mut lines = smaps.lines().skip_while(|l| !holds(l));
        assert!(lines.next().is_some(), "its mapping is in smaps");
        let flags = lines.find(|l| l.starts_with("VmFlags:")).unwrap();
        assert!(flags.contains(" dd"), "MADV_DONTDUMP: {flags}");
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let core = limits
            .lines()
            .find(|l| l.starts_with("Max core file size"))
            .unwrap();
        assert!(core.split_whitespace().nth(4) == Some("0"), "{core}");
        assert_eq!(Secret::new("").expose(), "");
    }
}
