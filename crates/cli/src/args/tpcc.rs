//! `bakeoff tpcc`'s command line: its subcommands and TPC-C's options, in HammerDB's words
//! where a user would look for them.

use clap::{Args, Subcommand};

use super::connection::MysqlArgs;
use super::general::GeneralArgs;

pub const TPCC_HELP: &str = "\
TPC-C (v5.11) natively: its nine tables and five transactions (New-Order, Payment,
Order-Status, Delivery, Stock-Level) as client-side prepared statements, in the engine's fast
path, on the embedded MariaDB (default), PostgreSQL (--db-driver=pgsql) or a server you run
(--mysql-socket, --mysql-host, --server URL).

Each connection is one terminal (HammerDB's virtual user) with a home warehouse and district,
running the next transaction as soon as the last ends (no keying or think time); the mix is
dealt from a deck of 23 cards per terminal (10 New-Order, 10 Payment, one of each other).
With --keying, terminals are TPC-C's instead: ten a warehouse, each keying and thinking
between its transactions, handing them to whichever connection is free, and the report says
the efficiency and each type's 90th-percentile response time against its limit.
NOPM is New-Orders committed per minute (rolled-back ones do not count), as HammerDB reports
it; TPM the server's own commits and rollbacks per minute. Every run ends with the audit of
clause 9.2: rollbacks, remote lines, remote payments and lookups by name against their bounds.

  bakeoff tpcc run --warehouses=10 --connections=16 --time=120 --rampup=30
  bakeoff tpcc run --db-driver=pgsql --warehouses=10 --connections=64 --format=json
  bakeoff tpcc run --keying --warehouses=100 --connections=16 --time=600
  bakeoff tpcc prepare --warehouses=100 --mysql-socket=/run/mysqld/mysqld.sock
  bakeoff tpcc check --mysql-socket=/run/mysqld/mysqld.sock --all";

#[derive(Debug, Subcommand)]
pub enum TpccCommand {
    /// Create and load the warehouses (in parallel; bulk loads; indexes after the load).
    Prepare(TpccArgs),
    /// Run the five transactions and report NOPM, TPM, latency per transaction and the audit
    /// (on the embedded server, which is loaded first, unless a server is given).
    Run(TpccArgs),
    /// Check the consistency conditions of clause 3.3.2 on a quiescent database: 1-4 always,
    /// 5-10 and 12 with --all (they join ORDER-LINE with ORDER, or customers with history).
    Check(TpccArgs),
    /// Drop the tables bakeoff created (recorded in bakeoff_tables), and nothing else.
    Cleanup(TpccArgs),
}

#[derive(Debug, Args)]
pub struct TpccArgs {
    /// Warehouses: TPC-C's scale (HammerDB's "number of warehouses"). [default: 10 for
    /// prepare and for a run on the embedded server; a run on a given server takes what its
    /// tables hold]
    #[arg(long, short = 'w', visible_alias = "scale", help_heading = "TPC-C")]
    pub warehouses: Option<u32>,
    /// Connections, one terminal each (HammerDB's virtual users); with --keying, the
    /// connections the paced terminals share. Same as --threads.
    #[arg(long, visible_alias = "virtual-users", help_heading = "TPC-C")]
    pub connections: Option<u32>,
    /// Seconds of load before measuring (HammerDB's ramp-up, which it gives in minutes).
    /// Same as --warmup-time. [default: 10; with --keying, 60 times its scale]
    #[arg(long, help_heading = "TPC-C")]
    pub rampup: Option<u64>,
    /// Every terminal works over several warehouses, a new one for each transaction, so that
    /// fewer terminals than warehouses still use them all (HammerDB's "use all warehouses").
    #[arg(long, help_heading = "TPC-C")]
    pub all_warehouses: bool,
    /// Each transaction one call of the server's own routine, as HammerDB runs TPROC-C
    /// (stored procedures on MariaDB and MySQL, PL/pgSQL functions on PostgreSQL, as
    /// HammerDB's defaults): one round trip a transaction. `tpcc prepare` creates them;
    /// a run verifies they are bakeoff's before calling them. [default: client-side
    /// prepared statements, sent in batches]
    #[arg(long, visible_alias = "stored-procedures", help_heading = "TPC-C")]
    pub procedures: bool,
    /// Keying and think time (clause 5.2.5): ten terminals a warehouse, each keying in its
    /// transaction (18 s for a New-Order, 3 s for a Payment, 2 s else), waiting for the answer
    /// and thinking (a negative exponential, mean 12/12/10/5/5 s, truncated at ten means).
    /// Terminals are not connections: they wait on the engine and hand their orders to
    /// whichever of --connections is free, so a run of 1,000 warehouses needs 10,000
    /// terminals, not 10,000 connections. The report says the efficiency (New-Orders a
    /// minute against 12.86 per warehouse) and checks each type's 90th-percentile response
    /// time against its limit. A value scales the waits (--keying=0.1: a tenth; the same
    /// shape sooner, not TPC-C's pacing). [default: off, each connection runs its next
    /// transaction at once]
    #[arg(long, value_name = "SCALE", num_args = 0..=1, require_equals = true, default_missing_value = "1", help_heading = "TPC-C")]
    pub keying: Option<f64>,
    /// Paced terminals with --keying. [default: 10 per warehouse]
    #[arg(long, help_heading = "TPC-C")]
    pub terminals: Option<u32>,
    /// run: check the consistency conditions 1-4 on the tables after the run. check: as
    /// --all.
    #[arg(long, help_heading = "TPC-C")]
    pub check: bool,
    /// check: every condition, cheap and expensive.
    #[arg(long, help_heading = "TPC-C")]
    pub all: bool,
    #[command(flatten)]
    pub general: GeneralArgs,
    #[command(flatten)]
    pub mysql: MysqlArgs,
}
