//! What a connection's objects share: the connection itself (`Link`), the run's ignorable
//! errors, and how the Rust half answers the Lua half (`Reply`).

use std::cell::RefCell;
use std::rc::Rc;

use bakeoff_driver::{ConnectOptions, DriverError, Outcome, ServerError};

use super::db::Db;

use super::reactor::Yielder;
use super::result::Results;
use crate::scripting::lua::counts;

/// sysbench's error for a misuse of its SQL API (its driver said why in an ALERT or FATAL line).
pub(super) const API_ERROR: &str = "SQL API error";

/// What libmysqlclient says when the server goes away mid-statement (CR_SERVER_LOST).
const SERVER_LOST: u16 = 2013;

/// The server errors a run ignores (`--mysql-ignore-errors`): the event restarts.
#[derive(Debug, Clone)]
pub enum Ignore {
    All,
    Codes(Vec<u16>),
}

impl Ignore {
    /// sysbench's default: deadlock, "record has changed", lock wait timeout.
    pub fn sysbench_default() -> Ignore {
        Ignore::Codes(vec![1213, 1020, 1205])
    }

    /// `--mysql-ignore-errors`'s value: `all` or a comma-separated list of codes.
    pub fn parse(v: &str) -> Result<Ignore, String> {
        if v.trim() == "all" {
            return Ok(Ignore::All);
        }
        v.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim().parse().map_err(|_| {
                    format!("Invalid value for --mysql-ignore-errors: '{v}' (error codes or 'all')")
                })
            })
            .collect::<Result<_, _>>()
            .map(Ignore::Codes)
    }

    pub(super) fn contains(&self, code: u16) -> bool {
        match self {
            Ignore::All => true,
            Ignore::Codes(c) => c.contains(&code),
        }
    }

    /// Whether `e` restarts the event: MySQL's by the list, PostgreSQL's (no number, a
    /// SQLSTATE) as sysbench's pgsql driver decides, whatever the list says.
    pub(super) fn covers(&self, e: &ServerError) -> bool {
        match e.code {
            0 => bakeoff_driver::PG_IGNORABLE.contains(&e.sql_state.as_str()),
            code => self.contains(code),
        }
    }
}

/// What `sysbench.sql.driver():connect()` reaches and how its errors are judged.
#[derive(Debug, Clone)]
pub struct SqlOptions {
    pub endpoint: Option<ConnectOptions>,
    pub ignore: Ignore,
    /// Say a refused statement that is not ignorable as sysbench's driver does (its FATAL
    /// line, shown from --verbosity=1).
    pub say_refusals: bool,
    /// sysbench's --mysql-dry-run: connect to nothing, and every statement succeeds at once
    /// with no rows, counted as "other" as sysbench's driver counts it then. What is left is
    /// the client's own cost per event.
    pub dry_run: bool,
}

/// sysbench's driver's line for a statement refused with an error that is not ignorable:
/// its mysql driver's `function`, or for PostgreSQL's errors (code 0) its pgsql driver's
/// `PQexec()`/`PQexecPrepared()` lines (status 7 is PGRES_FATAL_ERROR; a prepared
/// statement's text is not said).
pub(super) fn say_refused(opts: &SqlOptions, function: &str, e: &ServerError, query: &str) {
    if !opts.say_refusals || opts.ignore.covers(e) {
        return;
    }
    if e.code != 0 {
        super::say::log(format!(
            "FATAL: {function} returned error {} ({}) for query '{query}'",
            e.code, e.message
        ));
        return;
    }
    let prepared = function.contains("stmt");
    let pq = if prepared { "PQexecPrepared" } else { "PQexec" };
    super::say::log(format!("FATAL: {pq}() failed: 7 {}", e.message));
    if !prepared {
        super::say::log(format!("FATAL: failed query was: {query}"));
    }
}

/// One connection as its statements share it.
pub(super) struct Link {
    pub(super) conn: Option<Db>,
    pub(super) opts: ConnectOptions,
    /// A bulk insert under way.
    pub(super) bulk: Option<Bulk>,
    /// Bumped on each reconnect: statements prepared before it are gone with the old session.
    pub(super) generation: u32,
    /// The connection's result set, refilled by each statement (as sysbench's driver refills
    /// its connection's one): no allocation per statement on the hot path.
    pub(super) result: Results,
    /// A dry-run connection (no server): open until disconnected.
    pub(super) dry: bool,
    /// The state's hand-off when its calls yield: the connection is then on the client
    /// thread's reactor, and a call that would wait hands its I/O there (`reactor.rs`).
    pub(super) reactor: Option<Rc<Yielder>>,
}

pub(super) type Shared = Rc<RefCell<Link>>;

/// A bulk insert: the statement bulk_insert_init gave, and the one being filled with values.
pub(super) struct Bulk {
    pub(super) head: String,
    pub(super) sql: String,
    pub(super) has_value: bool,
}

impl Link {
    /// The open connection; once closed, sysbench's ALERT and its API error.
    pub(super) fn conn(&mut self) -> mlua::Result<&mut Db> {
        if self.conn.is_none() {
            self.result
                .alert("attempt to use an already closed connection");
        }
        self.conn
            .as_mut()
            .ok_or_else(|| mlua::Error::runtime(API_ERROR))
    }

    /// Where this connection's I/O goes when a call would wait: the state's hand-off, or
    /// none (blocking sockets, or a dry run, which never waits).
    pub(super) fn yielder(&self) -> Option<Rc<Yielder>> {
        match self.dry {
            true => None,
            false => self.reactor.clone(),
        }
    }

    /// The server lost or a socket error: as a server error with libmysqlclient's code, after
    /// reconnecting when that code is ignorable (sysbench's driver reconnects then too).
    pub(super) async fn lost(
        &mut self,
        e: DriverError,
        ignore: &Ignore,
    ) -> mlua::Result<ServerError> {
        if !e.is_connection_lost() {
            return Err(mlua::Error::runtime(e.to_string()));
        }
        let code = e.server_code().unwrap_or(SERVER_LOST);
        if ignore.contains(code) {
            // Boxed: a connect's future is kilobytes, and inline it would grow every
            // statement's future by as much (built and copied per statement).
            Box::pin(self.reconnect()).await?;
        }
        Ok(ServerError {
            code,
            sql_state: "HY000".into(),
            message: e.to_string(),
            position: 0,
            pg: None,
        })
    }

    /// A dry run's statement: done, nothing back.
    pub(super) fn dry_done(&mut self) {
        counts::add(counts::OTHER, 0);
        self.result.set(super::result::ResultSet::default());
    }

    /// A new session for this connection, on the reactor or with blocking sockets as the
    /// old one was.
    pub(super) async fn reconnect(&mut self) -> mlua::Result<()> {
        if self.dry {
            counts::add(counts::RECONNECT, 0);
            return Ok(());
        }
        if let Some(old) = self.conn.take() {
            old.quit().await;
        }
        let conn = Db::connect_for(&self.opts, self.reactor.is_some())
            .await
            .map_err(|e| mlua::Error::runtime(format!("reconnect failed: {e}")))?;
        self.conn = Some(conn);
        self.generation += 1;
        counts::add(counts::RECONNECT, 0);
        Ok(())
    }
}

/// Count a statement's outcome the way sysbench does.
pub(super) fn count(outcome: &Outcome) {
    counts::add(
        match outcome {
            Outcome::Rows(_) => counts::READ,
            Outcome::Ok(ok) if ok.affected_rows > 0 => counts::WRITE,
            _ => counts::OTHER,
        },
        0,
    );
}
