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
    let dir = std::env::temp_dir().join(format!("bakeoff-lua-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, text).unwrap();
    Script {
        path,
        options: Vec::new(),
        endpoints: vec![schema(name)],
    }
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
    let r = run(s, &spec(1, 5), &AtomicBool::new(false), &mut Quiet).expect("run starts");
    match &r.status {
        RunStatus::Failed(why) => assert!(why.contains("no such thing"), "{why}"),
        other => panic!("expected a failed run, got {other:?}"),
    }
}
