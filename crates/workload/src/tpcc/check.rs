//! The consistency conditions of clause 3.3.2 that hold on a quiescent database, each a
//! statement counting the rows (warehouses, districts, orders, customers) that break it.
//!
//! Conditions 1-4 are cheap (one pass over district-sized groups; 4 reads ORDER-LINE once)
//! and always run; 5-10 and 12 join ORDER-LINE with ORDER, or the customers with their
//! history, and run on request (`--all`). Condition 11 holds only on a freshly loaded
//! database (count(ORDER) - count(NEW-ORDER) = 2100 per district) and is not checked.

use bakeoff_driver::{
    Conn, ConnectOptions, Connection, DriverError, Outcome, PgConn, Protocol, RowBuf,
};

/// One condition: its clause number, what it says, what a violation counts, and its SQL.
pub struct Condition {
    pub number: u32,
    pub says: &'static str,
    pub counts: &'static str,
    pub expensive: bool,
    pub sql: &'static str,
}

pub const CONDITIONS: [Condition; 11] = [
    Condition { number: 1, says: "W_YTD = sum(D_YTD)", counts: "warehouses", expensive: false,
        sql: "SELECT COUNT(*) FROM @warehouse JOIN (SELECT d_w_id, SUM(d_ytd) AS s FROM @district GROUP BY d_w_id) d ON d.d_w_id = w_id WHERE w_ytd <> d.s" },
    Condition { number: 2, says: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", counts: "districts", expensive: false,
        sql: "SELECT COUNT(*) FROM @district LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS m FROM @orders GROUP BY o_w_id, o_d_id) o ON o.o_w_id = d_w_id AND o.o_d_id = d_id LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS m FROM @new_order GROUP BY no_w_id, no_d_id) n ON n.no_w_id = d_w_id AND n.no_d_id = d_id WHERE o.m IS NULL OR d_next_o_id - 1 <> o.m OR d_next_o_id - 1 <> COALESCE(n.m, d_next_o_id - 1)" },
    Condition { number: 3, says: "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER", counts: "districts", expensive: false,
        sql: "SELECT COUNT(*) FROM (SELECT MAX(no_o_id) - MIN(no_o_id) + 1 AS span, COUNT(*) AS n FROM @new_order GROUP BY no_w_id, no_d_id) x WHERE span <> n" },
    Condition { number: 4, says: "sum(O_OL_CNT) = rows in ORDER-LINE", counts: "districts", expensive: false,
        sql: "SELECT COUNT(*) FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS s FROM @orders GROUP BY o_w_id, o_d_id) o LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS n FROM @order_line GROUP BY ol_w_id, ol_d_id) l ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id WHERE l.n IS NULL OR o.s <> l.n" },
    Condition { number: 5, says: "O_CARRIER_ID is null exactly for orders in NEW-ORDER", counts: "orders", expensive: true,
        sql: "SELECT COUNT(*) FROM @orders LEFT JOIN @new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)" },
    Condition { number: 6, says: "O_OL_CNT = the order's rows in ORDER-LINE", counts: "orders", expensive: true,
        sql: "SELECT COUNT(*) FROM @orders LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(*) AS n FROM @order_line GROUP BY ol_w_id, ol_d_id, ol_o_id) l ON l.ol_w_id = o_w_id AND l.ol_d_id = o_d_id AND l.ol_o_id = o_id WHERE l.n IS NULL OR l.n <> o_ol_cnt" },
    Condition { number: 7, says: "OL_DELIVERY_D is null exactly when O_CARRIER_ID is", counts: "order lines", expensive: true,
        sql: "SELECT COUNT(*) FROM @order_line JOIN @orders ON o_w_id = ol_w_id AND o_d_id = ol_d_id AND o_id = ol_o_id WHERE (ol_delivery_d IS NULL) <> (o_carrier_id IS NULL)" },
    Condition { number: 8, says: "W_YTD = sum(H_AMOUNT)", counts: "warehouses", expensive: true,
        sql: "SELECT COUNT(*) FROM @warehouse LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS s FROM @history GROUP BY h_w_id) h ON h.h_w_id = w_id WHERE h.s IS NULL OR w_ytd <> h.s" },
    Condition { number: 9, says: "D_YTD = sum(H_AMOUNT)", counts: "districts", expensive: true,
        sql: "SELECT COUNT(*) FROM @district LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS s FROM @history GROUP BY h_w_id, h_d_id) h ON h.h_w_id = d_w_id AND h.h_d_id = d_id WHERE h.s IS NULL OR d_ytd <> h.s" },
    Condition { number: 10, says: "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)", counts: "customers", expensive: true,
        sql: "SELECT COUNT(*) FROM @customer LEFT JOIN (SELECT o_w_id AS w, o_d_id AS d, o_c_id AS cid, SUM(ol_amount) AS s FROM @orders JOIN @order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE ol_delivery_d IS NOT NULL GROUP BY o_w_id, o_d_id, o_c_id) ol ON ol.w = c_w_id AND ol.d = c_d_id AND ol.cid = c_id LEFT JOIN (SELECT h_c_w_id AS w, h_c_d_id AS d, h_c_id AS cid, SUM(h_amount) AS s FROM @history GROUP BY h_c_w_id, h_c_d_id, h_c_id) h ON h.w = c_w_id AND h.d = c_d_id AND h.cid = c_id WHERE c_balance <> COALESCE(ol.s, 0) - COALESCE(h.s, 0)" },
    Condition { number: 12, says: "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)", counts: "customers", expensive: true,
        sql: "SELECT COUNT(*) FROM @customer LEFT JOIN (SELECT o_w_id AS w, o_d_id AS d, o_c_id AS cid, SUM(ol_amount) AS s FROM @orders JOIN @order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE ol_delivery_d IS NOT NULL GROUP BY o_w_id, o_d_id, o_c_id) ol ON ol.w = c_w_id AND ol.d = c_d_id AND ol.cid = c_id WHERE c_balance + c_ytd_payment <> COALESCE(ol.s, 0)" },
];

/// One condition's finding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub number: u32,
    pub says: &'static str,
    /// Rows that break it (of the kind `counts` names); 0: it holds.
    pub violations: u64,
    pub counts: &'static str,
}

impl Finding {
    pub fn holds(&self) -> bool {
        self.violations == 0
    }
}

/// Check the cheap conditions, or all of them with `all`, on `conn` (whose session sees the
/// TPC-C tables unqualified). `each` hears each finding as it comes.
pub async fn check<C: Connection>(
    conn: &mut C,
    place: &str,
    all: bool,
    each: &mut dyn FnMut(&Finding),
) -> Result<Vec<Finding>, DriverError> {
    let mut out = Vec::new();
    let mut rows = RowBuf::new();
    for cond in CONDITIONS.iter().filter(|c| all || !c.expensive) {
        let stmt = conn.prepare(&cond.sql.replace('@', place)).await?;
        if let Outcome::Err(e) = conn.execute_into(&stmt, &[], &mut rows).await? {
            return Err(DriverError::Server(e));
        }
        let f = Finding {
            number: cond.number,
            says: cond.says,
            violations: rows.int(0, 0).unwrap_or(0).max(0) as u64,
            counts: cond.counts,
        };
        each(&f);
        out.push(f);
    }
    Ok(out)
}

/// [`check`] on a connection of its own to `opts`'s server, made as the terminals make theirs
/// (the tables unqualified, in the session's own place).
pub async fn check_at(
    opts: &ConnectOptions,
    all: bool,
    each: &mut dyn FnMut(&Finding),
) -> Result<Vec<Finding>, DriverError> {
    match opts.protocol {
        Protocol::MySql => {
            let mut c = Conn::connect(opts).await?;
            // A condition reads whole tables: a DDL's time, not a statement's.
            c.for_ddl();
            let place = c.own_place().await?;
            let found = check(&mut c, &place, all, each).await;
            c.quit().await;
            found
        }
        Protocol::Postgres => {
            let mut c = PgConn::connect(opts).await?;
            c.for_ddl();
            let place = c.own_place().await?;
            let found = check(&mut c, &place, all, each).await;
            c.quit().await;
            found
        }
    }
}
