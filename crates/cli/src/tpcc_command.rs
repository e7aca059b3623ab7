//! `bakeoff tpcc prepare|run|check|cleanup`: prepare, run and cleanup are `bakeoff`'s own
//! commands with the workload `tpcc`; check is TPC-C's (`tpcc::check_on`).

use std::process::ExitCode;

use anyhow::{bail, Result};
use bakeoff_workload::tpcc::TpccOptions;
use clap::{Args, FromArgMatches};

use crate::args::{Format, LoadArgs, OltpArgs, TpccArgs, TpccCommand};
use crate::exit::{EXIT_FAILED, EXIT_USAGE};
use crate::tpcc::{check_on, finding_line};

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
    let keying = match t.keying {
        None => 0.0,
        Some(k) if k.is_finite() && k > 0.0 && k <= 100.0 => k,
        Some(k) => bail!("--keying={k}: give a scale of the specification's waits above 0 and at most 100 (1, or --keying alone, is the specification's pacing)"),
    };
    if keying > 0.0 {
        if general.rate > 0.0 {
            bail!("--keying and --rate both pace the run: terminals with keying and think time set their own rate (about 12.86 New-Orders a minute per warehouse); give one of them");
        }
        if general.events > 0
            || general.iterations.is_some()
            || general.events_per_connection.is_some()
        {
            bail!("--keying paces terminals over time, not a number of events: give --time (and --rampup) instead of --events, --iterations or --events-per-connection");
        }
        if t.all_warehouses {
            bail!("--all-warehouses and --keying: a paced terminal keeps its warehouse and district (clause 4.2.2; ten terminals a warehouse use them all); leave --all-warehouses out");
        }
        if t.rampup.is_none() && t.general.warmup_time == 0 {
            // The terminals' first orders spread over a cycle (up to 48 s at the
            // specification's pace); a minute of rampup lets the pace settle.
            general.warmup_time = ((60.0 * keying).ceil() as u64).max(10);
        }
    }
    match t.terminals {
        Some(_) if keying == 0.0 => bail!("--terminals: paced terminals come with --keying (without it each connection is one terminal: give --connections)"),
        Some(0) => bail!("--terminals=0: give at least 1, or leave it out for 10 per warehouse"),
        _ => {}
    }
    Ok(LoadArgs {
        workload: "tpcc".into(),
        script_options: Vec::new(),
        general,
        oltp: OltpArgs::from_arg_matches(
            &OltpArgs::augment_args(clap::Command::new("tpcc")).get_matches_from(["tpcc"]),
        )?,
        mysql: t.mysql.clone(),
        given: Vec::new(),
        tpcc: TpccOptions {
            warehouses,
            all_warehouses: t.all_warehouses,
            procedures: t.procedures,
            keying,
            terminals: t.terminals.unwrap_or(0),
        },
        tpcc_check: t.check,
    })
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
