-- A workload of your own, in sysbench's Lua API: a key-value table, read and written by
-- each event in the share `reads` gives. Runs as it is under sysbench and under bakeoff:
--
--   bakeoff run scripts/kv.lua --script-option rows=100000 --threads=8 --time=30
--   sysbench scripts/kv.lua --rows=100000 --mysql-socket=... prepare|run|cleanup
--
-- and as a study's workload (examples/lua-script.toml).

sysbench.cmdline.options = {
  rows = { "Rows in the table", 10000 },
  reads = { "Percent of events that only read", 90 },
}

-- sysbench's prepare command: the table, its rows a thousand to a statement.
function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE kv (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
  for first = 1, sysbench.opt.rows, 1000 do
    local rows = {}
    for id = first, math.min(first + 999, sysbench.opt.rows) do
      rows[#rows + 1] = string.format("(%d, 0)", id)
    end
    con:query("INSERT INTO kv VALUES " .. table.concat(rows, ","))
  end
end

function cleanup()
  sysbench.sql.driver():connect():query("DROP TABLE IF EXISTS kv")
end

function thread_init()
  con = sysbench.sql.driver():connect()
end

local function key()
  return sysbench.rand.uniform(1, sysbench.opt.rows)
end

function event()
  if sysbench.rand.uniform(1, 100) <= sysbench.opt.reads then
    con:query("SELECT v FROM kv WHERE id = " .. key())
  else
    con:query("UPDATE kv SET v = v + 1 WHERE id = " .. key())
  end
end

function thread_done()
  con:disconnect()
end
