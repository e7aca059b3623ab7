//! Evaluating pgbench expressions: its arithmetic (integers checked for overflow, doubles
//! where either side is one), its three-valued logic, and its functions with the formulas
//! pgbench uses for its random distributions and hashes.

use std::collections::HashMap;

use super::expr::{Expr, Func};
use super::prng::PgPrng;
use super::value::{fail, EvalError, Value};

/// A client's variables: text as given (-D, \gset, \setshell) and values as computed, each
/// read as the other needs it.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    map: HashMap<String, Var, BuildFnv>,
}

/// FNV-1a for the variables' names: short keys looked up several times a transaction, where
/// the default SipHash costs more than the lookup (no untrusted keys here: the script's own).
#[derive(Debug, Clone, Copy, Default)]
struct BuildFnv;

impl std::hash::BuildHasher for BuildFnv {
    type Hasher = Fnv;
    fn build_hasher(&self) -> Fnv {
        Fnv(FNV_OFFSET_BASIS)
    }
}

struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(FNV_PRIME);
        }
    }
}

#[derive(Debug, Clone)]
struct Var {
    text: Option<String>,
    value: Option<Value>,
}

impl Vars {
    pub fn set_text(&mut self, name: &str, text: String) {
        self.map.insert(
            name.to_string(),
            Var {
                text: Some(text),
                value: None,
            },
        );
    }

    pub fn set_value(&mut self, name: &str, value: Value) {
        self.put(name, value, |_| true);
    }

    /// [`Vars::set_value`] for a name a script assigns (`\set`): false, and nothing set, when
    /// it is not a valid name. pgbench checks the name at every assignment; a variable that
    /// exists passed the check when it was made, so only a new one is checked here (the
    /// answer is the same, without scanning the name in every transaction).
    pub fn set_checked(&mut self, name: &str, value: Value) -> bool {
        self.put(name, value, super::expr::valid_name)
    }

    fn put(&mut self, name: &str, value: Value, new_ok: impl Fn(&str) -> bool) -> bool {
        match self.map.get_mut(name) {
            Some(v) => {
                v.value = Some(value);
                v.text = None;
            }
            None if new_ok(name) => {
                self.map.insert(
                    name.to_string(),
                    Var {
                        text: None,
                        value: Some(value),
                    },
                );
            }
            None => return false,
        }
        true
    }

    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// The variable as SQL text; None when it is not set.
    pub fn text(&mut self, name: &str) -> Option<&str> {
        let v = self.map.get_mut(name)?;
        if v.text.is_none() {
            v.text = Some(v.value.unwrap_or(Value::Null).text());
        }
        v.text.as_deref()
    }

    /// The variable's SQL text appended to `out`; false when it is not set. A computed
    /// value is written as it prints, with nothing kept or allocated.
    pub fn write_text(&self, name: &str, out: &mut Vec<u8>) -> bool {
        self.text_to(name, |t| out.extend_from_slice(t.as_bytes()))
    }

    /// [`Vars::write_text`], into SQL text (the simple protocol's).
    pub fn push_text(&self, name: &str, out: &mut String) -> bool {
        self.text_to(name, |t| out.push_str(t))
    }

    fn text_to(&self, name: &str, put: impl FnOnce(&str)) -> bool {
        let Some(v) = self.map.get(name) else {
            return false;
        };
        match (&v.text, v.value) {
            (Some(t), _) => put(t),
            (None, Some(Value::Int(i))) => put(int_text(i, &mut [0; 20])),
            (None, value) => put(&value.unwrap_or(Value::Null).text()),
        }
        true
    }

    /// The variable as a value, read from its text the first time.
    pub fn value(&mut self, name: &str) -> Result<Value, EvalError> {
        let Some(v) = self.map.get_mut(name) else {
            return fail(format!("undefined variable \"{name}\""));
        };
        if let Some(value) = v.value {
            return Ok(value);
        }
        let text = v.text.as_deref().unwrap_or("");
        // pgbench fails an empty value (a NULL field \gset stored) without a word.
        if text.is_empty() {
            return fail("");
        }
        match Value::parse(text) {
            Some(value) => {
                v.value = Some(value);
                Ok(value)
            }
            None => fail(format!("malformed variable \"{name}\" value: \"{text}\"")),
        }
    }
}

/// An integer's decimal text, written from the end of `buf` (20 bytes hold i64::MIN): the
/// value a `\set` computed goes into every statement that names it, in every transaction.
fn int_text(i: i64, buf: &mut [u8; 20]) -> &str {
    let (mut n, mut at) = (i.unsigned_abs(), buf.len());
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    std::str::from_utf8(&buf[at..]).unwrap_or_default()
}

/// What evaluation needs besides the expression: the variables, the client's random
/// stream, and where `debug()` says what it saw.
pub struct Ctx<'a> {
    pub vars: &'a mut Vars,
    pub rng: &'a mut PgPrng,
    /// (script, command) for debug()'s line.
    pub at: (usize, usize),
}

pub fn eval(e: &Expr, cx: &mut Ctx<'_>) -> Result<Value, EvalError> {
    match e {
        Expr::Const(v) => Ok(*v),
        Expr::Var(name) => cx.vars.value(name),
        Expr::Case(arms, other) => {
            for (cond, value) in arms {
                if eval(cond, cx)?.truth() {
                    return eval(value, cx);
                }
            }
            match other {
                Some(e) => eval(e, cx),
                None => Ok(Value::Null),
            }
        }
        Expr::Call(f, args) => call(*f, args, cx),
    }
}

/// pgbench's limit on a function's arguments (MAX_FARGS), met when it runs, not parsed.
const MAX_ARGS: usize = 16;

fn call(f: Func, args: &[Expr], cx: &mut Ctx<'_>) -> Result<Value, EvalError> {
    // The lazy ones first: AND and OR do not evaluate what they need not; NULL is NULL, and
    // anything else but a boolean is refused.
    if matches!(f, Func::And | Func::Or) {
        let a = eval(&args[0], cx)?;
        if a == Value::Null {
            return Ok(Value::Null);
        }
        let a = a.strict_bool()?;
        if (f == Func::And) != a {
            return Ok(Value::Bool(a));
        }
        return match eval(&args[1], cx)? {
            Value::Null => Ok(Value::Null),
            b => Ok(Value::Bool(b.strict_bool()?)),
        };
    }
    // On the stack: a transaction's \set calls allocate nothing.
    let mut all = [Value::Null; MAX_ARGS];
    let n = args.len().min(MAX_ARGS);
    for (slot, a) in all.iter_mut().zip(args) {
        *slot = eval(a, cx)?;
    }
    if args.len() > MAX_ARGS {
        return fail(format!(
            "too many function arguments, maximum is {MAX_ARGS}"
        ));
    }
    let many = &all[..n];
    // Any NULL argument makes the result NULL, but for IS and debug().
    if !matches!(f, Func::Is | Func::Debug) && many.contains(&Value::Null) {
        return Ok(Value::Null);
    }
    let [a, b, c] = [all[0], all[1], all[2]];
    Ok(match f {
        Func::Add | Func::Sub | Func::Mul => arith(f, a, b)?,
        Func::Div => divide(a, b)?,
        Func::Mod => Value::Int(modulo(a.as_int()?, b.as_int()?)?),
        // pgbench reads a unary minus as 0 - x.
        Func::Neg => arith(Func::Sub, Value::Int(0), a)?,
        Func::Eq | Func::Ne | Func::Lt | Func::Le | Func::Gt | Func::Ge => compare(f, a, b)?,
        Func::BitAnd => Value::Int(a.as_int()? & b.as_int()?),
        Func::BitOr => Value::Int(a.as_int()? | b.as_int()?),
        Func::BitXor => Value::Int(a.as_int()? ^ b.as_int()?),
        Func::BitNot => Value::Int(!a.as_int()?),
        Func::Shl => Value::Int(a.as_int()?.wrapping_shl(b.as_int()? as u32)),
        Func::Shr => Value::Int(a.as_int()?.wrapping_shr(b.as_int()? as u32)),
        Func::Not => Value::Bool(!a.strict_bool()?),
        Func::Is => Value::Bool(match (a, b) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            _ => false,
        }),
        Func::Abs => match a {
            Value::Int(i) => Value::Int(i.wrapping_abs()),
            x => Value::Double(x.as_double()?.abs()),
        },
        Func::Debug => {
            // pgbench numbers the command from 1 here (and from 0 in its abort messages).
            eprintln!(
                "debug(script={},command={}): {}",
                cx.at.0,
                cx.at.1 + 1,
                debug(a)
            );
            a
        }
        Func::Double => Value::Double(a.as_double()?),
        Func::Int => Value::Int(a.as_int()?),
        Func::Exp => Value::Double(a.as_double()?.exp()),
        Func::Ln => Value::Double(a.as_double()?.ln()),
        Func::Sqrt => Value::Double(a.as_double()?.sqrt()),
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Pow => Value::Double(a.as_double()?.powf(b.as_double()?)),
        Func::Greatest | Func::Least => extreme(f == Func::Greatest, many)?,
        Func::Hash | Func::HashMurmur2 => Value::Int(murmur2(a.as_int()?, b.as_int()?)),
        Func::HashFnv1a => Value::Int(fnv1a(a.as_int()?, b.as_int()?)),
        Func::Permute => Value::Int(permute(a.as_int()?, b.as_int()?, c.as_int()?)?),
        Func::Random => Value::Int(random(cx.rng, a.as_int()?, b.as_int()?)?),
        Func::RandomExponential => {
            let (lo, hi) = range(a, b)?;
            Value::Int(exponential(cx.rng, lo, hi, c.as_double()?)?)
        }
        Func::RandomGaussian => {
            let (lo, hi) = range(a, b)?;
            Value::Int(gaussian(cx.rng, lo, hi, c.as_double()?)?)
        }
        Func::RandomZipfian => {
            let (lo, hi) = range(a, b)?;
            Value::Int(zipfian(cx.rng, lo, hi, c.as_double()?)?)
        }
        Func::And | Func::Or => unreachable!("handled above"),
    })
}

/// pgbench's words for an integer operation that overflowed: "bigint add out of range".
fn out_of_range(op: &str) -> EvalError {
    EvalError(format!("bigint {op} out of range"))
}

/// pgbench's rule for arithmetic, comparison, least and greatest: doubles if any operand is
/// one, else integers (so a boolean is refused as an int there, as a double here).
fn any_double(vs: &[Value]) -> bool {
    vs.iter().any(|v| matches!(v, Value::Double(_)))
}

fn debug(v: Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Int(i) => format!("int {i}"),
        Value::Double(d) => format!("double {}", super::value::g15(d)),
    }
}

fn arith(f: Func, a: Value, b: Value) -> Result<Value, EvalError> {
    if !any_double(&[a, b]) {
        let (x, y) = (a.as_int()?, b.as_int()?);
        let (r, op) = match f {
            Func::Add => (x.checked_add(y), "add"),
            Func::Sub => (x.checked_sub(y), "sub"),
            _ => (x.checked_mul(y), "mul"),
        };
        return r.map(Value::Int).ok_or_else(|| out_of_range(op));
    }
    let (x, y) = (a.as_double()?, b.as_double()?);
    Ok(Value::Double(match f {
        Func::Add => x + y,
        Func::Sub => x - y,
        _ => x * y,
    }))
}

/// Integer division refuses a zero divisor; a double's gives an infinity or NaN, as C's does.
fn divide(a: Value, b: Value) -> Result<Value, EvalError> {
    if !any_double(&[a, b]) {
        let (x, y) = (a.as_int()?, b.as_int()?);
        if y == 0 {
            return fail("division by zero");
        }
        return x
            .checked_div(y)
            .map(Value::Int)
            .ok_or_else(|| out_of_range("div"));
    }
    Ok(Value::Double(a.as_double()? / b.as_double()?))
}

fn modulo(x: i64, y: i64) -> Result<i64, EvalError> {
    if y == 0 {
        return fail("division by zero");
    }
    Ok(if y == -1 { 0 } else { x % y })
}

fn compare(f: Func, a: Value, b: Value) -> Result<Value, EvalError> {
    let ord = match any_double(&[a, b]) {
        false => a.as_int()?.partial_cmp(&b.as_int()?),
        true => a.as_double()?.partial_cmp(&b.as_double()?),
    };
    use std::cmp::Ordering::*;
    let r = match (f, ord) {
        (Func::Ne, o) => o != Some(Equal),
        (_, None) => false,
        (Func::Eq, Some(o)) => o == Equal,
        (Func::Lt, Some(o)) => o == Less,
        (Func::Le, Some(o)) => o != Greater,
        (Func::Gt, Some(o)) => o == Greater,
        (_, Some(o)) => o != Less,
    };
    Ok(Value::Bool(r))
}

fn extreme(greatest: bool, vs: &[Value]) -> Result<Value, EvalError> {
    if !any_double(vs) {
        let ints = vs
            .iter()
            .map(|v| v.as_int())
            .collect::<Result<Vec<_>, _>>()?;
        let r = if greatest {
            ints.iter().max()
        } else {
            ints.iter().min()
        };
        return Ok(Value::Int(*r.unwrap_or(&0)));
    }
    let mut best: Option<f64> = None;
    for v in vs {
        let d = v.as_double()?;
        best = Some(match best {
            None => d,
            Some(b) if greatest => b.max(d),
            Some(b) => b.min(d),
        });
    }
    Ok(Value::Double(best.unwrap_or(0.0)))
}

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
const MM2_MUL_TIMES_8: u64 = 0x3525_3c9a_de8f_4ca8;
const MM2_ROT: u32 = 47;

/// FNV-1a over the value's 8 bytes, least significant first, the seed folded into the basis.
pub fn fnv1a(v: i64, seed: i64) -> i64 {
    let mut r = FNV_OFFSET_BASIS ^ seed as u64;
    let mut v = v as u64;
    for _ in 0..8 {
        r ^= v & 0xff;
        r = r.wrapping_mul(FNV_PRIME);
        v >>= 8;
    }
    r as i64
}

/// MurmurHash2 (64-bit) of one 8-byte value.
pub fn murmur2(v: i64, seed: i64) -> i64 {
    let mut r = seed as u64 ^ MM2_MUL_TIMES_8;
    let mut k = v as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    r ^= k;
    r = r.wrapping_mul(MM2_MUL);
    r ^= r >> MM2_ROT;
    r = r.wrapping_mul(MM2_MUL);
    r ^= r >> MM2_ROT;
    r as i64
}

/// pgbench's permutation of [0, size) keyed by `seed` (see `prng.rs`), after its check.
fn permute(i: i64, size: i64, seed: i64) -> Result<i64, EvalError> {
    if size <= 0 {
        return fail("permute size parameter must be greater than zero");
    }
    Ok(super::prng::permute(i, size, seed))
}

fn range(a: Value, b: Value) -> Result<(i64, i64), EvalError> {
    let (lo, hi) = (a.as_int()?, b.as_int()?);
    if lo > hi {
        return fail("empty range given to random");
    }
    if hi.checked_sub(lo).and_then(|d| d.checked_add(1)).is_none() {
        return fail("random range is too large");
    }
    Ok((lo, hi))
}

fn random(rng: &mut PgPrng, lo: i64, hi: i64) -> Result<i64, EvalError> {
    let (lo, hi) = range(Value::Int(lo), Value::Int(hi))?;
    Ok(lo.wrapping_add(rng.range(0, hi.wrapping_sub(lo) as u64) as i64))
}

fn exponential(rng: &mut PgPrng, lo: i64, hi: i64, param: f64) -> Result<i64, EvalError> {
    if param <= 0.0 {
        return fail(format!(
            "exponential parameter must be greater than zero (not {param:.6})"
        ));
    }
    let cut = (-param).exp();
    let uniform = 1.0 - rng.double();
    let r = -(cut + (1.0 - cut) * uniform).ln() / param;
    Ok(lo + ((hi - lo + 1) as f64 * r) as i64)
}

fn gaussian(rng: &mut PgPrng, lo: i64, hi: i64, param: f64) -> Result<i64, EvalError> {
    if param < 2.0 {
        return fail(format!(
            "gaussian parameter must be at least 2.000000 (not {param:.6})"
        ));
    }
    let stdev = loop {
        let s = rng.normal();
        if s >= -param && s < param {
            break s;
        }
    };
    let r = (stdev + param) / (param * 2.0);
    Ok(lo + ((hi - lo + 1) as f64 * r) as i64)
}

/// Devroye's rejection method, as pgbench draws it.
fn zipfian(rng: &mut PgPrng, lo: i64, hi: i64, s: f64) -> Result<i64, EvalError> {
    if !(1.001..=1000.0).contains(&s) {
        return fail(format!(
            "zipfian parameter must be in range [1.001, 1000] (not {s:.6})"
        ));
    }
    let n = hi - lo + 1;
    if n <= 1 {
        return Ok(lo);
    }
    let b = 2f64.powf(s - 1.0);
    loop {
        let u = rng.double();
        let v = rng.double();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            return Ok(lo - 1 + x as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::expr::parse;
    use super::*;

    fn run(src: &str, vars: &mut Vars) -> Result<Value, EvalError> {
        let mut rng = PgPrng::seeded(1);
        let mut cx = Ctx {
            vars,
            rng: &mut rng,
            at: (0, 0),
        };
        eval(&parse(src).unwrap(), &mut cx)
    }

    #[test]
    fn an_integer_reads_as_rust_prints_it_and_a_new_name_is_checked() {
        for i in [0, 7, -7, 10, 123_456_789, i64::MAX, i64::MIN] {
            assert_eq!(int_text(i, &mut [0; 20]), i.to_string());
        }
        let mut v = Vars::default();
        v.set_value("aid", Value::Int(-42));
        let mut sql = String::new();
        assert!(v.push_text("aid", &mut sql) && !v.push_text("bid", &mut sql));
        assert_eq!(sql, "-42");
        assert!(v.set_checked("aid", Value::Int(1)) && v.set_checked("b_2", Value::Int(2)));
        assert!(!v.set_checked("2b", Value::Int(2)) && !v.contains("2b"));
    }

    #[test]
    fn arithmetic_is_pgbenchs() {
        let mut v = Vars::default();
        v.set_text("scale", "2".into());
        assert_eq!(run("7 / 2", &mut v), Ok(Value::Int(3)));
        assert_eq!(run("-7 / 2", &mut v), Ok(Value::Int(-3)));
        assert_eq!(run("7 / 2.0", &mut v), Ok(Value::Double(3.5)));
        assert_eq!(run("-7 % 3", &mut v), Ok(Value::Int(-1)));
        assert_eq!(run("100000 * :scale", &mut v), Ok(Value::Int(200000)));
        // One precedence level, left to right: (5 # 3) << 1.
        assert_eq!(run("5 # 3 << 1", &mut v), Ok(Value::Int(12)));
        assert_eq!(
            run("9223372036854775807 + 1", &mut v).unwrap_err().0,
            "bigint add out of range"
        );
        assert_eq!(run("1 / 0", &mut v).unwrap_err().0, "division by zero");
        assert_eq!(
            run(":nope + 1", &mut v).unwrap_err().0,
            "undefined variable \"nope\""
        );
        assert_eq!(run("NULL AND true", &mut v), Ok(Value::Null));
        assert_eq!(run("false AND 1/0 = 1", &mut v), Ok(Value::Bool(false)));
        assert_eq!(run("2 IS TRUE", &mut v), Ok(Value::Bool(false)));
        assert_eq!(
            run("CASE WHEN :scale > 1 THEN 10 ELSE 20 END", &mut v),
            Ok(Value::Int(10))
        );
        assert_eq!(run("greatest(1, 2.5, 2)", &mut v), Ok(Value::Double(2.5)));
        assert_eq!(run("least(3, 1, 2)", &mut v), Ok(Value::Int(1)));
    }

    #[test]
    fn randoms_stay_in_their_ranges_and_refuse_bad_parameters() {
        let mut v = Vars::default();
        for f in [
            "random(5, 9)",
            "random_exponential(5, 9, 2.0)",
            "random_gaussian(5, 9, 2.5)",
            "random_zipfian(5, 9, 1.5)",
        ] {
            let mut rng = PgPrng::seeded(3);
            let e = parse(f).unwrap();
            for _ in 0..2000 {
                let mut cx = Ctx {
                    vars: &mut v,
                    rng: &mut rng,
                    at: (0, 0),
                };
                let x = eval(&e, &mut cx).unwrap().as_int().unwrap();
                assert!((5..=9).contains(&x), "{f}: {x}");
            }
        }
        assert!(run("random(9, 5)", &mut v).is_err());
        assert!(run("random_gaussian(1, 9, 1.5)", &mut v).is_err());
        assert!(run("random_zipfian(1, 9, 1.0)", &mut v).is_err());
    }
}
