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
}

/// The connection's result set, as the connection refills it and as scripts hold it
/// (`con.rs` in the prelude, handed back by every query and execute).
#[derive(Clone, Default)]
pub(super) struct Results(Rc<RefCell<ResultSet>>);

impl Results {
    pub fn set(&self, rs: ResultSet) {
        *self.0.borrow_mut() = rs;
    }

    /// The same result set, for a script to hold.
    pub fn handle(&self) -> Results {
        self.clone()
    }
}

impl UserData for Results {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("nrows", |_, this| Ok(this.0.borrow().nrows));
        f.add_field_method_get("nfields", |_, this| Ok(this.0.borrow().nfields));
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("fetch_row", |lua, this, ()| {
            let Some(row) = this.0.borrow_mut().rows.next() else {
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
        m.add_method("free", |_, this, ()| {
            this.0.borrow_mut().rows = Vec::new().into_iter();
            Ok(())
        });
        m.add_meta_method("__tostring", |_, _, ()| Ok("<sql_result>"));
    }
}
