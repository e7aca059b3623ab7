//! `-d`: pgbench's debug lines, the same words at the same points of a client's work, so a
//! user who reads pgbench's trace reads bakeoff's alike: the script a transaction runs, each
//! meta-command executed, each statement prepared, sent and waited for, a pipeline's end.
//!
//! One thing is pgbench's timing, not its logic: it says "receiving" each time it looks for
//! a reply, which is twice per statement where the reply was not there at the first look
//! (the usual case) and once more per reply at a pipeline's end. bakeoff says it that often
//! always.

use super::script::{Command, Kind, Script};
use super::session::{PgbenchSession, QueryMode};

/// pgbench's number for SQL command `pc` of script `s` (its prepared name is `P_` and it):
/// the SQL commands before it in all scripts, in the order they were given.
pub(super) fn statement_number(scripts: &[Script], s: usize, pc: usize) -> usize {
    let sql = |c: &&Command| matches!(c.kind, Kind::Sql(_));
    let before: usize = scripts[..s]
        .iter()
        .map(|x| x.commands.iter().filter(sql).count())
        .sum();
    before + scripts[s].commands[..pc].iter().filter(sql).count()
}

impl PgbenchSession {
    /// A line of the trace, built only under -d.
    fn say(&self, line: impl FnOnce() -> String) {
        if let Some(say) = &self.src.debug {
            say(&line());
        }
    }

    /// A transaction starts script `s`.
    pub(super) fn debug_script(&self, s: usize) {
        self.say(|| {
            let name = &self.src.scripts[s].name;
            format!("client {} executing script \"{name}\"", self.tid)
        });
    }

    /// Meta-command `pc` of script `s` is executed (an \elif also when it is judged after a
    /// false condition; an \else or \endif skipped over is not).
    pub(super) fn debug_meta(&self, s: usize, pc: usize) {
        self.say(|| {
            let argv = &self.src.scripts[s].commands[pc].argv;
            format!("client {} executing \\{argv}", self.tid)
        });
    }

    /// SQL command `pc` is prepared on this connection (its first use, or its pipeline's
    /// \startpipeline).
    pub(super) fn debug_preparing(&self, s: usize, pc: usize) {
        self.say(|| {
            let n = statement_number(&self.src.scripts, s, pc);
            format!("client {} preparing P_{n}", self.tid)
        });
    }

    /// SQL command `pc` is sent: its text in the simple and extended protocols, its name in
    /// the prepared one.
    pub(super) fn debug_send(&self, s: usize, pc: usize, text: &str) {
        self.say(|| match self.src.mode {
            QueryMode::Prepared => {
                let n = statement_number(&self.src.scripts, s, pc);
                format!("client {} sending P_{n}", self.tid)
            }
            _ => format!("client {} sending {text}", self.tid),
        });
    }

    /// The client looks for replies `n` times.
    pub(super) fn debug_receiving(&self, n: usize) {
        for _ in 0..n {
            self.say(|| format!("client {} receiving", self.tid));
        }
    }

    /// A pipeline's synchronisation point was read.
    pub(super) fn debug_pipeline_end(&self) {
        self.say(|| format!("client {} pipeline ending", self.tid));
    }

    /// A line of pgbench's own words (\setshell's result).
    pub(super) fn debug_line(&self, line: &str) {
        self.say(|| line.to_string());
    }
}
