//! Which scripts keep a client thread per connection. A state on the reactor shares its
//! thread with hundreds of others, so a call that waits inside C (not on the reactor) stalls
//! them all: such a script runs as sysbench runs every script, each connection's state on a
//! thread of its own. Its text says so before any state loads, and so does the text of each
//! module it `require`s (found on the module path, as Lua would find it).

/// Calls that wait inside C, or that load code this check cannot read first (`dofile` of a
/// computed path, as sysbench 0.5's scripts load their common file). A script's own
/// coroutines are not among them: a state's fiber suspends its whole stack, coroutines and
/// all (`fiber.rs`).
const WAITING_CALLS: &[&str] = &[
    "os.execute",
    "io.popen",
    "io.read",
    "io.lines",
    "io.stdin",
    "ffi.load",
    "dofile",
    "loadfile",
    "loadlib",
];

/// The ffi.C names a script may call on the reactor: bakeoff's counters, which return at once.
const FFI_ON_REACTOR: &[&str] = &["sb_counter_inc", "SB_CNT_"];

/// The call that keeps `text`'s states off the reactor, if any: a waiting call, an ffi.C
/// function other than the counters (`ffi.C.usleep`, or ffi.C taken whole), or a C module
/// (`find` looks a module's name up: its Lua text, or None where it is C or not found).
pub(super) fn waits_in_c(text: &str, find: &dyn Fn(&str) -> Option<Module>) -> Option<String> {
    let mut seen = Vec::new();
    waits_in(text, find, &mut seen)
}

/// What `require NAME` finds.
pub(super) enum Module {
    Lua(String),
    C(String),
}

fn waits_in(
    text: &str,
    find: &dyn Fn(&str) -> Option<Module>,
    seen: &mut Vec<String>,
) -> Option<String> {
    if let Some(call) = WAITING_CALLS.iter().find(|c| text.contains(*c)) {
        return Some(call.trim_end_matches('.').to_string());
    }
    // `ffi.C`, or the ffi module under another name (`local f = require "ffi"; f.C`): any
    // `NAME.C` is read as ffi's C namespace.
    let word = |c: char| c.is_alphanumeric() || c == '_';
    for (at, _) in text.match_indices(".C") {
        let owner: String = text[..at].chars().rev().take_while(|c| word(*c)).collect();
        let rest = &text[at + ".C".len()..];
        if owner.is_empty() || rest.starts_with(word) {
            continue;
        }
        let owner: String = owner.chars().rev().collect();
        let name: String = match rest.strip_prefix('.') {
            Some(r) => r.chars().take_while(|c| word(*c)).collect(),
            None => return Some(format!("{owner}.C")),
        };
        if !FFI_ON_REACTOR.iter().any(|ok| name.starts_with(ok)) {
            return Some(format!("{owner}.C.{name}"));
        }
    }
    for name in required(text) {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        match find(&name) {
            Some(Module::Lua(module)) => {
                if let Some(why) = waits_in(&module, find, seen) {
                    return Some(format!("{why} (in module {name})"));
                }
            }
            Some(Module::C(path)) => return Some(format!("require of the C module {path}")),
            None => {}
        }
    }
    None
}

/// The module names `text` requires with a literal name: `require "x"`, `require("x")`.
fn required(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("require") {
        let rest = text[at + "require".len()..].trim_start();
        let rest = rest.strip_prefix('(').unwrap_or(rest).trim_start();
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        if let Some(end) = rest[1..].find(quote) {
            out.push(rest[1..1 + end].to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<Module> {
        None
    }

    #[test]
    fn scripts_that_wait_in_c_are_named_by_the_call() {
        let stock = "require(\"oltp_common\")\nfunction event() execute_point_selects() end";
        assert_eq!(waits_in_c(stock, &none), None);
        let counters = "ffi.cdef[[void sb_counter_inc(int, sb_counter_type);]]\n\
                        ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_ERROR)";
        assert_eq!(waits_in_c(counters, &none), None);
        let sleeps = "ffi.cdef[[int usleep(unsigned int);]]\nffi.C.usleep(10)";
        assert_eq!(waits_in_c(sleeps, &none).as_deref(), Some("ffi.C.usleep"));
        assert_eq!(
            waits_in_c("local C = ffi.C\nC.usleep(1)", &none).as_deref(),
            Some("ffi.C")
        );
        assert_eq!(
            waits_in_c("os.execute('sleep 1')", &none).as_deref(),
            Some("os.execute")
        );
        assert_eq!(waits_in_c("local co = coroutine.wrap(f)", &none), None);
        let renamed = "local f = require('ffi')\nf.C.usleep(5)";
        assert_eq!(waits_in_c(renamed, &none).as_deref(), Some("f.C.usleep"));
        assert_eq!(
            waits_in_c("dofile(pathtest .. 'common.lua')", &none).as_deref(),
            Some("dofile")
        );
    }

    #[test]
    fn a_required_module_is_read_as_the_script_is() {
        let find = |name: &str| match name {
            "helpers" => Some(Module::Lua("require 'deeper'".into())),
            "deeper" => Some(Module::Lua("io.popen('ls')".into())),
            "socket" => Some(Module::C("/usr/lib/lua/5.1/socket.so".into())),
            "loop" => Some(Module::Lua("require('loop')".into())),
            _ => None,
        };
        assert_eq!(
            waits_in_c("require('helpers')", &find).as_deref(),
            Some("io.popen (in module deeper) (in module helpers)")
        );
        assert_eq!(
            waits_in_c("local s = require \"socket\"", &find).as_deref(),
            Some("require of the C module /usr/lib/lua/5.1/socket.so")
        );
        assert_eq!(waits_in_c("require('loop')", &find), None);
        assert_eq!(waits_in_c("require('ffi')", &find), None);
    }
}
