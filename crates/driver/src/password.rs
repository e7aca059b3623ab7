//! Where the password of a server the user runs comes from. Never from a study file, a URL
//! or a command line that `ps` shows: from `MYSQL_PWD` (the MySQL client's variable), a MySQL
//! option file's `[client]` group (and a group of the user's choosing after it, as
//! `--defaults-group-suffix` reads one), or a command run at every connect (IAM tokens of
//! managed databases expire in minutes).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Secret;

/// How a password is found, as a study file or the command line says it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PasswordSource {
    /// A MySQL option file: `password` (and `user`) from its `[client]` group, then `group`.
    pub defaults_file: Option<PathBuf>,
    pub defaults_group: Option<String>,
    /// Run with `sh -c` at every connect; its standard output (less a trailing newline) is
    /// the password.
    pub password_command: Option<String>,
}

/// The password as found: fixed, or a command to run at each connect.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub password: Secret,
    pub command: Option<PasswordCommand>,
    /// The option file's `user`, for a URL that names none.
    pub user: Option<String>,
    /// The password is an option file's (not MYSQL_PWD's, which PostgreSQL ignores).
    pub from_option_file: bool,
}

impl PasswordSource {
    /// Read what can be read now: the option file, else `MYSQL_PWD`; a command is kept to be
    /// run at each connect (and run once now, so a broken one fails before anything starts).
    pub fn find(&self) -> Result<Found, String> {
        let mut found = Found::default();
        if let Some(path) = &self.defaults_file {
            let path = &home(path);
            let groups = ["client", self.defaults_group.as_deref().unwrap_or("client")];
            let values = read_option_file(path, &groups)?;
            found.user = values.user;
            if let Some(p) = values.password {
                found.password = p;
                found.from_option_file = true;
            }
        } else if let Ok(p) = std::env::var("MYSQL_PWD") {
            found.password = Secret::new(p);
        }
        if let Some(cmd) = &self.password_command {
            let cmd = PasswordCommand(cmd.clone());
            cmd.run()?;
            found.command = Some(cmd);
        }
        Ok(found)
    }
}

/// `~/x` as the shell reads it: under $HOME.
fn home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(h)) => PathBuf::from(h).join(rest),
        _ => path.to_path_buf(),
    }
}

/// A command whose output is the password, run afresh at every connect.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordCommand(String);

impl std::fmt::Debug for PasswordCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PasswordCommand({:?})", self.0)
    }
}

impl PasswordCommand {
    pub fn new(cmd: &str) -> PasswordCommand {
        PasswordCommand(cmd.to_string())
    }

    /// Run it: its output, less one trailing newline, or why it failed (its exit status and
    /// the first line of its standard error; never its output, which may be half a token).
    pub fn run(&self) -> Result<Secret, String> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(&self.0)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("password_command `{}` could not run: {e}", self.0))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "password_command `{}` failed ({}){}",
                self.0,
                out.status,
                err.lines()
                    .next()
                    .map(|l| format!(": {l}"))
                    .unwrap_or_default()
            ));
        }
        let mut s = String::from_utf8(out.stdout).map_err(|_| {
            format!(
                "password_command `{}` printed bytes that are not UTF-8",
                self.0
            )
        })?;
        if s.ends_with('\n') {
            s.pop();
            if s.ends_with('\r') {
                s.pop();
            }
        }
        Ok(Secret::new(s))
    }
}

/// What bakeoff takes from an option file.
#[derive(Debug, Default)]
struct OptionValues {
    user: Option<String>,
    password: Option<Secret>,
}

/// Read `user` and `password` from `groups` of a MySQL option file (a later group overrides
/// an earlier one, as the client reads them), following `!include` and `!includedir`.
fn read_option_file(path: &Path, groups: &[&str]) -> Result<OptionValues, String> {
    let mut values = OptionValues::default();
    read_into(path, groups, &mut values, 0)?;
    Ok(values)
}

fn read_into(
    path: &Path,
    groups: &[&str],
    values: &mut OptionValues,
    depth: u32,
) -> Result<(), String> {
    if depth > 8 {
        return Err(format!(
            "{}: !include nested more than 8 deep (a loop?)",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("option file {}: {e}", path.display()))?;
    let mut in_group = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(inc) = line.strip_prefix("!includedir") {
            let dir = PathBuf::from(inc.trim());
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map_err(|e| {
                    format!(
                        "{}:{}: !includedir {}: {e}",
                        path.display(),
                        n + 1,
                        dir.display()
                    )
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "cnf"))
                .collect();
            files.sort();
            for f in files {
                read_into(&f, groups, values, depth + 1)?;
            }
            continue;
        }
        if let Some(inc) = line.strip_prefix("!include") {
            read_into(Path::new(inc.trim()), groups, values, depth + 1)?;
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            let name = name.strip_suffix(']').ok_or_else(|| {
                format!(
                    "{}:{}: a group header must end with ]",
                    path.display(),
                    n + 1
                )
            })?;
            in_group = groups.contains(&name.trim());
            continue;
        }
        if !in_group {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        let value = unquote(value.trim());
        match key.trim().replace('_', "-").as_str() {
            "password" => values.password = Some(Secret::new(value)),
            "user" => values.user = Some(value),
            _ => {}
        }
    }
    Ok(())
}

/// A value as the client reads it: quotes removed, and after an unquoted value a `#` starts
/// a comment.
fn unquote(v: &str) -> String {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.rfind(q).map(|i| &s[..i])) {
            return inner.replace("\\\\", "\\");
        }
    }
    match v.find(" #").or_else(|| v.find("\t#")) {
        Some(i) => v[..i].trim_end().to_string(),
        None => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn an_option_file_gives_client_then_the_chosen_group() {
        let dir = std::env::temp_dir().join(format!("bakeoff-optfile-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("conf.d")).unwrap();
        write(
            &dir.join("conf.d"),
            "x.cnf",
            "[client]\nuser = from_include\n",
        );
        let f = write(
            &dir,
            "my.cnf",
            &format!(
                "# a comment\n[mysqld]\npassword=server-side\n[client]\npassword = \"s3 cr#t\"\n!includedir {}\n[client_bench]\npassword=bench-pw # trailing\n",
                dir.join("conf.d").display()
            ),
        );
        let client = read_option_file(&f, &["client", "client"]).unwrap();
        assert_eq!(client.password.unwrap().expose(), "s3 cr#t");
        assert_eq!(client.user.as_deref(), Some("from_include"));
        let bench = read_option_file(&f, &["client", "client_bench"]).unwrap();
        assert_eq!(bench.password.unwrap().expose(), "bench-pw");
        let e = read_option_file(&dir.join("missing.cnf"), &["client"]).unwrap_err();
        assert!(e.contains("missing.cnf"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_command_is_run_at_each_call_and_its_failure_named() {
        let dir = std::env::temp_dir().join(format!("bakeoff-pwcmd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let counter = dir.join("n");
        let cmd = PasswordCommand::new(&format!(
            "echo x >> {0}; printf 'token-%s\\n' $(wc -l < {0})",
            counter.display()
        ));
        assert_eq!(cmd.run().unwrap().expose(), "token-1");
        assert_eq!(cmd.run().unwrap().expose(), "token-2");
        // What it printed before failing may be half a token: never in the message.
        let e = PasswordCommand::new("printf 'half-%s' token; echo 'no credentials' >&2; exit 3")
            .run()
            .unwrap_err();
        assert!(e.contains("no credentials") && e.contains('3'), "{e}");
        assert!(!e.contains("half-token"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
