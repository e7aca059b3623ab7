//! A password given on the command line is blanked in this process's own argv once read, as
//! the MySQL client blanks its copy: `ps` and /proc/PID/cmdline then show `x`s for it for the
//! rest of the run, not the password. (It was visible for the moment before; MYSQL_PWD, an
//! option file or a password command never show it at all.)

use std::ffi::c_char;

/// The options whose values are passwords, in either grammar.
const SECRET_OPTIONS: &[&str] = &["--mysql-password", "--pgsql-password"];

extern "C" {
    /// glibc's pointer to argv[0]; the argument strings follow it, each after the other's NUL
    /// (what the kernel shows as /proc/PID/cmdline).
    static program_invocation_name: *mut c_char;
}

/// Overwrite every password value in argv with `x`s. Nothing is written unless the memory at
/// argv[0] holds exactly what /proc/self/cmdline shows.
pub fn blank_passwords() {
    let Ok(cmdline) = std::fs::read("/proc/self/cmdline") else {
        return;
    };
    let spans = secret_spans(&cmdline);
    if spans.is_empty() {
        return;
    }
    // SAFETY: glibc sets program_invocation_name to argv[0] before main and never moves it.
    let base = unsafe { program_invocation_name }.cast::<u8>();
    if base.is_null() {
        return;
    }
    // SAFETY: the kernel laid the arguments out contiguously from argv[0], `cmdline.len()`
    // bytes in all; they are compared before anything is written.
    let args = unsafe { std::slice::from_raw_parts_mut(base, cmdline.len()) };
    if args != cmdline.as_slice() {
        return;
    }
    for (at, len) in spans {
        args[at..at + len].fill(b'x');
    }
}

/// Where each password value lies in a NUL-separated command line: (offset, length).
fn secret_spans(cmdline: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 0;
    let mut next_is_secret = false;
    for (i, arg) in cmdline.split(|&b| b == 0).enumerate() {
        if i > 0 && next_is_secret {
            spans.push((at, arg.len()));
            next_is_secret = false;
        } else if i > 0 {
            for name in SECRET_OPTIONS {
                let name = name.as_bytes();
                if arg == name {
                    next_is_secret = true;
                } else if arg.starts_with(name) && arg.get(name.len()) == Some(&b'=') {
                    spans.push((at + name.len() + 1, arg.len() - name.len() - 1));
                }
            }
        }
        at += arg.len() + 1;
    }
    spans.retain(|&(_, len)| len > 0);
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_of_a_password_option_are_found_and_nothing_else() {
        let line =
            b"bakeoff\0run\0--mysql-password=hunter2\0--mysql-password\0s3cret\0--mysql-user=x\0";
        let spans = secret_spans(line);
        let found: Vec<&[u8]> = spans.iter().map(|&(a, l)| &line[a..a + l]).collect();
        assert_eq!(found, [&b"hunter2"[..], &b"s3cret"[..]]);
        assert!(secret_spans(b"bakeoff\0--mysql-password-file=x\0").is_empty());
    }
}
