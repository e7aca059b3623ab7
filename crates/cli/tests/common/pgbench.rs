//! `bakeoff pgbench` beside the real pgbench: where both connect and how their outputs are
//! compared.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bakeoff_driver::Endpoint;
use bakeoff_testkit::pg::{pg_database, pg_server};

use super::masked;

pub fn real_pgbench() -> PathBuf {
    let p = PathBuf::from("/usr/lib/postgresql/15/bin/pgbench");
    assert!(
        p.is_file(),
        "these tests need the real pgbench 15: install it with `sudo apt-get install postgresql-15` (scripts/setup does)"
    );
    p
}

/// Where both tools connect: the suite's server and a database of the test's own, by
/// libpq's environment variables.
pub struct Target {
    pub db: String,
    pub dir: PathBuf,
}

impl Target {
    pub fn new(name: &str) -> Target {
        let db = pg_database(name).database.unwrap();
        Target {
            db,
            dir: bakeoff_testkit::scratch::dir(&format!("pgbench-{name}")),
        }
    }

    /// A target with pgbench's tables at scale 1, made by bakeoff's -i.
    pub fn initialized(name: &str) -> Target {
        let t = Target::new(name);
        let o = t.run(&bakeoff(), &["-i", "-s", "1", "-q"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        t
    }

    /// How both tools log in: socket directory, port, database, user and password.
    pub fn login(&self) -> [String; 5] {
        let s = pg_server();
        let Endpoint::Unix(sock) = s.connect_options().endpoint else {
            unreachable!()
        };
        [
            sock.parent().unwrap().display().to_string(),
            s.port().to_string(),
            self.db.clone(),
            s.user().to_string(),
            s.password().expose().to_string(),
        ]
    }

    pub fn env(&self, c: &mut Command) {
        let s = pg_server();
        let Endpoint::Unix(sock) = s.connect_options().endpoint else {
            unreachable!()
        };
        c.env("PGHOST", sock.parent().unwrap())
            .env("PGPORT", s.port().to_string())
            .env("PGUSER", s.user())
            .env("PGPASSWORD", s.password().expose())
            .env("PGDATABASE", &self.db)
            .env_remove("PGPASSFILE")
            .current_dir(&self.dir);
    }

    pub fn run(&self, program: &Path, args: &[&str]) -> Output {
        self.run_with(program, args, &[])
    }

    /// [`Target::run`] with more environment variables (PGOPTIONS, PGAPPNAME).
    pub fn run_with(&self, program: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let mut c = Command::new(program);
        if program.ends_with("bakeoff") {
            c.arg("pgbench");
        }
        c.args(args);
        self.env(&mut c);
        c.envs(vars.iter().copied());
        c.output().unwrap()
    }

    /// (pgbench's output, bakeoff's), each stdout then stderr, with their exit codes.
    pub fn both(&self, args: &[&str]) -> ((String, i32), (String, i32)) {
        self.both_with(args, &[])
    }

    /// [`Target::both`] with more environment variables.
    pub fn both_with(
        &self,
        args: &[&str],
        vars: &[(&str, &str)],
    ) -> ((String, i32), (String, i32)) {
        let text = |o: Output| {
            let mut t = String::from_utf8_lossy(&o.stdout).into_owned();
            t += &String::from_utf8_lossy(&o.stderr);
            (t, o.status.code().unwrap_or(-1))
        };
        (
            text(self.run_with(&real_pgbench(), args, vars)),
            text(self.run_with(&bakeoff(), args, vars)),
        )
    }

    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.join(name), text).unwrap();
    }

    pub fn query(&self, sql: &str) -> String {
        let mut c = Command::new("/usr/lib/postgresql/15/bin/psql");
        c.args(["-XAtc", sql]);
        self.env(&mut c);
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

pub fn bakeoff() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bakeoff"))
}

/// The lines both print but for the figures, and without the version line (pgbench's
/// names its own version, bakeoff's itself and the server's).
pub fn comparable(text: &str) -> String {
    masked(
        &text
            .lines()
            .filter(|l| !l.starts_with("pgbench (") && !l.starts_with("initial connection time"))
            .map(older_minor)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// A line as the current 15.x pgbench words it, where an older minor that a test may meet
/// worded it otherwise: 15.18 named `-c/--clients` in its refusals of -c's value (not a
/// number, out of range), 15.20 `-c/--client`.
fn older_minor(line: &str) -> String {
    line.replace("-c/--clients", "-c/--client")
}
