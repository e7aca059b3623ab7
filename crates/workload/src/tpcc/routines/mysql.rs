//! The five transactions as MariaDB and MySQL stored procedures, each one transaction of its
//! own (START TRANSACTION to COMMIT), any error rolled back and sent on to the client (which
//! runs a deadlock's inputs again). An unused item (the 1% of 2.4.1.4) rolls the New-Order
//! back and signals SQLSTATE 45000; a row TPC-C's population guarantees that is not there,
//! 45001. Delivery answers with one row: its districts with nothing to deliver.
//!
//! The same work as the client-side statements (`sql.rs`), statement by statement, as
//! HammerDB's procedures do it; New-Order's stock rows are taken in the order the terminal
//! gives its lines (sorted by key, so that two New-Orders cannot deadlock on them).

/// (name, parameters, body) of each procedure, in the order of the calls (New-Order, Payment,
/// Order-Status, Delivery, Stock-Level).
pub(super) fn procedures() -> [(&'static str, &'static str, String); 5] {
    let on_error = "DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;";
    let by_name = |w: &str, d: &str| {
        format!(
            "IF v_c = 0 THEN
    SELECT COUNT(*) INTO v_n FROM customer WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last;
    IF v_n = 0 THEN SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'bakeoff_tpcc: no customer by that last name'; END IF;
    SET v_n = (v_n + 1) DIV 2 - 1;
    SELECT c_id INTO v_c FROM customer WHERE c_w_id = {w} AND c_d_id = {d} AND c_last = p_last ORDER BY c_first LIMIT v_n, 1;
  END IF;"
        )
    };
    let dist: Vec<String> = (1..=10)
        .map(|d| format!("WHEN {d} THEN s_dist_{d:02}"))
        .collect();
    [
        (
            "bakeoff_new_order",
            "p_w INT, p_d INT, p_c INT, p_n INT, p_items VARCHAR(200), p_supply VARCHAR(200), p_qty VARCHAR(100), p_all_local INT",
            format!(
                "BEGIN
  DECLARE v_discount, v_wtax, v_dtax DECIMAL(4,4);
  DECLARE v_last VARCHAR(16);
  DECLARE v_credit CHAR(2);
  DECLARE v_o, k, v_item, v_sw, v_q, v_sq INT;
  DECLARE v_price DECIMAL(5,2);
  DECLARE v_iname VARCHAR(24);
  DECLARE v_idata, v_sdata VARCHAR(50);
  DECLARE v_dist CHAR(24);
  DECLARE v_total DECIMAL(12,2) DEFAULT 0;
  {on_error}
  START TRANSACTION;
  SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_wtax FROM customer, warehouse WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
  SELECT d_next_o_id, d_tax INTO v_o, v_dtax FROM district WHERE d_w_id = p_w AND d_id = p_d FOR UPDATE;
  IF v_o IS NULL OR v_credit IS NULL THEN SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'bakeoff_tpcc: no such customer or district'; END IF;
  UPDATE district SET d_next_o_id = v_o + 1 WHERE d_w_id = p_w AND d_id = p_d;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES (v_o, p_d, p_w, p_c, CURRENT_TIMESTAMP, p_n, p_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
  SET k = 0;
  WHILE k < p_n DO
    SET k = k + 1;
    SET v_item = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_items, ',', k), ',', -1) AS SIGNED);
    SET v_sw = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_supply, ',', k), ',', -1) AS SIGNED);
    SET v_q = CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(p_qty, ',', k), ',', -1) AS SIGNED);
    SET v_price = NULL;
    SELECT i_price, i_name, i_data INTO v_price, v_iname, v_idata FROM item WHERE i_id = v_item;
    IF v_price IS NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'bakeoff_tpcc: unused item'; END IF;
    SET v_sq = NULL;
    SELECT s_quantity, s_data, CASE p_d {} END INTO v_sq, v_sdata, v_dist FROM stock WHERE s_w_id = v_sw AND s_i_id = v_item FOR UPDATE;
    IF v_sq IS NULL THEN SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'bakeoff_tpcc: no such stock row'; END IF;
    UPDATE stock SET s_quantity = IF(v_sq >= v_q + 10, v_sq - v_q, v_sq - v_q + 91), s_ytd = s_ytd + v_q, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + IF(v_sw <> p_w, 1, 0) WHERE s_w_id = v_sw AND s_i_id = v_item;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES (v_o, p_d, p_w, k, v_item, v_sw, v_q, v_q * v_price, v_dist);
    SET v_total = v_total + v_q * v_price;
  END WHILE;
  COMMIT;
END",
                dist.join(" ")
            ),
        ),
        (
            "bakeoff_payment",
            "p_w INT, p_d INT, p_cw INT, p_cd INT, p_c INT, p_last VARCHAR(16), p_amount DECIMAL(6,2)",
            format!(
                "BEGIN
  DECLARE v_c, v_n INT;
  DECLARE v_wname, v_dname VARCHAR(10);
  DECLARE v_credit CHAR(2);
  DECLARE v_data VARCHAR(500);
  {on_error}
  START TRANSACTION;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
  SELECT w_name INTO v_wname FROM warehouse WHERE w_id = p_w;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
  SELECT d_name INTO v_dname FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SET v_c = p_c;
  {}
  SELECT c_credit, c_data INTO v_credit, v_data FROM customer WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_c FOR UPDATE;
  IF v_credit IS NULL OR v_wname IS NULL OR v_dname IS NULL THEN SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'bakeoff_tpcc: no such customer, warehouse or district'; END IF;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1, c_data = SUBSTR(CONCAT(v_c, ' ', p_cd, ' ', p_cw, ' ', p_d, ' ', p_w, ' ', p_amount, ' | ', v_data), 1, 500) WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_c;
  ELSE
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_c;
  END IF;
  INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (p_cd, p_cw, v_c, p_d, p_w, CURRENT_TIMESTAMP, p_amount, CONCAT(v_wname, '    ', v_dname));
  COMMIT;
END",
                by_name("p_cw", "p_cd")
            ),
        ),
        (
            "bakeoff_order_status",
            "p_w INT, p_d INT, p_c INT, p_last VARCHAR(16)",
            format!(
                "BEGIN
  DECLARE v_c, v_n, v_o, v_carrier, v_lines INT;
  DECLARE v_balance, v_sum DECIMAL(12,2);
  DECLARE v_first VARCHAR(16);
  DECLARE v_entry DATETIME;
  {on_error}
  START TRANSACTION;
  SET v_c = p_c;
  {}
  SELECT c_balance, c_first INTO v_balance, v_first FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  IF v_first IS NULL THEN SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'bakeoff_tpcc: no such customer'; END IF;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o, v_entry, v_carrier FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  SELECT COUNT(*), SUM(ol_amount) INTO v_lines, v_sum FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
  COMMIT;
END",
                by_name("p_w", "p_d")
            ),
        ),
        (
            "bakeoff_delivery",
            "p_w INT, p_carrier INT",
            format!(
                "BEGIN
  DECLARE v_d, v_o, v_c, v_skipped INT DEFAULT 0;
  DECLARE v_sum DECIMAL(12,2);
  {on_error}
  START TRANSACTION;
  WHILE v_d < 10 DO
    SET v_d = v_d + 1;
    SET v_o = NULL;
    SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF v_o IS NULL THEN
      SET v_skipped = v_skipped + 1;
    ELSE
      DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
      SET v_c = NULL;
      SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o FOR UPDATE;
      IF v_c IS NULL THEN SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'bakeoff_tpcc: no order for a new order'; END IF;
      UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
      UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
      SELECT COALESCE(SUM(ol_amount), 0) INTO v_sum FROM order_line WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
      UPDATE customer SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
    END IF;
  END WHILE;
  COMMIT;
  SELECT v_skipped;
END"
            ),
        ),
        (
            "bakeoff_stock_level",
            "p_w INT, p_d INT, p_threshold INT",
            format!(
                "BEGIN
  DECLARE v_low INT;
  {on_error}
  START TRANSACTION;
  SELECT COUNT(DISTINCT s_i_id) INTO v_low FROM district, order_line, stock WHERE d_w_id = p_w AND d_id = p_d AND ol_w_id = d_w_id AND ol_d_id = d_id AND ol_o_id < d_next_o_id AND ol_o_id >= d_next_o_id - 20 AND s_w_id = d_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  COMMIT;
END"
            ),
        ),
    ]
}
