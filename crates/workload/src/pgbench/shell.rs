//! `\shell` and `\setshell`: a command line run by the shell, as pgbench's runShellCommand
//! runs it, with its limits and its words. The client waits for it (pgbench's thread blocks
//! in system() and popen() alike).

use std::process::{Command, Stdio};

use super::ctext::c_integer;
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
        let launch = |_| format!("{}: could not launch shell command", name(argv));
        let mut child = sh(&line).stdout(Stdio::piped()).spawn().map_err(launch)?;
        // One fgets(), as pgbench's: no more than its buffer, whatever the command goes on
        // to print (`yes` would fill memory). Closing the pipe ends a writer that goes on.
        let head = child.stdout.take().map(read_head).unwrap_or_default();
        let _ = child.wait();
        let first = first_line(&head);
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
        let shown = word(argv, 1).unwrap_or_else(|| "(null)".into());
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

/// The command's name as written, for its messages.
fn name(argv: &[Arg]) -> String {
    word(argv, 0).unwrap_or_default()
}

/// Word `i` as written (`:var` for a variable).
fn word(argv: &[Arg], i: usize) -> Option<String> {
    argv.get(i).map(|a| match a {
        Arg::Text(t) => t.clone(),
        Arg::Var(v) => format!(":{v}"),
    })
}

/// The command's output up to its first newline or pgbench's buffer, whichever comes first.
fn read_head(mut out: impl std::io::Read) -> Vec<u8> {
    let mut head = Vec::with_capacity(RESULT_SIZE);
    let mut chunk = [0u8; RESULT_SIZE];
    while head.len() < RESULT_SIZE - 1 && !head.contains(&b'\n') {
        match out.read(&mut chunk[..RESULT_SIZE - 1 - head.len()]) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    head
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_head_of_an_endless_output_is_read() {
        let endless = std::io::repeat(b'7');
        assert_eq!(read_head(endless).len(), RESULT_SIZE - 1);
        assert_eq!(read_head(&b"12\n34\n"[..]), b"12\n34\n");
        assert_eq!(first_line(&read_head(&b"12\n34\n"[..])), "12\n");
    }

    #[test]
    fn a_result_is_its_first_line_within_pgbenchs_buffer() {
        assert_eq!(first_line(b"5\n6\n"), "5\n");
        assert_eq!(first_line(&[b'9'; 100]).len(), RESULT_SIZE - 1);
    }
}
