//! `\shell` and `\setshell`: a command line run by the shell, as pgbench's runShellCommand
//! runs it, with its limits and its words. The client waits for it (pgbench's thread blocks
//! in system() and popen() alike).

use std::process::{Command, Stdio};

use super::script::Arg;
use super::session::PgbenchSession;

/// pgbench's buffer for the command line (SHELL_COMMAND_SIZE): the joined words must fit
/// with room to spare, or the command is refused.
const COMMAND_SIZE: usize = 256;
/// pgbench's buffer for \setshell's result (one fgets): the first line, at most this less one.
const RESULT_SIZE: usize = 64;

impl PgbenchSession {
    /// `\shell`: the command's exit status is all that matters.
    pub(super) fn shell(&mut self, argv: &[Arg]) -> Result<(), String> {
        let line = self.command_line(argv)?;
        let ok = sh(&line)
            .stdout(Stdio::inherit())
            .status()
            .is_ok_and(|s| s.success());
        match ok {
            true => Ok(()),
            false => Err(format!("{}: could not launch shell command", name(argv))),
        }
    }

    /// `\setshell`: the first line the command prints, read as C's strtol reads it (blanks
    /// around, digits with a sign, an int's width); the command's exit status is not looked
    /// at, as pgbench's pclose() is not.
    pub(super) fn set_shell(&mut self, argv: &[Arg]) -> Result<i64, String> {
        let line = self.command_line(argv)?;
        let out = sh(&line)
            .stdout(Stdio::piped())
            .output()
            .map_err(|_| format!("{}: could not launch shell command", name(argv)))?;
        let first = first_line(&out.stdout);
        if first.is_empty() {
            return Err(format!(
                "{}: could not read result of shell command",
                name(argv)
            ));
        }
        let Some(v) = c_integer(&first) else {
            return Err(format!(
                "{}: shell command must return an integer (not \"{first}\")",
                name(argv)
            ));
        };
        // pgbench names the command's first argument here, where it means the variable.
        let shown = match argv.get(1) {
            Some(Arg::Text(t)) => t.clone(),
            Some(Arg::Var(v)) => format!(":{v}"),
            None => "(null)".into(),
        };
        self.debug_line(&format!(
            "{}: shell parameter name: \"{shown}\", value: \"{first}\"",
            name(argv)
        ));
        Ok(v)
    }

    /// The words joined by blanks, each `:var` replaced by its value.
    fn command_line(&mut self, argv: &[Arg]) -> Result<String, String> {
        let mut line = String::new();
        for (i, a) in argv.iter().enumerate() {
            let word = match a {
                Arg::Text(t) => t.clone(),
                Arg::Var(v) => match self.vars.text(v) {
                    Some(t) => t.to_string(),
                    None => return Err(format!("{}: undefined variable \":{v}\"", name(argv))),
                },
            };
            if line.len() + word.len() + (i > 0) as usize >= COMMAND_SIZE - 1 {
                return Err(format!("{}: shell command is too long", name(argv)));
            }
            if i > 0 {
                line.push(' ');
            }
            line.push_str(&word);
        }
        Ok(line)
    }
}

fn sh(line: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(line).stderr(Stdio::inherit());
    c
}

fn name(argv: &[Arg]) -> String {
    match argv.first() {
        Some(Arg::Text(t)) => t.clone(),
        Some(Arg::Var(v)) => format!(":{v}"),
        None => String::new(),
    }
}

/// What one fgets() into pgbench's buffer reads: up to and with the first newline, at most
/// RESULT_SIZE - 1 bytes.
fn first_line(out: &[u8]) -> String {
    let end = out
        .iter()
        .position(|&b| b == b'\n')
        .map_or(out.len(), |n| n + 1)
        .min(RESULT_SIZE - 1);
    String::from_utf8_lossy(&out[..end]).into_owned()
}

/// C's `(int) strtol(s, &end, 10)` where only blanks may follow: None where anything else
/// does. Blanks alone read as 0, as pgbench accepts them.
fn c_integer(s: &str) -> Option<i64> {
    let (v, end) = strtol(s);
    s.as_bytes()[end..].iter().all(|&c| blank(c)).then_some(v)
}

/// C's `atoi`: the number the text starts with (after blanks), 0 where none.
pub(super) fn atoi(s: &str) -> i64 {
    strtol(s).0
}

fn blank(c: u8) -> bool {
    c == b' ' || (b'\t'..=b'\r').contains(&c)
}

/// `(int) strtol(s, &end, 10)`: the value, and where the number ended (0 where there was
/// none, as strtol leaves `end` at the start). strtol saturates at a long's bounds; pgbench
/// then keeps an int's low bits.
fn strtol(s: &str) -> (i64, usize) {
    let b = s.as_bytes();
    let mut i = b.iter().position(|&c| !blank(c)).unwrap_or(b.len());
    let negative = b.get(i) == Some(&b'-');
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return (0, 0);
    }
    let v = b[i..i + digits].iter().fold(0i64, |v, &c| {
        v.saturating_mul(10).saturating_add((c - b'0') as i64)
    });
    let v = if negative { v.saturating_neg() } else { v };
    (v as i32 as i64, i + digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_as_strtol_reads_them() {
        assert_eq!(c_integer("7\n"), Some(7));
        assert_eq!(c_integer("  -12 \n"), Some(-12));
        assert_eq!(c_integer("\n"), Some(0));
        assert_eq!(c_integer("1 2\n"), None);
        assert_eq!(c_integer("x\n"), None);
        // An int's low 32 bits, as pgbench's (int) cast keeps them.
        assert_eq!(c_integer("5000000000\n"), Some(705032704));
        assert_eq!(first_line(b"5\n6\n"), "5\n");
        assert_eq!(
            (atoi("12abc"), atoi(" 7"), atoi("abc"), atoi("-3")),
            (12, 7, 0, -3)
        );
        assert_eq!(first_line(&[b'9'; 100]).len(), RESULT_SIZE - 1);
    }
}
