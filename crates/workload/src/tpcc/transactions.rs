//! TPC-C's five transactions (clause 2.4 to 2.8) as a terminal runs them: client-side
//! prepared statements sent in batches, one round trip for all the statements that do not
//! wait on another's values; each transaction's tallies for the audit returned.
//!
//! Round trips: New-Order 2 (its reads, then its writes), Payment 1 by number and 2 by last
//! name, Order-Status 1 and 2, Delivery 3, Stock-Level 1. Where a refused statement does
//! not fail the transaction (MySQL), the COMMIT after writes waits for them: one more.

use bakeoff_driver::{Connection, Param};

use super::db::{missing, Db, Step, Stop};
use super::input::{Input, Line, Who};
use super::population::DISTRICTS;
use super::random::last_name;
use super::sql::{self, MAX_LINES, S};
use super::terminal::Terminal;
use crate::scripting::StmtCounts;

const BEGIN: Step<'static, 'static> = (S::Begin as usize, &[]);
const COMMIT: Step<'static, 'static> = (S::Commit as usize, &[]);

impl<C: Connection> Terminal<C> {
    /// Run `input`'s transaction; its tallies for the audit.
    pub(super) async fn transaction(
        &mut self,
        input: &Input,
        c: &mut StmtCounts,
    ) -> Result<[u32; 4], Stop> {
        if !self.db.calls.is_empty() {
            return self.by_call(input, c).await;
        }
        match input {
            Input::NewOrder {
                w,
                d,
                c: cust,
                lines,
                remote,
                rollback,
            } => {
                self.new_order(*w, *d, *cust, lines, *remote, *rollback, c)
                    .await
            }
            Input::Payment {
                w,
                d,
                c_w,
                c_d,
                who,
                cents,
            } => self.payment(*w, *d, *c_w, *c_d, *who, *cents, c).await,
            Input::OrderStatus { w, d, who } => self.order_status(*w, *d, *who, c).await,
            Input::Delivery { w, carrier } => self.delivery(*w, *carrier, c).await,
            Input::StockLevel { w, d, threshold } => self.stock_level(*w, *d, *threshold, c).await,
        }
    }

    /// 2.4.2: the customer, the district (locked), the items and the stock rows (locked in
    /// key order) read in one round trip; the district's next number, the order, its stock
    /// rows and its lines (one multi-row INSERT) written in the next.
    #[allow(clippy::too_many_arguments)]
    async fn new_order(
        &mut self,
        w: u32,
        d: u32,
        cust: u32,
        lines: &[Line],
        remote: u32,
        rollback: bool,
        c: &mut StmtCounts,
    ) -> Result<[u32; 4], Stop> {
        let n = lines.len();
        let (home, w, d, cust) = (w, i64::from(w), i64::from(d), i64::from(cust));
        let wdc = [Param::Int(w), Param::Int(d), Param::Int(cust)];
        let wd = [Param::Int(w), Param::Int(d)];
        // The items and stock rows: an order of fewer than 15 lines repeats its last.
        let mut items = [Param::Null; MAX_LINES];
        let mut stocks = [Param::Null; 1 + 2 * MAX_LINES];
        stocks[0] = Param::Int(d);
        for k in 0..MAX_LINES {
            let line = lines[k.min(n - 1)];
            items[k] = Param::Int(i64::from(line.item));
            stocks[1 + 2 * k] = Param::Int(i64::from(line.supply_w));
            stocks[2 + 2 * k] = Param::Int(i64::from(line.item));
        }
        let reads = [
            BEGIN,
            (S::NoCustomer as usize, &wdc[..]),
            (S::NoDistrict as usize, &wd[..]),
            (S::NoItems as usize, &items[..]),
            (S::NoStocks as usize, &stocks[..]),
        ];
        self.db.many(&reads, c).await?;
        let [_, customer, district, item_rows, stock_rows, ..] = &self.db.outs[..] else {
            return Err(missing("a batch's rows"));
        };
        let discount = customer
            .float(0, 0)
            .ok_or_else(|| missing("the customer"))?;
        let w_tax = customer.float(0, 3).unwrap_or(0.0);
        let o_id = district.int(0, 0).ok_or_else(|| missing("the district"))?;
        let d_tax = district.float(0, 1).unwrap_or(0.0);
        let mut price = [0i64; MAX_LINES];
        for (k, line) in lines.iter().enumerate() {
            let row =
                (0..item_rows.rows()).find(|r| item_rows.int(*r, 0) == Some(i64::from(line.item)));
            match row.and_then(|r| item_rows.float(r, 1)) {
                Some(v) => price[k] = (v * 100.0).round() as i64,
                // The unused item of 2.4.1.4: the order is rolled back, as the specification
                // wants, after going to the database. Not an error.
                None if rollback && row.is_none() => {
                    self.db.ex(S::Rollback as usize, &[], c).await?;
                    return Ok([1, n as u32, remote, 0]);
                }
                None => return Err(missing("an item")),
            }
        }
        // Each stock row: (supply warehouse, item, quantity now) and its S_DIST_xx, copied
        // (the next batch's answers replace these rows); an item ordered twice takes from
        // the quantity its first line left.
        let mut stock = [(0i64, 0i64, 0i64); MAX_LINES];
        let mut stock_dist = [([0u8; 24], 0usize); MAX_LINES];
        let found = stock_rows.rows().min(MAX_LINES);
        for (r, s) in stock.iter_mut().enumerate().take(found) {
            let int = |col| stock_rows.int(r, col).ok_or_else(|| missing("a stock row"));
            *s = (int(1)?, int(0)?, int(2)?);
            let text = stock_rows.bytes(r, 4).unwrap_or(b"");
            let len = text.len().min(24);
            stock_dist[r].0[..len].copy_from_slice(&text[..len]);
            stock_dist[r].1 = len;
        }
        // Each line's S_DIST_xx; each stock row's new quantity, its year-to-date, order and
        // remote counts added (an item on two lines: both lines' quantities, counted twice).
        let mut dist = [([0u8; 24], 0usize); MAX_LINES];
        let mut adds = [(0i64, 0i64, 0i64); MAX_LINES];
        let mut total = 0i64;
        for (k, line) in lines.iter().enumerate() {
            let (supply, item, qty) = (
                i64::from(line.supply_w),
                i64::from(line.item),
                i64::from(line.quantity),
            );
            let at = stock[..found]
                .iter()
                .position(|s| s.0 == supply && s.1 == item)
                .ok_or_else(|| missing("a stock row"))?;
            dist[k] = stock_dist[at];
            let s = &mut stock[at];
            // 2.4.2.2: take the quantity, or restock by 91 when fewer than 10 would remain.
            s.2 = if s.2 >= qty + 10 {
                s.2 - qty
            } else {
                s.2 - qty + 91
            };
            let a = &mut adds[at];
            *a = (a.0 + qty, a.1 + 1, a.2 + i64::from(line.supply_w != home));
            total = total.saturating_add(qty.saturating_mul(price[k]));
        }
        let updates = stock_update(&stock[..found], &adds[..found]);
        let mut lp = [Param::Null; 9 * MAX_LINES];
        for (k, line) in lines.iter().enumerate() {
            lp[9 * k..9 * k + 9].copy_from_slice(&[
                Param::Int(o_id),
                Param::Int(d),
                Param::Int(w),
                Param::Int(k as i64 + 1),
                Param::Int(i64::from(line.item)),
                Param::Int(i64::from(line.supply_w)),
                Param::Int(i64::from(line.quantity)),
                Param::Double(i64::from(line.quantity).saturating_mul(price[k]) as f64 / 100.0),
                Param::Str(&dist[k].0[..dist[k].1]),
            ]);
        }
        let next = [Param::Int(o_id + 1), Param::Int(w), Param::Int(d)];
        let order = [
            Param::Int(o_id),
            Param::Int(d),
            Param::Int(w),
            Param::Int(cust),
            Param::Int(n as i64),
            Param::Int(i64::from(remote == 0)),
        ];
        let new_order = [Param::Int(o_id), Param::Int(d), Param::Int(w)];
        let mut writes: Vec<Step> = Vec::with_capacity(6);
        writes.push((S::NoDistrictNext as usize, &next));
        writes.push((S::NoOrder as usize, &order));
        writes.push((S::NoNewOrder as usize, &new_order));
        writes.push((S::NoStockUpdate as usize, &updates));
        writes.push((sql::lines(n), &lp[..9 * n]));
        self.db.commit_after(writes, c, |_| Ok(())).await?;
        // The order's total, as the terminal would show it (2.4.3.3).
        std::hint::black_box(total as f64 * (1.0 - discount) * (1.0 + w_tax + d_tax));
        Ok([0, n as u32, remote, 0])
    }

    /// 2.5.2: the warehouse's and district's year-to-date and addresses, the customer (by
    /// number in the same round trip; by last name in the next, after the names), its
    /// balance and, on bad credit, C_DATA, and the history row.
    #[allow(clippy::too_many_arguments)]
    async fn payment(
        &mut self,
        w: u32,
        d: u32,
        c_w: u32,
        c_d: u32,
        who: Who,
        cents: u32,
        c: &mut StmtCounts,
    ) -> Result<[u32; 4], Stop> {
        let (w, d, c_w, c_d) = (i64::from(w), i64::from(d), i64::from(c_w), i64::from(c_d));
        let amount = Param::Double(f64::from(cents) / 100.0);
        let (wa, w1, da, wd) = (
            [amount, Param::Int(w)],
            [Param::Int(w)],
            [amount, Param::Int(w), Param::Int(d)],
            [Param::Int(w), Param::Int(d)],
        );
        let mut batch: Vec<Step> = vec![
            BEGIN,
            (S::PayWarehouseYtd as usize, &wa),
            (S::PayWarehouse as usize, &w1),
            (S::PayDistrictYtd as usize, &da),
            (S::PayDistrict as usize, &wd),
        ];
        let id = customer_id(&mut self.db, &mut batch, &mut self.name, (c_w, c_d), who, c).await?;
        use std::io::Write;
        self.text.clear();
        let _ = write!(
            self.text,
            "{id} {c_d} {c_w} {d} {w} {:.2} | ",
            f64::from(cents) / 100.0
        );
        let key = [Param::Int(c_w), Param::Int(c_d), Param::Int(id)];
        let update = [
            amount,
            amount,
            Param::Str(&self.text),
            key[0],
            key[1],
            key[2],
        ];
        let history = [
            key[1],
            key[0],
            key[2],
            Param::Int(d),
            Param::Int(w),
            amount,
            Param::Int(w),
            Param::Int(d),
        ];
        let customer_at = batch.len();
        batch.extend([
            (S::PayCustomer as usize, &key[..]),
            (S::PayCustomerUpdate as usize, &update[..]),
            (S::PayHistory as usize, &history[..]),
        ]);
        let found = |db: &Db<C>| match (db.outs[customer_at].rows(), db.changed(customer_at + 2)) {
            (0, _) => Err(missing("the customer")),
            (_, 0) => Err(missing("the warehouse or the district")),
            _ => Ok(()),
        };
        self.db.commit_after(batch, c, found).await?;
        Ok([
            u32::from(c_w != w),
            u32::from(matches!(who, Who::Last(_))),
            0,
            0,
        ])
    }

    /// 2.6.2: the customer (by number, or by last name after a round trip for the names),
    /// its latest order and that order's lines, read in one round trip.
    async fn order_status(
        &mut self,
        w: u32,
        d: u32,
        who: Who,
        c: &mut StmtCounts,
    ) -> Result<[u32; 4], Stop> {
        let (w, d) = (i64::from(w), i64::from(d));
        let mut batch: Vec<Step> = vec![BEGIN];
        let id = customer_id(&mut self.db, &mut batch, &mut self.name, (w, d), who, c).await?;
        let key = [Param::Int(w), Param::Int(d), Param::Int(id)];
        let order = [key[0], key[1], key[0], key[1], key[2]];
        let customer_at = batch.len();
        batch.extend([
            (S::OsCustomer as usize, &key[..]),
            // A customer may have no order yet (O_C_ID is a permutation, but of 3000 orders):
            // then no rows.
            (S::OsOrder as usize, &order[..]),
            COMMIT,
        ]);
        self.db.many(&batch, c).await?;
        if self.db.outs[customer_at].rows() == 0 {
            return Err(missing("the customer"));
        }
        Ok([u32::from(matches!(who, Who::Last(_))), 0, 0, 0])
    }

    /// All ten districts in one transaction (2.7.4), three round trips for all of them: each
    /// one's oldest undelivered order (locked); their deletion, customers (locked), carriers,
    /// lines' delivery date and sums, one statement each for all districts; the customers'
    /// balances in one more.
    async fn delivery(
        &mut self,
        w: u32,
        carrier: u32,
        c: &mut StmtCounts,
    ) -> Result<[u32; 4], Stop> {
        let (w, districts) = (i64::from(w), DISTRICTS as usize);
        let wd: Vec<[Param; 2]> = (1..=districts as i64)
            .map(|d| [Param::Int(w), Param::Int(d)])
            .collect();
        let mut batch: Vec<Step> = vec![BEGIN];
        batch.extend(wd.iter().map(|p| (S::DlNewOrder as usize, &p[..])));
        self.db.many(&batch, c).await?;
        // The districts with an order to deliver, and its number.
        let mut found: Vec<(i64, i64)> = Vec::with_capacity(districts);
        for d in 1..=districts {
            let rows = &self.db.outs[d];
            if rows.rows() > 0 {
                let o = rows.int(0, 0).ok_or_else(|| missing("a new order"))?;
                found.push((d as i64, o));
            }
        }
        let skipped = (districts - found.len()) as u32;
        if found.is_empty() {
            self.db.ex(S::Commit as usize, &[], c).await?;
            return Ok([skipped, 0, 0, 0]);
        }
        // (warehouse, then each district's (district, order), the last repeated).
        let mut keys = [Param::Int(w); 1 + 2 * DISTRICTS as usize];
        for k in 0..districts {
            let (d, o) = found[k.min(found.len() - 1)];
            keys[1 + 2 * k] = Param::Int(d);
            keys[2 + 2 * k] = Param::Int(o);
        }
        let mut carried = [Param::Int(i64::from(carrier)); 2 + 2 * DISTRICTS as usize];
        carried[1..].copy_from_slice(&keys);
        let writes = [
            (S::DlNewOrderDelete as usize, &keys[..]),
            (S::DlOrder as usize, &keys[..]),
            (S::DlOrderCarrier as usize, &carried[..]),
            (S::DlLines as usize, &keys[..]),
            (S::DlSum as usize, &keys[..]),
        ];
        self.db.many(&writes, c).await?;
        // The new orders were locked by this transaction: all of them are there to delete.
        if self.db.changed(0) != found.len() as u64 {
            return Err(missing("a new order this Delivery had locked"));
        }
        // Each delivered order's (district, customer, amount as text).
        let (orders, sums) = (&self.db.outs[1], &self.db.outs[4]);
        let mut credits: Vec<(i64, i64, Vec<u8>)> = Vec::with_capacity(found.len());
        for &(d, _) in &found {
            let cust = (0..orders.rows())
                .find(|r| orders.int(*r, 0) == Some(d))
                .and_then(|r| orders.int(r, 1))
                .ok_or_else(|| missing("an order"))?;
            let sum = (0..sums.rows())
                .find(|r| sums.int(*r, 0) == Some(d))
                .and_then(|r| sums.bytes(r, 1))
                .unwrap_or(b"0");
            credits.push((d, cust, sum.to_vec()));
        }
        let mut p = [Param::Null; 3 * DISTRICTS as usize + 1 + 2 * DISTRICTS as usize];
        let keys_at = 3 * districts;
        p[keys_at] = Param::Int(w);
        for k in 0..districts {
            let (d, cust, sum) = &credits[k.min(credits.len() - 1)];
            p[3 * k..3 * k + 3].copy_from_slice(&[
                Param::Int(*d),
                Param::Int(*cust),
                Param::Str(sum),
            ]);
            p[keys_at + 1 + 2 * k] = Param::Int(*d);
            p[keys_at + 2 + 2 * k] = Param::Int(*cust);
        }
        self.db
            .commit_after(vec![(S::DlCustomer as usize, &p[..])], c, |_| Ok(()))
            .await?;
        Ok([skipped, 0, 0, 0])
    }

    /// 2.8.2: the stock rows below the threshold among the district's last 20 orders' items,
    /// the district's next order number read in the same statement: one round trip.
    async fn stock_level(
        &mut self,
        w: u32,
        d: u32,
        threshold: u32,
        c: &mut StmtCounts,
    ) -> Result<[u32; 4], Stop> {
        let p = [
            Param::Int(i64::from(w)),
            Param::Int(i64::from(d)),
            Param::Int(i64::from(threshold)),
        ];
        self.db
            .many(&[BEGIN, (S::SlCount as usize, &p), COMMIT], c)
            .await?;
        std::hint::black_box(self.db.outs[1].int(0, 0));
        Ok([0; 4])
    }
}

/// The stock update's values (`sql::STOCK_UPDATE_PARAMS`): for each column, each row's
/// (warehouse, item, value), then each row's key; fewer than 15 rows repeat the last.
/// `stock`: (warehouse, item, new quantity); `adds`: (year-to-date, orders, remote orders).
fn stock_update(
    stock: &[(i64, i64, i64)],
    adds: &[(i64, i64, i64)],
) -> [Param<'static>; sql::STOCK_UPDATE_PARAMS] {
    let mut p = [Param::Null; sql::STOCK_UPDATE_PARAMS];
    let row = |k: usize| k.min(stock.len().saturating_sub(1));
    let mut at = 0;
    for column in 0..4 {
        for k in 0..MAX_LINES {
            let (w, i, q) = stock[row(k)];
            let (ytd, orders, remote) = adds[row(k)];
            let value = [q, ytd, orders, remote][column];
            p[at..at + 3].copy_from_slice(&[Param::Int(w), Param::Int(i), Param::Int(value)]);
            at += 3;
        }
    }
    for k in 0..MAX_LINES {
        let (w, i, _) = stock[row(k)];
        p[at..at + 2].copy_from_slice(&[Param::Int(w), Param::Int(i)]);
        at += 2;
    }
    p
}

/// The customer `who` names in district (w, d): by number at once; by last name the middle
/// one, looked up in the same round trip as `batch`, which is then sent (and emptied).
async fn customer_id<C: Connection>(
    db: &mut Db<C>,
    batch: &mut Vec<Step<'_, '_>>,
    name: &mut Vec<u8>,
    (w, d): (i64, i64),
    who: Who,
    c: &mut StmtCounts,
) -> Result<i64, Stop> {
    let n = match who {
        Who::Id(id) => return Ok(i64::from(id)),
        Who::Last(n) => n,
    };
    last_name(n, name);
    let by_name = [Param::Int(w), Param::Int(d), Param::Str(name)];
    let mut sent: Vec<Step> = batch.iter().copied().collect();
    sent.push((S::ByName as usize, &by_name));
    db.many(&sent, c).await?;
    batch.clear();
    middle(&db.outs[sent.len() - 1])
}

/// The middle one (ceil(n/2)) of the customers a last name found, ordered by first name.
fn middle(rows: &bakeoff_driver::RowBuf) -> Result<i64, Stop> {
    match rows.rows() {
        0 => Err(missing("a customer by last name")),
        count => rows
            .int(count.div_ceil(2) - 1, 0)
            .ok_or_else(|| missing("a customer's number")),
    }
}
