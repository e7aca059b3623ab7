//! A sysbench Lua script driven by the engine, against the suite's MariaDB: one Lua state per
//! connection on its own client thread, `thread_init` / `event` / `thread_done` called as
//! sysbench calls them, the statements counted sysbench's way.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_engine::{run, Quiet, RunSpec, RunStatus};
use bakeoff_testkit::{schema, server};
use bakeoff_workload::scripting::lua::Script;

const SCRIPT: &str = r#"
function thread_init()
  con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE IF NOT EXISTS t" .. sysbench.tid .. " (a INT)")
end
function event()
  con:query("INSERT INTO t" .. sysbench.tid .. " VALUES (1)")
  local n = con:query_row("SELECT COUNT(*) FROM t" .. sysbench.tid)
  assert(tonumber(n) >= 1)
end
function thread_done()
  con:disconnect()
end
"#;

fn script(name: &str, text: &str) -> Script {
    let dir = bakeoff_testkit::scratch::dir(&format!("lua-{name}"));
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, text).unwrap();
    Script::new(
        path,
        text.to_string(),
        Vec::new(),
        Some("run".into()),
        vec![schema(name)],
    )
    .unwrap()
}

fn spec(connections: u32, events: u64) -> RunSpec {
    RunSpec {
        connections,
        // One Lua state per thread: a script's calls block its thread, as in sysbench.
        client_threads: connections,
        time: Some(Duration::from_secs(30)),
        events: Some(events),
        ..RunSpec::default()
    }
}

#[test]
fn each_connection_runs_the_scripts_events_in_a_state_of_its_own() {
    let _ = server();
    let s = Arc::new(script("events", SCRIPT));
    let r = run(s, &spec(2, 40), &AtomicBool::new(false), &mut Quiet).expect("run");
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.total.events, 40);
    // Per event one INSERT (a write) and one SELECT (a read); CREATE in thread_init is other,
    // counted with the first event of each connection.
    assert_eq!((r.total.reads, r.total.writes), (40, 40));
    assert_eq!(r.connections.len(), 2);
    assert!(
        r.connections.iter().all(|c| c.events > 0),
        "{:?}",
        r.connections
    );
}

#[test]
fn a_script_error_stops_the_run_with_lua_s_message() {
    let _ = server();
    let s = Arc::new(script(
        "fails",
        "function event() error('no such thing') end\n",
    ));
    for spec in both_loops(1, 5) {
        let r = run(s.clone(), &spec, &AtomicBool::new(false), &mut Quiet).expect("run starts");
        match &r.status {
            RunStatus::Failed(why) => assert!(why.contains("no such thing"), "{why}"),
            other => panic!("rate {:?}: expected a failed run, got {other:?}", spec.rate),
        }
    }
}

/// sysbench's restart: an error the script's `sql_error_ignorable` hook accepts restarts the
/// event (after `before_restart_event`), counted as an error, not as an event.
#[test]
fn an_error_the_hook_ignores_restarts_the_event_and_is_counted() {
    let _ = server();
    let text = r#"
function thread_init()
  con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE IF NOT EXISTS dup" .. sysbench.tid .. " (a INT PRIMARY KEY)")
  con:query("INSERT IGNORE INTO dup" .. sysbench.tid .. " VALUES (1)")
  tries, restarts = 0, 0
end
function sysbench.hooks.sql_error_ignorable(e) return e.sql_errno == 1062 end
function sysbench.hooks.before_restart_event(e) restarts = restarts + 1 end
function event()
  tries = tries + 1
  -- Every other try collides with the row that is there: 1062, restarted.
  if tries % 2 == 1 then
    con:query("INSERT INTO dup" .. sysbench.tid .. " VALUES (1)")
  end
end
function thread_done()
  assert(restarts == 5, "restarts: " .. restarts)
  con:query("DROP TABLE dup" .. sysbench.tid)
end
"#;
    for spec in both_loops(1, 5) {
        let s = Arc::new(script("restarts", text));
        let r = run(s, &spec, &AtomicBool::new(false), &mut Quiet).expect("run");
        let at = format!("rate {:?}", spec.rate);
        assert_eq!(r.status, RunStatus::Completed, "{at}: {:?}", r.status);
        assert_eq!(r.total.events, 5, "{at}");
        assert_eq!(r.total.errors, 5, "{at}");
        assert_eq!(r.total.errors_by_code, vec![(1062, 5)], "{at}");
    }
}

/// A closed loop runs in Lua (the prelude's `__loop`); an open loop (--rate) enters each event
/// from the engine. Both must count alike.
fn both_loops(connections: u32, events: u64) -> [RunSpec; 2] {
    let open = RunSpec {
        rate: Some(2000.0),
        ..spec(connections, events)
    };
    [spec(connections, events), open]
}

/// An event() that returns a value ends its thread's events, as in sysbench; that event is
/// not counted.
#[test]
fn an_event_that_returns_a_value_ends_its_thread() {
    let _ = server();
    let text = "function event() n = (n or 0) + 1; if n == 3 then return true end end\n";
    for spec in both_loops(2, 1000) {
        let s = Arc::new(script("returns", text));
        let r = run(s, &spec, &AtomicBool::new(false), &mut Quiet).expect("run");
        let at = format!("rate {:?}", spec.rate);
        assert_eq!(r.status, RunStatus::Completed, "{at}: {:?}", r.status);
        assert_eq!(r.total.events, 4, "{at}: two events on each of two threads");
    }
}

/// Prepared statements with bound parameters of each kind, and result sets fetched row by row.
#[test]
fn prepared_statements_bind_parameters_and_queries_return_rows() {
    let _ = server();
    let text = r#"
function event()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE IF NOT EXISTS ps (a INT, b VARCHAR(20), c DOUBLE)")
  local stmt = con:prepare("INSERT INTO ps VALUES (?, ?, ?)")
  local a = stmt:bind_create(sysbench.sql.type.INT)
  local b = stmt:bind_create(sysbench.sql.type.VARCHAR, 5)
  local c = stmt:bind_create(sysbench.sql.type.DOUBLE)
  stmt:bind_param(a, b, c)
  a:set(7); b:set("truncated"); c:set(0.5)
  assert(stmt:execute().nrows == 1)
  a:set(8); b:set(nil); c:set(1.25)
  stmt:execute()
  stmt:close()
  local rs = con:query("SELECT a, b, c FROM ps ORDER BY a")
  assert(rs.nrows == 2 and rs.nfields == 3, rs.nrows .. " " .. rs.nfields)
  local r1, r2 = rs:fetch_row(), rs:fetch_row()
  assert(r1[1] == "7" and r1[2] == "trunc" and r1[3] == "0.5", table.concat(r1, ","))
  assert(r2[1] == "8" and r2[2] == nil and r2[3] == "1.25")
  assert(rs:fetch_row() == nil)
  con:bulk_insert_init("INSERT INTO ps (a) VALUES")
  for i = 1, 100 do con:bulk_insert_next("(" .. i .. ")") end
  con:bulk_insert_done()
  assert(con:query_row("SELECT COUNT(*) FROM ps") == "102")
  con:query("DROP TABLE ps")
  con:disconnect()
  return true
end
"#;
    let s = Arc::new(script("prepared", text));
    let r = run(s, &spec(1, 1), &AtomicBool::new(false), &mut Quiet).expect("run");
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.status);
}
