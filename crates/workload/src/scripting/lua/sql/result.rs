//! A connection's result set: what its last statement returned, refilled in place by each
//! statement (sysbench's driver keeps one per connection too), so a statement allocates no
//! result object; a text query's rows are kept for `fetch_row`.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{UserData, UserDataFields, UserDataMethods, Value};

/// A statement's result: its row count (rows read, or rows changed) and, for a text query,
/// its rows to fetch.
#[derive(Default)]
pub(super) struct ResultSet {
    pub nrows: u64,
    pub nfields: u32,
    pub rows: std::vec::IntoIter<Vec<Option<String>>>,
    /// The statement returned rows and they were not freed: sysbench's connection is then in
    /// its "result set" state, the only one in which fetch_row and free apply.
    pub is_set: bool,
}

/// The connection's result set, as the connection refills it and as scripts hold it
/// (`con.rs` in the prelude, handed back by every query and execute).
#[derive(Clone, Default)]
pub(super) struct Results {
    set: Rc<RefCell<ResultSet>>,
    /// Say a misuse in sysbench's ALERT lines (from --verbosity=1).
    alerts: bool,
}

impl Results {
    pub fn new(alerts: bool) -> Results {
        Results {
            set: Rc::default(),
            alerts,
        }
    }

    pub fn set(&self, rs: ResultSet) {
        *self.set.borrow_mut() = rs;
    }

    /// sysbench's driver's ALERT line for a misuse of the API.
    pub fn alert(&self, what: &str) {
        if self.alerts {
            super::say::log(format!("ALERT: {what}"));
        }
    }

    /// The same result set, for a script to hold.
    pub fn handle(&self) -> Results {
        self.clone()
    }
}

impl UserData for Results {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("nrows", |_, this| Ok(this.set.borrow().nrows));
        f.add_field_method_get("nfields", |_, this| Ok(this.set.borrow().nfields));
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("fetch_row", |lua, this, ()| {
            if !this.set.borrow().is_set {
                this.alert("attempt to fetch row from an invalid result set");
                return Ok(Value::Nil);
            }
            let Some(row) = this.set.borrow_mut().rows.next() else {
                return Ok(Value::Nil);
            };
            let t = lua.create_table_with_capacity(row.len(), 0)?;
            for (i, v) in row.into_iter().enumerate() {
                if let Some(v) = v {
                    t.raw_set(i + 1, v)?;
                }
            }
            Ok(Value::Table(t))
        });
        // Nothing, or why it failed (sysbench's assert message) for the prelude to raise.
        m.add_method("free", |_, this, ()| {
            let mut set = this.set.borrow_mut();
            if !std::mem::take(&mut set.is_set) {
                this.alert("attempt to free an invalid result set");
                return Ok(Some("db_free_results() failed"));
            }
            set.rows = Vec::new().into_iter();
            Ok(None)
        });
        m.add_meta_method("__tostring", |_, _, ()| Ok("<sql_result>"));
    }
}
