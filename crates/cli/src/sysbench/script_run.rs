//! `sysbench SCRIPT run`: the script's events driven by the engine (one Lua state and one
//! client thread per connection, as sysbench runs them) through the study's measure, against
//! the servers the line names, printed as sysbench prints a run.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_engine::{Observer, RunSpec, RunStatus, Tick};
use bakeoff_study::lab::{given_pids, Servers};
use bakeoff_study::measure::{measure_here, RunObserver};
use bakeoff_workload::scripting::lua::Script;

use super::grammar::Line;
use crate::dialect::notice;
use crate::exit::INTERRUPTED;
use crate::output;

/// Run `script`'s events as the line says; the exit code sysbench would give.
pub(super) fn run(line: &Line, script: Script) -> Result<ExitCode, String> {
    let number = |names: &[&str], default: u64| -> Result<u64, String> {
        match names.iter().find_map(|n| line.value(n).map(|v| (n, v))) {
            Some((n, v)) => v
                .parse()
                .map_err(|_| format!("Invalid value for --{n}: '{v}'")),
            None => Ok(default),
        }
    };
    let threads = number(&["threads", "num-threads"], 1)?.max(1) as u32;
    let time = number(&["time", "max-time"], 10)?;
    let events = number(&["events", "max-requests"], 0)?;
    let rate = number(&["rate", "tx-rate"], 0)?;
    let interval = number(&["report-interval"], 0)?;
    let percentile = number(&["percentile"], 95)? as f64;
    let seed = number(&["rand-seed"], 0)?;
    let spec = RunSpec {
        connections: threads,
        // One Lua state per thread: a script's calls block its thread, as in sysbench.
        client_threads: threads,
        time: (time > 0).then(|| Duration::from_secs(time)),
        events: (events > 0).then_some(events),
        rate: (rate > 0).then_some(rate as f64),
        tick: Duration::from_secs(interval.max(1)),
        percentile,
        seed,
        ..RunSpec::default()
    };
    let pids = given_pids(&script.endpoints);
    let servers = Servers::Given(script.endpoints.clone(), pids);
    let mut printer = Printer {
        interval: interval > 0,
        seed_given: seed != 0,
        percentile,
    };
    let measured = measure_here(
        &servers,
        Arc::new(script),
        &spec,
        threads,
        &INTERRUPTED,
        &mut printer,
    )
    .map_err(|e| e.to_string())?;
    let r = &measured.result;
    // sysbench's SQL block belongs to runs that used its SQL driver; a script that ran no
    // statement gets the general block alone (its first line is blank, as sysbench's).
    let report = match r.total.queries {
        0 => format!(
            "\n{}",
            output::general_block(
                r.elapsed_seconds,
                &r.total,
                r.unfinished_events,
                percentile,
                r.connections.iter().map(|c| (c.events, c.latency_sum_ns)),
            )
        ),
        _ => output::final_report(r, percentile),
    };
    notice!("{}", report.trim_end_matches('\n'));
    notice!();
    Ok(match &r.status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::Interrupted => ExitCode::from(crate::exit::EXIT_INTERRUPTED),
        RunStatus::Failed(why) => {
            crate::dialect::fatal(why);
            ExitCode::from(1)
        }
    })
}

/// sysbench's lines around a script's run.
struct Printer {
    interval: bool,
    seed_given: bool,
    percentile: f64,
}

impl RunObserver for Printer {
    fn on_measuring(&mut self, run: &RunSpec) {
        let interval = self.interval.then_some(run.tick);
        let seed = self.seed_given.then_some(run.seed);
        let head = output::run_options(run.connections, run.rate, run.warmup, interval, seed);
        notice!("{head}");
        notice!("{}", output::WORKERS_STARTING);
    }
}

impl Observer for Printer {
    fn on_start(&mut self) {
        notice!("Threads started!\n");
    }

    fn on_tick(&mut self, t: &Tick) {
        if self.interval {
            notice!("{}", output::interval_line(t, self.percentile, false));
        }
    }
}
