//! `sysbench.rand`: the generators of sysbench 1.0.20's Lua API over bakeoff's own (the
//! xoroshiro128+ stream and distributions the native workloads use), one stream per Lua
//! state, as sysbench keeps one per thread.
//!
//! 1.0.20 has no `zipfian` or `varstring` in this table (sysbench's own tests check that a
//! script calling them fails), so neither is here; `--rand-type=zipfian` still reaches
//! `sysbench.rand.default`.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use mlua::{Lua, Table};

use crate::{Distribution, RandType, Rng, Unique};

thread_local! {
    /// The stream of the Lua state running on this thread now. A thread may hold several
    /// states (one per server where servers take turns): each keeps its own stream in a
    /// [`Stream`] and swaps it in while it runs, so its `tid`'s draws are the same whichever
    /// states share its thread.
    static RNG: RefCell<Rng> = RefCell::new(Rng::seeded(0));
    /// What `sysbench.rand.default` draws from (`--rand-type` and its parameters).
    static DEFAULT: Cell<Distribution> = Cell::new(Distribution::new(RandType::Special));
}

/// A Lua state's own stream while another state runs on its thread.
pub(super) struct Stream {
    rng: Rng,
    default: Distribution,
}

impl Stream {
    /// The stream this thread holds now (a state just made, its `thread_init` run), taken
    /// for the state to keep.
    pub(super) fn take() -> Stream {
        Stream {
            rng: RNG.with(|r| r.borrow().clone()),
            default: DEFAULT.with(Cell::get),
        }
    }

    /// Exchange this stream with the thread's: once to run the state, again to put it away.
    pub(super) fn swap(&mut self) {
        RNG.with(|r| std::mem::swap(&mut *r.borrow_mut(), &mut self.rng));
        self.default = DEFAULT.with(|d| d.replace(self.default));
    }
}

/// The `--rand-*` options a script's run was given.
#[derive(Debug, Clone)]
pub struct RandOptions {
    /// `--rand-type`: what `sysbench.rand.default` draws from.
    pub default: Distribution,
    /// `--rand-seed`; 0: from the clock, as sysbench.
    pub seed: u64,
}

impl RandOptions {
    /// From the options as given (names with dashes; the last one given wins).
    pub fn from_options(options: &[(String, Option<String>)]) -> Result<RandOptions, String> {
        let given = |name: &str| {
            options
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.clone())
        };
        let number = |name: &str, default: f64| -> Result<f64, String> {
            match given(name) {
                Some(v) => v
                    .parse()
                    .map_err(|_| format!("Invalid value for --{name}: '{v}'")),
                None => Ok(default),
            }
        };
        let kind: RandType = match given("rand-type") {
            Some(v) => v.parse()?,
            None => RandType::Special,
        };
        let mut d = Distribution::new(kind);
        d.spec_iter = number("rand-spec-iter", d.spec_iter as f64)? as u32;
        d.spec_pct = number("rand-spec-pct", d.spec_pct)?;
        d.spec_res = number("rand-spec-res", d.spec_res)?;
        d.pareto_h = number("rand-pareto-h", d.pareto_h)?;
        d.zipfian_exp = number("rand-zipfian-exp", d.zipfian_exp)?;
        let seed = number("rand-seed", 0.0)? as u64;
        Ok(RandOptions { default: d, seed })
    }
}

/// Seed this thread's stream for state `tid`: from `--rand-seed` when given, so runs repeat,
/// else from the clock.
pub(super) fn seed_thread(seed: u64, tid: u32) {
    let base = match seed {
        0 => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
        s => s,
    };
    RNG.with(|r| *r.borrow_mut() = Rng::seeded(base.wrapping_add(tid as u64)));
}

fn with_rng<T>(f: impl FnOnce(&mut Rng) -> T) -> T {
    RNG.with(|r| f(&mut r.borrow_mut()))
}

/// Fill `sysbench.rand`: the generators an event calls are C functions the prelude reaches
/// through ffi ([`fast_functions`]); `unique` is shared by every state of the run, so its
/// values never repeat across threads.
pub(super) fn install(
    lua: &Lua,
    sysbench: &Table,
    opts: &RandOptions,
    unique: Arc<Unique>,
) -> mlua::Result<()> {
    DEFAULT.with(|d| d.set(opts.default));
    let rand = lua.create_table()?;
    rand.set(
        "unique",
        lua.create_function(move |_, _: mlua::MultiValue| Ok(unique.next()))?,
    )?;
    rand.set(
        "string",
        lua.create_function(|lua, fmt: mlua::LuaString| {
            let out = with_rng(|r| from_template(r, &fmt.as_bytes()));
            lua.create_string(out)
        })?,
    )?;
    sysbench.set("rand", rand)
}

/// A draw in [a, b] (b below a draws a) from `kind` with the run's parameters.
fn draw(kind: Option<RandType>, a: u32, b: u32) -> u32 {
    let mut d = DEFAULT.with(Cell::get);
    if let Some(k) = kind {
        d.kind = k;
    }
    with_rng(|r| d.sample(r, a, b.max(a)))
}

extern "C" fn bk_rand_default(a: u32, b: u32) -> u32 {
    draw(None, a, b)
}
extern "C" fn bk_rand_uniform(a: u32, b: u32) -> u32 {
    draw(Some(RandType::Uniform), a, b)
}
extern "C" fn bk_rand_gaussian(a: u32, b: u32) -> u32 {
    draw(Some(RandType::Gaussian), a, b)
}
extern "C" fn bk_rand_special(a: u32, b: u32) -> u32 {
    draw(Some(RandType::Special), a, b)
}
extern "C" fn bk_rand_pareto(a: u32, b: u32) -> u32 {
    draw(Some(RandType::Pareto), a, b)
}
extern "C" fn bk_rand_uniform_double() -> f64 {
    with_rng(|r| r.unit())
}
extern "C" fn bk_rand_uint64() -> u64 {
    with_rng(|r| r.next_u64())
}

/// The generators for the prelude's ffi: name, C signature, address.
pub(super) fn fast_functions() -> Vec<(&'static str, &'static str, usize)> {
    let between = "uint32_t (*)(uint32_t, uint32_t)";
    vec![
        (
            "rand_default",
            between,
            bk_rand_default as *const () as usize,
        ),
        (
            "rand_uniform",
            between,
            bk_rand_uniform as *const () as usize,
        ),
        (
            "rand_gaussian",
            between,
            bk_rand_gaussian as *const () as usize,
        ),
        (
            "rand_special",
            between,
            bk_rand_special as *const () as usize,
        ),
        ("rand_pareto", between, bk_rand_pareto as *const () as usize),
        (
            "rand_uniform_double",
            "double (*)(void)",
            bk_rand_uniform_double as *const () as usize,
        ),
        (
            "rand_uint64",
            "uint64_t (*)(void)",
            bk_rand_uint64 as *const () as usize,
        ),
    ]
}

/// sysbench's string templates: `#` a digit, `@` a lowercase letter, anything else itself.
fn from_template(r: &mut Rng, fmt: &[u8]) -> Vec<u8> {
    fmt.iter()
        .map(|&c| match c {
            b'#' => b'0' + r.uniform(0, 9) as u8,
            b'@' => b'a' + r.uniform(0, 25) as u8,
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_keep_their_shape() {
        let mut r = Rng::seeded(3);
        let s = from_template(&mut r, b"abc-###-@@@-xyz");
        let s = String::from_utf8(s).unwrap();
        assert_eq!(&s[..4], "abc-");
        assert!(s[4..7].bytes().all(|c| c.is_ascii_digit()), "{s}");
        assert!(s[8..11].bytes().all(|c| c.is_ascii_lowercase()), "{s}");
        assert_eq!(&s[11..], "-xyz");
    }

    #[test]
    fn options_pick_the_default_distribution_and_its_parameters() {
        let o = |n: &str, v: &str| (n.to_string(), Some(v.to_string()));
        let r = RandOptions::from_options(&[o("rand-type", "pareto"), o("rand-pareto-h", "0.1")])
            .unwrap();
        assert_eq!(r.default.kind, RandType::Pareto);
        assert_eq!(r.default.pareto_h, 0.1);
        let bad = RandOptions::from_options(&[o("rand-type", "cauchy")]).unwrap_err();
        assert!(bad.contains("cauchy"), "{bad}");
    }
}
