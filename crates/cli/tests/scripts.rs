//! A user's own workload in a study and in `bakeoff run`: a Lua script (on the embedded
//! MariaDB) and pgbench scripts with weights (on the embedded PostgreSQL), each studied with
//! two variants to a verdict, their statements the scripts' (counted per transaction), and
//! what a study file gets wrong about them named at its line.

mod common;

use common::text;

/// A key-value table of the user's own, made by the script's prepare; each event reads a row
/// and updates another, with no BEGIN: two statements an event.
const KV_LUA: &str = r#"
sysbench.cmdline.options = {
  rows = { "Rows in the table", 1000 },
}

function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE kv (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
  for id = 1, sysbench.opt.rows do
    con:query(string.format("INSERT INTO kv VALUES (%d, 0)", id))
  end
end

function thread_init()
  con = sysbench.sql.driver():connect()
end

function event()
  con:query("SELECT v FROM kv WHERE id = " .. sysbench.rand.uniform(1, sysbench.opt.rows))
  con:query("UPDATE kv SET v = v + 1 WHERE id = " .. sysbench.rand.uniform(1, sysbench.opt.rows))
end

function thread_done()
  con:disconnect()
end
"#;

fn kv_script() -> String {
    KV_LUA.to_string()
}

fn export(db: &std::path::Path) -> serde_json::Value {
    let o = common::bakeoff(&["export", db.to_str().unwrap(), "--format=json"], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "export: {out}\n{err}");
    serde_json::from_str(&out).unwrap()
}

/// Statements per transaction of each ok run of `variant` (of `workload`, where given).
fn per_transaction(runs: &serde_json::Value, variant: &str) -> Vec<f64> {
    per_transaction_of(runs, variant, None)
}

fn per_transaction_of(runs: &serde_json::Value, variant: &str, workload: Option<&str>) -> Vec<f64> {
    runs.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["variant_name"] == variant && r["status"] == "ok")
        .filter(|r| workload.is_none_or(|w| r["workload_label"] == w))
        .map(|r| r["qps"].as_f64().unwrap() / r["tps"].as_f64().unwrap())
        .collect()
}

#[test]
fn a_lua_script_is_a_study_workload_with_verdicts_and_a_run_of_its_own() {
    let dir = bakeoff_testkit::scratch::dir("lua-study");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/kv.lua"), kv_script()).unwrap();
    // A second script with tables of its own: servers taking turns must load each script's
    // (a block shares servers only between workloads of the same tables).
    std::fs::write(
        dir.join("scripts/other.lua"),
        kv_script().replace(" kv ", " other "),
    )
    .unwrap();
    let file = dir.join("kv.toml");
    // The script's path is the study file's business: relative to where the file is.
    let study = "duration = 2\nrepetitions = 2\nthreads = [2]\n\
                 [[workload]]\nname = \"scripts/kv.lua\"\noptions = { rows = 500 }\n\
                 [[workload]]\nname = \"scripts/other.lua\"\noptions = { rows = 300 }\n\
                 [[variant]]\nname = \"durable\"\nsettings = { innodb_flush_log_at_trx_commit = 1 }\n\
                 [[variant]]\nname = \"lazy\"\nsettings = { innodb_flush_log_at_trx_commit = 2 }\n";
    std::fs::write(&file, study).unwrap();
    let f = file.to_str().unwrap();
    let o = common::bakeoff(&["study", "check", f], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.contains("kv (lua)") && out.contains("what the script's own prepare makes"),
        "{out}"
    );
    let o = common::bakeoff(&["study", "run", f], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let runs = export(&dir.join("kv.db"));
    for variant in ["durable", "lazy"] {
        for workload in ["kv", "other"] {
            let each = per_transaction_of(&runs, variant, Some(workload));
            assert_eq!(
                each.len(),
                2,
                "two ok runs of {variant}, {workload}: {runs}"
            );
            // The script's event, not a built-in's: a read and a write, nothing else.
            assert!(
                each.iter().all(|q| (q - 2.0).abs() < 0.05),
                "{variant}: {each:?}"
            );
        }
    }
    let with_p99 = runs
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["p99_ms"].as_f64().is_some_and(|p| p > 0.0));
    assert!(with_p99, "every run has its HDR percentiles: {runs}");
    let o = common::bakeoff(&["compare", dir.join("kv.db").to_str().unwrap()], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let verdict = out
        .lines()
        .find(|l| l.split_whitespace().take(2).eq(["2", "lazy"]))
        .unwrap_or_else(|| panic!("the table's row of lazy at 2 threads: {out}"));
    // Its ratio and interval against the baseline, as any workload's.
    assert!(
        verdict.contains("durable") && verdict.contains("x - "),
        "{verdict}"
    );
    assert!(
        out.contains("\nkv\n"),
        "the workload is named by the script: {out}"
    );

    // The same script in `bakeoff run`, its option on the command line.
    let script = dir.join("scripts/kv.lua");
    let o = common::bakeoff(
        &[
            "run",
            script.to_str().unwrap(),
            "--script-option",
            "rows=200",
            "--threads=2",
            "--time=1",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("Workload: your Lua script"), "{out}");
    assert!(out.contains("p99:") && out.contains("server CPU:"), "{out}");
    let o = common::bakeoff(
        &["run", script.to_str().unwrap(), "--script-option", "rowz=2"],
        None,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--rowz"), "{err}");
}

#[test]
fn pgbench_scripts_with_weights_are_a_study_workload_on_postgresql() {
    let dir = bakeoff_testkit::scratch::dir("pgbench-study");
    std::fs::write(
        dir.join("pick.sql"),
        "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    )
    .unwrap();
    let file = dir.join("pgb.toml");
    let study = "engine = \"postgresql\"\nduration = 2\nrepetitions = 2\nthreads = [2]\n\
                 [[workload]]\nname = \"pgbench\"\nscripts = [\"pick.sql@1\", \"tpcb-like@1\"]\n\
                 [[variant]]\nname = \"sync\"\nsettings = { synchronous_commit = \"on\" }\n\
                 [[variant]]\nname = \"async\"\nsettings = { synchronous_commit = \"off\" }\n";
    std::fs::write(&file, study).unwrap();
    let f = file.to_str().unwrap();
    let o = common::bakeoff(&["study", "run", f], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let runs = export(&dir.join("pgb.db"));
    for variant in ["sync", "async"] {
        let each = per_transaction(&runs, variant);
        assert_eq!(each.len(), 2, "two ok runs of {variant}: {runs}");
        // pick.sql sends 1 statement, tpcb-like 7: chosen half and half, about 4 a
        // transaction; either alone would read 1 or 7.
        assert!(
            each.iter().all(|q| (2.5..5.5).contains(q)),
            "{variant}: {each:?}"
        );
    }
    let o = common::bakeoff(&["compare", dir.join("pgb.db").to_str().unwrap()], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.lines()
            .any(|l| l.contains(" async ") && l.contains("x - ") && l.contains("sync")),
        "{out}"
    );

    // In `bakeoff run`, as pgbench's -f list; PostgreSQL is named or refused with the way.
    let pick = dir.join("pick.sql");
    let list = format!("{}@3,select-only", pick.display());
    let o = common::bakeoff(&["run", &list, "--threads=2", "--time=1"], None);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--db-driver=pgsql"), "{err}");
    let o = common::bakeoff(
        &[
            "run",
            &list,
            "--db-driver=pgsql",
            "--threads=2",
            "--time=1",
            "--script-option",
            "scale=2",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.contains("Workload: pgbench scripts") && out.contains("builtin: select-only@1"),
        "{out}"
    );
}

#[test]
fn a_study_file_says_what_is_wrong_with_its_scripts_at_their_lines() {
    let dir = bakeoff_testkit::scratch::dir("bad-scripts");
    std::fs::write(dir.join("kv.lua"), kv_script()).unwrap();
    std::fs::write(dir.join("pick.sql"), "SELECT 1;\n").unwrap();
    std::fs::write(dir.join("own.lua"), "function thread_run() end\n").unwrap();
    let file = dir.join("bad.toml");
    let study = "threads = [2]\n\
                 [[workload]]\nname = \"nothere.lua\"\n\
                 [[workload]]\nname = \"kv.lua\"\noptions = { rowz = 4 }\n\
                 [[workload]]\nname = \"pgbench\"\nscripts = [\"pick.sql@0\", \"tpcx\"]\n\
                 [[workload]]\nname = \"pick.sql\"\n\
                 [[workload]]\nname = \"own.lua\"\n";
    std::fs::write(&file, study).unwrap();
    let o = common::bakeoff(&["study", "check", file.to_str().unwrap()], None);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for (line, says) in [
        (3, "cannot read the script"),
        (5, "invalid option: --rowz"),
        (9, "the weight after @"),
        (9, "no builtin script found for name \"tpcx\""),
        (2, "run on PostgreSQL"),
        (13, "runs its threads itself"),
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("bad.toml:{line}:")) && l.contains(says)),
            "line {line}: {says}\n{err}"
        );
    }
    // What a study does not call is said before it runs.
    std::fs::write(
        dir.join("hooks.lua"),
        format!("function init() end\n{KV_LUA}"),
    )
    .unwrap();
    let hooks = dir.join("hooks.toml");
    std::fs::write(
        &hooks,
        "threads = [2]\n[[workload]]\nname = \"hooks.lua\"\n",
    )
    .unwrap();
    let o = common::bakeoff(&["study", "check", hooks.to_str().unwrap()], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("defines init(): a study calls none of them"),
        "{err}"
    );
}

/// On a server of the user's, a script's tables are made and dropped the script's own way
/// (its prepare and cleanup under sysbench's grammar, pgbench's -i): bakeoff's prepare,
/// prewarm and cleanup name that way instead of making or dropping what they cannot vouch for.
#[test]
fn prepare_prewarm_and_cleanup_name_the_scripts_own_way() {
    let dir = bakeoff_testkit::scratch::dir("scripts-by-hand");
    std::fs::write(dir.join("kv.lua"), kv_script()).unwrap();
    std::fs::write(dir.join("pick.sql"), "SELECT 1;\n").unwrap();
    let lua = dir.join("kv.lua");
    let sql = dir.join("pick.sql");
    let socket = "--mysql-socket=/nonexistent/mysqld.sock";
    for (args, says) in [
        (vec!["prepare", lua.to_str().unwrap(), socket], "prepare`"),
        (
            vec![
                "prepare",
                sql.to_str().unwrap(),
                "--db-driver=pgsql",
                socket,
            ],
            "bakeoff pgbench -i",
        ),
        (
            vec!["prewarm", lua.to_str().unwrap(), socket],
            "--warmup-time",
        ),
        (vec!["cleanup", lua.to_str().unwrap(), socket], "cleanup`"),
    ] {
        let o = common::bakeoff(&args, None);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
