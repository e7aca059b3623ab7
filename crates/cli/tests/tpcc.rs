//! `bakeoff tpcc` end to end on the suite's own MariaDB and PostgreSQL: prepare one
//! warehouse, run it (the JSON report: NOPM confirmed by the server's sum(d_next_o_id), TPM
//! from the server's counters, every transaction type, the audit), check every consistency
//! condition, then break the tables by hand (a district's d_next_o_id moved, an order line
//! deleted, a warehouse's w_ytd changed) and see check name each condition that fails; cleanup
//! drops the tables. Each engine also runs with `--procedures` (the server's own routines, one
//! call a transaction), and refuses routines that are not bakeoff's: another text under the
//! name, a definer's rights, another owner. And each runs paced (`--keying`, its waits
//! scaled down): ten terminals over two connections, with the efficiency and the response
//! times the report owes.

mod common;

use std::process::{Command, Output};

use bakeoff_driver::{Conn, PgConn};
use bakeoff_testkit::pg::{pg_database, pg_server};
use bakeoff_testkit::rt;
use common::text;

fn bakeoff_pg(args: &[&str], db: &str) -> Output {
    let s = pg_server();
    let url = format!(
        "postgresql://{}@127.0.0.1:{}/{db}?sslmode=disable",
        s.user(),
        s.port()
    );
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .arg("--server")
        .arg(url)
        .env("PGPASSWORD", s.password().expose())
        .output()
        .expect("run bakeoff")
}

fn ok(o: &Output, what: &str) -> String {
    let (out, err) = text(o);
    assert!(o.status.success(), "{what}: {:?}\n{out}\n{err}", o.status);
    out
}

/// The run's report: every figure the issue names is there and agrees with the server.
fn judge_run(json: &str) {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let nopm = v["nopm"].as_f64().expect("nopm at the top level");
    let tpm = v["tpm"].as_f64().expect("tpm at the top level");
    assert!(nopm > 0.0 && tpm > nopm, "nopm {nopm} tpm {tpm}");
    let client = v["new_orders"].as_i64().unwrap();
    let server = v["server_new_orders"].as_i64().expect("the server's count");
    // The server's reading starts a moment after the measured span does (a connect).
    assert!(
        (client - server).abs() <= 2 + client / 50,
        "client {client} server {server}"
    );
    let tx = v["transactions"].as_array().unwrap();
    let names: Vec<&str> = tx.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "new_order",
            "payment",
            "order_status",
            "delivery",
            "stock_level"
        ]
    );
    for t in tx {
        assert!(t["count"].as_u64().unwrap() > 0, "{t}");
        assert!(
            t["p99_ms"].as_f64().unwrap() >= t["p50_ms"].as_f64().unwrap(),
            "{t}"
        );
    }
    let audit = v["audit"].as_array().unwrap();
    assert_eq!(audit.len(), 10, "{audit:?}");
    assert!(audit.iter().all(|l| l["verdict"] != "fail"), "{audit:?}");
    assert_eq!(v["audit_passed"], true);
}

/// check --all's failing conditions, by number.
fn failing(out: &str) -> Vec<u32> {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    v["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["violations"].as_u64().unwrap() > 0)
        .map(|c| c["number"].as_u64().unwrap() as u32)
        .collect()
}

const BREAK: [&str; 3] = [
    "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 3",
    "DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 5 AND ol_o_id = 2500 AND ol_number = 1",
    "UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1",
];

/// Moving d_next_o_id breaks 2; the deleted line 4, 6 (and 10 and 12: order 2500 is
/// undelivered at load, but may have been delivered by the run); w_ytd 1 and 8.
fn broken_as_expected(f: &[u32]) {
    for n in [1, 2, 4, 6, 8] {
        assert!(f.contains(&n), "condition {n} should fail: {f:?}");
    }
    assert!(!f.contains(&3) && !f.contains(&9), "{f:?}");
}

/// Every order line a run wrote carries its stock row's S_DIST_xx (2.4.2.2), and the stock
/// rows were updated as the lines say.
fn lines_carry_dist_info(count: impl Fn(&str) -> i64) {
    let written = "SELECT COUNT(*) FROM order_line WHERE ol_o_id > 3000";
    assert!(count(written) > 0, "the run wrote order lines");
    let empty = "SELECT COUNT(*) FROM order_line WHERE ol_o_id > 3000 AND (ol_dist_info IS NULL OR ol_dist_info = '')";
    assert_eq!(count(empty), 0, "order lines without OL_DIST_INFO");
    // The stock rows took what the lines say (the load leaves S_YTD, S_ORDER_CNT and
    // S_REMOTE_CNT at 0): one update for all of an order's rows, an item on two lines counted
    // twice.
    let pairs = [
        ("SUM(s_ytd)", "SUM(ol_quantity)", ""),
        ("SUM(s_order_cnt)", "COUNT(*)", ""),
        (
            "SUM(s_remote_cnt)",
            "COUNT(*)",
            " AND ol_supply_w_id <> ol_w_id",
        ),
    ];
    for (stock, lines, which) in pairs {
        let took = count(&format!("SELECT {stock} FROM stock"));
        let said = count(&format!(
            "SELECT {lines} FROM order_line WHERE ol_o_id > 3000{which}"
        ));
        assert_eq!(
            took, said,
            "{stock} against the order lines' {lines}{which}"
        );
    }
}

const RUN: [&str; 6] = [
    "tpcc",
    "run",
    "--connections=2",
    "--time=4",
    "--rampup=1",
    "--format=json",
];

/// The same run with each transaction one call of the server's routines.
/// Paced: the specification's waits at 1/200 (a New-Order's cycle 150 ms), so that in 4 s
/// every one of the ten terminals goes through its whole deck.
const RUN_PACED: [&str; 7] = [
    "tpcc",
    "run",
    "--keying=0.005",
    "--connections=2",
    "--time=4",
    "--rampup=1",
    "--format=json",
];

/// A paced run's report: ten terminals a warehouse, New-Orders near the paced ceiling
/// (the waits dominate: an order takes milliseconds, its cycle 100 ms and more), and each
/// type's 90th percentile against its limit.
fn judge_paced(json: &str) {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let p = &v["paced"];
    assert_eq!(p["terminals"], 10, "{p}");
    assert_eq!(p["keying_scale"], 0.005, "{p}");
    let eff = p["efficiency_percent"].as_f64().expect("efficiency");
    // The first second spreads the terminals' first orders over a cycle (the rampup takes
    // most of it); after that the pace is the deck's, 98% of 12.86 at most.
    assert!((60.0..=105.0).contains(&eff), "efficiency {eff}%: {p}");
    let rt = p["response_times"].as_array().expect("response times");
    assert_eq!(rt.len(), 5, "{p}");
    for l in rt {
        let p90 = l["p90_ms"].as_f64().unwrap_or_else(|| panic!("{l}"));
        assert!(p90 > 0.0 && p90 < l["limit_ms"].as_f64().unwrap(), "{l}");
        assert_eq!(l["within"], true, "{l}");
    }
    assert_eq!(p["response_times_passed"], true);
}

const RUN_PROCEDURES: [&str; 7] = [
    "tpcc",
    "run",
    "--procedures",
    "--connections=2",
    "--time=4",
    "--rampup=1",
    "--format=json",
];

/// A run with `--procedures` that is refused before it calls anything, and says why.
fn refused(o: &Output, why: &str) {
    let (out, err) = text(o);
    assert!(!o.status.success(), "{out}\n{err}");
    assert!(
        err.contains(why) && err.contains("bakeoff tpcc prepare"),
        "{why}: {err}"
    );
}

#[test]
fn tpcc_on_mariadb_prepares_runs_audits_checks_and_finds_broken_tables() {
    let db = common::db("tpcc");
    let run = |args: &[&str]| common::bakeoff(args, Some(&db));
    let opts = bakeoff_testkit::server()
        .connect_options()
        .with_database(&db);
    let rows = |sql: &str| {
        rt().block_on(async {
            let mut c = Conn::connect(&opts).await.unwrap();
            let r = c.query_rows(sql).await.unwrap();
            c.quit().await;
            r
        })
    };
    let count = |sql: &str| rows(sql)[0][0].as_deref().unwrap().parse::<i64>().unwrap();
    ok(&run(&["tpcc", "prepare", "--warehouses=1"]), "prepare");
    for (args, how) in [
        (&RUN[..], "run"),
        (&RUN_PROCEDURES[..], "run --procedures"),
        (&RUN_PACED[..], "run --keying"),
    ] {
        let out = ok(&run(args), how);
        judge_run(&out);
        if args == RUN_PACED {
            judge_paced(&out);
        } else {
            assert!(
                out.contains("\"nopm\"") && !out.contains("\"paced\""),
                "{how}"
            );
        }
        lines_carry_dist_info(count);
        let out = ok(&run(&["tpcc", "check", "--all", "--format=json"]), "check");
        assert!(failing(&out).is_empty(), "after {how}: {out}");
    }
    // Routines that are not bakeoff's are not called: a definer's rights, another text.
    rows("ALTER PROCEDURE bakeoff_payment SQL SECURITY DEFINER");
    refused(
        &run(&RUN_PROCEDURES),
        "bakeoff_payment runs with its definer's rights",
    );
    rows("DROP PROCEDURE bakeoff_stock_level");
    rows("CREATE PROCEDURE bakeoff_stock_level(p_w INT, p_d INT, p_threshold INT) SQL SECURITY INVOKER BEGIN DO 1; END");
    refused(
        &run(&RUN_PROCEDURES),
        "bakeoff_stock_level is not the text bakeoff creates",
    );
    // Another account's procedure under the name, its text bakeoff's own: refused, and
    // cleanup leaves it (it drops only the routines the account made).
    rows("DROP PROCEDURE bakeoff_stock_level");
    let theirs = bakeoff_workload::tpcc::routines::create(bakeoff_driver::Protocol::MySql, "")[4]
        .replacen(
            "CREATE PROCEDURE",
            "CREATE DEFINER = 'tpcc_other'@'localhost' PROCEDURE",
            1,
        );
    rows(&theirs);
    refused(
        &run(&RUN_PROCEDURES),
        "bakeoff_stock_level runs with its definer's rights or belongs to another account",
    );
    for sql in BREAK {
        rows(sql);
    }
    let o = run(&["tpcc", "check", "--all", "--format=json"]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    broken_as_expected(&failing(&text(&o).0));
    let (human, _) = text(&run(&["tpcc", "check"]));
    assert!(
        human.contains("3.3.2.2") && human.contains("FAILED: 1 districts"),
        "{human}"
    );
    ok(&run(&["tpcc", "cleanup"]), "cleanup");
    let left =
        rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()");
    assert!(left.is_empty(), "cleanup drops every TPC-C table: {left:?}");
    let left = rows(
        "SELECT routine_name FROM information_schema.routines WHERE routine_schema = DATABASE()",
    );
    assert_eq!(
        left,
        [[Some("bakeoff_stock_level".to_string())]],
        "cleanup drops its own routines, not the other account's"
    );
    let o = run(&["tpcc", "run", "--time=1"]);
    assert!(
        !o.status.success() && text(&o).1.contains("prepare"),
        "{:?}",
        text(&o)
    );
    ok(
        &run(&["tpcc", "prepare", "--warehouses=1"]),
        "prepare after cleanup",
    );
    ok(&run(&["tpcc", "cleanup"]), "cleanup again");
}

#[test]
fn tpcc_on_postgresql_prepares_runs_audits_checks_and_finds_broken_tables() {
    let opts = pg_database("tpcc_pg");
    let db = opts.database.clone().expect("a database");
    let count = |sql: &str| {
        rt().block_on(async {
            let mut c = PgConn::connect(&opts).await.unwrap();
            let r = c
                .query_rows(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            c.quit().await;
            r[0][0].as_deref().unwrap().parse::<i64>().unwrap()
        })
    };
    ok(
        &bakeoff_pg(&["tpcc", "prepare", "--warehouses=1"], &db),
        "prepare",
    );
    // Another role plants a better-matching concat() where the search path would find it
    // (CVE-2018-1058): the terminals resolve functions in pg_catalog alone, so a bad-credit
    // Payment never calls it.
    let admin = bakeoff_testkit::pg::pg_admin().with_database(&db);
    rt().block_on(async {
        let mut c = PgConn::connect(&admin).await.unwrap();
        c.exec("CREATE FUNCTION public.concat(varchar, varchar) RETURNS text LANGUAGE sql AS $$ SELECT 'planted'::text $$")
            .await
            .unwrap();
        c.quit().await;
    });
    // Both ways; the functions run with the terminal's pinned search path, so the planted
    // concat() is not theirs either.
    for (run, how) in [
        (&RUN[..], "run"),
        (&RUN_PROCEDURES[..], "run --procedures"),
        (&RUN_PACED[..], "run --keying"),
    ] {
        let out = ok(&bakeoff_pg(run, &db), how);
        judge_run(&out);
        if run == RUN_PACED {
            judge_paced(&out);
        }
        assert!(
            count("SELECT COUNT(*) FROM customer WHERE c_payment_cnt > 1 AND c_credit = 'BC'") > 0,
            "bad-credit payments ran"
        );
        assert_eq!(
            count("SELECT COUNT(*) FROM customer WHERE c_data LIKE 'planted%'"),
            0
        );
        lines_carry_dist_info(count);
        let out = ok(
            &bakeoff_pg(&["tpcc", "check", "--all", "--format=json"], &db),
            "check",
        );
        assert!(failing(&out).is_empty(), "after {how}: {out}");
    }
    // Functions that are not bakeoff's are not called: another owner, a definer's rights.
    let as_admin = |sql: &str| {
        rt().block_on(async {
            let mut c = PgConn::connect(&admin).await.unwrap();
            c.exec(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            c.quit().await;
        })
    };
    let user = pg_server().user().to_string();
    as_admin("DROP ROLE IF EXISTS tpcc_other");
    as_admin("CREATE ROLE tpcc_other");
    as_admin("ALTER FUNCTION public.bakeoff_delivery(INT, INT) OWNER TO tpcc_other");
    refused(
        &bakeoff_pg(&RUN_PROCEDURES, &db),
        "bakeoff_delivery runs with its definer's rights or belongs to another account",
    );
    as_admin(&format!(
        "ALTER FUNCTION public.bakeoff_delivery(INT, INT) OWNER TO \"{user}\""
    ));
    as_admin("DROP ROLE tpcc_other");
    as_admin("ALTER FUNCTION public.bakeoff_payment(INT, INT, INT, INT, INT, TEXT, NUMERIC) SECURITY DEFINER");
    refused(
        &bakeoff_pg(&RUN_PROCEDURES, &db),
        "bakeoff_payment runs with its definer's rights",
    );
    rt().block_on(async {
        let mut c = PgConn::connect(&opts).await.unwrap();
        for sql in BREAK {
            c.exec(sql).await.unwrap();
        }
        c.quit().await;
    });
    let o = bakeoff_pg(&["tpcc", "check", "--all", "--format=json"], &db);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    broken_as_expected(&failing(&text(&o).0));
    ok(&bakeoff_pg(&["tpcc", "cleanup"], &db), "cleanup");
    assert_eq!(
        count("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'"),
        0,
        "cleanup drops every TPC-C table"
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM pg_proc WHERE proname LIKE 'bakeoff%'"),
        0,
        "cleanup drops TPC-C's functions"
    );
}

/// Pacing options that cannot work are refused before anything starts, each saying what
/// to give instead.
#[test]
fn paced_options_that_cannot_work_say_what_to_give() {
    for (args, says) in [
        (
            &["tpcc", "run", "--terminals=100"][..],
            "paced terminals come with --keying",
        ),
        (
            &["tpcc", "run", "--keying=0"][..],
            "--keying=0: give a scale",
        ),
        (
            &["tpcc", "run", "--keying=nan"][..],
            "--keying=NaN: give a scale",
        ),
        (
            &["tpcc", "run", "--keying", "--rate=10"][..],
            "give one of them",
        ),
        (
            &["tpcc", "run", "--keying", "--terminals=0"][..],
            "--terminals=0: give at least 1",
        ),
        (
            &["tpcc", "run", "--keying", "--events=100"][..],
            "give --time",
        ),
        (
            &["tpcc", "run", "--keying", "--iterations=2"][..],
            "give --time",
        ),
        (
            &["tpcc", "run", "--keying", "--all-warehouses"][..],
            "leave --all-warehouses out",
        ),
    ] {
        let o = common::bakeoff(args, None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A study whose two variants differ only in how the load runs TPC-C (`procedures` on a
/// `[[variant]]`): each variant runs its own way, and the comparison between them is a
/// verdict like any other. The server's routines answer one call a transaction, so the
/// procedures variant sends a few statements per new order where client-side SQL sends tens.
#[test]
fn a_study_compares_the_servers_procedures_with_client_side_statements() {
    let dir = bakeoff_testkit::scratch::dir("tpcc-study");
    let file = dir.join("ways.toml");
    let study = "duration = 2\nwarmup = 1\nthreads = [2]\n[dataset]\nwarehouses = 1\n\
                 [[workload]]\nname = \"tpcc\"\n\
                 [[variant]]\nname = \"statements\"\n\
                 [[variant]]\nname = \"routines\"\nprocedures = true\n";
    std::fs::write(&file, study).unwrap();
    let f = file.to_str().unwrap();
    let o = common::bakeoff(&["study", "run", f], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let db = dir.join("ways.db");
    let o = common::bakeoff(&["export", db.to_str().unwrap(), "--format=json"], None);
    let runs: serde_json::Value = serde_json::from_str(&ok(&o, "export")).unwrap();
    let per_new_order = |variant: &str| -> Vec<f64> {
        let rows = runs.as_array().unwrap().iter();
        rows.filter(|r| r["variant_name"] == variant && r["status"] == "ok")
            .map(|r| r["qps"].as_f64().unwrap() / r["tps"].as_f64().unwrap())
            .collect()
    };
    let (statements, routines) = (per_new_order("statements"), per_new_order("routines"));
    assert!(!statements.is_empty() && !routines.is_empty(), "{runs}");
    let most = routines.iter().copied().fold(0.0, f64::max);
    let least = statements.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        most * 3.0 < least,
        "statements per new order: routines {routines:?}, client-side {statements:?}"
    );
    let o = common::bakeoff(&["compare", db.to_str().unwrap()], None);
    let out = ok(&o, "compare");
    assert!(
        out.contains("routines") && out.contains("statements"),
        "{out}"
    );
    // A variant's `procedures` with no TPC-C workload changes nothing: refused, at its line.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, study.replace("\"tpcc\"", "\"oltp_point_select\"")).unwrap();
    let o = common::bakeoff(&["study", "check", bad.to_str().unwrap()], None);
    let (_, err) = text(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("variant.procedures") && err.contains("bad.toml:"),
        "{err}"
    );
}
