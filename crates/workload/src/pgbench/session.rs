//! pgbench's clients: each event is one transaction, a script chosen by weight and run
//! command by command as pgbench runs it (its variables, its three query modes, `\if`
//! jumps, `\gset`, pipelines, retries of serialization and deadlock failures). A client
//! whose script fails otherwise stops alone, as pgbench's clients abort; the others go on.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bakeoff_driver::{ConnectOptions, Connection, DriverError, PgConn, PgStmt, PgVia, TextParams};

use super::eval::{eval, Ctx, Vars};
use super::prng::{PgPrng, Streams};
use super::script::{Arg, Kind, Script};
use super::stats::{Live, Logged, ScriptStats};
use super::value::Value;
use crate::scripting::{EventError, Events, Source, StmtCounts};

/// pgbench's -M.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryMode {
    Simple,
    Extended,
    Prepared,
}

impl QueryMode {
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// Where each transaction's log line goes: (client, the transaction).
pub type OnTransaction = Box<dyn Fn(u32, &Logged) + Send + Sync>;

/// Everything a run's clients share: what to run, and where they report.
pub struct PgbenchSource {
    pub endpoint: ConnectOptions,
    pub scripts: Vec<Script>,
    pub mode: QueryMode,
    /// Variables every client starts with (-D, scale, default_seed, random_seed).
    pub vars: Vars,
    pub max_tries: u32,
    /// -C: a new connection for each transaction.
    pub connect_each: bool,
    /// Per-command timing, only for `-r` (a clock read per command otherwise saved).
    pub per_command: bool,
    /// -L: transactions that took longer are counted as late (and under --rate, ones that
    /// would start later than this after their schedule are skipped).
    pub latency_limit: Option<Duration>,
    /// --rate: transactions keep a schedule, their latency counted from it and their lag
    /// measured.
    pub paced: bool,
    pub stats: Mutex<Vec<ScriptStats>>,
    /// A study's clients (bakeoff's engine counting): a client's abort fails the run (its
    /// figures must not come quietly from the clients left) rather than ending that client
    /// alone, and a transaction that failed (serialization, deadlock, tries spent) is an
    /// error, not a done event (pgbench's way: counted apart, out of tps).
    pub abort_fails_run: bool,
    /// A client's abort, said as pgbench says it (the CLI prints it).
    pub on_abort: Box<dyn Fn(&str) + Send + Sync>,
    /// The server's notices, as libpq prints them (the CLI writes them to stderr).
    pub on_notice: Box<dyn Fn(&str) + Send + Sync>,
    /// --verbose-errors: each retryable error and what the client does about it, said as
    /// pgbench says them (its info lines, with no level word).
    pub on_verbose: Option<Box<dyn Fn(&str) + Send + Sync>>,
    /// Each transaction's line for `-l`, when logging.
    pub on_transaction: Option<OnTransaction>,
    /// Clients aborted.
    pub aborted: std::sync::atomic::AtomicU32,
    /// pgbench's random streams for this run's seed, clients and threads.
    pub streams: Streams,
    /// Counters for -P's lines; None without -P.
    pub live: Option<Live>,
    /// -d's trace lines, as pgbench words them (the CLI prints them); None without -d.
    pub debug: Option<Box<dyn Fn(&str) + Send + Sync>>,
}

impl Source for PgbenchSource {
    type Session = PgbenchSession;

    async fn open(
        self: Arc<Self>,
        tid: u32,
        // pgbench's streams come from --random-seed as pgbench deals them, not the engine's.
        _seed: u64,
        blocking: bool,
    ) -> Result<PgbenchSession, EventError> {
        let rng = PgPrng::seeded(self.streams.clients[tid as usize]);
        let choose_rng = PgPrng::seeded(self.streams.choose_seed(tid));
        let conn = match self.connect_each {
            true => None,
            false => Some(PgConn::open(&self.endpoint, blocking).await?),
        };
        let mut vars = self.vars.clone();
        vars.set_value("client_id", Value::Int(tid as i64));
        let stats = self
            .scripts
            .iter()
            .map(|s| ScriptStats::empty(s.commands.len()))
            .collect();
        let stmts = self
            .scripts
            .iter()
            .map(|s| vec![None; s.commands.len()])
            .collect();
        Ok(PgbenchSession {
            src: self,
            conn,
            blocking,
            tid,
            rng,
            choose_rng,
            vars,
            stmts,
            stats,
            transactions: 0,
            pending: Vec::new(),
            values: TextParams::default(),
            intended: None,
            in_pipeline: false,
        })
    }
}

pub struct PgbenchSession {
    pub(super) src: Arc<PgbenchSource>,
    pub(super) conn: Option<PgConn>,
    pub(super) blocking: bool,
    pub(super) tid: u32,
    /// Its `\set` functions' stream (pgbench's for this client id and seed).
    pub(super) rng: PgPrng,
    /// Where its scripts are chosen from.
    pub(super) choose_rng: PgPrng,
    pub(super) vars: Vars,
    /// Named statements (prepared mode), by script and command.
    pub(super) stmts: Vec<Vec<Option<PgStmt>>>,
    pub(super) stats: Vec<ScriptStats>,
    pub(super) transactions: u64,
    /// A pipeline's statements sent and not yet read, by command.
    pub(super) pending: Vec<usize>,
    /// The values of a statement's parameters, reused.
    pub(super) values: TextParams,
    /// The next transaction's scheduled start (--rate).
    pub(super) intended: Option<Instant>,
    /// Between a \startpipeline and its \endpipeline.
    pub(super) in_pipeline: bool,
}

/// How a transaction's try ended short.
pub(super) enum Stop {
    /// A serialization failure or deadlock: retried, or counted as failed.
    /// The kind, the command, and the server's error as libpq words it.
    Retryable(&'static str, usize, String),
    /// The client stops: pgbench's messages, each its own `pgbench: error:` line.
    Abort(Vec<String>),
    /// The same, on a connection that cannot be used again (mid-COPY): dropped, not rolled
    /// back (a ROLLBACK would wait behind the COPY's data, which a server may send forever).
    AbortBroken(Vec<String>),
    /// The transaction ran to the script's end and counts; then the client stops (a
    /// transaction block left open).
    Finished(Vec<String>),
    Driver(DriverError),
}

impl From<DriverError> for Stop {
    fn from(e: DriverError) -> Stop {
        match e {
            // COPY TO STDOUT in a script: pgbench aborts the client, as for COPY FROM STDIN.
            DriverError::CopyOut { .. } => {
                Stop::AbortBroken(vec!["COPY is not supported in pgbench, aborting".into()])
            }
            e => Stop::Driver(e),
        }
    }
}

impl PgbenchSession {
    fn choose(&mut self) -> usize {
        let scripts = &self.src.scripts;
        if scripts.len() == 1 {
            return 0;
        }
        // pgbench's walk: a draw below the total weight, less each script's weight in turn
        // until it goes below zero.
        let total: u64 = scripts.iter().map(|s| s.weight as u64).sum();
        let mut w = self.choose_rng.range(0, total - 1) as i64;
        for (i, s) in scripts.iter().enumerate() {
            w -= s.weight as i64;
            if w < 0 {
                return i;
            }
        }
        scripts.len() - 1
    }

    async fn transaction(&mut self, s: usize, c: &mut StmtCounts) -> Result<(), Stop> {
        let src = self.src.clone();
        let commands = &src.scripts[s].commands;
        let mut pc = 0;
        while pc < commands.len() {
            let started = src.per_command.then(Instant::now);
            let next = self.command(s, pc, &commands[pc].kind, c).await;
            if let Some(t) = started {
                let st = &mut self.stats[s].commands[pc];
                st.seconds += t.elapsed().as_secs_f64();
                st.count += 1;
                if let Err(Stop::Retryable(..)) = next {
                    st.failures += 1;
                }
            }
            pc = next?;
        }
        if self.in_pipeline {
            return Err(Stop::Abort(vec![format!(
                "client {} aborted: end of script reached with pipeline open",
                self.tid
            )]));
        }
        // A transaction the script began and did not end would span the next one's: pgbench
        // aborts the client.
        if self
            .conn
            .as_ref()
            .is_some_and(|c| c.transaction_status() != b'I')
        {
            return Err(Stop::Finished(vec![format!(
                "client {} aborted: end of script reached without completing the last transaction",
                self.tid
            )]));
        }
        Ok(())
    }

    /// Run command `pc` of script `s`, `kind`; the next command's index.
    async fn command(
        &mut self,
        s: usize,
        pc: usize,
        kind: &Kind,
        c: &mut StmtCounts,
    ) -> Result<usize, Stop> {
        let meta_failed =
            |tid: u32, what: &str, e: &dyn std::fmt::Display| meta_failed(tid, s, pc, what, e);
        if !matches!(kind, Kind::Sql(_)) {
            self.debug_meta(s, pc);
        }
        match kind {
            Kind::Sql(sql) => {
                self.sql(s, pc, sql, c).await?;
                Ok(pc + 1)
            }
            Kind::Set(var, e) => {
                let v = self
                    .eval(e, s, pc)
                    .map_err(|e| meta_failed(self.tid, word(&self.src, s, pc), &e))?;
                if !self.vars.set_checked(var, v) {
                    return Err(Stop::Abort(vec![
                        format!("{}: invalid variable name: \"{var}\"", word(&self.src, s, pc)),
                        format!("client {} aborted in command {pc} (set) of script {s}; assignment of meta-command failed", self.tid),
                    ]));
                }
                Ok(pc + 1)
            }
            Kind::Sleep(arg, unit) => {
                let n = match arg {
                    Arg::Text(t) => t.parse::<i64>().unwrap_or(0),
                    // pgbench's atoi of the variable's text, refused only where it is 0
                    // and does not start with a digit.
                    Arg::Var(v) => {
                        let fail = |e: String| meta_run_failed(self.tid, s, pc, "sleep", &e);
                        let Some(t) = self.vars.text(v) else {
                            return Err(fail(format!(
                                "{}: undefined variable \"{v}\"",
                                word(&self.src, s, pc)
                            )));
                        };
                        let n = super::ctext::atoi(t);
                        if n == 0 && !t.starts_with(|c: char| c.is_ascii_digit()) {
                            let why =
                                format!("sleep: invalid sleep time \"{t}\" for variable \"{v}\"");
                            return Err(fail(why));
                        }
                        n
                    }
                };
                let us = (n.max(0) as u64).saturating_mul(*unit);
                self.sleep(Duration::from_micros(us)).await;
                Ok(pc + 1)
            }
            Kind::SetShell(var, argv) => {
                let v = self
                    .set_shell(argv)
                    .map_err(|e| meta_run_failed(self.tid, s, pc, "setshell", &e))?;
                self.vars.set_value(var, Value::Int(v));
                Ok(pc + 1)
            }
            Kind::Shell(argv) => {
                self.shell(argv)
                    .map_err(|e| meta_run_failed(self.tid, s, pc, "shell", &e))?;
                Ok(pc + 1)
            }
            Kind::If(e, next) => {
                let v = self.eval(e, s, pc).map(Value::truth);
                match v.map_err(|e| meta_failed(self.tid, word(&self.src, s, pc), &e))? {
                    true => Ok(pc + 1),
                    false => self.branch(s, *next),
                }
            }
            Kind::Elif(_, _, end) | Kind::Else(end) => Ok(end + 1),
            Kind::Endif => Ok(pc + 1),
            Kind::StartPipeline => {
                if self.src.mode == QueryMode::Simple {
                    return Err(Stop::Abort(vec![format!(
                        "client {} aborted in command {pc} (startpipeline) of script {s}; cannot use pipeline mode with the simple query protocol",
                        self.tid
                    )]));
                }
                if std::mem::replace(&mut self.in_pipeline, true) {
                    return Err(Stop::Abort(vec![format!(
                        "client {} aborted in command {pc} (startpipeline) of script {s}; already in pipeline mode",
                        self.tid
                    )]));
                }
                self.name_pipeline(s, pc);
                Ok(pc + 1)
            }
            Kind::EndPipeline => {
                if !std::mem::replace(&mut self.in_pipeline, false) {
                    return Err(Stop::Abort(vec![format!(
                        "client {} aborted in command {pc} (endpipeline) of script {s}; not in pipeline mode",
                        self.tid
                    )]));
                }
                self.end_pipeline(s, c).await?;
                Ok(pc + 1)
            }
        }
    }

    /// A false condition's jump: the next \elif is judged, an \else or \endif entered.
    fn branch(&mut self, s: usize, mut at: usize) -> Result<usize, Stop> {
        let src = self.src.clone();
        loop {
            match &src.scripts[s].commands[at].kind {
                Kind::Elif(e, next, _) => {
                    self.debug_meta(s, at);
                    let v = self
                        .eval(e, s, at)
                        .map(Value::truth)
                        .map_err(|e| meta_failed(self.tid, s, at, word(&self.src, s, at), &e))?;
                    if v {
                        return Ok(at + 1);
                    }
                    at = *next;
                }
                _ => return Ok(at + 1),
            }
        }
    }

    fn eval(
        &mut self,
        e: &super::expr::Expr,
        s: usize,
        pc: usize,
    ) -> Result<Value, super::value::EvalError> {
        let mut cx = Ctx {
            vars: &mut self.vars,
            rng: &mut self.rng,
            at: (s, pc),
        };
        eval(e, &mut cx)
    }

    async fn sleep(&mut self, d: Duration) {
        if self.blocking {
            std::thread::sleep(d);
        } else {
            tokio::time::sleep(d).await;
        }
    }

    /// After a try that failed: leave the transaction it left open.
    async fn roll_back(&mut self) -> Result<(), DriverError> {
        self.pending.clear();
        self.in_pipeline = false;
        if let Some(conn) = self.conn.as_mut() {
            if conn.transaction_status() != b'I' {
                conn.run_text(PgVia::Simple("ROLLBACK"), TextParams::NONE, false)
                    .await?;
            }
        }
        Ok(())
    }
}

impl Events for PgbenchSession {
    fn intended_start(&mut self, at: Instant) {
        self.intended = Some(at);
    }

    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let now = Instant::now();
        // pgbench's latency under --rate runs from the schedule, the lag being part of it.
        let (started, lag) = match (self.src.paced, self.intended.take()) {
            (true, Some(at)) => (at.min(now), Some(now.saturating_duration_since(at))),
            _ => (now, None),
        };
        if let Some(lag) = lag {
            if let Some(live) = &self.src.live {
                Live::add(&live.lag_us, lag.as_micros() as u64);
                Live::add(&live.lagged, 1);
            }
            if self.src.latency_limit.is_some_and(|l| lag > l) {
                self.stats[0].skipped += 1;
                if let Some(live) = &self.src.live {
                    Live::add(&live.skipped, 1);
                }
                self.log(0, started, Some(lag), Some("skipped"), 0);
                self.transactions += 1;
                return Ok(());
            }
            let st = &mut self.stats[0];
            st.lag_sum += lag.as_secs_f64();
            st.lag_max = st.lag_max.max(lag.as_secs_f64());
        }
        if self.src.connect_each {
            self.reconnect().await?;
        }
        let s = self.choose();
        self.debug_script(s);
        let retry_from = self.rng.clone();
        let mut tries = 1u32;
        loop {
            match self.transaction(s, c).await {
                Ok(()) => {
                    self.completed(s, started, lag, tries);
                    break;
                }
                // The transaction counts, then the client stops.
                Err(Stop::Finished(messages)) => {
                    self.completed(s, started, lag, tries);
                    return self.abort(&messages).await;
                }
                Err(Stop::Retryable(kind, pc, said)) => {
                    self.roll_back().await?;
                    // pgbench's: tries left (0 is no limit) and, under -L, time left.
                    let retry = (self.src.max_tries == 0 || tries < self.src.max_tries)
                        && !self
                            .src
                            .latency_limit
                            .is_some_and(|l| started.elapsed() > l);
                    self.say_retryable(s, pc, &said, tries, retry, started);
                    if retry {
                        tries += 1;
                        self.stats[s].commands[pc].retries += 1;
                        self.rng = retry_from.clone();
                        continue;
                    }
                    let st = &mut self.stats[s];
                    st.failed += 1;
                    st.tried(tries);
                    match kind {
                        "serialization" => st.serialization_failures += 1,
                        _ => st.deadlock_failures += 1,
                    }
                    self.live_tries(tries, true);
                    self.log(s, started, lag, Some(kind), tries - 1);
                    if self.src.abort_fails_run {
                        // A study's engine counts done events: pgbench leaves a failed
                        // transaction out of tps, so here it is an error and the client goes
                        // on to its next transaction, as pgbench's does.
                        c.errors += 1;
                        return Err(EventError::Restart);
                    }
                    break;
                }
                Err(Stop::Abort(messages)) => {
                    return self.abort(&messages).await;
                }
                Err(Stop::AbortBroken(messages)) => {
                    self.conn = None;
                    return self.abort(&messages).await;
                }
                Err(Stop::Driver(e)) => return Err(EventError::Driver(e)),
            }
        }
        self.transactions += 1;
        if self.src.connect_each {
            if let Some(conn) = self.conn.take() {
                conn.quit().await;
            }
        }
        Ok(())
    }

    /// A new connection (also -C's for each transaction): its named statements are gone.
    async fn reconnect(&mut self) -> Result<(), DriverError> {
        self.conn = Some(PgConn::open(&self.src.endpoint, self.blocking).await?);
        for s in &mut self.stmts {
            s.iter_mut().for_each(|x| *x = None);
        }
        Ok(())
    }

    async fn finish(mut self, _c: &mut StmtCounts) -> Result<(), EventError> {
        self.merge();
        if let Some(conn) = self.conn.take() {
            conn.quit().await;
        }
        Ok(())
    }
}

impl PgbenchSession {
    /// The client stops: its transaction rolled back, pgbench's messages said, the run told.
    async fn abort(&mut self, messages: &[String]) -> Result<(), EventError> {
        let _ = self.roll_back().await;
        for m in messages {
            (self.src.on_abort)(m);
        }
        self.src
            .aborted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.merge();
        match self.src.abort_fails_run {
            true => Err(EventError::Script(messages.join("\n"))),
            false => Err(EventError::Ended),
        }
    }

    /// This client's figures into the run's (once: they are taken).
    fn merge(&mut self) {
        let mut all = self.src.stats.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() < self.stats.len() {
            all.resize(self.stats.len(), ScriptStats::default());
        }
        for (a, b) in all.iter_mut().zip(&self.stats) {
            a.add(b);
        }
        for st in &mut self.stats {
            *st = ScriptStats::empty(st.commands.len());
        }
    }
}

/// Command `pc`'s meta-command as the script writes it (`SET`, `Sleep`), where pgbench says
/// its `argv[0]` (an expression's failure, a variable it cannot set or find); elsewhere it
/// says the name in lower case, whatever the script wrote (`crates/cli/tests/pgbench_errors.rs`
/// holds both).
fn word(src: &PgbenchSource, s: usize, pc: usize) -> &str {
    let argv = &src.scripts[s].commands[pc].argv;
    argv.split(' ').next().unwrap_or("")
}

/// pgbench's two lines for a meta-command (`what`, command `pc` of script `s`) whose
/// expression failed.
fn meta_failed(tid: u32, s: usize, pc: usize, what: &str, e: &dyn std::fmt::Display) -> Stop {
    aborted(tid, s, pc, what, e, "evaluation")
}

/// The same for a \sleep, \shell or \setshell that could not be carried out.
fn meta_run_failed(tid: u32, s: usize, pc: usize, what: &str, e: &dyn std::fmt::Display) -> Stop {
    aborted(tid, s, pc, what, e, "execution")
}

fn aborted(
    tid: u32,
    s: usize,
    pc: usize,
    what: &str,
    e: &dyn std::fmt::Display,
    how: &str,
) -> Stop {
    // An error with nothing to say (an empty variable) leaves only the abort line.
    let said = e.to_string();
    let mut lines: Vec<String> = (!said.is_empty()).then_some(said).into_iter().collect();
    lines.push(format!(
        "client {tid} aborted in command {pc} ({what}) of script {s}; {how} of meta-command failed"
    ));
    Stop::Abort(lines)
}
