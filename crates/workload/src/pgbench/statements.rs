//! A pgbench client's SQL commands: sent by the query mode's protocol (alone, or queued in
//! a pipeline), their replies counted, `\\gset`/`\\aset` rows stored, errors judged.

use bakeoff_driver::{PgReply, PgStmt, PgUntil, PgVia, TextParams};

use super::eval::Vars;
use super::script::{Gset, Kind, Part, Sql};
use super::session::{PgbenchSession, QueryMode, Stop};
use crate::scripting::StmtCounts;

const CONNECTED: &str = "a client has its connection while it runs";

impl PgbenchSession {
    pub(super) async fn sql(
        &mut self,
        s: usize,
        pc: usize,
        sql: &Sql,
        c: &mut StmtCounts,
    ) -> Result<(), Stop> {
        let keep = sql.gset.is_some();
        let in_pipeline = sql.in_pipeline;
        if in_pipeline && keep {
            return Err(Stop::Abort(vec![format!(
                "client {} aborted in command {pc} (gset) of script {s}; \\gset is not allowed in pipeline mode",
                self.tid
            )]));
        }
        // A named statement's first use parses it: a refusal then is its Parse's.
        let mut first_use = false;
        let (reply, text) = match self.src.mode {
            QueryMode::Simple => {
                let text = substitute(sql, &self.vars);
                self.debug_send(s, pc, &text);
                self.debug_receiving(1);
                let conn = self.conn.as_mut().expect(CONNECTED);
                let reply = conn
                    .run_text(PgVia::Simple(&text), TextParams::NONE, keep)
                    .await?;
                (reply, Some(text))
            }
            mode => {
                self.values.clear();
                for p in &sql.params {
                    let vars = &self.vars;
                    self.values.push(|out| vars.write_text(p, out));
                }
                let via = match mode {
                    QueryMode::Prepared => {
                        let (stmt, first) = self.named(s, pc, sql);
                        first_use = first;
                        PgVia::Named(stmt)
                    }
                    _ => PgVia::Unnamed(&sql.numbered),
                };
                self.debug_send(s, pc, &sql.numbered);
                if !in_pipeline {
                    self.debug_receiving(1);
                }
                let conn = self.conn.as_mut().expect(CONNECTED);
                if in_pipeline {
                    conn.queue_text(via, &self.values, false);
                    self.pending.push(pc);
                    return Ok(());
                }
                (conn.run_text(via, &self.values, keep).await?, None)
            }
        };
        self.debug_receiving(1);
        self.say_notices();
        if first_use && !reply.parsed {
            if let Some(e) = &reply.error {
                return Err(self.prepare_refused(s, pc, sql, e));
            }
        }
        self.answer(s, pc, sql, text.as_deref(), reply, c)
    }

    /// Statement `pc`'s name on this connection: named at its first use, which parses it
    /// (true), as pgbench prepares it then.
    fn named(&mut self, s: usize, pc: usize, sql: &Sql) -> (PgStmt, bool) {
        if let Some(stmt) = self.stmts[s][pc] {
            return (stmt, false);
        }
        let conn = self.conn.as_mut().expect(CONNECTED);
        let stmt = conn.name_untyped(&sql.numbered, sql.params.len() as u16);
        self.stmts[s][pc] = Some(stmt);
        self.debug_preparing(s, pc);
        (stmt, true)
    }

    /// At \startpipeline (command `pc`) in the prepared protocol pgbench prepares every
    /// statement up to the \endpipeline at once; they are named here, parsed when sent.
    pub(super) fn name_pipeline(&mut self, s: usize, pc: usize) {
        if self.src.mode != QueryMode::Prepared {
            return;
        }
        let src = self.src.clone();
        for (j, c) in src.scripts[s].commands.iter().enumerate().skip(pc + 1) {
            match &c.kind {
                Kind::EndPipeline => break,
                Kind::Sql(sql) => {
                    self.named(s, j, sql);
                }
                _ => {}
            }
        }
    }

    /// The server's notices, as libpq's default processor prints them (on stderr).
    fn say_notices(&mut self) {
        if let Some(conn) = self.conn.as_mut() {
            for n in conn.take_notices() {
                (self.src.on_notice)(&n);
            }
        }
    }

    /// A statement the server would not prepare: pgbench says why (PQprepare's error), then
    /// aborts the client when it executes the statement that does not exist.
    fn prepare_refused(
        &self,
        s: usize,
        pc: usize,
        sql: &Sql,
        e: &bakeoff_driver::ServerError,
    ) -> Stop {
        let number = super::debug::statement_number(&self.src.scripts, s, pc);
        Stop::Abort(vec![
            bakeoff_driver::libpq_error(&sql.numbered, e),
            format!(
                "client {} script {s} aborted in command {pc} query 0: ERROR:  prepared statement \"P_{number}\" does not exist",
                self.tid
            ),
        ])
    }

    pub(super) async fn end_pipeline(&mut self, s: usize, c: &mut StmtCounts) -> Result<(), Stop> {
        let src = self.src.clone();
        let pending = std::mem::take(&mut self.pending);
        let conn = self
            .conn
            .as_mut()
            .expect("a client has its connection while it runs");
        conn.queue_sync();
        conn.flush().await?;
        self.debug_receiving(1);
        let mut failed = None;
        for pc in pending {
            let Kind::Sql(sql) = &src.scripts[s].commands[pc].kind else {
                continue;
            };
            let conn = self.conn.as_mut().expect("connected");
            let reply = conn
                .read_reply(sql.gset.is_some(), PgUntil::Command)
                .await?;
            self.debug_receiving(1);
            self.say_notices();
            if let Err(e) = self.answer(s, pc, sql, None, reply, c) {
                failed = Some(e);
                break;
            }
        }
        let conn = self.conn.as_mut().expect("connected");
        conn.read_ready().await?;
        self.debug_receiving(1);
        self.debug_pipeline_end();
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A statement's reply: counted, its rows into variables, its error judged.
    fn answer(
        &mut self,
        s: usize,
        pc: usize,
        sql: &Sql,
        sent: Option<&str>,
        reply: PgReply,
        c: &mut StmtCounts,
    ) -> Result<(), Stop> {
        if reply.copy_in {
            return Err(Stop::Abort(vec![
                "COPY is not supported in pgbench, aborting".into(),
            ]));
        }
        if let Some(e) = reply.error {
            c.errors += 1;
            let kind = match e.sql_state.as_str() {
                "40001" => Some("serialization"),
                "40P01" => Some("deadlock"),
                _ => None,
            };
            let said = || bakeoff_driver::libpq_error(sent.unwrap_or(&sql.numbered), &e);
            return Err(match kind {
                Some(k) => Stop::Retryable(k, pc, said()),
                None => Stop::Abort(vec![format!(
                    "client {} script {s} aborted in command {pc} query 0: {}",
                    self.tid,
                    said()
                )]),
            });
        }
        if reply.rows > 0 {
            c.reads += 1;
        } else if reply.affected > 0 {
            c.writes += 1;
        } else {
            c.others += 1;
        }
        if let Some((how, prefix)) = &sql.gset {
            self.gset(s, pc, *how, prefix, &reply)?;
        }
        Ok(())
    }

    fn gset(
        &mut self,
        s: usize,
        pc: usize,
        how: Gset,
        prefix: &str,
        reply: &PgReply,
    ) -> Result<(), Stop> {
        let sets: Vec<_> = match how {
            Gset::One => reply.sets.last().into_iter().collect(),
            Gset::All => reply.sets.iter().collect(),
        };
        // A statement that returns no rows at all gives \gset none.
        if how == Gset::One && sets.is_empty() {
            return Err(Stop::Abort(vec![format!(
                "client {} script {s} command {pc} query 0: expected one row, got 0",
                self.tid
            )]));
        }
        for set in sets {
            if how == Gset::One && set.rows.len() != 1 {
                let rows = set.rows.len();
                return Err(Stop::Abort(vec![format!(
                    "client {} script {s} command {pc} query 0: expected one row, got {rows}",
                    self.tid
                )]));
            }
            // pgbench stores the last row (one under \gset), each field as its text: a NULL is
            // the empty string PQgetvalue gives.
            let Some(row) = set.rows.last() else {
                continue;
            };
            for (name, v) in set.columns.iter().zip(row) {
                let var = format!("{prefix}{name}");
                if !super::expr::valid_name(&var) {
                    return Err(Stop::Abort(vec![
                        format!("{}: invalid variable name: \"{var}\"", if how == Gset::One { "gset" } else { "aset" }),
                        format!("client {} script {s} command {pc} query 0: error storing into variable {var}", self.tid),
                    ]));
                }
                self.vars.set_text(&var, v.clone().unwrap_or_default());
            }
        }
        Ok(())
    }
}

/// The simple protocol's text: each `:var` that is set replaced by its value; one that is
/// not stays as written, as pgbench leaves it.
pub fn substitute(sql: &Sql, vars: &Vars) -> String {
    let mut out = String::with_capacity(sql.text.len() + 16);
    for p in &sql.parts {
        match p {
            Part::Text(t) => out.push_str(t),
            Part::Var(v) => {
                if !vars.push_text(v, &mut out) {
                    out.push(':');
                    out.push_str(v);
                }
            }
        }
    }
    out
}
