//! Studies end to end: every example checks, a study runs, resumes, refuses an edited file
//! and exports.

mod common;

use common::{bakeoff, text};

#[test]
fn every_example_study_checks_and_a_bad_one_lists_each_problem_at_its_place() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&examples).expect("examples/") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let o = bakeoff(&["study", "check", path.to_str().unwrap()], None);
            let (out, err) = text(&o);
            assert!(o.status.success(), "{}: {err}", path.display());
            assert!(out.contains("estimated duration"), "{out}");
            // Rounded up: a study of seconds is not "0h 00m".
            assert!(!out.contains("estimated duration: 0h 00m"), "{out}");
            if path.ends_with("quickstart.toml") {
                // Its servers take turns, and the check says how.
                assert!(out.contains("blocks alternate: each block's 3 servers take turns every 50 ms (idle servers frozen), 2 s each per cell"), "{out}");
            }
            if path.ends_with("engines.toml") {
                // Each variant's engine section, as it will be set.
                assert!(out.contains("engine=postgresql ([postgresql] default_transaction_isolation=read committed"), "{out}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "the examples the issue asks for");

    // A study that cannot take turns says why before anything runs.
    let seq = bakeoff_testkit::scratch::path("sequential-study.toml");
    std::fs::write(
        &seq,
        "threads = [1]\norder = \"sequential\"\nrepetitions = 2\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nallocator = [\"glibc\", \"jemalloc\"]\n",
    )
    .unwrap();
    let o = bakeoff(&["study", "check", seq.to_str().unwrap()], None);
    let (out, err) = text(&o);
    let _ = std::fs::remove_file(&seq);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("blocks run one server at a time: order = \"sequential\" runs each variant's series back to back"), "{out}");

    let bad = bakeoff_testkit::scratch::path("bad-study.toml");
    std::fs::write(
        &bad,
        "treads = [1]\n[[workload]]\nname = \"oltp_point_select\"\nduration = 5\n",
    )
    .unwrap();
    let o = bakeoff(&["study", "check", bad.to_str().unwrap()], None);
    let (_, err) = text(&o);
    let _ = std::fs::remove_file(&bad);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:1:1: unknown key `treads`; did you mean `threads`?",
            bad.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}:4:1: unknown key `workload[1].duration`",
            bad.display()
        )),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
}

#[test]
fn a_study_runs_resumes_refuses_an_edited_file_and_exports() {
    let dir = bakeoff_testkit::scratch::dir("cli-study");
    let file = dir.join("tiny.toml");
    let study = "duration = 1\nthreads = [2]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n";
    std::fs::write(&file, study).unwrap();
    let f = file.to_str().unwrap();

    let o = bakeoff(&["study", "run", f], None);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("1 of 1 runs to do") && err.contains("1 ok, 0 failed"),
        "{err}"
    );
    // Loading says its rows and rate, in a log too.
    assert!(
        err.contains("loaded 300 rows in ") && err.contains(" rows/s"),
        "{err}"
    );
    let db = dir.join("tiny.db");
    assert!(db.exists(), "results beside the study file");

    let o = bakeoff(&["study", "run", f], None);
    assert!(o.status.success());
    assert!(
        text(&o).1.contains("0 of 1 runs to do"),
        "resumed: nothing left"
    );

    let o = bakeoff(&["export", db.to_str().unwrap(), "--format=csv"], None);
    let (out, _) = text(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "header and one run: {out}");
    assert!(
        lines[0].contains("tps") && lines[0].contains("status"),
        "{out}"
    );
    assert!(lines[1].contains(",ok,"), "{out}");
    let o = bakeoff(
        &[
            "export",
            db.to_str().unwrap(),
            "--what=ticks",
            "--format=json",
        ],
        None,
    );
    let ticks: serde_json::Value = serde_json::from_str(&text(&o).0).expect("JSON ticks");
    assert!(
        !ticks.as_array().unwrap().is_empty() && ticks[0]["tps"].as_f64().unwrap() > 0.0,
        "{ticks}"
    );

    let o = bakeoff(&["compare", db.to_str().unwrap()], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("one variant: nothing to compare") && out.contains("peak"),
        "{out}"
    );
    let charts = dir.join("charts");
    let o = bakeoff(
        &[
            "report",
            db.to_str().unwrap(),
            "--charts",
            charts.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let page =
        std::fs::read_to_string(dir.join("tiny.html")).expect("the report beside the database");
    assert!(
        page.contains("<svg") && page.contains("oltp_point_select") && !page.contains("<script")
    );
    assert!(charts.join("oltp_point_select-throughput.svg").exists());
    assert!(charts.join("oltp_point_select-latency.svg").exists());
    assert!(charts.join("server-rss.svg").exists());
    let pngs = dir.join("pngs");
    let o = bakeoff(
        &[
            "report",
            db.to_str().unwrap(),
            "-o",
            dir.join("again.html").to_str().unwrap(),
            "--charts",
            pngs.to_str().unwrap(),
            "--format=png",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let png = std::fs::read(pngs.join("oltp_point_select-throughput.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG file");
    let o = bakeoff(&["compare", db.to_str().unwrap(), "--p99-limit=0"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--p99-limit=0"), "{}", text(&o).1);

    // Merged into another database: copied once, reported the same.
    let all = dir.join("all.db");
    let merge = |into: &std::path::Path| {
        bakeoff(
            &["merge", db.to_str().unwrap(), "-o", into.to_str().unwrap()],
            None,
        )
    };
    let o = merge(&all);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(
        text(&o).0.contains("1 study(ies) [tiny], 1 runs"),
        "{}",
        text(&o).0
    );
    let o = merge(&all);
    assert!(text(&o).0.contains("already there"), "{}", text(&o).0);
    let o = merge(&db);
    assert_eq!(o.status.code(), Some(2), "merging a database into itself");
    assert!(
        text(&o).1.contains("both an input and --output"),
        "{}",
        text(&o).1
    );
    let o = bakeoff(&["compare", all.to_str().unwrap()], None);
    assert!(text(&o).0.contains("nothing to compare"), "{}", text(&o).0);
    let o = bakeoff(&["compare", db.to_str().unwrap(), "--baseline=nope"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .contains("--baseline 'nope' is neither AXIS=VALUE nor a variant"),
        "{}",
        text(&o).1
    );

    std::fs::write(&file, study.replace("threads = [2]", "threads = [1, 2]")).unwrap();
    let o = bakeoff(&["study", "run", f], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--new"), "{}", text(&o).1);
    let o = bakeoff(&["study", "run", f, "--new"], None);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).1.contains("2 of 2 runs to do"), "{}", text(&o).1);

    // Two studies of one name in one database: listed, and the older one is said to be set
    // aside by compare and by merge, with the way to compare the two.
    let d = db.to_str().unwrap();
    let (out, err) = text(&bakeoff(&["study", "list", d], None));
    let listed: Vec<&str> = out.lines().filter(|l| l.contains(" tiny ")).collect();
    assert_eq!(listed.len(), 2, "{out}{err}");
    assert!(listed[0].contains("1") && listed[1].contains("2"), "{out}");
    let o = bakeoff(&["study", "list", d, "--format=json"], None);
    let studies: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(studies[1]["runs_ok"], 2, "{studies}");
    let o = bakeoff(&["compare", d], None);
    let err = text(&o).1;
    assert!(
        err.contains("set aside study #1 'tiny'")
            && err.contains("bakeoff compare BEFORE.db AFTER.db"),
        "{err}"
    );
    let o = bakeoff(
        &["merge", d, "-o", dir.join("both.db").to_str().unwrap()],
        None,
    );
    let out = text(&o).0;
    assert!(out.contains("'tiny': set aside study #1"), "{out}");
    // The runs' columns: who and what first, the report's suspect flag after the status.
    let o = bakeoff(&["export", d], None);
    let out = text(&o).0;
    assert!(
        out.starts_with("study,variant_name,workload_label,threads,repetition,status,suspect,suspect_reasons,tps,"),
        "{out}"
    );
    assert!(
        out.lines()
            .skip(1)
            .all(|l| l.contains(",ok,0,,") || l.contains(",ok,1,")),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Before and after: the same study run into two databases, compared by giving both. The
/// two never ran in the same blocks, so the comparison is unpaired and says so; each side is
/// named by its file.
#[test]
fn two_databases_compare_as_before_and_after() {
    let dir = bakeoff_testkit::scratch::dir("cli-before-after");
    let file = dir.join("tiny.toml");
    let study = "duration = 1\nrepetitions = 2\nthreads = [2]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n";
    std::fs::write(&file, study).unwrap();
    let f = file.to_str().unwrap();
    for side in ["before.db", "after.db"] {
        let db = dir.join(side);
        let o = bakeoff(&["study", "run", f, "--db", db.to_str().unwrap()], None);
        assert!(o.status.success(), "{}", text(&o).1);
    }
    let (before, after) = (dir.join("before.db"), dir.join("after.db"));
    let o = bakeoff(
        &["compare", before.to_str().unwrap(), after.to_str().unwrap()],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("after.db default") && out.contains("before.db default"),
        "each side named by its file: {out}"
    );
    assert!(out.contains("unpaired"), "{out}");
    // What the lab set on the servers it started, where a reader of the comparison sees it.
    assert!(
        out.contains("the lab started each MariaDB with max_connections=5000")
            && out.contains("innodb_buffer_pool_size=512M"),
        "{out}"
    );
    let o = bakeoff(
        &[
            "compare",
            before.to_str().unwrap(),
            after.to_str().unwrap(),
            "--format=json",
        ],
        None,
    );
    let model: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    let c = &model["comparisons"][0];
    assert_eq!(c["method"], "unpaired", "{c}");
    assert!(c["interval"].is_array() || c["interval"].is_object(), "{c}");
    let o = bakeoff(&["compare", before.to_str().unwrap(), "nowhere.db"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("nowhere.db"), "{}", text(&o).1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn study_check_refuses_a_mysql_variant_whose_mysqld_is_mariadb() {
    let dir = bakeoff_testkit::scratch::dir("cli-mysql-is-mariadb");
    let mariadbd = bakeoff_server::Engine::MariaDb
        .default_binary()
        .expect("mariadbd");
    // Debian's mysqld, made here: a link named mysqld to mariadbd.
    let link = dir.join("mysqld");
    std::os::unix::fs::symlink(&mariadbd, &link).unwrap();
    let axis = "threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nengine = [\"mariadb\", \"mysql\"]\n";
    let file = dir.join("named.toml");
    let study = format!("{axis}[mysql]\nbinary = \"{}\"\n", link.display());
    std::fs::write(&file, study).unwrap();
    let o = bakeoff(&["study", "check", file.to_str().unwrap()], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    let head = format!(
        "{}:7:10: engine \"mysql\": {} is MariaDB 1",
        file.display(),
        link.display()
    );
    assert!(err.contains(&head), "{err}");
    assert!(err.contains("not MySQL; install MySQL 8.0 or 8.4"), "{err}");
    assert!(err.contains("nothing was run"), "{err}");
    // The defect as found: no binary named, and `mysqld` on PATH is MariaDB's (Debian's
    // /usr/sbin/mysqld, a link to mariadbd, where mariadb-server is installed).
    let default = bakeoff_server::Engine::MySql.default_binary();
    let mariadbs = default
        .as_ref()
        .ok()
        .and_then(|d| std::fs::canonicalize(d).ok());
    if mariadbs.is_some_and(|d| d.ends_with("mariadbd")) {
        let file = dir.join("default.toml");
        std::fs::write(&file, axis).unwrap();
        let o = bakeoff(&["study", "check", file.to_str().unwrap()], None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
        let mysqld = default.unwrap();
        let head = format!(
            "{}:5:22: engine \"mysql\": {} is MariaDB 1",
            file.display(),
            mysqld.display()
        );
        assert!(err.contains(&head), "{err}");
        if mysqld == std::path::Path::new("/usr/sbin/mysqld") {
            assert!(
                err.contains("(mysqld here is Debian's link to mariadbd), not MySQL"),
                "{err}"
            );
        }
    }
}

#[test]
fn a_study_across_engines_says_what_its_ratios_mean_with_each_engines_settings() {
    let dir = bakeoff_testkit::scratch::dir("cli-engines");
    let file = dir.join("engines.toml");
    let study = "duration = 1\nthreads = [2]\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nengine = [\"mariadb\", \"postgresql\"]\n[mariadb]\nsettings = { innodb_flush_log_at_trx_commit = 2 }\n[postgresql]\nsettings = { synchronous_commit = \"off\" }\n";
    std::fs::write(&file, study).unwrap();
    let o = bakeoff(&["study", "run", file.to_str().unwrap()], None);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let db = dir.join("engines.db");
    let o = bakeoff(&["compare", db.to_str().unwrap()], None);
    let (cmp, _) = text(&o);
    assert!(
        cmp.contains("every variant against engine=mariadb"),
        "{cmp}"
    );
    assert!(
        cmp.contains("These variants run on different engines (MariaDB, PostgreSQL)"),
        "{cmp}"
    );
    // Each engine's section took effect, and is read back from the server itself.
    assert!(cmp.contains("innodb_flush_log_at_trx_commit=2"), "{cmp}");
    assert!(cmp.contains("synchronous_commit=off"), "{cmp}");
    assert!(
        cmp.contains("default_transaction_isolation=read committed"),
        "{cmp}"
    );
    let o = bakeoff(&["report", db.to_str().unwrap()], None);
    assert!(o.status.success(), "{:?}", text(&o));
    let html = std::fs::read_to_string(dir.join("engines.html")).unwrap();
    assert!(html.contains("<h2>Across engines</h2>"));
    assert!(
        html.contains("PostgreSQL 15"),
        "the environment names the engine"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_says_how_steady_the_machine_is_and_what_the_study_needs() {
    let dir = bakeoff_testkit::scratch::dir("cli-plan");
    let file = dir.join("plan.toml");
    let study = "duration = 1\nthreads = [2]\nrepetitions = \"auto\"\nmax_repetitions = 6\n[dataset]\ntable_size = 300\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nsettings = [{ innodb_flush_log_at_trx_commit = 1 }, { innodb_flush_log_at_trx_commit = 2 }]\n";
    std::fs::write(&file, study).unwrap();
    let o = bakeoff(
        &[
            "study",
            "plan",
            file.to_str().unwrap(),
            "--pilot-blocks",
            "2",
        ],
        None,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("this machine: a fixed loop timed in 100 ms slices on all")
            && out.contains("a machine of its own varies under 2%"),
        "{out}"
    );
    assert!(out.contains(" in spells of about "), "{out}");
    // The two settings do the same work on point selects, but this test's neighbours load
    // the machine (a pilot here once read 0.80x in both blocks): a pilot that settles the
    // comparison says so and sizes nothing; one that does not sizes both ways.
    if out.contains("decided by the pilot alone") {
        assert!(
            out.contains("the study as written (5 blocks) should decide them all at its own pilot"),
            "{out}"
        );
    } else {
        // Both ways of running the blocks, the pilot's measured, with the pilot's range.
        assert!(
            out.contains("taking turns (measured by this pilot): a block's ratio spreads by")
                && out.contains(
                    "one server at a time (a rough estimate from the pilot and 10 s of the machine's spells)"
                )
                && out.contains("80% range "),
            "{out}"
        );
        assert!(out.contains("as written its servers take turns: "), "{out}");
        // No check blocks in this study: the plan says what validate_every = 1 would tell.
        assert!(
            out.contains("with [alternation] validate_every = 1 (")
                && out.contains("the study would tell a carry-over of about +-"),
            "{out}"
        );
    }
    assert!(!dir.join("plan.db").exists(), "a pilot keeps nothing");
}
