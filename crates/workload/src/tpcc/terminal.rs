//! A terminal: one connection running TPC-C's five transactions as client-side prepared
//! statements, one transaction per event, its statements sent in batches (one round trip
//! for all that do not wait on another's values: `transactions.rs`).
//!
//! Each event draws a card from the terminal's deck, draws the transaction's inputs, and
//! runs it; a deadlock or serialization failure (MySQL 1213, 1205; PostgreSQL 40001, 40P01)
//! rolls back and runs the same inputs again, counted in the class's tally rather than as an
//! error. What the audit needs (rollbacks, remote lines, remote payments, lookups by name,
//! skipped deliveries) goes out with the event's class, so the engine's windows carry it.

//! The transactions themselves are in `transactions.rs`; the connection's side in `db.rs`.

use bakeoff_driver::{ConnectOptions, Connection, DriverError, Protocol};

use super::db::{Db, Stop};
use super::input::{draw, Deck, Input, Line};
use super::population::DISTRICTS;
use super::sql::S;
use super::{Run, T_RETRIES};
use super::{Shared, TpccOptions};
use crate::scripting::{EventError, StmtCounts};
use crate::Rng;

/// Tries of one transaction's inputs before its deadlock is the engine's to judge.
const TRIES: u32 = 10;

/// One terminal: its connection, its warehouses and district, its deck and its generator.
pub struct Terminal<C: Connection> {
    pub(super) db: Db<C>,
    endpoint: ConnectOptions,
    /// Where the tables are (see `Connection::own_place`).
    place: String,
    blocking: bool,
    /// The engine whose routines each transaction calls (`--procedures`), or None for
    /// client-side statements.
    routines: Option<Protocol>,
    run: Run,
    /// This terminal's warehouses: its home, or with `all_warehouses` every warehouse it is
    /// dealt (HammerDB's "use all warehouses").
    warehouses: Vec<u32>,
    home_d: u32,
    rng: Rng,
    deck: Deck,
    pub(super) name: Vec<u8>,
    pub(super) text: Vec<u8>,
    spare: Vec<Line>,
    /// A paced terminal's order, to run next instead of drawing one (`take_order`).
    order: Option<Input>,
}

impl<C: Connection> Terminal<C> {
    /// Terminal `tid` of `terminals` on `endpoint`, its run's constants from `shared` (the
    /// first terminal to connect reads them).
    #[allow(clippy::too_many_arguments)]
    pub async fn open(
        endpoint: &ConnectOptions,
        opts: &TpccOptions,
        shared: &Shared,
        terminals: u32,
        tid: u32,
        seed: u64,
        blocking: bool,
    ) -> Result<Self, EventError> {
        let mut conn = C::open(endpoint, blocking).await?;
        let place = conn.own_place().await?;
        let rng = Rng::seeded(seed);
        let run = shared.run_for(&mut conn, &place, opts).await?;
        let routines = opts.procedures.then_some(endpoint.protocol);
        let stmts = Self::statements(&mut conn, &place, routines).await?;
        if routines.is_none() {
            Db::hold_transactions(&mut conn).await?;
        }
        let w = run.warehouses.max(1);
        let terminals = terminals.max(1);
        let warehouses = match opts.all_warehouses {
            // Terminal k takes warehouses k+1, k+1+n, ... (n terminals); with more terminals
            // than warehouses, warehouse (k mod W) + 1.
            true if terminals < w => (tid % terminals + 1..=w)
                .step_by(terminals as usize)
                .collect(),
            _ => vec![tid % w + 1],
        };
        Ok(Terminal {
            db: Db::new(conn, stmts),
            endpoint: endpoint.clone(),
            place,
            blocking,
            routines,
            run,
            warehouses,
            home_d: (tid / w) % DISTRICTS + 1,
            rng,
            deck: Deck::new(),
            name: Vec::new(),
            text: Vec::new(),
            spare: Vec::new(),
            order: None,
        })
    }

    /// The statements a terminal sends on `conn`; with `routines`, first the routines it calls
    /// verified on this connection's server (`routines::verify`: calling a routine runs its
    /// code, so bakeoff's own only, looked at on every terminal's server).
    async fn statements(
        conn: &mut C,
        place: &str,
        routines: Option<Protocol>,
    ) -> Result<(Vec<C::Stmt>, Vec<C::Stmt>), EventError> {
        if let Some(protocol) = routines {
            if let Err(why) = super::routines::verify(conn, protocol, place).await? {
                return Err(EventError::Script(format!(
                    "TPC-C --procedures: the server's routines are not bakeoff's ({why}): load the tables again with `bakeoff tpcc cleanup` and `bakeoff tpcc prepare`, which create them (an account that may create routines), or run without --procedures"
                )));
            }
        }
        Ok(Db::prepare(conn, place, routines).await?)
    }

    /// A new connection to the terminal's endpoint, its statements prepared again. Its
    /// routines were verified when the terminal opened there; an account that may replace
    /// them could do so between any two calls as well (see `routines::verify`).
    pub async fn reconnect(&mut self) -> Result<(), DriverError> {
        let mut conn = C::open(&self.endpoint, self.blocking).await?;
        self.place = conn.own_place().await?;
        (self.db.stmts, self.db.calls) = Db::prepare(&mut conn, &self.place, self.routines).await?;
        if self.routines.is_none() {
            Db::hold_transactions(&mut conn).await?;
        }
        self.db.conn = conn;
        Ok(())
    }

    pub async fn finish(self) {
        self.db.conn.quit().await;
    }

    /// A paced terminal's order (`crate::tpcc::paced`): the next event runs it.
    pub fn take_order(&mut self, order: Box<dyn std::any::Any>) {
        self.order = order.downcast::<Input>().ok().map(|o| *o);
    }

    /// One transaction, retried on conflicts with the same inputs: a paced terminal's
    /// order, or one this connection's own terminal draws.
    pub async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        let paced = self.order.is_some();
        let input = match self.order.take() {
            Some(order) => order,
            None => {
                let tx = self.deck.draw(&mut self.rng);
                let w = match self.warehouses.len() {
                    1 => self.warehouses[0],
                    n => self.warehouses[self.rng.uniform(0, n as u32 - 1) as usize],
                };
                let lines = std::mem::take(&mut self.spare);
                draw(
                    tx,
                    w,
                    self.home_d,
                    self.run.warehouses,
                    &self.run.constants,
                    &mut self.rng,
                    lines,
                )
            }
        };
        let tx = input.tx();
        let mut retries = 0;
        let result = loop {
            match self.transaction(&input, c).await {
                Ok(tally) => break Ok(tally),
                Err(Stop::Retry(error)) => {
                    if let Err(e) = self.rollback(c).await {
                        break Err(e);
                    }
                    retries += 1;
                    if retries >= TRIES {
                        break Err(EventError::Server {
                            error,
                            sql: format!("{tx:?} (after {TRIES} tries)"),
                        });
                    }
                }
                Err(Stop::Fail(e)) => {
                    if !e.is_connection_lost() {
                        // MySQL keeps a transaction open after a failed statement: end it,
                        // or the next BEGIN would commit half of this one.
                        if let Err(lost) = self.rollback(c).await {
                            break Err(lost);
                        }
                    }
                    break Err(e);
                }
            }
        };
        let mut tally = match result {
            Ok(tally) => tally,
            // A paced terminal's order is its user's: the engine's restart (after a lost
            // connection, or an error it ignores) runs the same order again.
            Err(e) if paced => {
                self.order = Some(input);
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        if let Input::NewOrder { lines, .. } = input {
            self.spare = lines;
        }
        tally[T_RETRIES] = retries;
        c.class = tx as u8 + 1;
        c.tally = tally;
        Ok(())
    }

    async fn rollback(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        if self.endpoint.protocol == Protocol::Postgres {
            return Ok(self.db.conn.recover().await?);
        }
        match self.db.ex(S::Rollback as usize, &[], c).await {
            Ok(_) | Err(Stop::Retry(_)) => Ok(()),
            Err(Stop::Fail(e)) => Err(e),
        }
    }
}
