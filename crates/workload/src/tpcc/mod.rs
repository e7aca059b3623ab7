//! TPC-C (v5.11), natively: the nine tables, their population, the five transactions as
//! client-side prepared statements on MariaDB, MySQL and PostgreSQL, the consistency
//! conditions of 3.3.2 and the audit of 9.2.
//!
//! - [`schema`] and [`population`]: the tables and the initial rows of 4.3.3.1, loaded in
//!   independent jobs (a warehouse's stock, a district's customers or orders);
//! - [`input`] and [`random`]: the terminals' inputs (NURand with the delta rule, the deck of
//!   5.2.4.2, 1% rollbacks, 1% remote lines, 15% remote payments, 60% by last name);
//! - [`terminal`]: one connection running the transactions, one per event;
//! - [`check`] and [`audit`]: what holds after a run, and what the run realised;
//! - [`paced`]: keying and think time (5.2.5), terminals that are not connections.
//!
//! Without keying, a terminal is one connection (as HammerDB's virtual users): each event is
//! the next transaction, at once. With it, ten terminals a warehouse wait on the engine's
//! pacer and hand their orders to whichever connection is free.

pub mod audit;
pub mod check;
mod db;
pub mod input;
pub mod load;
pub mod paced;
pub mod population;
pub mod random;
pub mod routines;
pub mod schema;
mod sql;
pub mod terminal;
mod transactions;

use std::sync::OnceLock;

use bakeoff_driver::Connection;
use serde::{Deserialize, Serialize};

use crate::scripting::EventError;
use crate::Rng;
pub use random::Constants;

/// The five transaction types, by class (class n is `CLASSES[n - 1]`).
pub const CLASSES: [&str; 5] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

/// What each class's tallies count. New-Order: rolled back, lines, remote lines.
pub const T_ROLLBACK: usize = 0;
pub const T_LINES: usize = 1;
pub const T_REMOTE_LINES: usize = 2;
/// Payment: to a remote warehouse, customer by last name. Order-Status: by last name (0).
pub const T_REMOTE: usize = 0;
pub const T_BY_NAME: usize = 1;
/// Delivery: districts with nothing to deliver.
pub const T_SKIPPED: usize = 0;
/// Every class: tries again after a deadlock or serialization failure.
pub const T_RETRIES: usize = 3;

/// TPC-C's options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TpccOptions {
    /// Warehouses (the scale): 0 in a run takes what the tables hold.
    pub warehouses: u32,
    /// Every terminal works on several warehouses, a new one each transaction, so that
    /// fewer terminals than warehouses still touch them all (HammerDB's "use all
    /// warehouses"); otherwise each has one home warehouse.
    pub all_warehouses: bool,
    /// Each transaction one call of the server's own routine (stored procedures on MariaDB
    /// and MySQL, functions on PostgreSQL: `routines`), as HammerDB runs TPROC-C; otherwise
    /// client-side prepared statements.
    pub procedures: bool,
    /// Keying and think time (5.2.5), their times scaled by this: 0 none (a terminal is a
    /// connection and runs its next transaction at once), 1 the specification's pacing, a
    /// fraction shorter waits (the same shape sooner; not TPC-C's pacing).
    pub keying: f64,
    /// Paced terminals (with `keying`): 0 is ten per warehouse, as the specification has.
    pub terminals: u32,
}

/// What one run's terminals share: its constants, chosen once by the first to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub constants: Constants,
    pub warehouses: u32,
    /// C_LAST's constant at load, as the load recorded it.
    pub c_last_load: u32,
}

/// Shared by the sessions of one run (`SessionContext::tpcc`).
#[derive(Debug, Default)]
pub struct Shared {
    run: OnceLock<Run>,
    /// The run's seed: C_Run is drawn from it, so every client host of a run spread over
    /// several draws the same one (2.1.6: one C for all the run's terminals).
    seed: u64,
}

impl Shared {
    /// For the run whose seed (`RunSpec::seed`) is `seed`.
    pub fn for_run(seed: u64) -> Shared {
        Shared {
            run: OnceLock::new(),
            seed,
        }
    }

    /// The run's constants: read from the load's record by the first terminal, C_Run drawn
    /// by the delta rule from the run's seed; the same for every terminal after, and on
    /// every client host.
    pub async fn run_for<C: Connection>(
        &self,
        conn: &mut C,
        place: &str,
        opts: &TpccOptions,
    ) -> Result<Run, EventError> {
        if let Some(r) = self.run.get() {
            return Ok(*r);
        }
        let (load, warehouses) = match db::read_load(conn, place).await {
            Ok(Ok(found)) => found,
            Ok(Err(why)) => {
                return Err(EventError::Script(format!(
                    "TPC-C: table {} does not hold the record of a load bakeoff made ({why}): load the tables again with `bakeoff tpcc cleanup` and `bakeoff tpcc prepare`",
                    schema::CONSTANTS_TABLE
                )))
            }
            Err(bakeoff_driver::DriverError::Server(_)) => {
                return Err(EventError::Script(format!(
                    "TPC-C: no record of a load in table {}: load the tables with `bakeoff tpcc prepare` first",
                    schema::CONSTANTS_TABLE
                )))
            }
            Err(e) => return Err(e.into()),
        };
        if opts.warehouses != 0 && opts.warehouses != warehouses {
            return Err(EventError::Script(format!(
                "TPC-C: --warehouses={} but the tables hold {warehouses}: give --warehouses={warehouses}, or prepare {} warehouses again",
                opts.warehouses, opts.warehouses
            )));
        }
        let mut rng = Rng::seeded(self.seed ^ 0x0c5e_ed0f_c4a1);
        let run = Run {
            constants: Constants::for_run(Some(load.c_last), &mut rng),
            warehouses,
            c_last_load: load.c_last,
        };
        Ok(*self.run.get_or_init(|| run))
    }

    /// The run's constants once a terminal has connected.
    pub fn run(&self) -> Option<Run> {
        self.run.get().copied()
    }
}
