//! A script's connection on either family: sysbench's Lua SQL API is the same over its mysql
//! and pgsql drivers, so the API's Rust half talks to this, and this to the family's own
//! connection (one branch per call).

use bakeoff_driver::{
    Answer, Conn, ConnectOptions, Connection, DriverError, Outcome, Param, PgConn, PgStmt,
    Protocol, Stmt,
};

pub(crate) enum Db {
    My(Conn),
    Pg(PgConn),
}

/// A prepared statement of either family.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DbStmt {
    My(Stmt),
    Pg(PgStmt),
}

impl DbStmt {
    /// The columns of its result set (PostgreSQL's are known when it runs; none here).
    pub(crate) fn columns(&self) -> u32 {
        match self {
            DbStmt::My(s) => u32::from(s.columns),
            DbStmt::Pg(_) => 0,
        }
    }

    /// A dry run's statement: nothing prepared anywhere.
    pub(crate) fn none() -> DbStmt {
        DbStmt::My(Stmt {
            id: 0,
            params: 0,
            columns: 0,
        })
    }
}

fn mismatch() -> DriverError {
    DriverError::Io {
        endpoint: String::new(),
        op: "execute",
        source: std::io::Error::other("a statement prepared on another kind of connection"),
    }
}

impl Db {
    /// Connect with blocking sockets (see `driver::complete`), as the server's protocol says.
    pub(crate) fn connect_blocking(opts: &ConnectOptions) -> Result<Db, DriverError> {
        Ok(match opts.protocol {
            Protocol::MySql => Db::My(Conn::connect_blocking(opts)?),
            Protocol::Postgres => Db::Pg(PgConn::connect_blocking(opts)?),
        })
    }

    /// Connect on the thread's reactor: for a state on a fiber (`reactor.rs`). Its reads are
    /// bounded as a blocking connection's are: by the run's stall limit only, where the user
    /// set one (a read timer per statement, else, and its allocation).
    pub(crate) async fn connect(opts: &ConnectOptions) -> Result<Db, DriverError> {
        Ok(match opts.protocol {
            Protocol::MySql => Db::My(<Conn as Connection>::open(opts, false).await?),
            Protocol::Postgres => Db::Pg(<PgConn as Connection>::open(opts, false).await?),
        })
    }

    /// Connect as `reactor` says: on the thread's reactor, or with blocking sockets.
    pub(crate) async fn connect_for(
        opts: &ConnectOptions,
        reactor: bool,
    ) -> Result<Db, DriverError> {
        match reactor {
            true => Db::connect(opts).await,
            false => Db::connect_blocking(opts),
        }
    }

    pub(crate) async fn query_result(&mut self, sql: &str) -> Result<Answer, DriverError> {
        match self {
            Db::My(c) => c.query_result(sql).await,
            Db::Pg(c) => c.query_result(sql).await,
        }
    }

    pub(crate) async fn prepare(&mut self, sql: &str) -> Result<DbStmt, DriverError> {
        Ok(match self {
            Db::My(c) => DbStmt::My(c.prepare(sql).await?),
            Db::Pg(c) => DbStmt::Pg(c.prepare(sql).await?),
        })
    }

    /// PostgreSQL: parse a statement now, typed as `sample`'s values (`PgConn::declare`);
    /// MySQL parsed it at prepare.
    pub(crate) async fn declare(
        &mut self,
        stmt: &DbStmt,
        sample: &[Param<'_>],
    ) -> Result<(), DriverError> {
        match (self, stmt) {
            (Db::Pg(c), DbStmt::Pg(s)) => c.declare(s, sample).await,
            _ => Ok(()),
        }
    }

    pub(crate) async fn execute(
        &mut self,
        stmt: &DbStmt,
        params: &[Param<'_>],
    ) -> Result<Outcome, DriverError> {
        match (self, stmt) {
            (Db::My(c), DbStmt::My(s)) => c.execute(s, params).await,
            (Db::Pg(c), DbStmt::Pg(s)) => c.execute(s, params).await,
            _ => Err(mismatch()),
        }
    }

    pub(crate) async fn close_stmt(&mut self, stmt: &DbStmt) -> Result<(), DriverError> {
        match (self, stmt) {
            (Db::My(c), DbStmt::My(s)) => c.close_stmt(s).await,
            (Db::Pg(c), DbStmt::Pg(s)) => c.close_stmt(s).await,
            _ => Ok(()),
        }
    }

    /// PostgreSQL: out of a transaction a refused statement failed, as sysbench's pgsql
    /// driver rolls back after an ignorable error.
    pub(crate) async fn recover(&mut self) -> Result<(), DriverError> {
        match self {
            Db::My(_) => Ok(()),
            Db::Pg(c) => c.recover().await,
        }
    }

    pub(crate) async fn quit(self) {
        match self {
            Db::My(c) => c.quit().await,
            Db::Pg(c) => c.quit().await,
        }
    }
}
