//! pgbench's expression language (`\set`, `\if`, `\elif`): its literals, `:variables`,
//! operators with exprparse.y's precedence, CASE, and its functions, parsed once into a
//! tree that the evaluator (eval.rs) runs per transaction.

use super::value::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Const(Value),
    Var(String),
    Call(Func, Vec<Expr>),
    /// CASE WHEN c THEN v ... [ELSE e] END.
    Case(Vec<(Expr, Expr)>, Option<Box<Expr>>),
}

/// Every function and operator; operators are functions with fixed arity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    BitOr,
    BitXor,
    BitNot,
    Shl,
    Shr,
    And,
    Or,
    Not,
    Is,
    Abs,
    Debug,
    Double,
    Exp,
    Greatest,
    Hash,
    HashFnv1a,
    HashMurmur2,
    Int,
    Least,
    Ln,
    Permute,
    Pi,
    Pow,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    Sqrt,
}

/// The functions by name (any case): name, function, (fewest, most) arguments; None = any.
const FUNCTIONS: &[(&str, Func, usize, Option<usize>)] = &[
    ("abs", Func::Abs, 1, Some(1)),
    ("debug", Func::Debug, 1, Some(1)),
    ("double", Func::Double, 1, Some(1)),
    ("exp", Func::Exp, 1, Some(1)),
    ("greatest", Func::Greatest, 1, None),
    ("hash", Func::Hash, 1, Some(2)),
    ("hash_fnv1a", Func::HashFnv1a, 1, Some(2)),
    ("hash_murmur2", Func::HashMurmur2, 1, Some(2)),
    ("int", Func::Int, 1, Some(1)),
    ("least", Func::Least, 1, None),
    ("ln", Func::Ln, 1, Some(1)),
    ("mod", Func::Mod, 2, Some(2)),
    ("permute", Func::Permute, 2, Some(3)),
    ("pi", Func::Pi, 0, Some(0)),
    ("pow", Func::Pow, 2, Some(2)),
    ("power", Func::Pow, 2, Some(2)),
    ("random", Func::Random, 2, Some(2)),
    ("random_exponential", Func::RandomExponential, 3, Some(3)),
    ("random_gaussian", Func::RandomGaussian, 3, Some(3)),
    ("random_zipfian", Func::RandomZipfian, 3, Some(3)),
    ("sqrt", Func::Sqrt, 1, Some(1)),
];

/// A syntax error: what, and where pgbench's caret points (the last byte of the token it
/// stopped at, or the end of the expression when it ran out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    /// A detail pgbench prints after the message (the offending word).
    pub detail: Option<String>,
    pub at: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    /// 9223372036854775808: only as the operand of a unary minus.
    MaxPlusOne,
    Double(f64),
    Word(String),
    Var(String),
    Op(&'static str),
    End,
}

const OPS: &[&str] = &[
    "<<", ">>", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "%", "<", ">", "=", "&", "|", "#", "~",
    "(", ")", ",",
];

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, SyntaxError> {
    // Each token is kept with its last byte: where pgbench's caret points.
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (tok, end) = number(src, i)?;
            out.push((tok, end - 1));
            i = end;
        } else if c == b':' && b.get(i + 1).is_some_and(|&n| is_name_byte(n)) {
            i += 1;
            while i < b.len() && is_name_byte(b[i]) {
                i += 1;
            }
            out.push((Tok::Var(src[start + 1..i].to_string()), i - 1));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Word(src[start..i].to_ascii_lowercase()), i - 1));
        } else if let Some(op) = OPS.iter().find(|op| src[i..].starts_with(**op)) {
            i += op.len();
            out.push((Tok::Op(op), i - 1));
        } else {
            return Err(SyntaxError {
                message: "unexpected character".into(),
                detail: Some(src[i..].chars().next().unwrap_or(' ').to_string()),
                at: i,
            });
        }
    }
    out.push((Tok::End, src.len()));
    Ok(out)
}

pub fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// A name a variable may have (pgbench's valid_variable_name).
pub fn valid_name(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(is_name_byte) && !v.as_bytes()[0].is_ascii_digit()
}

fn number(src: &str, from: usize) -> Result<(Tok, usize), SyntaxError> {
    let b = src.as_bytes();
    let mut i = from;
    let digits = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    digits(&mut i);
    let mut double = false;
    if i < b.len() && b[i] == b'.' {
        double = true;
        i += 1;
        digits(&mut i);
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            double = true;
            i = j;
            digits(&mut i);
        }
    }
    let text = &src[from..i];
    if double {
        let d: f64 = text.parse().unwrap_or(f64::NAN);
        // strtod's ERANGE, which pgbench refuses: too large, or too small to be normal.
        let nonzero = text
            .split(['e', 'E'])
            .next()
            .is_some_and(|m| m.bytes().any(|c| (b'1'..=b'9').contains(&c)));
        if d.is_infinite() || (nonzero && !d.is_normal()) {
            return Err(SyntaxError {
                message: "double constant overflow".into(),
                detail: Some(text.to_string()),
                at: i - 1,
            });
        }
        return Ok((Tok::Double(d), i));
    }
    match text.parse::<i64>() {
        Ok(v) => Ok((Tok::Int(v), i)),
        Err(_) if text == "9223372036854775808" => Ok((Tok::MaxPlusOne, i)),
        Err(_) => Err(SyntaxError {
            message: "bigint constant overflow".into(),
            detail: Some(text.to_string()),
            at: i - 1,
        }),
    }
}

/// Parse an expression (the whole text).
pub fn parse(src: &str) -> Result<Expr, SyntaxError> {
    let toks = lex(src)?;
    let mut p = Parser { toks, pos: 0, src };
    let e = p.or()?;
    match p.peek() {
        Tok::End => Ok(e),
        _ => Err(p.error("syntax error")),
    }
}

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    /// The text, for a word as written (tokens keep words lowercased).
    src: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }

    fn error(&self, message: &str) -> SyntaxError {
        SyntaxError {
            message: message.into(),
            detail: None,
            at: self.toks[self.pos].1,
        }
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Tok::Op(o) if *o == op) {
            self.pos += 1;
            return true;
        }
        false
    }

    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Tok::Word(x) if x == w) {
            self.pos += 1;
            return true;
        }
        false
    }

    fn or(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.and()?;
        while self.eat_word("or") {
            l = Expr::Call(Func::Or, vec![l, self.and()?]);
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.not()?;
        while self.eat_word("and") {
            l = Expr::Call(Func::And, vec![l, self.not()?]);
        }
        Ok(l)
    }

    fn not(&mut self) -> Result<Expr, SyntaxError> {
        if self.eat_word("not") {
            return Ok(Expr::Call(Func::Not, vec![self.not()?]));
        }
        self.is()
    }

    fn is(&mut self) -> Result<Expr, SyntaxError> {
        let l = self.cmp()?;
        let is = |l: Expr, v: Value| Expr::Call(Func::Is, vec![l, Expr::Const(v)]);
        if self.eat_word("isnull") {
            return Ok(is(l, Value::Null));
        }
        if self.eat_word("notnull") {
            return Ok(Expr::Call(Func::Not, vec![is(l, Value::Null)]));
        }
        if !self.eat_word("is") {
            return Ok(l);
        }
        let negated = self.eat_word("not");
        let v = if self.eat_word("null") {
            Value::Null
        } else if self.eat_word("true") {
            Value::Bool(true)
        } else if self.eat_word("false") {
            Value::Bool(false)
        } else {
            return Err(self.error("syntax error"));
        };
        let e = is(l, v);
        Ok(if negated {
            Expr::Call(Func::Not, vec![e])
        } else {
            e
        })
    }

    fn cmp(&mut self) -> Result<Expr, SyntaxError> {
        let l = self.bits()?;
        for (op, f) in [
            ("<=", Func::Le),
            (">=", Func::Ge),
            ("<>", Func::Ne),
            ("!=", Func::Ne),
            ("<", Func::Lt),
            (">", Func::Gt),
            ("=", Func::Eq),
        ] {
            if self.eat_op(op) {
                return Ok(Expr::Call(f, vec![l, self.bits()?]));
            }
        }
        Ok(l)
    }

    fn bits(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.sum()?;
        'more: loop {
            for (op, f) in [
                ("<<", Func::Shl),
                (">>", Func::Shr),
                ("|", Func::BitOr),
                ("#", Func::BitXor),
                ("&", Func::BitAnd),
            ] {
                if self.eat_op(op) {
                    l = Expr::Call(f, vec![l, self.sum()?]);
                    continue 'more;
                }
            }
            return Ok(l);
        }
    }

    fn sum(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.product()?;
        loop {
            let f = if self.eat_op("+") {
                Func::Add
            } else if self.eat_op("-") {
                Func::Sub
            } else {
                return Ok(l);
            };
            l = Expr::Call(f, vec![l, self.product()?]);
        }
    }

    fn product(&mut self) -> Result<Expr, SyntaxError> {
        let mut l = self.unary()?;
        loop {
            let f = if self.eat_op("*") {
                Func::Mul
            } else if self.eat_op("/") {
                Func::Div
            } else if self.eat_op("%") {
                Func::Mod
            } else {
                return Ok(l);
            };
            l = Expr::Call(f, vec![l, self.unary()?]);
        }
    }

    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        if self.eat_op("+") {
            return self.unary();
        }
        if self.eat_op("-") {
            if let Tok::MaxPlusOne = self.peek() {
                self.pos += 1;
                return Ok(Expr::Const(Value::Int(i64::MIN)));
            }
            return Ok(Expr::Call(Func::Neg, vec![self.unary()?]));
        }
        if self.eat_op("~") {
            return Ok(Expr::Call(Func::BitNot, vec![self.unary()?]));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, SyntaxError> {
        let (tok, at) = self.toks[self.pos].clone();
        self.pos += 1;
        match tok {
            Tok::Int(i) => Ok(Expr::Const(Value::Int(i))),
            Tok::Double(d) => Ok(Expr::Const(Value::Double(d))),
            Tok::MaxPlusOne => Err(SyntaxError {
                message: "bigint constant overflow".into(),
                detail: Some("9223372036854775808".into()),
                at,
            }),
            Tok::Var(v) => Ok(Expr::Var(v)),
            Tok::Op("(") => {
                let e = self.or()?;
                if !self.eat_op(")") {
                    return Err(self.error("syntax error"));
                }
                Ok(e)
            }
            Tok::Word(w) => self.word(&w, at),
            _ => {
                self.pos -= 1;
                Err(self.error("syntax error"))
            }
        }
    }

    /// A word at the token ending at `at`: a constant, CASE, or a function's name.
    fn word(&mut self, w: &str, at: usize) -> Result<Expr, SyntaxError> {
        match w {
            "true" => return Ok(Expr::Const(Value::Bool(true))),
            "false" => return Ok(Expr::Const(Value::Bool(false))),
            "null" => return Ok(Expr::Const(Value::Null)),
            "case" => return self.case(),
            _ => {}
        }
        if !self.eat_op("(") {
            self.pos -= 1;
            return Err(self.error("syntax error"));
        }
        let Some(&(_, func, least, most)) = FUNCTIONS.iter().find(|f| f.0 == w) else {
            let written = self.src.get(at + 1 - w.len()..=at).unwrap_or(w);
            return Err(SyntaxError {
                message: "unexpected function name".into(),
                detail: Some(written.to_string()),
                at,
            });
        };
        let mut args = Vec::new();
        if !self.eat_op(")") {
            loop {
                args.push(self.or()?);
                if self.eat_op(")") {
                    break;
                }
                if !self.eat_op(",") {
                    return Err(self.error("syntax error"));
                }
            }
        }
        if args.len() < least || most.is_some_and(|m| args.len() > m) {
            // pgbench's words for a function of any number of arguments given none.
            let message = match most {
                None => "at least one argument expected",
                Some(_) => "unexpected number of arguments",
            };
            return Err(SyntaxError {
                message: message.into(),
                detail: Some(w.to_string()),
                at: self.toks[self.pos - 1].1,
            });
        }
        // hash and permute without a seed use :default_seed, as pgbench rewrites them.
        if matches!(func, Func::Hash | Func::HashFnv1a | Func::HashMurmur2) && args.len() == 1
            || func == Func::Permute && args.len() == 2
        {
            args.push(Expr::Var("default_seed".into()));
        }
        Ok(Expr::Call(func, args))
    }

    fn case(&mut self) -> Result<Expr, SyntaxError> {
        let mut arms = Vec::new();
        while self.eat_word("when") {
            let c = self.or()?;
            if !self.eat_word("then") {
                return Err(self.error("syntax error"));
            }
            arms.push((c, self.or()?));
        }
        if arms.is_empty() {
            return Err(self.error("syntax error"));
        }
        let other = match self.eat_word("else") {
            true => Some(Box::new(self.or()?)),
            false => None,
        };
        if !self.eat_word("end") {
            return Err(self.error("syntax error"));
        }
        Ok(Expr::Case(arms, other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(i: i64) -> Expr {
        Expr::Const(Value::Int(i))
    }

    #[test]
    fn precedence_is_exprparse_ys() {
        assert_eq!(
            parse("1 + 2 * 3").unwrap(),
            Expr::Call(
                Func::Add,
                vec![int(1), Expr::Call(Func::Mul, vec![int(2), int(3)])]
            )
        );
        // Bit operators bind less tightly than + and more than comparisons.
        assert_eq!(
            parse("1 | 2 + 3 = 7").unwrap(),
            Expr::Call(
                Func::Eq,
                vec![
                    Expr::Call(
                        Func::BitOr,
                        vec![int(1), Expr::Call(Func::Add, vec![int(2), int(3)])]
                    ),
                    int(7)
                ]
            )
        );
        assert_eq!(parse("-9223372036854775808").unwrap(), int(i64::MIN));
    }

    #[test]
    fn functions_are_checked_by_name_and_arity() {
        assert!(parse("random(1, 10 * :scale)").is_ok());
        assert_eq!(
            parse("hash(5)").unwrap(),
            Expr::Call(Func::Hash, vec![int(5), Expr::Var("default_seed".into())])
        );
        let e = parse("random(1)").unwrap_err();
        assert_eq!(e.message, "unexpected number of arguments");
        let e = parse("frobnicate(1)").unwrap_err();
        assert_eq!(e.message, "unexpected function name");
        assert!(parse("1 +").is_err());
        assert!(parse("CASE WHEN :x > 1 THEN 2 ELSE 3 END").is_ok());
        assert!(parse(":a IS NOT NULL AND NOT :b").is_ok());
    }
}
