//! Where `-d`'s trace goes, and pgbench's numbers for its statements. Apart from the
//! client (`debug.rs` says the lines) so that the client's state can hold it.

use super::script::{Command, Kind, Script};

/// Where `-d`'s lines go, and what they need to know of the scripts.
pub struct Debug {
    pub(super) say: Box<dyn Fn(&str) + Send + Sync>,
    /// Each SQL command's prepared-statement number (`P_k`): its place among the SQL commands
    /// of all scripts, in the order they were given, as pgbench numbers them.
    pub(super) numbers: Vec<Vec<usize>>,
}

impl Debug {
    pub fn new(say: Box<dyn Fn(&str) + Send + Sync>, scripts: &[Script]) -> Debug {
        let numbers = scripts
            .iter()
            .enumerate()
            .map(|(s, script)| {
                (0..script.commands.len())
                    .map(|pc| statement_number(scripts, s, pc))
                    .collect()
            })
            .collect();
        Debug { say, numbers }
    }
}

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
