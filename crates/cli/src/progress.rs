//! Progress of loading, cleanup and prewarm on the terminal: sysbench's messages, and while
//! rows load, one line of rows, rows/s and time left.

use std::time::Duration;

use bakeoff_workload::dataset::Progress;

/// sysbench's messages on stdout, at every verbosity (its scripts `print` them); bakeoff's own
/// on stderr.
pub(crate) fn print_progress(p: Progress) {
    match p {
        Progress::Creating(t) => println!("Creating table '{t}'..."),
        Progress::Inserting { table, rows } => println!("Inserting {rows} records into '{table}'"),
        Progress::Loaded { rows } => crate::dialect::said!("Loaded {rows} rows"),
        Progress::Rows { .. } => {}
        Progress::Indexing(t) => println!("Creating a secondary index on '{t}'..."),
        Progress::Prewarming(t) => println!("Prewarming table {t}"),
        Progress::Dropping(t) => println!("Dropping table '{t}'..."),
        Progress::LeftAlone { table, why } => {
            // A name from the marker table: any account may have written it.
            let table = bakeoff_driver::printable(&table);
            crate::dialect::extra!("Leaving table '{table}' alone: {why}\n")
        }
        Progress::LocalInfileRefused => crate::dialect::extra!(
            "The server refuses LOAD DATA LOCAL (local_infile is OFF): loading with multi-row INSERTs instead, which costs the server more per row\n"
        ),
        Progress::RoutinesRefused(why) => crate::dialect::extra!(
            "TPC-C's routines (--procedures): the server refused ({}); runs without --procedures send client-side statements and need none\n",
            bakeoff_driver::printable(&why)
        ),
    }
}

/// Loading's progress on a terminal: rows, rows/s and time left, one line on stderr rewritten
/// in place at most four times a second. When stderr is not a terminal, nothing (`prepare`
/// and `run`, whose logs are sysbench's), or with [`LoadLine::logged`] a line every
/// [`LOG_EVERY`] and one when the load is done (a study's log).
pub(crate) struct LoadLine {
    state: std::sync::Mutex<LoadState>,
    tty: bool,
    logged: bool,
}

/// How often a log hears of a load under way.
const LOG_EVERY: Duration = Duration::from_secs(5);

struct LoadState {
    /// When this load started: the first rows, or rows fewer than the last (the next load).
    started: std::time::Instant,
    last: Option<std::time::Instant>,
    done: u64,
}

impl LoadLine {
    pub(crate) fn new() -> LoadLine {
        use std::io::IsTerminal;
        LoadLine {
            state: std::sync::Mutex::new(LoadState {
                started: std::time::Instant::now(),
                last: None,
                done: 0,
            }),
            tty: std::io::stderr().is_terminal(),
            logged: false,
        }
    }

    /// The same, with lines in a log too.
    pub(crate) fn logged() -> LoadLine {
        LoadLine {
            logged: true,
            ..LoadLine::new()
        }
    }

    /// Print `p`, drawing the rows line for `Rows` and ending it before anything else.
    pub(crate) fn show(&self, p: Progress) {
        match p {
            Progress::Rows { done, total } => self.rows(done, total),
            other => {
                self.end();
                print_progress(other)
            }
        }
    }

    /// End the rows line, if one was drawn, so the next message starts on a line of its own.
    pub(crate) fn end(&self) {
        if let Ok(mut s) = self.state.lock() {
            if self.tty && s.last.take().is_some() {
                eprintln!();
            }
        }
    }

    /// Rows `done` of `total`, said as often as the terminal or the log takes it.
    pub(crate) fn rows(&self, done: u64, total: u64) {
        if !self.tty && !self.logged {
            return;
        }
        let now = std::time::Instant::now();
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if done == 0 || done < s.done {
            s.started = now;
            s.last = None;
        }
        s.done = done;
        let every = match self.tty {
            true => Duration::from_millis(250),
            false => LOG_EVERY,
        };
        let finished = done >= total;
        match s.last {
            // A log hears the first rows only once the load has taken a while.
            None if !self.tty && !finished => {
                s.last = Some(now);
                return;
            }
            Some(l) if now - l < every && !finished => return,
            _ => {}
        }
        s.last = Some(now);
        let secs = (now - s.started).as_secs_f64().max(1e-3);
        if finished {
            // The next load starts afresh, whatever its first count.
            s.done = 0;
        }
        let rate = done as f64 / secs;
        let line = match finished {
            true => format!(
                "loaded {total} rows in {}, {rate:.0} rows/s",
                match secs < 1.0 {
                    true => format!("{:.0} ms", secs * 1000.0),
                    false => format!("{secs:.1} s"),
                }
            ),
            false => format!(
                "loading: {done} of {total} rows ({:.0}%), {rate:.0} rows/s, {:.0} s left",
                done as f64 * 100.0 / total.max(1) as f64,
                total.saturating_sub(done) as f64 / rate.max(1.0)
            ),
        };
        match self.tty {
            true => eprint!("\r\x1b[K{line}"),
            false => eprintln!("{line}"),
        }
    }
}
