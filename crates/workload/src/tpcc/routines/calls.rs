//! A terminal's transactions as calls of the server's routines: one round trip each, the
//! inputs the same as the client-side statements', the audit's tallies the same.

use bakeoff_driver::{Connection, Param};

use super::super::db::{missing, Stop};
use super::super::input::{Input, Who};
use super::super::random::last_name;
use super::super::sql::MAX_LINES;
use super::super::terminal::Terminal;
use super::{line_lists, Call, MISSING, UNUSED_ITEM};
use crate::scripting::{EventError, StmtCounts};

impl<C: Connection> Terminal<C> {
    /// Run `input`'s transaction by one call; its tallies for the audit.
    pub(in crate::tpcc) async fn by_call(
        &mut self,
        input: &Input,
        c: &mut StmtCounts,
    ) -> Result<[u32; 4], Stop> {
        let int = |v: u32| Param::Int(i64::from(v));
        match input {
            Input::NewOrder {
                w,
                d,
                c: cust,
                lines,
                remote,
                rollback,
            } => {
                let n = lines.len();
                // Stock rows taken in key order, as the client-side statements lock them, so
                // that two New-Orders cannot deadlock on them; the unused item stays last.
                let mut sorted = [lines[0]; MAX_LINES];
                sorted[..n].copy_from_slice(lines);
                let valid = if *rollback { n - 1 } else { n };
                sorted[..valid].sort_unstable_by_key(|l| (l.supply_w, l.item));
                let ends = line_lists(&sorted[..n], &mut self.text);
                let t = &self.text;
                let p = [
                    int(*w),
                    int(*d),
                    int(*cust),
                    Param::Int(n as i64),
                    Param::Str(&t[..ends[0]]),
                    Param::Str(&t[ends[0]..ends[1]]),
                    Param::Str(&t[ends[1]..ends[2]]),
                    Param::Int(i64::from(*remote == 0)),
                ];
                let tally = [0, n as u32, *remote, 0];
                match self.db.call(Call::NewOrder, &p, c).await? {
                    // The unused item of 2.4.1.4: rolled back by the routine, as the
                    // specification wants. Not an error.
                    Err(e) if e.sql_state == UNUSED_ITEM => match rollback {
                        true => Ok([1, n as u32, *remote, 0]),
                        false => Err(missing("an item")),
                    },
                    answer => answer
                        .map(|_| tally)
                        .map_err(|e| refused(e, Call::NewOrder)),
                }
            }
            Input::Payment {
                w,
                d,
                c_w,
                c_d,
                who,
                cents,
            } => {
                let id = self.who(*who);
                let p = [
                    int(*w),
                    int(*d),
                    int(*c_w),
                    int(*c_d),
                    int(id),
                    Param::Str(&self.name),
                    Param::Double(f64::from(*cents) / 100.0),
                ];
                self.db
                    .call(Call::Payment, &p, c)
                    .await?
                    .map_err(|e| refused(e, Call::Payment))?;
                Ok([
                    u32::from(c_w != w),
                    u32::from(matches!(who, Who::Last(_))),
                    0,
                    0,
                ])
            }
            Input::OrderStatus { w, d, who } => {
                let id = self.who(*who);
                let p = [int(*w), int(*d), int(id), Param::Str(&self.name)];
                self.db
                    .call(Call::OrderStatus, &p, c)
                    .await?
                    .map_err(|e| refused(e, Call::OrderStatus))?;
                Ok([u32::from(matches!(who, Who::Last(_))), 0, 0, 0])
            }
            Input::Delivery { w, carrier } => {
                self.db
                    .call(Call::Delivery, &[int(*w), int(*carrier)], c)
                    .await?
                    .map_err(|e| refused(e, Call::Delivery))?;
                let skipped = self
                    .db
                    .rows
                    .int(0, 0)
                    .filter(|s| (0..=10).contains(s))
                    .ok_or_else(|| missing("Delivery's count of districts skipped"))?;
                Ok([skipped as u32, 0, 0, 0])
            }
            Input::StockLevel { w, d, threshold } => {
                let p = [int(*w), int(*d), int(*threshold)];
                self.db
                    .call(Call::StockLevel, &p, c)
                    .await?
                    .map_err(|e| refused(e, Call::StockLevel))?;
                Ok([0; 4])
            }
        }
    }

    /// The customer's number for a call: `who`'s, or 0 with its last name in `self.name`
    /// (the routine takes the middle one); `self.name` is empty for a number.
    fn who(&mut self, who: Who) -> u32 {
        self.name.clear();
        match who {
            Who::Id(id) => id,
            Who::Last(n) => {
                last_name(n, &mut self.name);
                0
            }
        }
    }
}

/// A call the server refused: a missing row as the client-side statements report it, any
/// other error as the engine's.
fn refused(error: bakeoff_driver::ServerError, call: Call) -> Stop {
    if error.sql_state == MISSING {
        return Stop::Fail(EventError::Script(format!(
            "TPC-C: the {call:?} routine found a row missing ({}): the tables do not hold a TPC-C population (run `bakeoff tpcc check`)",
            error.message
        )));
    }
    Stop::Fail(EventError::Server {
        error,
        sql: format!("the {call:?} routine"),
    })
}
