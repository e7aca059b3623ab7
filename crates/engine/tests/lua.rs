//! A sysbench Lua script driven by the engine, against the suite's MariaDB: one Lua state per
//! connection, `thread_init` / `event` / `thread_done` called as sysbench calls them, the
//! statements counted sysbench's way. Each test runs its script both ways a state runs: alone
//! on its client thread (blocking calls), and sharing one on a fiber on its reactor.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_engine::{run, Quiet, RunResult, RunSpec, RunStatus};
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
        // A state alone on each client thread: its calls block the thread, as in sysbench.
        client_threads: connections,
        time: Some(Duration::from_secs(30)),
        events: Some(events),
        ..RunSpec::default()
    }
}

/// The same run with every connection's state on one client thread, each on a fiber.
fn shared(connections: u32, events: u64) -> RunSpec {
    RunSpec {
        client_threads: 1,
        ..spec(connections, events)
    }
}

/// `s` run to its end both ways a state runs, `events` events each: two connections alone on
/// their threads, and `shared` connections on one thread; each result with where it ran.
fn completed_both_ways(s: &Arc<Script>, events: u64, shared: u32) -> Vec<(String, RunResult)> {
    [spec(2, events), self::shared(shared, events)]
        .into_iter()
        .map(|spec| {
            let r = run(s.clone(), &spec, &AtomicBool::new(false), &mut Quiet).expect("run");
            let at = format!(
                "{} connections on {} threads",
                spec.connections, spec.client_threads
            );
            assert_eq!(r.status, RunStatus::Completed, "{at}");
            (at, r)
        })
        .collect()
}

#[test]
fn each_connection_runs_the_scripts_events_in_a_state_of_its_own() {
    let _ = server();
    let s = Arc::new(script("events", SCRIPT));
    for (spec, conns) in [(spec(2, 40), 2), (shared(8, 40), 8)] {
        let r = run(s.clone(), &spec, &AtomicBool::new(false), &mut Quiet).expect("run");
        let at = format!("{conns} connections on {} threads", spec.client_threads);
        assert_eq!(r.status, RunStatus::Completed, "{at}");
        assert_eq!(r.total.events, 40, "{at}");
        // Per event one INSERT (a write) and one SELECT (a read); CREATE in thread_init is
        // other, counted with the first event of each connection.
        assert_eq!((r.total.reads, r.total.writes), (40, 40), "{at}");
        assert_eq!(r.total.others, conns, "{at}");
        assert_eq!(r.connections.len(), conns as usize, "{at}");
        assert!(
            r.connections.iter().all(|c| c.events > 0),
            "{at}: {:?}",
            r.connections
        );
    }
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
  -- Each event collided once, then succeeded.
  assert(restarts * 2 == tries, "restarts: " .. restarts .. " of " .. tries)
  con:query("DROP TABLE dup" .. sysbench.tid)
end
"#;
    for spec in both_loops(1, 5) {
        let s = Arc::new(script("restarts", text));
        let r = run(s, &spec, &AtomicBool::new(false), &mut Quiet).expect("run");
        let at = format!("rate {:?}, {} threads", spec.rate, spec.client_threads);
        assert_eq!(r.status, RunStatus::Completed, "{at}: {:?}", r.status);
        assert_eq!(r.total.events, 5, "{at}");
        assert_eq!(r.total.errors, 5, "{at}");
        assert_eq!(r.total.errors_by_code, vec![(1062, 5)], "{at}");
    }
}

/// A closed loop alone on its thread runs in Lua (the prelude's `__loop`); an open loop
/// (--rate) and states sharing a thread run on fibers, each event entered from the engine.
/// All must count alike.
fn both_loops(connections: u32, events: u64) -> [RunSpec; 3] {
    let open = RunSpec {
        rate: Some(2000.0),
        ..spec(connections, events)
    };
    [
        spec(connections, events),
        open,
        shared(connections + 1, events),
    ]
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
        let at = format!("rate {:?}, {} threads", spec.rate, spec.client_threads);
        assert_eq!(r.status, RunStatus::Completed, "{at}: {:?}", r.status);
        assert_eq!(
            r.total.events,
            2 * u64::from(spec.connections),
            "{at}: two events on each connection"
        );
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
    for spec in both_loops(1, 1).into_iter().take(2) {
        let s = Arc::new(script("prepared", text));
        let r = run(s, &spec, &AtomicBool::new(false), &mut Quiet).expect("run");
        assert_eq!(
            r.status,
            RunStatus::Completed,
            "rate {:?}: {:?}",
            spec.rate,
            r.status
        );
    }
}

/// States that share a client thread run side by side: each one's thread_init waits until
/// every connection has arrived, which states run one after another on one thread would
/// never see (each would wait for the next to start), nor states let in a few at a time
/// (40 is more than a thread's connect slots). Their prepared statements, bound parameters
/// and bulk inserts yield as their queries do; a thread_init may return what it likes.
#[test]
fn states_sharing_a_thread_run_side_by_side() {
    let _ = server();
    let text = r#"
function thread_init()
  con = sysbench.sql.driver():connect()
  con:bulk_insert_init("INSERT INTO arrived VALUES")
  con:bulk_insert_next("(" .. sysbench.tid .. ")")
  con:bulk_insert_done()
  local tries = 0
  while tonumber(con:query_row("SELECT COUNT(*) FROM arrived")) < 40 do
    tries = tries + 1
    assert(tries < 100000, "the other states never arrived")
  end
  stmt = con:prepare("SELECT tid FROM arrived WHERE tid = ?")
  param = stmt:bind_create(sysbench.sql.type.INT)
  stmt:bind_param(param)
  return con
end
function event()
  param:set(sysbench.tid)
  assert(stmt:execute().nrows == 1)
end
function thread_done() stmt:close() end
"#;
    let s = Arc::new(script("together", text));
    let endpoint = s.sql.endpoint.as_ref().expect("the test's server");
    let mut setup = bakeoff_driver::Conn::connect_blocking(endpoint).expect("connect");
    bakeoff_driver::complete(setup.exec("CREATE TABLE arrived (tid INT)")).expect("table");
    let r = run(s, &shared(40, 400), &AtomicBool::new(false), &mut Quiet).expect("run");
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.status);
    assert_eq!(r.total.events, 400);
    // One read a prepared execute, one a COUNT(*) per thread_init pass at least.
    assert!(r.total.reads >= 400 + 40, "{}", r.total.reads);
}

/// Events that never wait (a dry run's: no server answers) still take turns: every state on
/// the shared thread runs some, not the first one polled all of them.
#[test]
fn states_whose_events_never_wait_still_take_turns() {
    let _ = server();
    let text = "function thread_init() con = sysbench.sql.driver():connect() end\n\
                function event() con:query('SELECT 1') end\n";
    let dir = bakeoff_testkit::scratch::dir("lua-dry");
    let path = dir.join("dry.lua");
    std::fs::write(&path, text).unwrap();
    let dry = vec![("mysql-dry-run".to_string(), None)];
    let s = Script::new(path, text.into(), dry, Some("run".into()), Vec::new()).unwrap();
    let r = run(
        Arc::new(s),
        &shared(8, 8000),
        &AtomicBool::new(false),
        &mut Quiet,
    )
    .expect("run");
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.status);
    assert_eq!(r.total.events, 8000);
    assert!(
        r.connections.iter().all(|c| c.events >= 100),
        "{:?}",
        r.connections.iter().map(|c| c.events).collect::<Vec<_>>()
    );
}

/// A call made where Lua could not yield (inside a `string.gsub` callback, a C frame) or
/// inside the script's own coroutine waits as any other: on a fiber, the state's whole stack
/// is suspended, not a Lua coroutine. Both ways a state runs.
#[test]
fn calls_inside_c_frames_and_the_script_s_coroutines_wait_as_any_other() {
    let _ = server();
    let text = r#"
function thread_init() con = sysbench.sql.driver():connect() end
function event()
  string.gsub("a", "a", function() con:query("SELECT 1") end)
  local co = coroutine.wrap(function()
    coroutine.yield(con:query_row("SELECT 2"))
  end)
  assert(tonumber(co()) == 2)
end
"#;
    let s = Arc::new(script("c_frames", text));
    for (at, r) in completed_both_ways(&s, 40, 6) {
        assert_eq!((r.total.events, r.total.reads), (40, 80), "{at}");
    }
}

/// A call that waits deep in C frames (150 nested `string.gsub` callbacks, each a C call
/// into Lua with an 8 KiB buffer on the C stack) runs on a state's fiber as on a thread of
/// its own: a fiber's stack is a client thread's size. With 1 MiB stacks this crashed.
#[test]
fn a_call_deep_in_nested_c_frames_waits_on_a_fiber() {
    let _ = server();
    let text = r#"
function thread_init() con = sysbench.sql.driver():connect() end
local function nest(n)
  if n == 0 then return con:query_row("SELECT 7") end
  local got
  string.gsub("a", "a", function() got = nest(n - 1) end)
  return got
end
function event() assert(tonumber(nest(150)) == 7) end
"#;
    let s = Arc::new(script("deep_c", text));
    for (at, r) in completed_both_ways(&s, 20, 4) {
        assert_eq!((r.total.events, r.total.reads), (20, 20), "{at}");
    }
}

/// A finalizer that runs SQL neither crashes nor hangs the run. Inside the script's
/// functions it waits as any call; outside them (the collections as a state is dropped),
/// where states share a thread its call fails with a message, here caught by `pcall`.
#[test]
fn sql_in_a_finalizer_neither_crashes_nor_hangs() {
    let _ = server();
    let text = r#"
function thread_init() con = sysbench.sql.driver():connect() end
function event()
  local g = newproxy(true)
  getmetatable(g).__gc = function() pcall(function() con:query("SELECT 1") end) end
  con:query("SELECT 2")
end
"#;
    let s = Arc::new(script("finalizer", text));
    for (at, r) in completed_both_ways(&s, 200, 6) {
        assert_eq!(r.total.events, 200, "{at}");
        assert!(r.total.reads >= 200, "{at}: {}", r.total.reads);
    }
}
