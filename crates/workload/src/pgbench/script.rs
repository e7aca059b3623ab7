//! pgbench scripts: SQL commands (ended by `;` outside quotes, comments and parentheses,
//! `\;` joining a compound one) and meta-commands (a backslash, to the end of the line),
//! parsed once into [`Command`]s with `\if` blocks resolved into jumps.

// A script error is built once, when a run is refused: its size costs nothing that matters.
#![allow(clippy::result_large_err)]

use super::expr::{self, Expr};
pub use super::sqltext::Part;
use super::sqltext::{
    block_comment_end, dollar_tag, meta_end, number_variables, parts, quoted_end, word_columns,
};

/// One parsed script.
#[derive(Debug, Clone)]
pub struct Script {
    /// `<builtin: select only>` or the file's name, as pgbench's report names it.
    pub name: String,
    pub weight: u32,
    pub commands: Vec<Command>,
}

#[derive(Debug, Clone)]
pub struct Command {
    /// The command's first line, as `-r` shows it.
    pub first_line: String,
    /// A meta-command's words as pgbench keeps them (`-d` prints them): the name, then its
    /// words, but only the variable of `\set` and none of `\if`'s or `\elif`'s (their
    /// expressions are parsed apart). Empty for SQL.
    pub argv: String,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Sql(Sql),
    Set(String, Expr),
    /// Microseconds: a number or a variable, times the unit.
    Sleep(Arg, u64),
    SetShell(String, Vec<Arg>),
    Shell(Vec<Arg>),
    /// The condition, and where to go when it is false (the next \elif, \else or \endif).
    If(Expr, usize),
    /// As \if when a false condition jumps here; reached at the end of a branch taken, it
    /// goes to the \endif (the second index).
    Elif(Expr, usize, usize),
    /// Reached at the end of a branch taken: go to the \endif.
    Else(usize),
    Endif,
    StartPipeline,
    EndPipeline,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Text(String),
    Var(String),
}

#[derive(Debug, Clone)]
pub struct Sql {
    /// The text as written: the simple protocol sends it with each `:var` replaced.
    pub text: String,
    pub parts: Vec<Part>,
    /// The text with `$1`, `$2`... for the extended protocols, and the variables they bind.
    pub numbered: String,
    pub params: Vec<String>,
    /// `\gset [prefix]` or `\aset [prefix]` after it.
    pub gset: Option<(Gset, String)>,
    /// Between a \startpipeline and its \endpipeline: queued, its reply read at the end.
    pub in_pipeline: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gset {
    /// One row, its columns into variables.
    One,
    /// Every result set's last row (none: nothing set).
    All,
}

/// A script error as pgbench's syntax_error says it: file, line (from 1), message, a
/// detail, the command's name, the line's text and the column for the caret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    pub source: String,
    pub line: usize,
    pub message: String,
    pub detail: Option<String>,
    pub command: Option<String>,
    pub text: Option<String>,
    pub column: Option<usize>,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.source.is_empty() {
            // A condition error names its script in the message.
            return f.write_str(&self.message);
        }
        write!(f, "{}:{}: {}", self.source, self.line, self.message)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        match (&self.command, self.column) {
            (Some(c), _) => write!(f, " in command \"{c}\"")?,
            (None, Some(col)) => write!(f, " at column {}", col + 1)?,
            (None, None) => {}
        }
        if let Some(text) = &self.text {
            write!(f, "\n{text}")?;
            if let Some(col) = self.column {
                write!(f, "\n{:>w$} error found here", "^", w = col + 1)?;
            }
        }
        Ok(())
    }
}

/// Makes an error in the meta-command being read: (message, detail, caret column).
type InCommand<'a> = &'a dyn Fn(&str, Option<String>, Option<usize>) -> ScriptError;

/// pgbench's limit on a statement's parameters (MAX_ARGS - 1).
const MAX_PARAMS: usize = 255;
/// pgbench's limit on a meta-command's words, its name included (MAX_ARGS).
const MAX_WORDS: usize = 256;

/// The extended and prepared protocols bind at most MAX_PARAMS values to a statement: the
/// first that takes more, refused in pgbench's words (the simple protocol has no limit).
pub fn too_many_params(script: &Script) -> Option<String> {
    script.commands.iter().find_map(|c| match &c.kind {
        Kind::Sql(sql) if sql.params.len() > MAX_PARAMS => Some(format!(
            "statement has too many arguments (maximum is {MAX_PARAMS}): {}",
            sql.text
        )),
        _ => None,
    })
}

/// Parse a script's text; `source` names it in errors.
pub fn parse(source: &str, name: &str, text: &str, weight: u32) -> Result<Script, ScriptError> {
    let mut p = ScriptParser {
        source,
        text,
        commands: Vec::new(),
        blocks: Vec::new(),
        pipeline: false,
    };
    p.run()?;
    if !p.blocks.is_empty() {
        return Err(p.condition(p.commands.len() + 1, "\\if without matching \\endif"));
    }
    if p.commands.is_empty() {
        return Err(ScriptError {
            source: String::new(),
            ..p.condition(0, &format!("empty command list for script \"{name}\""))
        });
    }
    Ok(Script {
        name: name.into(),
        weight,
        commands: p.commands,
    })
}

struct ScriptParser<'a> {
    source: &'a str,
    text: &'a str,
    commands: Vec<Command>,
    /// Open \if blocks: the command indices of the \if and its \elif/\else, and its line.
    blocks: Vec<(Vec<usize>, usize)>,
    /// Whether a \startpipeline is open at this point of the text.
    pipeline: bool,
}

impl ScriptParser<'_> {
    fn err(&self, line: usize, message: &str) -> ScriptError {
        ScriptError {
            source: self.source.into(),
            line,
            message: message.into(),
            detail: None,
            command: None,
            text: None,
            column: None,
        }
    }

    fn run(&mut self) -> Result<(), ScriptError> {
        let b = self.text.as_bytes();
        let mut i = 0;
        let mut line = 1;
        let mut sql = String::new();
        let mut depth = 0i32;
        while i < b.len() {
            let c = b[i];
            match c {
                b'\n' => {
                    line += 1;
                    sql.push('\n');
                    i += 1;
                }
                b'-' if b.get(i + 1) == Some(&b'-') => {
                    // A comment to the end of the line; kept only inside a command.
                    let end = self.text[i..].find('\n').map_or(b.len(), |n| i + n);
                    if !sql.trim().is_empty() {
                        sql.push_str(&self.text[i..end]);
                    }
                    i = end;
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    let end = block_comment_end(b, i);
                    line += self.text[i..end].matches('\n').count();
                    sql.push_str(&self.text[i..end]);
                    i = end;
                }
                b'\'' | b'"' => {
                    let end = quoted_end(b, i, c);
                    line += self.text[i..end].matches('\n').count();
                    sql.push_str(&self.text[i..end]);
                    i = end;
                }
                b'$' if dollar_tag(b, i).is_some() => {
                    let tag = dollar_tag(b, i).unwrap_or("$$".len());
                    let tag_text = &self.text[i..i + tag];
                    let end = self.text[i + tag..]
                        .find(tag_text)
                        .map_or(b.len(), |n| i + tag + n + tag);
                    line += self.text[i..end].matches('\n').count();
                    sql.push_str(&self.text[i..end]);
                    i = end;
                }
                b'(' | b')' => {
                    depth += if c == b'(' { 1 } else { -1 };
                    sql.push(c as char);
                    i += 1;
                }
                b';' if depth <= 0 => {
                    sql.push(';');
                    i += 1;
                    self.push_sql(&mut sql);
                    depth = 0;
                }
                b'\\' if b.get(i + 1) == Some(&b';') => {
                    sql.push(';');
                    i += 2;
                }
                b'\\' => {
                    let (end, lines) = meta_end(self.text, i);
                    let meta = &self.text[i + 1..end];
                    self.meta(meta, line, &mut sql)?;
                    line += lines;
                    i = end;
                }
                _ => {
                    let ch = self.text[i..].chars().next().unwrap_or(' ');
                    sql.push(ch);
                    i += ch.len_utf8();
                }
            }
        }
        self.push_sql(&mut sql);
        Ok(())
    }

    fn push_sql(&mut self, sql: &mut String) {
        // Trailing blanks stay (pgbench sends "SELECT 1 " before a \gset as it is).
        let text = sql.trim_start().trim_end_matches(['\n', '\r']).to_string();
        sql.clear();
        if text.is_empty() || text == ";" {
            return;
        }
        let (numbered, params) = number_variables(&text);
        self.commands.push(Command {
            first_line: text.lines().next().unwrap_or("").to_string(),
            argv: String::new(),
            kind: Kind::Sql(Sql {
                parts: parts(&text),
                text,
                numbered,
                params,
                gset: None,
                in_pipeline: self.pipeline,
            }),
        });
    }

    /// A meta-command (`meta` without its backslash) on `line`.
    fn meta(&mut self, meta: &str, line: usize, sql: &mut String) -> Result<(), ScriptError> {
        let full = format!("\\{}", meta.trim_end());
        let joined = meta.replace("\\\r\n", " ").replace("\\\n", " ");
        let shown = format!("\\{}", joined.trim_end());
        // Each word with the column it starts at in `shown`.
        let words: Vec<(usize, &str)> = word_columns(&joined).map(|(c, w)| (c + 1, w)).collect();
        let name = words.first().map_or("", |w| w.1).to_string();
        // pgbench knows its meta-commands in any case (\SET, \GSET, \If); messages name them
        // as written.
        let key = name.to_ascii_lowercase();
        let args: Vec<(usize, &str)> = words.iter().skip(1).copied().collect();
        let source = self.source.to_string();
        let in_cmd = |message: &str, detail: Option<String>, column: Option<usize>| ScriptError {
            source: source.clone(),
            line,
            message: message.into(),
            detail,
            command: Some(name.clone()),
            text: Some(shown.clone()),
            column,
        };
        if matches!(key.as_str(), "gset" | "aset") {
            self.push_sql(sql);
            if args.len() > 1 {
                return Err(in_cmd("too many arguments", None, None));
            }
            let follows = matches!(
                self.commands.last(),
                Some(Command { kind: Kind::Sql(s), .. }) if s.gset.is_none()
            );
            let Some(Command {
                kind: Kind::Sql(s), ..
            }) = self.commands.last_mut().filter(|_| follows)
            else {
                // After a meta-command pgbench names it.
                let after = match self.commands.last() {
                    Some(c) if !matches!(c.kind, Kind::Sql(_)) => format!(" ({})", c.first_line),
                    _ => String::new(),
                };
                return Err(self.err(line, &format!("\\{name} must follow an SQL command{after}")));
            };
            let how = if key == "gset" { Gset::One } else { Gset::All };
            s.gset = Some((how, args.first().map_or("", |a| a.1).to_string()));
            return Ok(());
        }
        // Any other meta-command ends the SQL before it.
        self.push_sql(sql);
        if matches!(
            key.as_str(),
            "else" | "endif" | "startpipeline" | "endpipeline"
        ) && !args.is_empty()
        {
            return Err(in_cmd("unexpected argument", None, None));
        }
        let at = self.commands.len();
        let kind = match key.as_str() {
            "set" => {
                let Some(&(var_col, var)) = args.first() else {
                    // pgbench shows no line for this one.
                    return Err(ScriptError {
                        text: None,
                        ..in_cmd("missing argument", None, None)
                    });
                };
                let from = var_col + var.len();
                let e = expr::parse(&shown[from..])
                    .map_err(|e| in_cmd(&e.message, e.detail, Some(from + e.at)))?;
                Kind::Set(var.to_string(), e)
            }
            "sleep" => self.sleep(&args, &in_cmd)?,
            "setshell" | "shell" if words.len() > MAX_WORDS => {
                // pgbench shows no line for this one.
                return Err(ScriptError {
                    text: None,
                    ..in_cmd("too many arguments", None, None)
                });
            }
            "setshell" | "shell" => {
                let need = if key == "setshell" { 2 } else { 1 };
                if args.len() < need {
                    let what = if key == "shell" {
                        "missing command"
                    } else {
                        "missing argument"
                    };
                    return Err(in_cmd(what, None, None));
                }
                let mut argv: Vec<Arg> = args.iter().map(|a| arg(a.1)).collect();
                match key.as_str() {
                    "setshell" => Kind::SetShell(args[0].1.to_string(), argv.split_off(1)),
                    _ => Kind::Shell(argv),
                }
            }
            "if" | "elif" => {
                let from = words[0].0 + name.len();
                let e = expr::parse(&shown[from..])
                    .map_err(|e| in_cmd(&e.message, e.detail, Some(from + e.at)))?;
                if key == "if" {
                    self.blocks.push((vec![at], line));
                    Kind::If(e, 0)
                } else {
                    self.branch(at, "\\elif")?;
                    Kind::Elif(e, 0, 0)
                }
            }
            "else" => {
                self.branch(at, "\\else")?;
                Kind::Else(0)
            }
            "endif" => {
                let Some((branches, _)) = self.blocks.pop() else {
                    return Err(self.condition(at + 1, "\\endif without matching \\if"));
                };
                self.close_block(&branches, at);
                Kind::Endif
            }
            "startpipeline" => {
                self.pipeline = true;
                Kind::StartPipeline
            }
            "endpipeline" => {
                self.pipeline = false;
                Kind::EndPipeline
            }
            _ => return Err(in_cmd("invalid command", None, None)),
        };
        let kept = match &kind {
            Kind::Set(..) => 2,
            Kind::If(..) | Kind::Elif(..) => 1,
            _ => words.len(),
        };
        let argv = words.iter().take(kept).map(|w| w.1).collect::<Vec<_>>();
        self.commands.push(Command {
            first_line: full,
            argv: argv.join(" "),
            kind,
        });
        Ok(())
    }

    /// pgbench's words for a misplaced \if, \elif, \else or \endif: the script and the
    /// command's number (from 1).
    fn condition(&self, number: usize, message: &str) -> ScriptError {
        let message = match number {
            0 => message.to_string(),
            n => format!(
                "condition error in script \"{}\" command {n}: {message}",
                self.source
            ),
        };
        ScriptError {
            source: String::new(),
            line: 0,
            message,
            detail: None,
            command: None,
            text: None,
            column: None,
        }
    }

    fn sleep(&self, args: &[(usize, &str)], in_cmd: InCommand<'_>) -> Result<Kind, ScriptError> {
        let Some(&(col, first)) = args.first() else {
            return Err(in_cmd("missing argument", None, None));
        };
        if let Some(&(col, _)) = args.get(2) {
            return Err(in_cmd("too many arguments", None, Some(col)));
        }
        let mut number = first;
        let mut unit = args.get(1).map(|&(c, u)| (c, u));
        // As pgbench: a number with its unit in one word ("2ms") splits where the digits end,
        // when no unit follows; anything else after the digits is not an integer.
        if !first.starts_with(':') {
            let signed = first.strip_prefix(['+', '-']).unwrap_or(first);
            let digits = signed.bytes().take_while(u8::is_ascii_digit).count();
            let at = first.len() - signed.len() + digits;
            if at < first.len() {
                if unit.is_none() && digits > 0 {
                    (number, unit) = (&first[..at], Some((col + at, &first[at..])));
                } else {
                    return Err(in_cmd(
                        "invalid sleep time, must be an integer",
                        Some(first.into()),
                        Some(col),
                    ));
                }
            }
        }
        let unit = match unit.map(|(c, u)| (c, u, u.to_ascii_lowercase())) {
            None => 1_000_000,
            Some((_, _, u)) if u == "us" => 1,
            Some((_, _, u)) if u == "ms" => 1_000,
            Some((_, _, u)) if u == "s" => 1_000_000,
            Some((c, u, _)) => {
                return Err(in_cmd(
                    "unrecognized time unit, must be us, ms or s",
                    Some(u.into()),
                    Some(c),
                ))
            }
        };
        let a = arg(number);
        if let Arg::Text(t) = &a {
            if t.parse::<i64>().is_err() {
                return Err(in_cmd(
                    "invalid sleep time, must be an integer",
                    Some(t.clone()),
                    Some(col),
                ));
            }
        }
        Ok(Kind::Sleep(a, unit))
    }

    /// An \elif or \else at command `at`: the block's previous branch jumps here when false.
    fn branch(&mut self, at: usize, what: &str) -> Result<(), ScriptError> {
        let Some((branches, _)) = self.blocks.last() else {
            return Err(self.condition(at + 1, &format!("{what} without matching \\if")));
        };
        let last = *branches.last().unwrap_or(&at);
        if matches!(self.commands[last].kind, Kind::Else(_)) {
            return Err(self.condition(at + 1, &format!("{what} after \\else")));
        }
        if let Some((branches, _)) = self.blocks.last_mut() {
            branches.push(at);
        }
        match &mut self.commands[last].kind {
            Kind::If(_, next) | Kind::Elif(_, next, _) => *next = at,
            _ => {}
        }
        Ok(())
    }

    /// The block ends at command `endif`: false conditions without a later branch go there,
    /// and every \elif and \else (reached at the end of a branch taken) jumps to it.
    fn close_block(&mut self, branches: &[usize], endif: usize) {
        for &b in branches {
            match &mut self.commands[b].kind {
                Kind::If(_, next) if *next == 0 => *next = endif,
                Kind::Elif(_, next, end) => {
                    if *next == 0 {
                        *next = endif;
                    }
                    *end = endif;
                }
                Kind::Else(end) => *end = endif,
                _ => {}
            }
        }
    }
}

fn arg(a: &str) -> Arg {
    match a.strip_prefix(':') {
        Some(v) if !v.is_empty() && !v.starts_with(':') => Arg::Var(v.to_string()),
        // `::word` is a literal `:word`.
        _ if a.starts_with("::") => Arg::Text(a[1..].to_string()),
        _ => Arg::Text(a.to_string()),
    }
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
