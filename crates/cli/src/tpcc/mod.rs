//! `bakeoff tpcc prepare|run|check|cleanup`: TPC-C natively, on the embedded server or one
//! given, in HammerDB's vocabulary where a user would look for it (warehouses, virtual users,
//! ramp-up, NOPM and TPM). prepare, run and cleanup are `bakeoff`'s own commands with the
//! workload `tpcc`; check and the report are TPC-C's.

mod report;
mod watch;

use std::process::ExitCode;

use anyhow::{bail, Result};
use bakeoff_driver::ConnectOptions;
use bakeoff_workload::tpcc::check::{check_at, Finding};
use bakeoff_workload::tpcc::TpccOptions;
use clap::{Args, FromArgMatches, Subcommand};

use crate::args::{Format, GeneralArgs, LoadArgs, MysqlArgs, OltpArgs};
use crate::exit::{EXIT_FAILED, EXIT_USAGE};

pub(crate) use report::report;
pub(crate) use watch::run_cell_watched;

pub(crate) const TPCC_HELP: &str = "\
TPC-C (v5.11) natively: its nine tables and five transactions (New-Order, Payment,
Order-Status, Delivery, Stock-Level) as client-side prepared statements, in the engine's fast
path, on the embedded MariaDB (default), PostgreSQL (--db-driver=pgsql) or a server you run
(--mysql-socket, --mysql-host, --server URL).

Each connection is one terminal (HammerDB's virtual user) with a home warehouse and district,
running the next transaction as soon as the last ends (no keying or think time); the mix is
dealt from a deck of 23 cards per terminal (10 New-Order, 10 Payment, one of each other).
NOPM is New-Orders committed per minute (rolled-back ones do not count), as HammerDB reports
it; TPM the server's own commits and rollbacks per minute. Every run ends with the audit of
clause 9.2: rollbacks, remote lines, remote payments and lookups by name against their bounds.

  bakeoff tpcc run --warehouses=10 --connections=16 --time=120 --rampup=30
  bakeoff tpcc run --db-driver=pgsql --warehouses=10 --connections=64 --format=json
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
    /// Connections, one terminal each (HammerDB's virtual users). Same as --threads.
    #[arg(long, visible_alias = "virtual-users", help_heading = "TPC-C")]
    pub connections: Option<u32>,
    /// Seconds of load before measuring (HammerDB's ramp-up, which it gives in minutes).
    /// Same as --warmup-time. [default: 10]
    #[arg(long, help_heading = "TPC-C")]
    pub rampup: Option<u64>,
    /// Every terminal works over several warehouses, a new one for each transaction, so that
    /// fewer terminals than warehouses still use them all (HammerDB's "use all warehouses").
    #[arg(long, help_heading = "TPC-C")]
    pub all_warehouses: bool,
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

pub fn main(cmd: &TpccCommand) -> Result<ExitCode> {
    match cmd {
        TpccCommand::Prepare(t) => crate::commands::prepare(&load_args(t, true)?),
        TpccCommand::Run(t) => {
            let a = load_args(t, false)?;
            crate::commands::run(&a)
        }
        TpccCommand::Cleanup(t) => crate::commands::cleanup(&load_args(t, false)?),
        TpccCommand::Check(t) => check_cmd(t),
    }
}

/// `bakeoff`'s own load arguments for TPC-C: the workload `tpcc` with its options.
fn load_args(t: &TpccArgs, prepare: bool) -> Result<LoadArgs> {
    let given = t.mysql.server.is_some()
        || !t.mysql.mysql_host.is_empty()
        || !t.mysql.mysql_socket.is_empty();
    let warehouses = match t.warehouses {
        Some(0) => bail!("--warehouses=0: give at least 1"),
        Some(w) => w,
        // A run on a server given takes what the tables hold.
        None if given && !prepare => 0,
        None => 10,
    };
    let mut general = t.general.clone();
    if let Some(c) = t.connections {
        if c == 0 {
            bail!("--connections=0: give at least 1");
        }
        general.threads = c;
    }
    general.warmup_time = match t.rampup {
        Some(r) => r,
        None if t.general.warmup_time > 0 => t.general.warmup_time,
        None => 10,
    };
    if general.time.is_none() {
        general.time = Some(60);
    }
    Ok(LoadArgs {
        workload: "tpcc".into(),
        general,
        oltp: OltpArgs::from_arg_matches(
            &OltpArgs::augment_args(clap::Command::new("tpcc")).get_matches_from(["tpcc"]),
        )?,
        mysql: t.mysql.clone(),
        given: Vec::new(),
        tpcc: TpccOptions {
            warehouses,
            all_warehouses: t.all_warehouses,
        },
        tpcc_check: t.check,
    })
}

/// The consistency conditions on `opts`'s server (all of them with `all`), each said to
/// `each` as it is found.
pub(crate) fn check_on(
    opts: &ConnectOptions,
    all: bool,
    each: &mut dyn FnMut(&Finding),
) -> Result<Vec<Finding>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(rt.block_on(check_at(opts, all, each))?)
}

/// One finding as a line: the condition, what it says, and what breaks it.
pub(crate) fn finding_line(f: &Finding) -> String {
    match f.holds() {
        true => format!("  3.3.2.{:<2} {:<55} ok", f.number, f.says),
        false => format!(
            "  3.3.2.{:<2} {:<55} FAILED: {} {}",
            f.number, f.says, f.violations, f.counts
        ),
    }
}

fn check_cmd(t: &TpccArgs) -> Result<ExitCode> {
    let a = load_args(t, false)?;
    let Some(opts) = crate::commands::first_given(&a, "check")? else {
        eprintln!("bakeoff: tpcc check needs a server that outlives the command: pass --mysql-socket, --mysql-host or --server URL (on the embedded server, `bakeoff tpcc run --check` checks after the run)");
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    // Reading a table can run its owner's code (a view, a rule): bakeoff's own tables only.
    let spec = crate::commands::workload_spec(&a)?;
    bakeoff_study::tables::check_marked(&opts, &crate::commands::tables_load(&a, &spec, 0))?;
    let json = a.general.format == Format::Json;
    if !json {
        println!("TPC-C consistency (clause 3.3.2) on {}:", opts.endpoint);
    }
    let all = t.all || t.check;
    let found = check_on(&opts, all, &mut |f| {
        if !json {
            println!("{}", finding_line(f));
        }
    })?;
    let failed = found.iter().filter(|f| !f.holds()).count();
    if json {
        let doc = serde_json::json!({ "conditions": found, "passed": failed == 0, "expensive_checked": all });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        match (failed, all) {
            (0, true) => println!("All conditions hold."),
            (0, false) => println!("Conditions 1-4 hold (5-10 and 12 with --all)."),
            (n, _) => println!(
                "{n} condition(s) do not hold: the tables are not a consistent TPC-C database."
            ),
        }
    }
    Ok(match failed {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(EXIT_FAILED),
    })
}
