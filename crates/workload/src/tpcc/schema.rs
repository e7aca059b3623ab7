//! The nine tables of TPC-C (clause 1.3), in each engine's words, and bakeoff's own tenth:
//! the constants the load drew, so that a run can choose its own by the delta rule.
//!
//! Columns and types follow clause 1.3 as HammerDB lays them out for MySQL and PostgreSQL
//! (DECIMAL money, DATETIME/TIMESTAMP dates), so a HammerDB user finds the tables they know.
//! Primary keys are made with the tables (rows arrive in key order); the two secondary
//! indexes the transactions need (customer by last name, orders by customer) come after the
//! load, where building them once is cheaper than maintaining them row by row.

use bakeoff_driver::Protocol;

/// The constants table: not TPC-C's, bakeoff's record of its load.
pub const CONSTANTS_TABLE: &str = "bakeoff_tpcc";

/// Every table, in load order: item first (shared by all warehouses). The dataset layer
/// knows their names (they are among those bakeoff creates and may drop).
pub const TABLES: [&str; 10] = crate::dataset::TPCC_TABLES;

/// Columns of each table, in the order the loader writes them.
pub fn columns(table: &str) -> &'static str {
    match table {
        "item" => "i_id, i_im_id, i_name, i_price, i_data",
        "warehouse" => "w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd",
        "district" => "d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id",
        "customer" => "c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data",
        "history" => "h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data",
        "orders" => "o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local",
        "new_order" => "no_o_id, no_d_id, no_w_id",
        "order_line" => "ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info",
        "stock" => "s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data",
        _ => "c_last_load, c_id_load, ol_i_id_load, warehouses",
    }
}

/// The column list of `table` with its types; `ts` is the engine's date-time type.
fn body(table: &str, ts: &str) -> String {
    let addr = |p: &str| {
        format!("{p}_street_1 VARCHAR(20), {p}_street_2 VARCHAR(20), {p}_city VARCHAR(20), {p}_state CHAR(2), {p}_zip CHAR(9)")
    };
    match table {
        "item" => "i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2), i_data VARCHAR(50), PRIMARY KEY (i_id)".into(),
        "warehouse" => format!("w_id INT NOT NULL, w_name VARCHAR(10), {}, w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2), PRIMARY KEY (w_id)", addr("w")),
        "district" => format!("d_id INT NOT NULL, d_w_id INT NOT NULL, d_name VARCHAR(10), {}, d_tax DECIMAL(4,4), d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id)", addr("d")),
        "customer" => format!("c_id INT NOT NULL, c_d_id INT NOT NULL, c_w_id INT NOT NULL, c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), {}, c_phone CHAR(16), c_since {ts}, c_credit CHAR(2), c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id)", addr("c")),
        "history" => format!("h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT, h_date {ts}, h_amount DECIMAL(6,2), h_data VARCHAR(24)"),
        "orders" => format!("o_id INT NOT NULL, o_d_id INT NOT NULL, o_w_id INT NOT NULL, o_c_id INT, o_entry_d {ts}, o_carrier_id INT, o_ol_cnt INT, o_all_local INT, PRIMARY KEY (o_w_id, o_d_id, o_id)"),
        "new_order" => "no_o_id INT NOT NULL, no_d_id INT NOT NULL, no_w_id INT NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id)".into(),
        "order_line" => format!("ol_o_id INT NOT NULL, ol_d_id INT NOT NULL, ol_w_id INT NOT NULL, ol_number INT NOT NULL, ol_i_id INT, ol_supply_w_id INT, ol_delivery_d {ts}, ol_quantity INT, ol_amount DECIMAL(6,2), ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)"),
        "stock" => {
            let dists: Vec<String> = (1..=10).map(|d| format!("s_dist_{d:02} CHAR(24)")).collect();
            format!("s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity INT, {}, s_ytd INT, s_order_cnt INT, s_remote_cnt INT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id)", dists.join(", "))
        }
        _ => "c_last_load INT NOT NULL, c_id_load INT NOT NULL, ol_i_id_load INT NOT NULL, warehouses INT NOT NULL".into(),
    }
}

/// Every table and its CREATE TABLE text for `protocol`; PostgreSQL's names come after
/// `schema` (`"public".`), as the dataset layer's adapters expect.
pub fn create_tables(protocol: Protocol, schema: &str, engine: &str) -> Vec<(String, String)> {
    TABLES
        .iter()
        .map(|t| {
            let sql = match protocol {
                Protocol::MySql => {
                    format!(
                        "CREATE TABLE {t} ({}) ENGINE = {engine}",
                        body(t, "DATETIME")
                    )
                }
                Protocol::Postgres => {
                    format!("CREATE TABLE {schema}{t} ({})", body(t, "TIMESTAMP"))
                }
            };
            (t.to_string(), sql)
        })
        .collect()
}

/// The secondary indexes, built after the load: Payment's and Order-Status's lookup of a
/// customer by last name, and Order-Status's of a customer's latest order.
pub fn indexes(schema: &str) -> [(String, String); 2] {
    [
        ("customer".into(), format!("CREATE INDEX customer_by_name ON {schema}customer (c_w_id, c_d_id, c_last, c_first)")),
        ("orders".into(), format!("CREATE INDEX orders_by_customer ON {schema}orders (o_w_id, o_d_id, o_c_id, o_id)")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_its_columns_in_its_create_text() {
        for p in [Protocol::MySql, Protocol::Postgres] {
            for (t, sql) in create_tables(p, "", "InnoDB") {
                for col in columns(&t).split(", ") {
                    assert!(sql.contains(&format!("{col} ")), "{t}: {col} in {sql}");
                }
            }
        }
    }
}
