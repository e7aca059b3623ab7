//! The native source as the engine sees it: [`SessionContext`] opens, for each connection, a
//! sysbench session ([`Session`]) or a TPC-C terminal (`crate::tpcc::terminal`), whichever
//! its workload is, on the family of the server's protocol.

use std::sync::Arc;

use bakeoff_driver::{Conn, Connection, DriverError, PgConn, Protocol};

use super::native::{Session, SessionContext};
use super::user::UserSources;
use super::{EventError, Events, Source, StmtCounts};
use crate::tpcc::terminal::Terminal;
use crate::WorkloadKind;

impl Source for SessionContext {
    type Session = AnySession;

    async fn open(
        self: Arc<Self>,
        tid: u32,
        seed: u64,
        blocking: bool,
    ) -> Result<AnySession, EventError> {
        if let Some(user) = &self.user {
            let at = |n: usize| tid as usize % n.max(1);
            let user = user.as_ref().map_err(|e| EventError::Script(e.clone()))?;
            return Ok(match user {
                UserSources::Lua(s) => {
                    AnySession::Lua(s[at(s.len())].clone().open(tid, seed, blocking).await?)
                }
                UserSources::Pgbench(s) => {
                    AnySession::Pgbench(s[at(s.len())].clone().open(tid, seed, blocking).await?)
                }
            });
        }
        if self.spec.kind == WorkloadKind::Tpcc {
            let (e, o, s, n) = (
                self.endpoint(tid),
                &self.spec.tpcc,
                &self.tpcc,
                self.threads,
            );
            return Ok(match e.protocol {
                Protocol::MySql => {
                    AnySession::TpccMySql(Terminal::open(e, o, s, n, tid, seed, blocking).await?)
                }
                Protocol::Postgres => {
                    AnySession::TpccPostgres(Terminal::open(e, o, s, n, tid, seed, blocking).await?)
                }
            });
        }
        Ok(match self.endpoint(tid).protocol {
            Protocol::MySql => AnySession::MySql(Session::open(self, tid, seed, blocking).await?),
            Protocol::Postgres => {
                AnySession::Postgres(Session::open(self, tid, seed, blocking).await?)
            }
        })
    }

    fn paced(&self) -> bool {
        self.spec.kind == WorkloadKind::Tpcc && self.spec.tpcc.keying > 0.0
    }

    fn blocks(&self) -> bool {
        self.spec.script.as_ref().is_some_and(|s| s.blocks())
    }

    fn opens_side_by_side(&self) -> bool {
        matches!(self.spec.script, Some(super::user::UserScript::Lua { .. }))
    }

    fn terminals(&self, first_tid: u32, connections: u32) -> std::ops::Range<u32> {
        let total = match (self.paced(), self.tpcc.run()) {
            (true, Some(run)) => crate::tpcc::paced::terminals(&self.spec.tpcc, run.warehouses),
            _ => return 0..0,
        };
        // In proportion to the connections: a host with 3 of 5 connections paces 3/5 of
        // the terminals, and the hosts' shares tile 0..total.
        let whole = u64::from(self.threads.max(1));
        let at = |tid: u32| (u64::from(tid.min(self.threads)) * u64::from(total) / whole) as u32;
        at(first_tid)..at(first_tid + connections)
    }

    fn terminal(&self, id: u32, seed: u64) -> Option<Box<dyn crate::Terminal>> {
        if !self.paced() {
            return None;
        }
        let run = self.tpcc.run()?;
        Some(Box::new(crate::tpcc::paced::PacedTerminal::new(
            run,
            id,
            seed,
            self.spec.tpcc.keying,
        )))
    }
}

/// A session on either family's connection, chosen by the server's protocol when it opens,
/// running sysbench's workloads or TPC-C's terminal, or a user's script. One branch per
/// event; each arm is the family's own monomorphic session.
pub enum AnySession {
    MySql(Session<Conn>),
    Postgres(Session<PgConn>),
    TpccMySql(Terminal<Conn>),
    TpccPostgres(Terminal<PgConn>),
    Lua(super::lua::Session),
    Pgbench(crate::pgbench::PgbenchSession),
}

impl<C: Connection> Events for Session<C> {
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        Session::event(self, c).await
    }

    async fn reconnect(&mut self) -> Result<(), DriverError> {
        Session::reconnect(self).await
    }

    async fn finish(self, c: &mut StmtCounts) -> Result<(), EventError> {
        Session::finish(self, c).await
    }
}

impl Events for AnySession {
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        match self {
            AnySession::MySql(s) => s.event(c).await,
            AnySession::Postgres(s) => s.event(c).await,
            AnySession::TpccMySql(s) => s.event(c).await,
            AnySession::TpccPostgres(s) => s.event(c).await,
            AnySession::Lua(s) => s.event(c).await,
            AnySession::Pgbench(s) => s.event(c).await,
        }
    }

    fn intended_start(&mut self, at: std::time::Instant) {
        if let AnySession::Pgbench(s) = self {
            s.intended_start(at);
        }
    }

    async fn run_events(&mut self, pace: &mut dyn super::Pace) -> Option<Result<(), EventError>> {
        match self {
            AnySession::Lua(s) => s.run_events(pace).await,
            _ => None,
        }
    }

    fn take_order(&mut self, order: Box<dyn std::any::Any>) {
        match self {
            AnySession::TpccMySql(s) => s.take_order(order),
            AnySession::TpccPostgres(s) => s.take_order(order),
            _ => {}
        }
    }

    async fn reconnect(&mut self) -> Result<(), DriverError> {
        match self {
            AnySession::MySql(s) => s.reconnect().await,
            AnySession::Postgres(s) => s.reconnect().await,
            AnySession::TpccMySql(s) => s.reconnect().await,
            AnySession::TpccPostgres(s) => s.reconnect().await,
            AnySession::Lua(s) => s.reconnect().await,
            AnySession::Pgbench(s) => s.reconnect().await,
        }
    }

    async fn finish(self, c: &mut StmtCounts) -> Result<(), EventError> {
        match self {
            AnySession::MySql(s) => s.finish(c).await,
            AnySession::Postgres(s) => s.finish(c).await,
            AnySession::TpccMySql(s) => Ok(s.finish().await),
            AnySession::TpccPostgres(s) => Ok(s.finish().await),
            AnySession::Lua(s) => s.finish(c).await,
            AnySession::Pgbench(s) => s.finish(c).await,
        }
    }
}
