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
    }
}

/// Loading's progress on a terminal: rows, rows/s and time left, one line on stderr rewritten
/// in place at most four times a second. Nothing when stderr is not a terminal (logs, CI).
pub(crate) struct LoadLine {
    started: std::time::Instant,
    last: std::sync::Mutex<Option<std::time::Instant>>,
    tty: bool,
}

impl LoadLine {
    pub(crate) fn new() -> LoadLine {
        use std::io::IsTerminal;
        LoadLine {
            started: std::time::Instant::now(),
            last: std::sync::Mutex::new(None),
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// Print `p`, drawing the rows line for `Rows` and ending it before anything else.
    pub(crate) fn show(&self, p: Progress) {
        match p {
            Progress::Rows { done, total } if self.tty => self.rows(done, total),
            Progress::Rows { .. } => {}
            other => {
                self.end();
                print_progress(other)
            }
        }
    }

    /// End the rows line, if one was drawn, so the next message starts on a line of its own.
    pub(crate) fn end(&self) {
        if let Ok(mut last) = self.last.lock() {
            if self.tty && last.take().is_some() {
                eprintln!();
            }
        }
    }

    fn rows(&self, done: u64, total: u64) {
        let now = std::time::Instant::now();
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        if last.is_some_and(|l| now - l < Duration::from_millis(250)) && done < total {
            return;
        }
        *last = Some(now);
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let left = total.saturating_sub(done) as f64 / rate.max(1.0);
        eprint!(
            "\r\x1b[Kloading: {done} of {total} rows ({:.0}%), {:.0} rows/s, {:.0} s left",
            done as f64 * 100.0 / total.max(1) as f64,
            rate,
            left
        );
    }
}
