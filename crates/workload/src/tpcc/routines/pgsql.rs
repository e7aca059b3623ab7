//! The five transactions as PostgreSQL functions in PL/pgSQL (HammerDB's default there: its
//! procedures are an option), each called by one `SELECT`, so one transaction: an error
//! rolls all of it back and reaches the client (which runs a deadlock's or serialization
//! failure's inputs again). An unused item (the 1% of 2.4.1.4) raises SQLSTATE 45000 and so
//! rolls the New-Order back; a row TPC-C's population guarantees that is not there, 45001.
//! Each answers one integer: New-Order its order's number, Payment its customer, Order-Status
//! the lines of the latest order, Delivery its districts with nothing to deliver,
//! Stock-Level its count.
//!
//! The tables are named with their schema (`@`), so the functions resolve nothing through a
//! search path.

/// (name, parameters, body) of each function, in the order of the calls (New-Order, Payment,
/// Order-Status, Delivery, Stock-Level).
pub(super) fn functions() -> [(&'static str, &'static str, String); 5] {
    let by_name = |w: &str, d: &str| {
        format!(
            "IF v_c = 0 THEN
    SELECT count(*) INTO v_n FROM @customer WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last;
    IF v_n = 0 THEN RAISE EXCEPTION 'bakeoff_tpcc: no customer by that last name' USING ERRCODE = '45001'; END IF;
    SELECT c_id INTO v_c FROM @customer WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last ORDER BY c_first OFFSET (v_n + 1) / 2 - 1 LIMIT 1;
  END IF;"
        )
    };
    let dist: Vec<String> = (1..=10)
        .map(|d| format!("WHEN {d} THEN s_dist_{d:02}"))
        .collect();
    [
        (
            "bakeoff_new_order",
            "p_w INT, p_d INT, p_c INT, p_n INT, p_items TEXT, p_supply TEXT, p_qty TEXT, p_all_local INT",
            format!(
                "
DECLARE
  v_discount NUMERIC(4,4); v_wtax NUMERIC(4,4); v_dtax NUMERIC(4,4);
  v_last VARCHAR(16); v_credit CHAR(2);
  v_o INT; v_sq INT; v_price NUMERIC(5,2); v_iname VARCHAR(24); v_idata VARCHAR(50);
  v_sdata VARCHAR(50); v_dist CHAR(24); v_total NUMERIC(12,2) := 0;
  items INT[] := string_to_array(p_items, ',')::INT[];
  supply INT[] := string_to_array(p_supply, ',')::INT[];
  qty INT[] := string_to_array(p_qty, ',')::INT[];
BEGIN
  SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_wtax FROM @customer, @warehouse WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
  IF NOT FOUND THEN RAISE EXCEPTION 'bakeoff_tpcc: no such customer' USING ERRCODE = '45001'; END IF;
  UPDATE @district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d RETURNING d_next_o_id - 1, d_tax INTO v_o, v_dtax;
  IF NOT FOUND THEN RAISE EXCEPTION 'bakeoff_tpcc: no such district' USING ERRCODE = '45001'; END IF;
  INSERT INTO @orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES (v_o, p_d, p_w, p_c, CURRENT_TIMESTAMP, p_n, p_all_local);
  INSERT INTO @new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
  FOR k IN 1..p_n LOOP
    SELECT i_price, i_name, i_data INTO v_price, v_iname, v_idata FROM @item WHERE i_id = items[k];
    IF NOT FOUND THEN RAISE EXCEPTION 'bakeoff_tpcc: unused item' USING ERRCODE = '45000'; END IF;
    UPDATE @stock SET s_quantity = CASE WHEN s_quantity >= qty[k] + 10 THEN s_quantity - qty[k] ELSE s_quantity - qty[k] + 91 END, s_ytd = s_ytd + qty[k], s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + CASE WHEN supply[k] <> p_w THEN 1 ELSE 0 END WHERE s_w_id = supply[k] AND s_i_id = items[k] RETURNING s_data, CASE p_d {} END INTO v_sdata, v_dist;
    IF NOT FOUND THEN RAISE EXCEPTION 'bakeoff_tpcc: no such stock row' USING ERRCODE = '45001'; END IF;
    INSERT INTO @order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES (v_o, p_d, p_w, k, items[k], supply[k], qty[k], qty[k] * v_price, v_dist);
    v_total := v_total + qty[k] * v_price;
  END LOOP;
  RETURN v_o;
END
",
                dist.join(" ")
            ),
        ),
        (
            "bakeoff_payment",
            "p_w INT, p_d INT, p_cw INT, p_cd INT, p_c INT, p_last TEXT, p_amount NUMERIC(6,2)",
            format!(
                "
DECLARE
  v_c INT := p_c; v_n INT;
  v_wname VARCHAR(10); v_dname VARCHAR(10); v_credit CHAR(2);
BEGIN
  UPDATE @warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w RETURNING w_name INTO v_wname;
  UPDATE @district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d RETURNING d_name INTO v_dname;
  IF v_wname IS NULL OR v_dname IS NULL THEN RAISE EXCEPTION 'bakeoff_tpcc: no such warehouse or district' USING ERRCODE = '45001'; END IF;
  {}
  SELECT c_credit INTO v_credit FROM @customer WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_c FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'bakeoff_tpcc: no such customer' USING ERRCODE = '45001'; END IF;
  IF v_credit = 'BC' THEN
    UPDATE @customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1, c_data = SUBSTR(CONCAT(v_c, ' ', p_cd, ' ', p_cw, ' ', p_d, ' ', p_w, ' ', p_amount, ' | ', c_data), 1, 500) WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_c;
  ELSE
    UPDATE @customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_c;
  END IF;
  INSERT INTO @history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (p_cd, p_cw, v_c, p_d, p_w, CURRENT_TIMESTAMP, p_amount, CONCAT(v_wname, '    ', v_dname));
  RETURN v_c;
END
",
                by_name("p_cw", "p_cd")
            ),
        ),
        (
            "bakeoff_order_status",
            "p_w INT, p_d INT, p_c INT, p_last TEXT",
            format!(
                "
DECLARE
  v_c INT := p_c; v_n INT; v_o INT; v_carrier INT; v_lines INT;
  v_balance NUMERIC(12,2); v_sum NUMERIC(12,2); v_first VARCHAR(16); v_entry TIMESTAMP;
BEGIN
  {}
  SELECT c_balance, c_first INTO v_balance, v_first FROM @customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  IF NOT FOUND THEN RAISE EXCEPTION 'bakeoff_tpcc: no such customer' USING ERRCODE = '45001'; END IF;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o, v_entry, v_carrier FROM @orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  SELECT count(*), sum(ol_amount) INTO v_lines, v_sum FROM @order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
  RETURN v_lines;
END
",
                by_name("p_w", "p_d")
            ),
        ),
        (
            "bakeoff_delivery",
            "p_w INT, p_carrier INT",
            "
DECLARE
  v_o INT; v_c INT; v_skipped INT := 0; v_sum NUMERIC(12,2);
BEGIN
  FOR v_d IN 1..10 LOOP
    SELECT no_o_id INTO v_o FROM @new_order WHERE no_w_id = p_w AND no_d_id = v_d ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
      v_skipped := v_skipped + 1;
    ELSE
      DELETE FROM @new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
      UPDATE @orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o RETURNING o_c_id INTO v_c;
      IF NOT FOUND THEN RAISE EXCEPTION 'bakeoff_tpcc: no order for a new order' USING ERRCODE = '45001'; END IF;
      UPDATE @order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
      SELECT COALESCE(sum(ol_amount), 0) INTO v_sum FROM @order_line WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
      UPDATE @customer SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
    END IF;
  END LOOP;
  RETURN v_skipped;
END
"
            .to_string(),
        ),
        (
            "bakeoff_stock_level",
            "p_w INT, p_d INT, p_threshold INT",
            "
DECLARE
  v_low INT;
BEGIN
  SELECT count(DISTINCT s_i_id) INTO v_low FROM @district, @order_line, @stock WHERE d_w_id = p_w AND d_id = p_d AND ol_w_id = d_w_id AND ol_d_id = d_id AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20 AND s_w_id = d_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  RETURN v_low;
END
"
            .to_string(),
        ),
    ]
}
