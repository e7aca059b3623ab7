-- bakeoff's half of sysbench's Lua API written in Lua: what must raise a Lua value (the
-- error descriptors that restart an event), build on LuaJIT's ffi, or wrap the Rust half
-- (`raw`, this chunk's argument) in the objects scripts hold. Names, tables and report
-- formats are sysbench 1.0.20's interface; the code is bakeoff's own.

local raw = ...
local ffi = require("ffi")

-- The C functions an event calls most (statements, parameters, random numbers): called
-- through ffi, so compiled traces call them directly.
local C = {}
for name, f in pairs(raw.fast) do C[name] = ffi.cast(f[1], f[2]) end

-- sysbench's counter types, declared as sysbench declares them: scripts declare
-- `void sb_counter_inc(int, sb_counter_type);` themselves and count through ffi.C.
ffi.cdef [[
typedef enum {
  SB_CNT_OTHER, SB_CNT_READ, SB_CNT_WRITE, SB_CNT_TRX, SB_CNT_ERROR, SB_CNT_RECONNECT,
  SB_CNT_MAX
} sb_counter_type;
]]

sysbench.error = { NONE = 0, RESTART_EVENT = 1 }
sysbench.hooks = {}

-- ---------------------------------------------------------------------------------------
-- sysbench.sql
-- ---------------------------------------------------------------------------------------

local sql = sysbench.sql
sql.type = {}
for name, n in pairs(raw.types) do sql.type[name] = n end
sql.error = { NONE = 0, IGNORABLE = 1, FATAL = 2 }

local Driver = { __tostring = function() return "<sql_driver>" end }
Driver.__index = Driver
local Connection = { __tostring = function() return "<sql_connection>" end }
Connection.__index = Connection
local Statement = { __tostring = function() return "<sql_statement>" end }
Statement.__index = Statement
local Param = { __tostring = function() return "<sql_param>" end }
Param.__index = Param

-- A statement the server refused: restart the event when the error is ignorable (the run's
-- list, or the script's sql_error_ignorable hook), else end it with sysbench's message.
-- Every method tail-calls it (`return refused(...)`), so level 2 is the method's caller: the
-- script's line, or nothing under pcall, as sysbench's messages read.
local function refused(con, query, errno, state, msg)
  -- The API misused, no statement ran: raised a level further out, as sysbench's check_error
  -- raises its "SQL API error" (under pcall, the line of the pcall).
  if errno == nil then error(msg, 3) end
  local e = {
    connection = con,
    query = query,
    sql_errno = errno,
    sql_state = state,
    sql_errmsg = msg,
  }
  local hook = sysbench.hooks.sql_error_ignorable
  local ignorable = con.raw:ignorable(errno, state)
  -- sysbench's pgsql driver rolls back after an ignorable error (errno 0: PostgreSQL's).
  if ignorable and errno == 0 then con.raw:recover() end
  if ignorable or (type(hook) == "function" and hook(e)) then
    con.raw:count_error(errno)
    e.errcode = sysbench.error.RESTART_EVENT
    error(e, 2)
  end
  error(string.format("SQL error, errno = %d, state = '%s': %s", errno, state, msg), 2)
end

-- The run's driver (--db-driver): mysql or pgsql, each the same API.
local function run_driver()
  local d = sysbench.opt and sysbench.opt.db_driver
  if d == nil or d == "" then return "mysql" end
  return d
end

function sql.driver(name)
  local want = name or run_driver()
  if want ~= "mysql" and want ~= "pgsql" then
    io.stderr:write(string.format("FATAL: invalid database driver name: '%s'\n", want))
    error("failed to initialize the DB driver", 2)
  end
  return setmetatable({}, Driver)
end

function Driver:name() return run_driver() end

-- A connection's result set is one object, refilled by each of its statements (`rs`): its
-- counts read through to the Rust half, its methods here.
local Result = { __tostring = function() return "<sql_result>" end }
local result_methods = {}
function Result.__index(rs, key)
  local m = result_methods[key]
  if m ~= nil then return m end
  return rs.raw[key]
end
function result_methods.fetch_row(rs) return rs.raw:fetch_row() end
-- Freeing an invalid result set fails as sysbench's assert does: the message alone.
function result_methods.free(rs)
  local why = rs.raw:free()
  if why then error(why, 0) end
end

function Driver:connect()
  local con = raw.connect()
  return setmetatable({ raw = con, rs = setmetatable({ raw = con:result() }, Result) },
    Connection)
end

function Connection:query(query)
  local ok, errno, state, msg = self.raw:query(query)
  if ok == nil then return refused(self, query, errno, state, msg) end
  return self.rs
end

function Connection:query_row(query)
  local rs = self:query(query)
  if rs.nrows == 0 then return nil end
  return unpack(rs:fetch_row(), 1, rs.nfields)
end

function Connection:prepare(query)
  local stmt, errno, state, msg = self.raw:prepare(query)
  -- Not a tail call, as sysbench's prepare calls check_error: its levels count this frame.
  if stmt == nil then refused(self, query, errno, state, msg) end
  return setmetatable({ raw = stmt, ptr = ffi.cast("void *", stmt:ptr()), con = self,
    query = query }, Statement)
end

-- A method that answers nothing, or why it could not: raised from the script's line.
local function checked(why)
  if why then error(why, 3) end
end

function Connection:bulk_insert_init(query) checked(self.raw:bulk_insert_init(query)) end

function Connection:bulk_insert_next(value)
  local failed, errno, state, msg = self.raw:bulk_insert_next(value)
  if msg then return refused(self, value, errno, state, msg) end
end

function Connection:bulk_insert_done()
  local failed, errno, state, msg = self.raw:bulk_insert_done()
  if msg then return refused(self, "bulk insert", errno, state, msg) end
end

function Connection:reconnect() checked(self.raw:reconnect()) end
function Connection:disconnect() checked(self.raw:disconnect()) end
Connection.close = Connection.disconnect
-- Every result is read whole when its statement runs: there is never a next one to fetch.
function Connection:next_result() return nil end

function Statement:bind_create(btype, max_len)
  local p, why = self.raw:bind_create(btype, max_len)
  if p == nil then error(why, 2) end
  return setmetatable({ raw = p, ptr = ffi.cast("void *", p:ptr()), kind = p:kind() }, Param)
end

function Statement:bind_param(...)
  local n, raws = select("#", ...), {}
  for i = 1, n do raws[i] = (select(i, ...)).raw end
  self.raw:bind_param(unpack(raws, 1, n))
  return nil
end

function Statement:execute()
  if C.stmt_execute(self.ptr) == 0 then return self.con.rs end
  local _, errno, state, msg = self.raw:failure()
  return refused(self.con, self.query, errno, state, msg)
end

-- Parameter kinds (param.rs): 0 integer, 1 double, 2 text.
function Param:set(value)
  local kind = self.kind
  if value == nil then
    C.param_null(self.ptr)
  elseif kind == 0 then
    C.param_int(self.ptr, tonumber(value))
  elseif kind == 1 then
    C.param_double(self.ptr, tonumber(value))
  else
    local s = tostring(value)
    C.param_text(self.ptr, s, #s)
  end
end

function Param:set_rand_str(fmt)
  if self.kind ~= 2 then error("Unsupported argument type", 2) end
  local s = sysbench.rand.string(fmt)
  C.param_text(self.ptr, s, #s)
end

function Statement:close() self.raw:close() end
function Statement:next_result() return nil end

-- ---------------------------------------------------------------------------------------
-- sysbench.rand: the generators an event calls, through ffi
-- ---------------------------------------------------------------------------------------

local rand = sysbench.rand
function rand.default(a, b) return C.rand_default(a, b) end
function rand.uniform(a, b) return C.rand_uniform(a, b) end
function rand.gaussian(a, b) return C.rand_gaussian(a, b) end
function rand.special(a, b) return C.rand_special(a, b) end
function rand.pareto(a, b) return C.rand_pareto(a, b) end
function rand.uniform_double() return C.rand_uniform_double() end
-- A uint64 cdata, as sysbench returns (a Lua number would lose the low bits).
function rand.uniform_uint64() return C.rand_uint64() end

-- ---------------------------------------------------------------------------------------
-- Reports: sysbench's three formats, for scripts' report hooks
-- ---------------------------------------------------------------------------------------

local function rates(stat)
  local s = stat.time_interval
  return stat.events / s, (stat.reads + stat.writes + stat.other) / s, stat.reads / s,
    stat.writes / s, stat.other / s, stat.errors / s, stat.reconnects / s
end

function sysbench.report_default(stat)
  local tps, qps, r, w, o, err, rec = rates(stat)
  print(string.format("[ %.0fs ] thds: %u tps: %4.2f qps: %4.2f (r/w/o: %4.2f/%4.2f/%4.2f) " ..
    "lat (ms,%u%%): %4.2f err/s %4.2f reconn/s: %4.2f", stat.time_total, stat.threads_running,
    tps, qps, r, w, o, sysbench.opt.percentile, stat.latency_pct * 1000, err, rec))
end

function sysbench.report_csv(stat)
  local tps, qps, r, w, o, err, rec = rates(stat)
  print(string.format("%.0f,%u,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f",
    stat.time_total, stat.threads_running, tps, qps, r, w, o, stat.latency_pct * 1000, err, rec))
end

local json_open = false
function sysbench.report_json(stat)
  local tps, qps, r, w, o, err, rec = rates(stat)
  io.write(json_open and ",\n" or "[\n")
  json_open = true
  io.write(string.format([[
  {
    "time": %4.0f,
    "threads": %u,
    "tps": %4.2f,
    "qps": {
      "total": %4.2f,
      "reads": %4.2f,
      "writes": %4.2f,
      "other": %4.2f
    },
    "latency": %4.2f,
    "errors": %4.2f,
    "reconnects": %4.2f
  }]], stat.time_total, stat.threads_running, tps, qps, r, w, o,
    stat.latency_pct * 1000, err, rec))
end

-- Called when the state closes: the JSON array is closed if one was opened.
function sysbench.__close_reports()
  if json_open then io.write("\n]\n") end
  json_open = false
  io.flush()
end

-- ---------------------------------------------------------------------------------------
-- One event, as the engine asks for it: 0 done, 1 the script ends its thread (event()
-- returned a value), 2 restart (an ignorable error, after the before_restart_event hook).
-- ---------------------------------------------------------------------------------------

local RESTART = sysbench.error.RESTART_EVENT

-- An event that failed: restart it (0) after the before_restart_event hook when the error is
-- an ignorable one; anything else goes on up.
local function restartable(err)
  if type(err) ~= "table" or err.errcode ~= RESTART then error(err, 0) end
  local hook = sysbench.hooks.before_restart_event
  if hook then hook(err) end
end

-- The engine's closed loop, run here so that LuaJIT compiles it together with the script's
-- event (event_loop.rs): the engine's bookkeeping is `pace`, reached through ffi. Returns 0
-- when the engine ends it, 1 when an event began and was not done (the script ended its
-- thread, or the run stopped while the event was restarting).
function sysbench.__loop(tid, pace)
  pace = ffi.cast("void *", pace)
  local begin, done, again = C.event_begin, C.event_end, C.event_restart
  while begin(pace) ~= 0 do
    local ok, ret = pcall(event, tid)
    while not ok do
      restartable(ret)
      if again(pace) == 0 then return 1 end
      ok, ret = pcall(event, tid)
    end
    if ret then return 1 end
    done(pace)
  end
  return 0
end

function sysbench.__event(tid)
  local ok, ret = pcall(event, tid)
  if ok then
    if ret then return 1 end
    return 0
  end
  restartable(ret)
  return 2
end

-- ---------------------------------------------------------------------------------------
-- sysbench 0.5's names, which 1.0's scripts still call (oltp_common.lua: sb_rand): the
-- random functions, and the global-connection SQL calls over one connection per state.
-- ---------------------------------------------------------------------------------------

thread_id = sysbench.tid
test = sysbench.cmdline.script_path

function sb_rnd() return tonumber(sysbench.rand.uniform_uint64() % 4294967296) end
sb_rand = sysbench.rand.default
sb_rand_str = sysbench.rand.string
sb_rand_uniform = sysbench.rand.uniform
sb_rand_gaussian = sysbench.rand.gaussian
sb_rand_special = sysbench.rand.special

function sb_rand_uniq(a, b)
  a, b = a or 0, b or 4294967295
  while true do
    local v = sysbench.rand.unique()
    if v >= a and v <= b then return v end
  end
end

-- 0.5's connection: one per state, opened by the first db_query, db_prepare or
-- db_bulk_insert_init that needs it (as sysbench 1.0's C binding opens it), or by db_connect.
-- Each call fails as sysbench's does: its own message at the script's line (luaL_error in
-- C names the Lua function calling it), so no call here is a tail call, which would drop
-- the frame the level counts.
local legacy
sysbench.db = { DB_ERROR_NONE = 0, DB_ERROR_RESTART_TRANSACTION = 1, DB_ERROR_FAILED = 2 }
local db = sysbench.db
function db.connect()
  local driver = sql.driver()
  db_driver = driver:name()
  if legacy == nil then legacy = driver:connect() end
end
local function opened()
  if legacy == nil then db.connect() end
  return legacy
end
local function connected()
  if legacy == nil then error("Uninitialized database connection", 3) end
  return legacy
end
-- An ignorable error restarts the event as 1.0's calls do; any other ends it with the 0.5
-- call's own words (the driver has said what the server refused).
local function as_0_5(name, ok, err)
  if ok then return err end
  if type(err) == "table" then error(err, 0) end
  error(name .. "() failed", 3)
end
function db.disconnect() if legacy then legacy:disconnect(); legacy = nil end end
-- db_query returns nothing: sysbench frees the result set itself.
function db.query(query)
  local con = opened()
  as_0_5("db_query", pcall(con.query, con, query))
end
function db.bulk_insert_init(query) return opened():bulk_insert_init(query) end
function db.bulk_insert_next(value) return connected():bulk_insert_next(value) end
function db.bulk_insert_done() return connected():bulk_insert_done() end
function db.prepare(query)
  local con = opened()
  local stmt = as_0_5("db_prepare", pcall(con.prepare, con, query))
  return stmt
end
function db.execute(stmt)
  connected()
  local rs = as_0_5("db_execute", pcall(stmt.execute, stmt))
  return rs
end
function db.close(stmt) return stmt:close() end
function db.store_results(rs) return rs end
-- sysbench's C binding frees quietly whatever the result set's state (its driver may ALERT).
function db.free_results(rs) if rs then pcall(rs.free, rs) end end
-- Result buffers: sysbench 1.0 binds them, and no 0.5 call left reads them.
function db.bind_result(stmt, values)
  connected()
  if type(values) ~= "table" then error("table was expected", 2) end
  if next(values) == nil then error("table is empty", 2) end
end

-- 0.5's binding: a table of values; each later execute sends their current values.
function db.bind_param(stmt, values)
  connected()
  if type(values) ~= "table" then error("table was expected", 2) end
  if next(values) == nil then error("table is empty", 2) end
  local params, kinds = {}, sql.type
  for i, v in ipairs(values) do
    local p = type(v) == "number" and stmt:bind_create(kinds.BIGINT)
      or stmt:bind_create(kinds.VARCHAR, math.max(#tostring(v), 255))
    params[i] = p
  end
  stmt:bind_param(unpack(params))
  stmt.legacy_values, stmt.legacy_params = values, params
  local execute = stmt.execute
  stmt.execute = function(s)
    for i, p in ipairs(s.legacy_params) do p:set(s.legacy_values[i]) end
    return execute(s)
  end
end

for _, name in ipairs({ "connect", "disconnect", "query", "bulk_insert_init",
  "bulk_insert_next", "bulk_insert_done", "prepare", "bind_param", "bind_result", "execute", "close",
  "store_results", "free_results" }) do
  _G["db_" .. name] = db[name]
end
DB_ERROR_NONE = db.DB_ERROR_NONE
DB_ERROR_RESTART_TRANSACTION = db.DB_ERROR_RESTART_TRANSACTION
DB_ERROR_FAILED = db.DB_ERROR_FAILED
mysql_table_engine = mysql_table_engine or "innodb"
myisam_max_rows = 1000000

-- ---------------------------------------------------------------------------------------
-- sysbench.histogram: a log-scale histogram of `size` buckets over [min, max], printed as
-- sysbench prints its latency histogram.
-- ---------------------------------------------------------------------------------------

local Histogram = {}
Histogram.__index = Histogram
sysbench.histogram = {}

function sysbench.histogram.new(size, min, max)
  assert(size > 1 and min > 0 and max > min, "sysbench.histogram.new(size, min, max): size > 1, 0 < min < max")
  local h = setmetatable({ size = size, counts = {}, base = math.log(min) }, Histogram)
  h.scale = (size - 1) / (math.log(max) - h.base)
  for i = 0, size - 1 do h.counts[i] = 0 end
  return h
end

function Histogram:update(value)
  local i = 0
  if value > 0 then
    i = math.floor((math.log(value) - self.base) * self.scale + 0.5)
  end
  i = math.max(0, math.min(self.size - 1, i))
  self.counts[i] = self.counts[i] + 1
end

function Histogram:print()
  local most = 1
  for i = 0, self.size - 1 do most = math.max(most, self.counts[i]) end
  print("       value  ------------- distribution ------------- count")
  for i = 0, self.size - 1 do
    local n = self.counts[i]
    if n > 0 then
      local stars = math.floor(40 * n / most + 0.5)
      print(string.format("%12.3f |%-40s %d", math.exp(i / self.scale + self.base),
        string.rep("*", stars), n))
    end
  end
end
