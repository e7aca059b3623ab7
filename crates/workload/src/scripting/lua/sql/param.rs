//! Bound parameters (`stmt:bind_create()`): a kind, the most bytes a text takes, a value.
//! The prelude's parameter objects set values through the ffi functions here.

use std::cell::RefCell;
use std::ffi::c_int;
use std::rc::Rc;

use bakeoff_driver::Param;
use mlua::{UserData, UserDataMethods};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Int = 0,
    Double = 1,
    Text = 2,
}

impl Kind {
    /// sysbench.sql.type's number: the kind it binds as, and the most bytes a value takes.
    pub fn of(sql_type: i64, max_len: Option<usize>) -> Option<(Kind, usize)> {
        Some(match sql_type {
            1..=4 => (Kind::Int, 8),
            5 | 6 => (Kind::Double, 8),
            11 | 12 => (Kind::Text, max_len.unwrap_or(0)),
            _ => return None,
        })
    }
}

/// A bound parameter: its kind, the most bytes it takes, and its value.
pub(super) struct ParamSlot {
    kind: Kind,
    max_len: usize,
    value: Slot,
}

#[derive(Debug, Clone)]
enum Slot {
    Null,
    Int(i64),
    Double(f64),
    Text(Vec<u8>),
}

impl ParamSlot {
    /// A value of this parameter's kind, whatever it holds now (a statement's types).
    pub fn sample(&self) -> Param<'static> {
        match self.kind {
            Kind::Int => Param::Int(0),
            Kind::Double => Param::Double(0.0),
            Kind::Text => Param::Str(b""),
        }
    }

    /// Text, cut at the parameter's length, into the buffer it already has.
    fn set_text(&mut self, b: &[u8]) {
        let b = &b[..b.len().min(self.max_len)];
        match &mut self.value {
            Slot::Text(buf) => {
                buf.clear();
                buf.extend_from_slice(b);
            }
            other => *other = Slot::Text(b.to_vec()),
        }
    }

    pub fn param(&self) -> Param<'_> {
        match &self.value {
            Slot::Null => Param::Null,
            Slot::Int(i) => Param::Int(*i),
            Slot::Double(d) => Param::Double(*d),
            Slot::Text(t) => Param::Str(t),
        }
    }
}

/// A parameter as its statement and the script's parameter object share it.
#[derive(Clone)]
pub(super) struct LuaParam(pub Rc<RefCell<ParamSlot>>);

impl LuaParam {
    pub fn new(kind: Kind, max_len: usize) -> LuaParam {
        LuaParam(Rc::new(RefCell::new(ParamSlot {
            kind,
            max_len,
            value: Slot::Null,
        })))
    }
}

impl UserData for LuaParam {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        // The address the ffi functions take: valid while this userdata lives (the prelude's
        // parameter object holds both).
        m.add_method("ptr", |_, this, ()| Ok(Rc::as_ptr(&this.0) as usize));
        m.add_method("kind", |_, this, ()| Ok(this.0.borrow().kind as i64));
    }
}

/// Run `f` on the slot behind `p`, unless it is null or in use (then nothing: 1).
fn with_slot(p: *const RefCell<ParamSlot>, f: impl FnOnce(&mut ParamSlot)) -> c_int {
    // SAFETY: the prelude passes only addresses from `ptr` above, of parameters its objects
    // keep alive; all on this thread (one Lua state per thread).
    let Some(cell) = (unsafe { p.as_ref() }) else {
        return 1;
    };
    match cell.try_borrow_mut() {
        Ok(mut slot) => {
            f(&mut slot);
            0
        }
        Err(_) => 1,
    }
}

extern "C" fn bk_param_null(p: *const RefCell<ParamSlot>) -> c_int {
    with_slot(p, |s| s.value = Slot::Null)
}

extern "C" fn bk_param_int(p: *const RefCell<ParamSlot>, v: i64) -> c_int {
    with_slot(p, |s| s.value = Slot::Int(v))
}

extern "C" fn bk_param_double(p: *const RefCell<ParamSlot>, v: f64) -> c_int {
    with_slot(p, |s| s.value = Slot::Double(v))
}

extern "C" fn bk_param_text(p: *const RefCell<ParamSlot>, text: *const u8, len: usize) -> c_int {
    if text.is_null() {
        return 1;
    }
    // SAFETY: LuaJIT passes a Lua string's bytes and the length the prelude took of it.
    let bytes = unsafe { std::slice::from_raw_parts(text, len) };
    with_slot(p, |s| s.set_text(bytes))
}

/// The parameter functions for the prelude: name, C signature, address.
pub(crate) fn fast_functions() -> Vec<(&'static str, &'static str, usize)> {
    vec![
        (
            "param_null",
            "int (*)(void *)",
            bk_param_null as *const () as usize,
        ),
        (
            "param_int",
            "int (*)(void *, int64_t)",
            bk_param_int as *const () as usize,
        ),
        (
            "param_double",
            "int (*)(void *, double)",
            bk_param_double as *const () as usize,
        ),
        (
            "param_text",
            "int (*)(void *, const char *, size_t)",
            bk_param_text as *const () as usize,
        ),
    ]
}
