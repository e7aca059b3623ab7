#!/usr/bin/env sysbench
-- A TPC-C-like workload in the style of the Lua scripts people share for sysbench: many
-- tables, options declared for the command line, a parallel prepare with bulk inserts,
-- transactions restarted on deadlocks through sysbench's error hooks, sysbench's counters
-- reached through LuaJIT's ffi, and a `check` command that verifies the database is
-- consistent after a run. It is not TPC-C: the mix and the rules are simplified.
--
--   bakeoff tpcc_like.lua --tables=2 --scale=2 --threads=2 prepare
--   bakeoff tpcc_like.lua --tables=2 --scale=2 --threads=8 --time=60 run
--   bakeoff tpcc_like.lua --tables=2 --scale=2 check
--   bakeoff tpcc_like.lua --tables=2 --scale=2 cleanup
--
-- The same lines work with sysbench itself.

-- sysbench declares sb_counter_type; its C functions are the script's to declare.
local ffi = require("ffi")
ffi.cdef [[
void sb_counter_inc(int thread_id, sb_counter_type type);
int usleep(unsigned int usec);
]]

sysbench.cmdline.options = {
  tables = { "Number of table sets", 1 },
  scale = { "Warehouses per table set", 1 },
  districts = { "Districts per warehouse", 10 },
  customers = { "Customers per district", 30 },
  items = { "Items (and stock rows per warehouse)", 1000 },
  think_time = { "Microseconds to sleep between transactions", 0 },
  mysql_storage_engine = { "Storage engine", "innodb" },
}

-- sysbench fills sysbench.opt after the body has run: read it when called.
local o = setmetatable({}, { __index = function(_, k) return sysbench.opt[k] end })
local DDL = {
  warehouse = "w_id INT PRIMARY KEY, w_ytd DECIMAL(14,2) NOT NULL",
  district = "d_w_id INT, d_id INT, d_ytd DECIMAL(14,2) NOT NULL, d_next_o_id INT NOT NULL, " ..
    "PRIMARY KEY (d_w_id, d_id)",
  customer = "c_w_id INT, c_d_id INT, c_id INT, c_balance DECIMAL(14,2) NOT NULL, " ..
    "c_ytd_payment DECIMAL(14,2) NOT NULL, c_payment_cnt INT NOT NULL, " ..
    "c_delivery_cnt INT NOT NULL, PRIMARY KEY (c_w_id, c_d_id, c_id)",
  item = "i_id INT PRIMARY KEY, i_price DECIMAL(7,2) NOT NULL",
  stock = "s_w_id INT, s_i_id INT, s_quantity INT NOT NULL, s_ytd INT NOT NULL, " ..
    "s_order_cnt INT NOT NULL, PRIMARY KEY (s_w_id, s_i_id)",
  orders = "o_w_id INT, o_d_id INT, o_id INT, o_c_id INT NOT NULL, o_ol_cnt INT NOT NULL, " ..
    "o_carrier_id INT NULL, PRIMARY KEY (o_w_id, o_d_id, o_id)",
  new_orders = "no_w_id INT, no_d_id INT, no_o_id INT, PRIMARY KEY (no_w_id, no_d_id, no_o_id)",
  order_line = "ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT, ol_i_id INT NOT NULL, " ..
    "ol_quantity INT NOT NULL, ol_amount DECIMAL(9,2) NOT NULL, ol_delivered INT NULL, " ..
    "PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)",
  history = "h_id BIGINT AUTO_INCREMENT PRIMARY KEY, h_c_id INT, h_d_id INT, h_w_id INT, " ..
    "h_amount DECIMAL(9,2) NOT NULL",
}
local TABLES = { "warehouse", "district", "customer", "item", "stock", "orders", "new_orders",
  "order_line", "history" }
local W_YTD, D_YTD = 300000, 30000

-- ---------------------------------------------------------------------------------------
-- prepare, check, cleanup
-- ---------------------------------------------------------------------------------------

local function bulk(con, sql, n, row)
  con:bulk_insert_init(sql)
  for i = 1, n do con:bulk_insert_next(row(i)) end
  con:bulk_insert_done()
end

local function load_set(con, n)
  print(string.format("Creating table set %d (%d warehouses)...", n, o.scale))
  for _, t in ipairs(TABLES) do
    con:query(string.format("CREATE TABLE %s%d (%s) ENGINE=%s", t, n, DDL[t],
      o.mysql_storage_engine))
  end
  bulk(con, "INSERT INTO item" .. n .. " VALUES", o.items, function(i)
    return string.format("(%d,%d.%02d)", i, sysbench.rand.uniform(1, 99), i % 100)
  end)
  for w = 1, o.scale do
    con:query(string.format("INSERT INTO warehouse%d VALUES (%d, %d)", n, w, W_YTD))
    bulk(con, "INSERT INTO district" .. n .. " VALUES", o.districts, function(d)
      return string.format("(%d,%d,%d,1)", w, d, D_YTD * 10 / o.districts)
    end)
    bulk(con, "INSERT INTO customer" .. n .. " VALUES", o.districts * o.customers, function(i)
      local d, c = math.floor((i - 1) / o.customers) + 1, (i - 1) % o.customers + 1
      return string.format("(%d,%d,%d,-10,10,1,0)", w, d, c)
    end)
    bulk(con, "INSERT INTO stock" .. n .. " VALUES", o.items, function(i)
      return string.format("(%d,%d,%d,0,0)", w, i, sysbench.rand.uniform(10, 100))
    end)
  end
end

-- One thread per table set at a time, as sysbench's own prepare shares its tables out.
function cmd_prepare()
  local con = sysbench.sql.driver():connect()
  for n = sysbench.tid % o.threads + 1, o.tables, o.threads do load_set(con, n) end
end

function cmd_cleanup()
  local con = sysbench.sql.driver():connect()
  for n = 1, o.tables do
    for _, t in ipairs(TABLES) do con:query(string.format("DROP TABLE IF EXISTS %s%d", t, n)) end
  end
end

-- What any run must leave true, TPC-C's consistency conditions 1 to 4 in spirit.
function cmd_check()
  local con = sysbench.sql.driver():connect()
  local failures = 0
  local function expect(what, a, b)
    if tostring(a) ~= tostring(b) then
      failures = failures + 1
      print(string.format("INCONSISTENT: %s: %s ~= %s", what, tostring(a), tostring(b)))
    end
  end
  for n = 1, o.tables do
    for w = 1, o.scale do
      local w_ytd = con:query_row(string.format(
        "SELECT w_ytd FROM warehouse%d WHERE w_id = %d", n, w))
      local d_ytd = con:query_row(string.format(
        "SELECT SUM(d_ytd) FROM district%d WHERE d_w_id = %d", n, w))
      expect(string.format("set %d warehouse %d: w_ytd = sum(d_ytd)", n, w), w_ytd, d_ytd)
      local paid = con:query_row(string.format(
        "SELECT COALESCE(SUM(h_amount), 0) + %d FROM history%d WHERE h_w_id = %d", W_YTD, n, w))
      expect(string.format("set %d warehouse %d: w_ytd = initial + history", n, w),
        tonumber(w_ytd), tonumber(paid))
      for d = 1, o.districts do
        local next_o = con:query_row(string.format(
          "SELECT d_next_o_id - 1 FROM district%d WHERE d_w_id = %d AND d_id = %d", n, w, d))
        local max_o = con:query_row(string.format(
          "SELECT COALESCE(MAX(o_id), 0) FROM orders%d WHERE o_w_id = %d AND o_d_id = %d",
          n, w, d))
        expect(string.format("set %d district %d/%d: d_next_o_id - 1 = max(o_id)", n, w, d),
          next_o, max_o)
      end
    end
    local lines = con:query_row("SELECT COUNT(*) FROM order_line" .. n)
    local counted = con:query_row("SELECT COALESCE(SUM(o_ol_cnt), 0) FROM orders" .. n)
    expect(string.format("set %d: order lines = sum(o_ol_cnt)", n), lines, counted)
    local undelivered = con:query_row("SELECT COUNT(*) FROM orders" .. n ..
      " WHERE o_carrier_id IS NULL")
    local queued = con:query_row("SELECT COUNT(*) FROM new_orders" .. n)
    expect(string.format("set %d: undelivered orders = new orders", n), undelivered, queued)
  end
  if failures > 0 then error(string.format("%d consistency checks failed", failures)) end
  print(string.format("consistency: OK (%d table sets, %d warehouses each)", o.tables, o.scale))
end

sysbench.cmdline.commands = {
  prepare = { cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND },
  cleanup = { cmd_cleanup },
  check = { cmd_check },
}

-- ---------------------------------------------------------------------------------------
-- The transactions
-- ---------------------------------------------------------------------------------------

local con

function thread_init()
  con = sysbench.sql.driver():connect()
  con:query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
end

function thread_done()
  con:disconnect()
end

-- Deadlocks and lock waits restart the transaction: roll back what it did first.
function sysbench.hooks.sql_error_ignorable(e)
  return e.sql_errno == 1213 or e.sql_errno == 1205 or e.sql_errno == 1020
end

function sysbench.hooks.before_restart_event(e)
  con:query("ROLLBACK")
end

local function q(fmt, ...) return con:query(string.format(fmt, ...)) end
local function row(fmt, ...) return con:query_row(string.format(fmt, ...)) end

local function pick()
  local n = sysbench.rand.uniform(1, o.tables)
  local w = sysbench.rand.uniform(1, o.scale)
  local d = sysbench.rand.uniform(1, o.districts)
  return n, w, d
end

local function new_order()
  local n, w, d = pick()
  local c = sysbench.rand.uniform(1, o.customers)
  local lines = sysbench.rand.uniform(5, 15)
  -- 1% of orders name an item that does not exist and roll back, as TPC-C's do.
  local invalid = sysbench.rand.uniform(1, 100) == 1
  con:query("BEGIN")
  local o_id = tonumber(row("SELECT d_next_o_id FROM district%d WHERE d_w_id = %d AND d_id = %d "
    .. "FOR UPDATE", n, w, d))
  q("UPDATE district%d SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d", n, w, d)
  q("INSERT INTO orders%d VALUES (%d, %d, %d, %d, %d, NULL)", n, w, d, o_id, c, lines)
  q("INSERT INTO new_orders%d VALUES (%d, %d, %d)", n, w, d, o_id)
  for l = 1, lines do
    local i = (invalid and l == lines) and o.items + 1 or sysbench.rand.special(1, o.items)
    local price = row("SELECT i_price FROM item%d WHERE i_id = %d", n, i)
    if price == nil then
      con:query("ROLLBACK")
      ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_ERROR)
      return
    end
    local qty = sysbench.rand.uniform(1, 10)
    row("SELECT s_quantity FROM stock%d WHERE s_w_id = %d AND s_i_id = %d FOR UPDATE", n, w, i)
    q("UPDATE stock%d SET s_quantity = IF(s_quantity >= %d + 10, s_quantity - %d, s_quantity - %d + 91), "
      .. "s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1 WHERE s_w_id = %d AND s_i_id = %d",
      n, qty, qty, qty, qty, w, i)
    q("INSERT INTO order_line%d VALUES (%d, %d, %d, %d, %d, %d, %s * %d, NULL)",
      n, w, d, o_id, l, i, qty, price, qty)
  end
  con:query("COMMIT")
end

local function payment()
  local n, w, d = pick()
  local c = sysbench.rand.uniform(1, o.customers)
  local amount = string.format("%d.%02d", sysbench.rand.uniform(1, 5000), sysbench.rand.uniform(0, 99))
  con:query("BEGIN")
  q("UPDATE warehouse%d SET w_ytd = w_ytd + %s WHERE w_id = %d", n, amount, w)
  q("UPDATE district%d SET d_ytd = d_ytd + %s WHERE d_w_id = %d AND d_id = %d", n, amount, w, d)
  q("UPDATE customer%d SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
    .. "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
    n, amount, amount, w, d, c)
  q("INSERT INTO history%d (h_c_id, h_d_id, h_w_id, h_amount) VALUES (%d, %d, %d, %s)",
    n, c, d, w, amount)
  con:query("COMMIT")
end

local function delivery()
  local n, w = pick()
  local carrier = sysbench.rand.uniform(1, 10)
  con:query("BEGIN")
  for d = 1, o.districts do
    local o_id = row("SELECT MIN(no_o_id) FROM new_orders%d WHERE no_w_id = %d AND no_d_id = %d "
      .. "FOR UPDATE", n, w, d)
    if o_id ~= nil then
      q("DELETE FROM new_orders%d WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %s", n, w, d, o_id)
      q("UPDATE orders%d SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s",
        n, carrier, w, d, o_id)
      q("UPDATE order_line%d SET ol_delivered = 1 WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %s",
        n, w, d, o_id)
      local c, total = row("SELECT o.o_c_id, SUM(l.ol_amount) FROM orders%d o JOIN order_line%d l "
        .. "ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id "
        .. "WHERE o.o_w_id = %d AND o.o_d_id = %d AND o.o_id = %s GROUP BY o.o_c_id",
        n, n, w, d, o_id)
      q("UPDATE customer%d SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 "
        .. "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %s", n, total, w, d, c)
    end
  end
  con:query("COMMIT")
end

local function order_status()
  local n, w, d = pick()
  local c = sysbench.rand.uniform(1, o.customers)
  row("SELECT c_balance FROM customer%d WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", n, w, d, c)
  local last = row("SELECT MAX(o_id) FROM orders%d WHERE o_w_id = %d AND o_d_id = %d AND o_c_id = %d",
    n, w, d, c)
  if last ~= nil then
    q("SELECT ol_i_id, ol_quantity, ol_amount FROM order_line%d WHERE ol_w_id = %d AND ol_d_id = %d "
      .. "AND ol_o_id = %s", n, w, d, last)
  end
end

local function stock_level()
  local n, w, d = pick()
  local next_o = tonumber(row("SELECT d_next_o_id FROM district%d WHERE d_w_id = %d AND d_id = %d",
    n, w, d))
  row("SELECT COUNT(DISTINCT s.s_i_id) FROM order_line%d l JOIN stock%d s ON s.s_w_id = l.ol_w_id "
    .. "AND s.s_i_id = l.ol_i_id WHERE l.ol_w_id = %d AND l.ol_d_id = %d AND l.ol_o_id >= %d "
    .. "AND s.s_quantity < %d", n, n, w, d, next_o - 20, sysbench.rand.uniform(10, 20))
end

-- TPC-C's mix, roughly: 45% new order, 43% payment, 4% each of the others.
function event()
  local r = sysbench.rand.uniform(1, 100)
  if r <= 45 then new_order()
  elseif r <= 88 then payment()
  elseif r <= 92 then delivery()
  elseif r <= 96 then order_status()
  else stock_level() end
  if o.think_time > 0 then ffi.C.usleep(o.think_time) end
end
