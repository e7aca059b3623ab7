//! pgbench's values: what `\set` computes and a variable holds. A variable given as text
//! (`-D`, `\gset`, `\setshell`) is read as a value the first time an expression uses it,
//! by pgbench's rules (NULL, a boolean word, an integer, a double).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
}

/// An evaluation error, in pgbench's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub fn fail<T>(message: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError(message.into()))
}

impl Value {
    pub fn as_int(self) -> Result<i64, EvalError> {
        match self {
            Value::Int(i) => Ok(i),
            Value::Double(d) => {
                let r = d.round_ties_even();
                // The range an i64 holds exactly: [-2^63, 2^63).
                if r.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r)
                {
                    return fail(format!("double to int overflow for {d:.6}"));
                }
                Ok(r as i64)
            }
            v => fail(format!("cannot coerce {} to int", v.type_name())),
        }
    }

    pub fn as_double(self) -> Result<f64, EvalError> {
        match self {
            Value::Int(i) => Ok(i as f64),
            Value::Double(d) => Ok(d),
            v => fail(format!("cannot coerce {} to double", v.type_name())),
        }
    }

    /// What AND, OR and NOT take: a boolean, nothing else (pgbench's coerceToBool).
    pub fn strict_bool(self) -> Result<bool, EvalError> {
        match self {
            Value::Bool(b) => Ok(b),
            v => fail(format!("cannot coerce {} to boolean", v.type_name())),
        }
    }

    fn type_name(self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
        }
    }

    /// A condition's truth (`\if`, CASE), pgbench's valueTruth: NULL is false, a number is
    /// true when it is not zero.
    pub fn truth(self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Double(d) => d != 0.0,
        }
    }

    /// pgbench's text for a value put into SQL (its getVariable): NULL as the word, doubles
    /// with 15 significant digits (`%.15g`).
    pub fn text(self) -> String {
        match self {
            Value::Null => "NULL".to_string(),
            Value::Bool(b) => if b { "true" } else { "false" }.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Double(d) => g15(d),
        }
    }

    /// Text given for a variable read as a value, as pgbench's makeVariableValue reads it.
    pub fn parse(text: &str) -> Option<Value> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("null") {
            return Some(Value::Null);
        }
        if let Some(b) = parse_bool(t) {
            return Some(Value::Bool(b));
        }
        if let Ok(i) = t.parse::<i64>() {
            return Some(Value::Int(i));
        }
        let numeric = t
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
        match t.parse::<f64>() {
            Ok(d) if numeric && !t.is_empty() => Some(Value::Double(d)),
            _ => None,
        }
    }
}

/// pgbench's boolean words: any prefix of true/false/yes/no, and on, off or of ("o" alone is
/// neither).
fn parse_bool(t: &str) -> Option<bool> {
    let l = t.to_ascii_lowercase();
    let prefix_of = |word: &str| !l.is_empty() && word.starts_with(&l);
    if prefix_of("true") || prefix_of("yes") || l == "on" {
        Some(true)
    } else if prefix_of("false") || prefix_of("no") || l == "off" || l == "of" {
        Some(false)
    } else {
        None
    }
}

/// C's `%.15g`: 15 significant digits, trailing zeros dropped, exponent form outside
/// [1e-4, 1e15).
pub fn g15(d: f64) -> String {
    // PostgreSQL's own printf, which pgbench is linked with, says these so.
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{d:.14e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..15).contains(&exp) {
        let m = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", exp.abs());
    }
    let decimals = (14 - exp).max(0) as usize;
    trim_zeros(&format!("{d:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_c_does_with_15_digits() {
        assert_eq!(g15(0.1), "0.1");
        assert_eq!(g15(1.0 / 3.0), "0.333333333333333");
        assert_eq!(g15(2.5e20), "2.5e+20");
        assert_eq!(g15(1e-5), "1e-05");
        assert_eq!(g15(123456.0), "123456");
        assert_eq!(g15(-7.25), "-7.25");
    }

    #[test]
    fn variables_read_as_pgbench_reads_them() {
        assert_eq!(Value::parse("42"), Some(Value::Int(42)));
        assert_eq!(Value::parse("1.5"), Some(Value::Double(1.5)));
        assert_eq!(Value::parse("NULL"), Some(Value::Null));
        assert_eq!(Value::parse("t"), Some(Value::Bool(true)));
        assert_eq!(Value::parse("off"), Some(Value::Bool(false)));
        assert_eq!(Value::parse("of"), Some(Value::Bool(false)));
        assert_eq!(Value::parse("o"), None);
        assert_eq!(Value::parse("abc"), None);
        assert_eq!(Value::parse("inf"), None);
    }

    #[test]
    fn doubles_round_to_even_into_ints() {
        assert_eq!(Value::Double(2.5).as_int(), Ok(2));
        assert_eq!(Value::Double(-3.5).as_int(), Ok(-4));
        assert!(Value::Double(1e19).as_int().is_err());
    }
}
