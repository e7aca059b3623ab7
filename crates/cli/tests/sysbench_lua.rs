//! Lua scripts end to end, in sysbench's grammar, against the suite's MariaDB: sysbench's own
//! scripts run in bakeoff's LuaJIT (from a copy: at their stock path bakeoff runs them
//! natively) and leave the tables sysbench's leave; the API answers as the real sysbench's
//! does for the same script; a TPC-C-like script of the kind people share (many tables,
//! deadlock hooks, ffi counters) prepares, runs and stays consistent.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bakeoff_testkit::{connect, rt, server};
use common::{db, parse_report, real_sysbench};

const STOCK: &str = "/usr/share/sysbench";

/// `program` on the suite's server in database `db`, in directory `dir`.
fn on_db(program: &Path, dir: &Path, db: &str, args: &[&str]) -> Output {
    let s = server();
    Command::new(program)
        .args(args)
        .arg(format!("--mysql-socket={}", s.socket().display()))
        .arg(format!("--mysql-user={}", s.user()))
        .arg(format!("--mysql-password={}", s.password().expose()))
        .arg(format!("--mysql-db={db}"))
        .current_dir(dir)
        .output()
        .expect("run")
}

fn bakeoff() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bakeoff"))
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn ok(o: Output, what: &str) -> String {
    let text = out(&o);
    assert!(
        o.status.success(),
        "{what} failed ({:?}):\n{text}",
        o.status
    );
    text
}

/// A scratch directory holding `files`; with `stock`, a copy of sysbench's scripts too.
fn scratch(name: &str, stock: bool, files: &[(&str, &str)]) -> PathBuf {
    let dir = bakeoff_testkit::scratch::dir(&format!("lua-{name}"));
    if stock {
        let entries = std::fs::read_dir(STOCK).unwrap_or_else(|e| {
            panic!("{STOCK}: {e}: install sysbench (`sudo apt-get install sysbench`)")
        });
        for e in entries.flatten() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

/// Each table's definition and row count, in name order.
fn tables(db: &str) -> Vec<(String, String, u64)> {
    let opts = server().connect_options();
    rt().block_on(async {
        let mut c = connect(&opts).await;
        let names = c
            .query_rows(&format!(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY table_name"
            ))
            .await
            .expect("list tables");
        let mut out = Vec::new();
        for name in names.into_iter().filter_map(|r| r.into_iter().next().flatten()) {
            let ddl = c
                .query_rows(&format!("SHOW CREATE TABLE `{db}`.`{name}`"))
                .await
                .expect("ddl");
            let count = c
                .query_rows(&format!("SELECT COUNT(*) FROM `{db}`.`{name}`"))
                .await
                .expect("count");
            let ddl = ddl[0][1].clone().unwrap_or_default();
            // AUTO_INCREMENT's next value depends on the server's allocation, not the tool.
            let ddl = ddl
                .split_whitespace()
                .filter(|w| !w.starts_with("AUTO_INCREMENT="))
                .collect::<Vec<_>>()
                .join(" ");
            let n = count[0][0].as_deref().unwrap_or("0").parse().unwrap();
            out.push((name, ddl, n));
        }
        c.quit().await;
        out
    })
}

/// sysbench's own scripts, unchanged, in bakeoff's LuaJIT: prepare makes the tables
/// sysbench's prepare makes (definitions and rows), a single-threaded `--events` run changes
/// the row counts as sysbench's does, and cleanup drops them all.
#[test]
fn sysbenchs_own_scripts_run_in_lua_and_leave_sysbenchs_tables() {
    let (sb_db, bo_db) = (db("lua_stock_sb"), db("lua_stock_bo"));
    let dir = scratch("stock", true, &[]);
    // Scripts whose single-threaded runs change the row count the same way whatever the keys
    // drawn (oltp_delete's does not: two deletes may draw one key).
    for script in [
        "oltp_read_write",
        "oltp_insert",
        "oltp_update_index",
        "oltp_point_select",
    ] {
        let path = format!("{script}.lua");
        let sized = ["--tables=2", "--table-size=50", "--rand-type=uniform"];
        let prepare = [&[path.as_str()][..], &sized, &["--threads=2", "prepare"]].concat();
        let run = [
            &[path.as_str()][..],
            &sized,
            &["--threads=1", "--events=20", "run"],
        ]
        .concat();
        let cleanup = [path.as_str(), "--tables=2", "cleanup"];
        let stock = format!("{STOCK}/{path}");
        let sb = |args: &[&str]| on_db(&real_sysbench(), &dir, &sb_db, &with(&stock, &path, args));
        ok(sb(&prepare), "sysbench prepare");
        let bo = ok(on_db(&bakeoff(), &dir, &bo_db, &prepare), "bakeoff prepare");
        assert!(!bo.contains("bakeoff_tables"), "{bo}");
        assert_eq!(tables(&bo_db), tables(&sb_db), "{script}: prepare");
        ok(sb(&run), "sysbench run");
        let report = ok(on_db(&bakeoff(), &dir, &bo_db, &run), "bakeoff run");
        assert_eq!(parse_report(&report)["transactions"], 20.0, "{report}");
        let counts = |db: &str| tables(db).into_iter().map(|t| t.2).collect::<Vec<_>>();
        let (want, got) = (counts(&sb_db), counts(&bo_db));
        assert_eq!(
            got.iter().sum::<u64>(),
            want.iter().sum::<u64>(),
            "{script}: rows after 20 events"
        );
        ok(sb(&cleanup), "sysbench cleanup");
        ok(on_db(&bakeoff(), &dir, &bo_db, &cleanup), "bakeoff cleanup");
        assert_eq!(tables(&bo_db), Vec::new(), "{script}: cleanup");
    }
}

/// `args` with the script's copy swapped for its stock path (sysbench runs its own).
fn with<'a>(stock: &'a str, copy: &str, args: &[&'a str]) -> Vec<&'a str> {
    args.iter()
        .map(|a| if *a == copy { stock } else { a })
        .collect()
}

/// A script touching the SQL API, the generators' shapes and the hooks: what it prints is the
/// same under both tools, line for line.
const API: &str = r###"
function sysbench.hooks.report_cumulative(stat)
  print("reconnects", stat.reconnects, "events", stat.events)
end
function sysbench.hooks.sql_error_ignorable(e)
  print("ignorable?", e.sql_errno, e.sql_state, e.query)
  return false
end
function event()
  local drv = sysbench.sql.driver()
  print(drv:name(), tostring(drv):sub(1, 1))
  local con = drv:connect()
  con:query("DROP TABLE IF EXISTS api")
  con:query("CREATE TABLE api (a INT PRIMARY KEY, b VARCHAR(10), c DOUBLE)")
  con:bulk_insert_init("INSERT INTO api VALUES")
  for i = 1, 30 do con:bulk_insert_next(string.format("(%d, 'v%d', %d.5)", i, i, i)) end
  con:bulk_insert_done()
  print("rows", con:query_row("SELECT COUNT(*), SUM(a) FROM api"))
  local rs = con:query("SELECT a, b FROM api WHERE a <= 3 ORDER BY a")
  print("result", rs.nrows, rs.nfields)
  for i = 1, rs.nrows do print(unpack(rs:fetch_row(), 1, rs.nfields)) end
  -- (No DOUBLE parameter: sysbench 1.0.20 writes it past its buffer and crashes.)
  local stmt = con:prepare("UPDATE api SET b = ?, c = a * 2 WHERE a = ?")
  local b = stmt:bind_create(sysbench.sql.type.VARCHAR, 4)
  local a = stmt:bind_create(sysbench.sql.type.INT)
  stmt:bind_param(b, a)
  b:set("truncated"); a:set(2)
  -- (Nor a look at an UPDATE's result: sysbench hands back a NULL one that crashes it.)
  stmt:execute()
  b:set(nil); a:set(3)
  stmt:execute()
  print(con:query_row("SELECT b, c FROM api WHERE a = 2"))
  print(con:query_row("SELECT b IS NULL FROM api WHERE a = 3"))
  print(pcall(stmt.bind_create, stmt, sysbench.sql.type.DATE))
  stmt:close()
  print(con:query_row("SELECT a FROM api WHERE a > 100"))
  local e, m = pcall(con.query, con, "INSERT INTO api VALUES (1, 'dup', 0)")
  print(e, (m:gsub("^.-: ", "")))
  print("still", con:query_row("SELECT 1"))
  print(#sysbench.rand.string("##@@"), sysbench.rand.uniform(5, 5), sysbench.rand.default(7, 7))
  con:query("DROP TABLE api")
  con:disconnect()
end
"###;

#[test]
fn the_sql_api_answers_as_sysbenchs_does() {
    let database = db("lua_api");
    let dir = scratch("api", false, &[("api.lua", API)]);
    let args = ["--verbosity=1", "--events=1", "api.lua", "run"];
    let want = out(&on_db(&real_sysbench(), &dir, &database, &args));
    let got = out(&on_db(&bakeoff(), &dir, &database, &args));
    assert!(want.contains("still\t1"), "sysbench itself:\n{want}");
    assert_eq!(
        got, want,
        "\n--- bakeoff ---\n{got}\n--- sysbench ---\n{want}"
    );
}

/// The counters and the sleep scripts reach through ffi: `sb_counter_inc` (exported by the
/// binary) adds to the report's errors, `usleep` (libc) sleeps.
#[test]
fn scripts_count_and_sleep_through_ffi() {
    let script = r#"
local ffi = require("ffi")
ffi.cdef[[
void sb_counter_inc(int, sb_counter_type);
int usleep(unsigned int);
]]
function event()
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_ERROR)
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_READ)
  ffi.C.usleep(2000)
end
"#;
    let dir = scratch("ffi", false, &[("ffi.lua", script)]);
    let o = Command::new(bakeoff())
        .args(["ffi.lua", "--events=10", "--threads=2", "run"])
        .current_dir(&dir)
        .output()
        .expect("run");
    let report = ok(o, "ffi script");
    let r = parse_report(&report);
    assert_eq!(r["ignored errors"], 10.0, "{report}");
    assert_eq!(r["read"], 10.0, "{report}");
    assert!(r["sum"] >= 10.0 * 2.0, "each event sleeps 2 ms: {report}");
}

/// examples/lua/tpcc_like.lua: a parallel prepare of many tables, a run of several threads
/// whose deadlocks restart their transactions through the hooks, then its own consistency
/// check, then cleanup.
#[test]
fn a_tpcc_like_script_prepares_runs_and_stays_consistent() {
    let database = db("lua_tpcc");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua/tpcc_like.lua");
    let script = script.to_str().unwrap().to_string();
    let dir = scratch("tpcc", false, &[]);
    let sized = [
        script.as_str(),
        "--tables=2",
        "--scale=2",
        "--customers=10",
        "--items=100",
    ];
    let bo = |extra: &[&str]| on_db(&bakeoff(), &dir, &database, &[&sized[..], extra].concat());
    ok(bo(&["--threads=2", "prepare"]), "prepare");
    assert_eq!(tables(&database).len(), 18, "9 tables in each of 2 sets");
    let report = ok(bo(&["--threads=4", "--events=300", "run"]), "run");
    assert_eq!(parse_report(&report)["transactions"], 300.0, "{report}");
    let check = ok(bo(&["check"]), "check");
    assert!(check.contains("consistency: OK"), "{check}");
    ok(bo(&["cleanup"]), "cleanup");
    assert_eq!(tables(&database), Vec::new());
}

/// Where a script's states run: connections share the client threads (one per CPU), each on
/// a fiber, so the process has far fewer threads than connections (four a CPU, at least
/// sixteen); a script that waits inside C (here `os.execute`, named in a comment: the check
/// reads the text) keeps a thread per connection, as sysbench does. Each state reads the
/// process's thread count itself.
#[test]
fn script_states_share_threads_unless_they_wait_in_c() {
    let body = r#"
most = 0
local function count()
  local f = io.open("/proc/self/status")
  for line in f:lines() do
    local n = line:match("^Threads:%s+(%d+)")
    if n then most = math.max(most, tonumber(n)) end
  end
  f:close()
end
function thread_init()
  con = sysbench.sql.driver():connect()
  count()
end
function event()
  con:query("SELECT 1")
  count()
end
function thread_done()
  print("threads " .. most)
end
"#;
    let waits = format!("-- os.execute is what keeps this one off the reactor\n{body}");
    let dir = scratch(
        "threads",
        false,
        &[("shares.lua", body), ("waits.lua", &waits)],
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let conns = (4 * cpus).max(16);
    let threads = format!("--threads={conns}");
    let events = format!("--events={}", 20 * conns);
    let most = |script: &str| -> u32 {
        let args = [script, threads.as_str(), events.as_str(), "run"];
        let text = ok(on_db(&bakeoff(), &dir, &db("lua_threads"), &args), script);
        text.lines()
            .filter_map(|l| l.strip_prefix("threads "))
            .map(|n| n.parse::<u32>().expect("a count"))
            .max()
            .unwrap_or_else(|| panic!("{script} said no thread count:\n{text}"))
    };
    let shared = most("shares.lua");
    assert!(shared < conns, "{conns} connections on {shared} threads");
    let own = most("waits.lua");
    assert!(
        own >= conns,
        "{conns} connections waiting in C on {own} threads"
    );
}
