//! The five transactions' statements, client-side SQL that MariaDB, MySQL and PostgreSQL all
//! take as written: `?` placeholders (numbered for PostgreSQL by its adapter), money passed
//! as a number and cast to DECIMAL by the server, so that sums stay exact on both engines.

/// Each statement's place in a terminal's prepared list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum S {
    Begin,
    Commit,
    Rollback,
    NoCustomer,
    NoDistrict,
    NoDistrictNext,
    NoOrder,
    NoNewOrder,
    NoItems,
    NoStocks,
    NoStockUpdate,
    PayWarehouseYtd,
    PayWarehouse,
    PayDistrictYtd,
    PayDistrict,
    ByName,
    PayCustomer,
    PayCustomerUpdate,
    PayHistory,
    OsCustomer,
    OsOrder,
    DlNewOrder,
    DlNewOrderDelete,
    DlOrder,
    DlOrderCarrier,
    DlLines,
    DlSum,
    DlCustomer,
    SlCount,
    /// New-Order's order lines, one multi-row INSERT per count of lines (5 to 15): the last.
    NoLines,
}

/// Statements before the order lines' INSERTs.
pub const FIXED: usize = S::NoLines as usize;
/// Lines of an order (2.4.1.3), and so the items and stock rows one statement reads.
pub const MIN_LINES: usize = 5;
pub const MAX_LINES: usize = 15;
/// All statements: the fixed ones and an order-line INSERT per count of lines.
pub const COUNT: usize = FIXED + MAX_LINES - MIN_LINES + 1;

/// The stock update's values: four columns' CASEs of (warehouse, item, value) per row, then
/// each row's key.
pub const STOCK_UPDATE_PARAMS: usize = 4 * 3 * MAX_LINES + 2 * MAX_LINES;

/// The statement that inserts `n` order lines.
pub fn lines(n: usize) -> usize {
    FIXED + n.clamp(MIN_LINES, MAX_LINES) - MIN_LINES
}

fn list(n: usize, one: &str, sep: &str) -> String {
    vec![one; n].join(sep)
}

/// Delivery's keys within a warehouse: ten (district, number) pairs.
fn pairs(district: &str, number: &str) -> String {
    list(
        DISTRICTS,
        &format!("({district} = ? AND {number} = ?)"),
        " OR ",
    )
}

/// Districts of a warehouse: the pairs Delivery's statements take.
const DISTRICTS: usize = super::population::DISTRICTS as usize;

/// The text of statement `i` (0..COUNT), its tables named after `place` (the prefix that
/// qualifies them: `"schema".` on PostgreSQL, whose terminals resolve nothing through a
/// search path; nothing on MySQL).
pub fn text(i: usize, place: &str) -> String {
    template(i).replace('@', place)
}

/// Statement `i` with `@` before each table's name.
fn template(i: usize) -> String {
    let money = "CAST(? AS DECIMAL(12,2))";
    if i >= FIXED {
        let n = i - FIXED + MIN_LINES;
        let row = format!("(?, ?, ?, ?, ?, ?, ?, {money}, ?)");
        return format!(
            "INSERT INTO @order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES {}",
            list(n, &row, ", ")
        );
    }
    match i {
        x if x == S::Begin as usize => "BEGIN".into(),
        x if x == S::Commit as usize => "COMMIT".into(),
        x if x == S::Rollback as usize => "ROLLBACK".into(),
        x if x == S::NoCustomer as usize => "SELECT c_discount, c_last, c_credit, w_tax FROM @customer, @warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?".into(),
        x if x == S::NoDistrict as usize => "SELECT d_next_o_id, d_tax FROM @district WHERE d_w_id = ? AND d_id = ? FOR UPDATE".into(),
        x if x == S::NoDistrictNext as usize => "UPDATE @district SET d_next_o_id = ? WHERE d_w_id = ? AND d_id = ?".into(),
        x if x == S::NoOrder as usize => "INSERT INTO @orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)".into(),
        x if x == S::NoNewOrder as usize => "INSERT INTO @new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)".into(),
        // Every item of the order in one round trip (an order of fewer lines repeats its last
        // item), as go-tpc and CockroachDB's driver read them.
        x if x == S::NoItems as usize => format!("SELECT i_id, i_price, i_name, i_data FROM @item WHERE i_id IN ({})", list(MAX_LINES, "?", ", ")),
        // Every stock row of the order, locked in key order (so two New-Orders cannot
        // deadlock on them), with the district's S_DIST_xx chosen by the first parameter.
        x if x == S::NoStocks as usize => {
            let dist: Vec<String> = (1..=10).map(|d| format!("WHEN {d} THEN s_dist_{d:02}")).collect();
            format!(
                "SELECT s_i_id, s_w_id, s_quantity, s_data, CASE ? {} END FROM @stock WHERE {} ORDER BY s_w_id, s_i_id FOR UPDATE",
                dist.join(" "),
                list(MAX_LINES, "(s_w_id = ? AND s_i_id = ?)", " OR ")
            )
        }
        // Every stock row of the order in one statement: for each column a CASE over the
        // rows' keys, (supply warehouse, item, value) each; then the keys. An order of fewer
        // rows repeats its last (the first WHEN that matches decides).
        x if x == S::NoStockUpdate as usize => {
            let case = format!("CASE {} END", list(MAX_LINES, "WHEN s_w_id = ? AND s_i_id = ? THEN ?", " "));
            format!(
                "UPDATE @stock SET s_quantity = {case}, s_ytd = s_ytd + {case}, s_order_cnt = s_order_cnt + {case}, s_remote_cnt = s_remote_cnt + {case} WHERE {}",
                list(MAX_LINES, "(s_w_id = ? AND s_i_id = ?)", " OR ")
            )
        }
        x if x == S::PayWarehouseYtd as usize => format!("UPDATE @warehouse SET w_ytd = w_ytd + {money} WHERE w_id = ?"),
        x if x == S::PayWarehouse as usize => "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM @warehouse WHERE w_id = ?".into(),
        x if x == S::PayDistrictYtd as usize => format!("UPDATE @district SET d_ytd = d_ytd + {money} WHERE d_w_id = ? AND d_id = ?"),
        x if x == S::PayDistrict as usize => "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM @district WHERE d_w_id = ? AND d_id = ?".into(),
        x if x == S::ByName as usize => "SELECT c_id FROM @customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first".into(),
        x if x == S::PayCustomer as usize => "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM @customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE".into(),
        // Bad credit (2.5.2.2): the payment's facts go in front of C_DATA, which keeps 500
        // characters. The server tells good from bad, so the update need not wait for the
        // customer's row: it goes in the same batch as the read.
        x if x == S::PayCustomerUpdate as usize => format!("UPDATE @customer SET c_balance = c_balance - {money}, c_ytd_payment = c_ytd_payment + {money}, c_payment_cnt = c_payment_cnt + 1, c_data = CASE WHEN c_credit = 'BC' THEN SUBSTR(CONCAT(?, c_data), 1, 500) ELSE c_data END WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"),
        // H_DATA: W_NAME, four spaces, D_NAME (2.5.2.2), joined by the server for the same
        // reason.
        x if x == S::PayHistory as usize => format!("INSERT INTO @history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) SELECT ?, ?, ?, ?, ?, CURRENT_TIMESTAMP, {money}, CONCAT(w_name, '    ', d_name) FROM @warehouse, @district WHERE w_id = ? AND d_w_id = w_id AND d_id = ?"),
        x if x == S::OsCustomer as usize => "SELECT c_balance, c_first, c_middle, c_last FROM @customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        // The customer's latest order and its lines in one statement, so one snapshot (at
        // PostgreSQL's READ COMMITTED two statements could see two different latest orders).
        x if x == S::OsOrder as usize => "SELECT o_id, o_carrier_id, o_entry_d, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM @orders JOIN @order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE o_w_id = ? AND o_d_id = ? AND o_id = (SELECT MAX(o_id) FROM @orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?)".into(),
        x if x == S::DlNewOrder as usize => "SELECT no_o_id FROM @new_order WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id LIMIT 1 FOR UPDATE".into(),
        // The districts' orders, all in one statement each: (district, order) pairs, the
        // last repeated up to ten.
        x if x == S::DlNewOrderDelete as usize => format!("DELETE FROM @new_order WHERE no_w_id = ? AND ({})", pairs("no_d_id", "no_o_id")),
        // A locking read: MySQL's plain one reads the transaction's snapshot, which an order
        // committed after it (and then found by the locking read of NEW-ORDER) is not in.
        x if x == S::DlOrder as usize => format!("SELECT o_d_id, o_c_id FROM @orders WHERE o_w_id = ? AND ({}) FOR UPDATE", pairs("o_d_id", "o_id")),
        x if x == S::DlOrderCarrier as usize => format!("UPDATE @orders SET o_carrier_id = ? WHERE o_w_id = ? AND ({})", pairs("o_d_id", "o_id")),
        x if x == S::DlLines as usize => format!("UPDATE @order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = ? AND ({})", pairs("ol_d_id", "ol_o_id")),
        x if x == S::DlSum as usize => format!("SELECT ol_d_id, SUM(ol_amount) FROM @order_line WHERE ol_w_id = ? AND ({}) GROUP BY ol_d_id", pairs("ol_d_id", "ol_o_id")),
        // Each customer's amount by a CASE over (district, customer, amount), then the keys.
        x if x == S::DlCustomer as usize => format!(
            "UPDATE @customer SET c_balance = c_balance + CASE {} END, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND ({})",
            list(DISTRICTS, &format!("WHEN c_d_id = ? AND c_id = ? THEN {money}"), " "),
            pairs("c_d_id", "c_id")
        ),
        // The district's next order number read in the same statement (2.8.2.2).
        x if x == S::SlCount as usize => "SELECT COUNT(DISTINCT s_i_id) FROM @district, @order_line, @stock WHERE d_w_id = ? AND d_id = ? AND ol_w_id = d_w_id AND ol_d_id = d_id AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20 AND s_w_id = d_w_id AND s_i_id = ol_i_id AND s_quantity < ?".into(),
        _ => String::new(),
    }
}

/// Kinds of each parameter of statement `i`, for PostgreSQL to type them when it parses:
/// `i` an integer, `m` money (a number cast to DECIMAL), `t` text.
pub fn param_kinds(i: usize) -> String {
    if i >= FIXED {
        return "iiiiiiimt".repeat(i - FIXED + MIN_LINES);
    }
    if i == S::NoItems as usize {
        return "i".repeat(MAX_LINES);
    }
    if i == S::NoStocks as usize {
        return "i".repeat(1 + 2 * MAX_LINES);
    }
    let pairs = "ii".repeat(DISTRICTS);
    match i {
        x if x == S::DlNewOrderDelete as usize
            || x == S::DlOrder as usize
            || x == S::DlLines as usize
            || x == S::DlSum as usize =>
        {
            return format!("i{pairs}")
        }
        x if x == S::DlOrderCarrier as usize => return format!("ii{pairs}"),
        // The amounts pass as text: the sums read back.
        x if x == S::DlCustomer as usize => return format!("{}i{pairs}", "iit".repeat(DISTRICTS)),
        _ => {}
    }
    if i == S::NoStockUpdate as usize {
        return "i".repeat(STOCK_UPDATE_PARAMS);
    }
    const KINDS: [&str; FIXED] = [
        "", "", "", // begin, commit, rollback
        "iii", "ii", "iii", "iiiiii", "iii", "", "",
        "", // new-order (items, stocks and their update above)
        "mi", "i", "mii", "ii", "iit", "iii", "mmtiii", "iiiiimii", // payment
        "iii", "iiiii", // order-status
        "ii", "", "", "", "", "", "",    // delivery (above)
        "iii", // stock-level
    ];
    KINDS[i].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_has_as_many_kinds_as_placeholders() {
        for i in 0..COUNT {
            let sql = text(i, "");
            assert!(!sql.is_empty(), "statement {i}");
            let marks = sql.matches('?').count();
            assert_eq!(marks, param_kinds(i).len(), "{sql}");
        }
        assert_eq!(text(lines(15), "").matches("(?, ?, ?").count(), 15);
        assert_eq!(text(lines(5), "").matches("(?, ?, ?").count(), 5);
        assert_eq!(
            text(S::NoStocks as usize, "").matches("s_dist_10").count(),
            1
        );
        let q = text(S::NoCustomer as usize, "\"s\".");
        assert!(q.contains("FROM \"s\".customer, \"s\".warehouse"), "{q}");
        assert!((0..COUNT).all(|i| !text(i, "").contains('@')));
    }
}
