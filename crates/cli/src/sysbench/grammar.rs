//! sysbench 1.0.20's command line: `[options]... [testname] [command]`, options anywhere,
//! `--name=value` or a bare `--name` (a switch turned on), dashes and underscores alike, the
//! last of a repeated option winning, `--config-file` read in its place.

/// A parsed line.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Line {
    pub test: Option<String>,
    pub command: Option<String>,
    /// Each option once, with the value given last, in the order first given: (name with
    /// dashes, value, the argument as written).
    pub options: Vec<Given>,
    /// `--test=NAME` was used (sysbench warns that it is deprecated).
    pub test_option: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Given {
    pub name: String,
    pub value: Option<String>,
    pub written: String,
}

impl Line {
    pub fn value(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|g| g.name == name)
            .and_then(|g| g.value.as_deref())
    }

    /// A switch: a bare `--name`, or a value sysbench reads as on.
    pub fn on(&self, name: &str) -> bool {
        self.options.iter().any(|g| {
            g.name == name
                && g.value
                    .as_deref()
                    .is_none_or(|v| matches!(v, "on" | "true" | "1" | "yes"))
        })
    }

    /// An option's value as sysbench's `sb_get_value_int` reads it (atoi: 0 when not a number).
    fn int(&self, name: &str, default: i64) -> i64 {
        self.value(name).map_or(default, |v| {
            let digits = v.trim_start();
            let end = digits
                .char_indices()
                .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
                .map_or(digits.len(), |(i, _)| i);
            digits[..end].parse().unwrap_or(0)
        })
    }

    fn set(&mut self, name: String, value: Option<String>, written: &str) {
        let written = written.to_string();
        match self.options.iter_mut().find(|g| g.name == name) {
            Some(g) => {
                g.value = value;
                g.written = written;
            }
            None => self.options.push(Given {
                name,
                value,
                written,
            }),
        }
    }
}

/// sysbench's warnings as its `init()` gives them, before its version line: each 0.5 option
/// in use (`--num-threads` above 1, the others above 0, which then stand for their new names),
/// and a run with neither an event nor a time limit.
pub(crate) fn startup_warnings(line: &Line) -> Vec<String> {
    let mut out = Vec::new();
    // The old option's value when it is in use (above `floor`), with sysbench's warning.
    let mut deprecated = |old: &str, new: &str, floor: i64| {
        let v = line.int(old, 0);
        if v > floor {
            out.push(format!("--{old} is deprecated, use --{new} instead"));
        }
        (v > floor).then_some(v)
    };
    deprecated("num-threads", "threads", 1);
    let events = deprecated("max-requests", "events", 0).unwrap_or(line.int("events", 0));
    let time = deprecated("max-time", "time", 0).unwrap_or(line.int("time", 10));
    let endless = events == 0 && time == 0;
    let rate = deprecated("tx-rate", "rate", 0);
    if endless {
        let at = out.len() - usize::from(rate.is_some());
        out.insert(
            at,
            "Both event and time limits are disabled, running an endless test".into(),
        );
    }
    out
}

/// Parse `args` (without the program name). The error is sysbench's message for it.
pub(crate) fn parse(args: &[String]) -> Result<Line, String> {
    let args = crate::legacy::expand_config_files(args)?;
    let mut line = Line::default();
    for a in &args {
        let Some(opt) = a.strip_prefix("--") else {
            if line.test.is_none() {
                line.test = Some(a.clone());
            } else if line.command.is_none() {
                line.command = Some(a.clone());
            } else {
                return Err(format!("Unrecognized command line argument: {a}"));
            }
            continue;
        };
        let (name, value) = match opt.split_once('=') {
            Some((n, v)) => (n.replace('_', "-"), Some(v.to_string())),
            None => (opt.replace('_', "-"), None),
        };
        if name == "test" {
            line.test = value;
            line.test_option = true;
            continue;
        }
        line.set(name, value, a);
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Line {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn options_go_anywhere_and_the_last_of_a_repeated_one_wins() {
        let l = p("--threads=2 oltp_read_only --tables=2 prewarm --threads=1 --skip_trx");
        assert_eq!(l.test.as_deref(), Some("oltp_read_only"));
        assert_eq!(l.command.as_deref(), Some("prewarm"));
        assert_eq!(l.value("threads"), Some("1"));
        assert_eq!(l.options.iter().filter(|g| g.name == "threads").count(), 1);
        assert!(l.on("skip-trx"));
        assert!(!l.on("tables"));
    }

    #[test]
    fn a_third_word_is_refused_as_sysbench_refuses_it() {
        let args: Vec<String> = ["foo", "bar", "baz"].map(String::from).to_vec();
        assert_eq!(
            parse(&args).unwrap_err(),
            "Unrecognized command line argument: baz"
        );
    }

    #[test]
    fn the_0_5_options_are_warned_about_in_sysbenchs_order_and_words() {
        let line = p("--tx-rate=5 --max-time=3 --num-threads=2 --max-requests=0 x.lua run");
        assert_eq!(
            startup_warnings(&line),
            [
                "--num-threads is deprecated, use --threads instead",
                "--max-time is deprecated, use --time instead",
                "--tx-rate is deprecated, use --rate instead",
            ]
        );
        // --num-threads=1 is the default: no warning; no limit at all is an endless run.
        let line = p("--num-threads=1 --time=0 x.lua");
        assert_eq!(
            startup_warnings(&line),
            ["Both event and time limits are disabled, running an endless test"]
        );
    }

    #[test]
    fn the_deprecated_test_option_names_the_test() {
        let l = p("--test=cpu run");
        assert_eq!(l.test.as_deref(), Some("cpu"));
        assert_eq!(l.command.as_deref(), Some("run"));
        assert!(l.test_option);
    }
}
