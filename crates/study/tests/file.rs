//! Study files: a good one expands as declared; a bad one gets every problem at once, each at
//! its line and column.

use bakeoff_engine::ClientWait;
use bakeoff_study::{parse, DatasetPolicy, Order, Problem};

const GOOD: &str = r#"
name = "allocators"
description = "glibc vs jemalloc vs tcmalloc on 1 and 2 CPUs"
repetitions = 3
duration = 20
warmup = 5
order = "randomized"
seed = 11
threads = [1, 4, 16, 64]
platform = "x86"

[dataset]
tables = 4
table_size = 100000
policy = "rebuild"

[[workload]]
name = "oltp_point_select"

[[workload]]
name = "oltp_read_write"
label = "9 point selects + 1 update"
point_selects = 9
simple_ranges = 0
sum_ranges = 0
order_ranges = 0
distinct_ranges = 0
non_index_updates = 0
delete_inserts = 0
skip_trx = true

[axes]
allocator = ["glibc", "jemalloc", "tcmalloc"]
cpus = ["0", "0-1"]

[prices.x86]
on_demand_per_hour = 0.68
reserved_per_hour = 0.43

[prices.arm]
on_demand_per_hour = 0.54
"#;

fn problems(src: &str) -> Vec<Problem> {
    match parse(src, "t") {
        Ok(s) => panic!("parsed: {s:?}"),
        Err(p) => p,
    }
}

fn at(p: &[Problem], line: usize, needle: &str) {
    assert!(
        p.iter()
            .any(|x| x.line == line && x.message.contains(needle)),
        "no problem on line {line} mentioning '{needle}' in {p:#?}"
    );
}

#[test]
fn a_good_study_expands_as_declared() {
    let s = parse(GOOD, "file-stem").unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(s.name, "allocators");
    assert_eq!(
        (s.repetitions, s.duration.as_secs(), s.warmup.as_secs()),
        (3, 20, 5)
    );
    assert_eq!(s.order, Order::Randomized);
    assert_eq!(s.dataset_policy, DatasetPolicy::Rebuild);
    assert_eq!(s.threads, [1, 4, 16, 64]);
    assert_eq!(s.variants.len(), 6, "3 allocators x 2 CPU sets");
    let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names[0], "allocator=glibc cpus=0");
    assert_eq!(names[5], "allocator=tcmalloc cpus=0-1");
    assert_eq!(s.cells(), 6 * 2 * 4);
    let rw = &s.workloads[1];
    assert_eq!(rw.label, "9 point selects + 1 update");
    assert_eq!(
        (rw.spec.options.point_selects, rw.spec.options.skip_trx),
        (9, true)
    );
    assert_eq!(
        rw.spec.options.tables, 4,
        "the dataset reaches every workload"
    );
    assert_eq!(s.prices.len(), 2);
    assert_eq!(s.own_price(), Some(("x86", 0.68)));
}

#[test]
fn every_problem_is_reported_at_once_with_its_line() {
    let src = r#"treads = [1, 2]
repetitions = "3"
duration = 0
order = "shuffled"

[[workload]]
name = "oltp_readonly"
point_selekts = 3

[axes]
allocator = ["glibc", "hoard"]
cpus = ["0-x"]
"#;
    let p = problems(src);
    at(&p, 1, "did you mean `threads`");
    at(&p, 2, "a number of blocks (1 to 100) or \"auto\"");
    at(&p, 3, "out of range");
    at(&p, 4, "interleaved, randomized, sequential");
    at(&p, 7, "oltp_read_only");
    at(&p, 8, "did you mean `point_selects`");
    at(&p, 11, "hoard");
    at(&p, 12, "0-x");
    assert!(
        p.iter().any(|x| x.message.contains("`threads` is missing")),
        "{p:#?}"
    );
    assert!(
        p.windows(2)
            .all(|w| (w[0].line, w[0].column) <= (w[1].line, w[1].column)),
        "sorted by position"
    );
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    // An array left open: its own line and column, and none of the parser's cascade after it
    // (it read on into the lines below and found 7 more "errors" there).
    let p = problems(
        "name = \"x\"\nthreads = [1, 2\nduration = 2\n[[workload]]\nname = \"oltp_point_select\"\n",
    );
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].line, p[0].column), (2, 11), "{p:?}");
    assert!(p[0].message.contains("this array is never closed"), "{p:?}");
    // A table header left open: the parser names its line itself.
    let p = problems("[dataset\ntables = 2\n");
    assert_eq!(p[0].line, 1, "{p:?}");
}

#[test]
fn an_exploding_matrix_is_refused_with_its_arithmetic() {
    let threads: Vec<String> = (1..=200).map(|n| n.to_string()).collect();
    let cpus: Vec<String> = (0..20).map(|_| "\"0\"".to_string()).collect();
    let src = format!(
        "threads = [{}]\n[[workload]]\nname = \"oltp_point_select\"\n[[workload]]\nname = \"oltp_read_only\"\n[axes]\nallocator = [\"glibc\", \"jemalloc\"]\ncpus = [{}]\n",
        threads.join(", "),
        cpus.join(", ")
    );
    let p = problems(&src);
    assert!(
        p.iter().any(|x| x
            .message
            .contains("16000 cells (40 variants x 2 workloads x 200 thread counts)")),
        "{p:#?}"
    );
}

#[test]
fn axes_and_an_explicit_variant_list_do_not_mix_and_lists_need_axes() {
    let p = problems("threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nallocator = [\"glibc\"]\n[[variant]]\nallocator = \"jemalloc\"\n");
    assert!(p.iter().any(|x| x.message.contains("not both")), "{p:#?}");
    let p = problems("threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"a\"\ncpus = [\"0\", \"1\"]\n");
    at(&p, 6, "lists belong in [axes]");
}

#[test]
fn explicit_variants_keep_their_names_and_instances_spread() {
    let s = parse(
        "threads = [8]\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"one per node\"\ninstances = 2\ncpus = \"0/1\"\nsettings = { max_connections = 2000, innodb_adaptive_hash_index = false }\n",
        "t",
    )
    .unwrap_or_else(|e| panic!("{e:#?}"));
    let v = &s.variants[0];
    assert_eq!(v.name, "one per node");
    assert_eq!(v.instances.len(), 2);
    assert_eq!(v.instances[1].cpus.as_ref().unwrap().to_string(), "1");
    let settings: Vec<String> = v.instances[0]
        .settings
        .iter()
        .map(|s| format!("{}={}", s.name, s.value))
        .collect();
    assert!(
        settings.contains(&"innodb_adaptive_hash_index=OFF".to_string()),
        "{settings:?}"
    );
}

#[test]
fn client_cpus_are_read_at_the_top_and_per_variant() {
    let src = "threads = [8]\nclient_cpus = \"12-15\"\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"small\"\ncpus = \"0-3\"\n[[variant]]\nname = \"big\"\ncpus = \"0-11\"\nclient_cpus = \"14-15\"\n";
    let spec = parse(src, "t").expect("valid");
    assert_eq!(
        spec.client_cpus.map(|c| c.to_string()).as_deref(),
        Some("12-15")
    );
    assert_eq!(spec.variants[0].client_cpus, None, "inherits the study's");
    assert_eq!(
        spec.variants[1]
            .client_cpus
            .as_ref()
            .map(|c| c.to_string())
            .as_deref(),
        Some("14-15")
    );
    let bad = "threads = [8]\nclient_cpus = \"12-x\"\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nclient_cpus = \"-\"\n";
    let p = problems(bad);
    at(&p, 2, "`client_cpus`");
    at(&p, 6, "`variant.client_cpus`");
}

#[test]
fn client_wait_is_auto_unless_the_study_says_sleep_or_poll() {
    let base = "threads = [8]\n[[workload]]\nname = \"oltp_point_select\"\n";
    assert_eq!(parse(base, "w").unwrap().client_wait, None);
    for (v, want) in [
        ("auto", None),
        ("sleep", Some(ClientWait::Sleep)),
        ("poll", Some(ClientWait::Poll)),
    ] {
        let spec = parse(&format!("client_wait = \"{v}\"\n{base}"), "w").unwrap();
        assert_eq!(spec.client_wait, want, "{v}");
    }
    let p = problems(&format!("client_wait = \"spin\"\n{base}"));
    at(
        &p,
        1,
        "`client_wait` = \"spin\": use one of auto, sleep, poll",
    );
}

#[test]
fn hosts_name_the_server_and_client_machines_and_refuse_what_cannot_run() {
    let base = "threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\n";
    let s = parse(
        &format!("{base}[hosts]\nserver = \"ssh://root@db1:2222\"\n"),
        "h",
    )
    .unwrap();
    assert_eq!(s.server_host.as_deref(), Some("ssh://root@db1:2222"));
    let s = parse(
        &format!("{base}[hosts]\nserver = \"local\"\nclients = [\"local\"]\n"),
        "h",
    )
    .unwrap();
    assert_eq!(s.server_host, None);
    let p = problems(&format!("{base}[hosts]\nserver = \"db1\"\n"));
    at(&p, 5, "ssh://[user@]host");
    assert!(
        s.client_hosts.is_empty(),
        "only this machine: load in-process"
    );
    let s = parse(
        &format!("{base}[hosts]\nclients = [\"ssh://load1\", \"local\"]\n"),
        "h",
    )
    .unwrap();
    assert_eq!(s.client_hosts, ["ssh://load1", "local"]);
    let p = problems(&format!(
        "{base}[hosts]\nclients = [\"ssh://load1\", \"ssh://load1\"]\n"
    ));
    at(&p, 5, "listed twice");
    let fixed = "threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\niterations = 2\nevents_per_connection = 10\n";
    // Fixed work splits its connections over the client hosts too.
    let s = parse(
        &format!("{fixed}[hosts]\nclients = [\"ssh://load1\"]\n"),
        "h",
    )
    .unwrap();
    assert_eq!(s.workloads[0].fixed, Some((2, 10)));
    assert_eq!(s.client_hosts, ["ssh://load1"]);
    let p = problems(&format!(
        "{base}[dataset]\npolicy = \"copy\"\n[hosts]\nserver = \"ssh://db1\"\n"
    ));
    at(&p, 7, "rebuild");
}

#[test]
fn the_server_start_timeout_is_a_study_setting_in_seconds() {
    let base = "threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\n";
    assert_eq!(parse(base, "s").unwrap().server_start_timeout, None);
    let s = parse(&format!("server_start_timeout = 300\n{base}"), "s").unwrap();
    assert_eq!(s.server_start_timeout, Some(300));
    let p = problems(&format!("server_start_timeout = 0\n{base}"));
    at(&p, 1, "`server_start_timeout`");
}

#[test]
fn a_given_server_variant_reads_its_keys_and_refuses_what_does_not_apply() {
    let ok = parse(
        "threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\n\
         [[variant]]\nname = \"r6g.large\"\nserver = \"mysql://bench@db1:3306/sbtest?ssl-mode=REQUIRED\"\n\
         password_command = \"get-token\"\nprice_per_hour = 0.25\n\
         [[variant]]\nname = \"embedded\"\nallocator = \"jemalloc\"\nprice_per_hour = 0.1\n",
        "t",
    )
    .unwrap_or_else(|e| panic!("{e:#?}"));
    let g = ok.variants[0].given.as_ref().expect("given");
    assert_eq!(g.url, "mysql://bench@db1:3306/sbtest?ssl-mode=REQUIRED");
    assert_eq!(g.password_command.as_deref(), Some("get-token"));
    assert!(!g.use_existing_tables);
    assert_eq!(ok.variants[0].price_per_hour, Some(0.25));
    assert!(ok.variants[1].given.is_none());
    assert_eq!(ok.variants[1].price_per_hour, Some(0.1));

    let p = problems(
        "threads = [1]\n[[workload]]\nname = \"oltp_point_select\"\n\
         [[variant]]\nserver = \"mysql://bench:hunter2@db1/sbtest\"\n\
         [[variant]]\nserver = \"mysql://db2/sbtest\"\nallocator = \"jemalloc\"\ndefaults_group = \"x\"\nexisting_tables = \"keep\"\n\
         [[variant]]\nname = \"plain\"\npassword_command = \"x\"\nprice_per_hour = \"cheap\"\n",
    );
    at(&p, 5, "MYSQL_PWD");
    at(&p, 8, "`variant.allocator` sets up a server bakeoff starts");
    at(&p, 9, "defaults_file");
    at(&p, 10, "existing_tables");
    at(&p, 13, "is for a server you give");
    at(&p, 14, "price per hour");
    assert!(p.iter().all(|x| !x.message.contains("hunter2")), "{p:#?}");
}

const ENGINES: &str = r#"
name = "engines"
duration = 5
threads = [4]
[[workload]]
name = "oltp_point_select"
[axes]
engine = ["mariadb", "postgresql"]
allocator = ["glibc", "jemalloc"]
[mariadb]
settings = { innodb_flush_log_at_trx_commit = 1 }
[postgresql]
settings = { synchronous_commit = "on" }
"#;

#[test]
fn an_engine_axis_names_its_variants_and_gives_each_engine_its_own_settings() {
    let s = parse(ENGINES, "x").expect("valid");
    let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "engine=mariadb allocator=glibc",
            "engine=mariadb allocator=jemalloc",
            "engine=postgresql allocator=glibc",
            "engine=postgresql allocator=jemalloc"
        ]
    );
    let pg = &s.variants[2];
    assert_eq!(pg.engine, bakeoff_server::Engine::PostgreSql);
    assert_eq!(pg.engine_settings[0].name, "synchronous_commit");
    // The engine's settings are not the variant's axes: its instances carry none.
    assert!(pg.instances[0].settings.is_empty());
    assert_eq!(
        s.variants[0].engine_settings[0].name,
        "innodb_flush_log_at_trx_commit"
    );
}

#[test]
fn one_engines_setting_given_to_another_is_refused_at_its_line() {
    // A MariaDB setting as an axis of a PostgreSQL study: refused where it is written, with
    // the section it belongs in.
    let p = problems(
        "threads = [4]\nengine = \"postgresql\"\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nsettings = [{ innodb_adaptive_hash_index = \"OFF\" }]\n",
    );
    at(
        &p,
        6,
        "`innodb_adaptive_hash_index` is not a PostgreSQL setting",
    );
    at(&p, 6, "under [mariadb] settings");
    // And the other way round, in the engine's own section; a typo gets the nearest name.
    let p = problems(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[mariadb]\nsettings = { shared_buffers = \"1GB\" }\n[postgresql]\nsettings = { shared_bufers = \"1GB\" }\n[axes]\nengine = [\"mariadb\", \"postgresql\"]\n",
    );
    at(&p, 5, "`shared_buffers` is not a MariaDB setting");
    at(&p, 5, "under [postgresql] settings");
    at(&p, 7, "did you mean `shared_buffers`?");
    assert_eq!(p.len(), 2, "{p:?}");
}

/// A setting the server knows, with a value of the wrong kind, is refused at `study check`,
/// at its line, with what it takes: the server's start would have refused it, after loading.
#[test]
fn a_settings_value_of_the_wrong_kind_is_refused_at_its_line() {
    let p = problems(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[mariadb]\nsettings = { innodb_buffer_pool_size = \"8Q\", performance_schema = \"maybe\" }\n[postgresql]\nsettings = { shared_buffers = \"1gb\", synchronous_commit = \"off\" }\n[axes]\nengine = [\"mariadb\", \"postgresql\"]\n",
    );
    at(
        &p,
        5,
        "`innodb_buffer_pool_size` takes a number, or whole digits with K, M, G, T, P or E",
    );
    at(&p, 5, "found \"8Q\"");
    at(&p, 5, "`performance_schema` takes ON or OFF");
    at(&p, 7, "`shared_buffers` takes a number, with a unit");
    // An enum (synchronous_commit) is left to the server's start, which names its values.
    assert_eq!(p.len(), 3, "{p:?}");
    parse(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[mariadb]\nsettings = { innodb_buffer_pool_size = \"8G\", performance_schema = \"ON\" }\n[postgresql]\nsettings = { shared_buffers = \"1GB\" }\n[axes]\nengine = [\"mariadb\", \"postgresql\"]\n",
        "t",
    )
    .unwrap_or_else(|p| panic!("the same settings, each of its kind: {p:?}"));
}

#[test]
fn engines_are_named_once_and_agree_with_binaries_and_urls() {
    let p = problems(
        "threads = [4]\nengine = \"postgresql\"\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nengine = [\"mariadb\", \"oracle\"]\n",
    );
    at(&p, 2, "`engine` is both the study's and an axis");
    at(
        &p,
        6,
        "'oracle' is not an engine; use mariadb, mysql or postgresql",
    );
    let mariadbd = bakeoff_server::Engine::MariaDb
        .default_binary()
        .expect("these tests need mariadbd");
    let p = problems(&format!(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nengine = \"postgresql\"\nbinary = \"{}\"\n",
        mariadbd.display()
    ));
    at(
        &p,
        6,
        &format!("engine \"postgresql\": {} is MariaDB 1", mariadbd.display()),
    );
    at(&p, 6, ", not PostgreSQL; ");
    let p = problems(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nengine = \"mariadb\"\nserver = \"postgresql://bench@db1/sbtest\"\n",
    );
    at(&p, 5, "the variant's server is a PostgreSQL URL");
    // A given PostgreSQL's engine is its URL's.
    let s = parse(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nserver = \"postgresql://bench@db1/sbtest\"\n",
        "x",
    )
    .expect("valid");
    assert_eq!(s.variants[0].engine, bakeoff_server::Engine::PostgreSql);
}

/// A server binary in the scratch directory: `mysqld`, a link to MariaDB's mariadbd as
/// Debian's mariadb-server installs one, or a script that says `version` to any question.
fn server_binary(dir: &str, says: Option<&str>) -> std::path::PathBuf {
    let path = bakeoff_testkit::scratch::dir(dir).join("mysqld");
    if path.exists() {
        return path;
    }
    match says {
        None => {
            let mariadbd = bakeoff_server::Engine::MariaDb
                .default_binary()
                .expect("these tests need mariadbd");
            std::os::unix::fs::symlink(mariadbd, &path).unwrap();
        }
        Some(line) => {
            use std::os::unix::fs::PermissionsExt;
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, format!("#!/bin/sh\necho \"{line}\"\n")).unwrap();
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
    }
    path
}

fn study_of(engine: &str, binary: &std::path::Path) -> String {
    format!(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nengine = \"{engine}\"\nbinary = \"{}\"\n",
        binary.display()
    )
}

#[test]
fn a_mysql_variant_must_run_mysql_and_not_mariadbs_mysqld() {
    // The defect as found: an engine axis whose MySQL is Debian's mysqld, a link to mariadbd.
    let link = server_binary("mysqld-is-mariadbd", None);
    let p = problems(&format!(
        "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nengine = [\"mariadb\", \"mysql\"]\n[mysql]\nbinary = \"{}\"\n",
        link.display()
    ));
    at(
        &p,
        7,
        &format!("engine \"mysql\": {} is MariaDB 1", link.display()),
    );
    at(&p, 7, "not MySQL; install MySQL 8.0 or 8.4");
    at(&p, 7, "or use engine \"mariadb\"");
    assert_eq!(p.len(), 1, "{p:?}");
    // The same binary is MariaDB's, and takes a MariaDB variant.
    parse(&study_of("mariadb", &link), "x").expect("mariadbd by another name");
}

#[test]
fn a_binary_is_the_engine_its_version_says_percona_server_counting_as_mysql() {
    let mysql = server_binary(
        "mysql-8.4",
        Some("/opt/mysql/bin/mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)"),
    );
    let percona = server_binary(
        "percona-8.0",
        Some("mysqld  Ver 8.0.39-30 for Linux on x86_64 (Percona Server (GPL), Release '30', Revision '1b9e6b3a')"),
    );
    let unknown = server_binary("says-nothing", Some(""));
    for b in [&mysql, &percona] {
        let s = parse(&study_of("mysql", b), "x").expect("a MySQL for engine mysql");
        assert_eq!(s.variants[0].engine, bakeoff_server::Engine::MySql);
    }
    let p = problems(&study_of("mariadb", &mysql));
    at(
        &p,
        6,
        &format!(
            "engine \"mariadb\": {} is MySQL 8.4.3, not MariaDB",
            mysql.display()
        ),
    );
    at(&p, 6, "or use engine \"mysql\"");
    let p = problems(&study_of("mariadb", &percona));
    at(
        &p,
        6,
        &format!(
            "{} is Percona Server for MySQL 8.0.39-30, not MariaDB",
            percona.display()
        ),
    );
    // One that says neither is no MySQL: refused for engine "mysql", where it was taken as
    // MariaDB; MariaDB stays what a binary that cannot tell is taken for.
    let p = problems(&study_of("mysql", &unknown));
    at(
        &p,
        6,
        &format!(
            "engine \"mysql\": {} does not say it is MySQL",
            unknown.display()
        ),
    );
    parse(&study_of("mariadb", &unknown), "x").expect("MariaDB when it cannot tell");
}

/// A TPC-C study: its warehouses and options reach the workload's spec, and its servers take
/// turns of a second unless told otherwise (its transactions outlast a 50 ms turn).
#[test]
fn a_tpcc_study_takes_its_warehouses_and_turns_long_enough_for_its_transactions() {
    let src = |alternation: &str| {
        format!(
            "name = \"t\"\nthreads = [2]\n[dataset]\nwarehouses = 3\n[[workload]]\nname = \"tpcc\"\nall_warehouses = true\n{alternation}\n[axes]\nallocator = [\"glibc\", \"jemalloc\"]\n"
        )
    };
    let s = parse(&src(""), "t").unwrap_or_else(|p| panic!("{p:?}"));
    let w = &s.workloads[0].spec;
    assert_eq!(w.kind, bakeoff_workload::WorkloadKind::Tpcc);
    assert_eq!((w.tpcc.warehouses, w.tpcc.all_warehouses), (3, true));
    assert!(!w.tpcc.procedures, "client-side statements unless asked");
    let s = parse(&src("").replace("all_warehouses", "procedures"), "t").unwrap();
    assert!(s.workloads[0].spec.tpcc.procedures);
    let s = parse(&src(""), "t").unwrap();
    assert_eq!(s.alternation.slice, std::time::Duration::from_secs(1));
    let s = parse(&src("[alternation]\nslice_ms = 200"), "t").unwrap();
    assert_eq!(s.alternation.slice, std::time::Duration::from_millis(200));
    let p = parse(&src("").replace("warehouses = 3", "warehouses = 0"), "t").unwrap_err();
    assert!(format!("{p:?}").contains("warehouses"), "{p:?}");
}

/// A Lua script named as a study's workload is refused at its line with the way it runs
/// today (the reference used to say a study took one).
#[test]
fn a_lua_script_that_is_not_there_is_named_at_its_line() {
    let p = problems("threads = [1]\n[[workload]]\nname = \"mine.lua\"\n");
    at(&p, 3, "cannot read the script mine.lua");
    // sysbench's own script names stay the built-ins of those names.
    let s = parse(
        "threads = [1]\n[[workload]]\nname = \"oltp_point_select.lua\"\n",
        "t",
    )
    .unwrap_or_else(|p| panic!("{p:?}"));
    assert!(s.workloads[0].spec.script.is_none());
}
