//! sysbench's grammar on PostgreSQL, beside the real sysbench: the same Lua script, using
//! sysbench's SQL API (connect, query and result rows, bulk inserts, prepared statements with
//! bound parameters, query_row), run by both tools on both drivers, says the same and counts
//! the same; and a built-in OLTP script on the pgsql driver counts as sysbench's does.

mod common;

use std::process::Command;

use bakeoff_driver::Endpoint;
use bakeoff_testkit::pg::{pg_database, pg_server};
use common::{bakeoff_as_sysbench, masked, real_sysbench};

const SCRIPT: &str = r#"
function event()
  local con = sysbench.sql.driver():connect()
  print("driver", sysbench.sql.driver():name())
  con:query("CREATE TABLE lt (id INT PRIMARY KEY, v VARCHAR(20))")
  con:bulk_insert_init("INSERT INTO lt VALUES")
  for i = 1, 5 do
    con:bulk_insert_next(string.format("(%d, 'v%d')", i, i))
  end
  con:bulk_insert_done()
  local rs = con:query("SELECT id, v FROM lt ORDER BY id")
  print("rows", rs.nrows)
  for i = 1, rs.nrows do
    local row = rs:fetch_row()
    print(row[1], row[2])
  end
  local st = con:prepare("UPDATE lt SET v = ? WHERE id = ?")
  local v = st:bind_create(sysbench.sql.type.VARCHAR, 20)
  local id = st:bind_create(sysbench.sql.type.INT)
  st:bind_param(v, id)
  if sysbench.sql.driver():name() == "pgsql" then
    -- sysbench's driver parses at bind time, before the first execute: so must bakeoff
    -- (a script binds in thread_init, and the parse is then no part of the timed run).
    print("parsed", con:query_row("SELECT count(*) FROM pg_prepared_statements"))
  end
  for i = 2, 4 do
    v:set("w" .. i)
    id:set(i)
    st:execute()
  end
  print("after", con:query_row("SELECT v FROM lt WHERE id = 3"))
  con:query("DROP TABLE lt")
end
"#;

/// Both tools run `script.lua` with `driver_args`, each in a scratch directory of its own:
/// the same output but for varying figures, the same script lines, the same counts.
fn same_on_both(driver_args: &[String]) -> String {
    let (theirs, ours) = both(driver_args);
    assert_eq!(
        masked(&ours),
        masked(&theirs),
        "--- bakeoff\n{ours}\n--- sysbench\n{theirs}"
    );
    let said = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains('\t'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(said(&ours), said(&theirs));
    common::same_counts(&ours, &theirs);
    ours
}

fn both(driver_args: &[String]) -> (String, String) {
    let run = |program: std::path::PathBuf, tag: &str| {
        let dir = bakeoff_testkit::scratch::dir(&format!("lua-both-{tag}"));
        std::fs::write(dir.join("script.lua"), SCRIPT).unwrap();
        let o = Command::new(program)
            .arg("script.lua")
            .args(driver_args)
            .args(["--events=1", "--threads=1", "run"])
            .current_dir(&dir)
            .output()
            .unwrap();
        let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
        text += &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{tag}:\n{text}");
        text
    };
    (
        run(real_sysbench(), "sysbench"),
        run(bakeoff_as_sysbench(), "bakeoff"),
    )
}

#[test]
fn a_lua_script_says_and_counts_the_same_on_pgsql_as_sysbench() {
    let db = pg_database("lua_both").database.unwrap();
    let s = pg_server();
    let Endpoint::Unix(sock) = s.connect_options().endpoint else {
        unreachable!()
    };
    let args = vec![
        "--db-driver=pgsql".to_string(),
        format!("--pgsql-host={}", sock.parent().unwrap().display()),
        format!("--pgsql-port={}", s.port()),
        format!("--pgsql-user={}", s.user()),
        format!("--pgsql-password={}", s.password().expose()),
        format!("--pgsql-db={db}"),
    ];
    let ours = same_on_both(&args);
    assert!(
        ours.contains("driver\tpgsql") && ours.contains("parsed\t1") && ours.contains("after\tw3"),
        "{ours}"
    );
}

#[test]
fn the_same_script_says_and_counts_the_same_on_mysql_as_sysbench() {
    let db = common::db("lua_both_mysql");
    let s = bakeoff_testkit::server();
    let Endpoint::Unix(sock) = s.connect_options().endpoint else {
        unreachable!()
    };
    let args = vec![
        format!("--mysql-socket={}", sock.display()),
        format!("--mysql-user={}", s.user()),
        format!("--mysql-password={}", s.password().expose()),
        format!("--mysql-db={db}"),
    ];
    let ours = same_on_both(&args);
    assert!(
        ours.contains("driver\tmysql") && ours.contains("after\tw3"),
        "{ours}"
    );
}

/// sysbench's grammar with the pgsql driver and no server named starts the embedded
/// PostgreSQL, as it starts MariaDB without --mysql-socket or --mysql-host; stdout stays
/// sysbench's report, and stderr says which server it measured.
#[test]
fn the_pgsql_driver_with_no_server_named_starts_the_embedded_postgresql() {
    let o = Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "oltp_point_select",
            "--db-driver=pgsql",
            "--time=1",
            "--table-size=100",
            "run",
        ])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}\n{err}");
    assert!(err.contains("Starting the embedded PostgreSQL"), "{err}");
    assert!(
        err.contains("Server: embedded") && err.contains("PostgreSQL"),
        "{err}"
    );
    assert!(
        out.contains("transactions:") && !out.contains("Server: "),
        "{out}"
    );
}
