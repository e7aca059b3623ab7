//! prepare's two ways of loading rows give the same tables: LOAD DATA LOCAL where the server
//! allows it, sysbench's multi-row INSERTs where it does not.

use std::sync::atomic::AtomicBool;

use bakeoff_driver::{Conn, ConnectOptions};
use bakeoff_server::{Server, ServerSpec, INSTALL_HINT};
use bakeoff_testkit::{connect, global_status, rt, schema};
use bakeoff_workload::dataset;
use bakeoff_workload::{Distribution, OltpOptions, RandType, WorkloadKind, WorkloadSpec};

fn spec() -> WorkloadSpec {
    WorkloadSpec {
        kind: WorkloadKind::OltpReadOnly,
        options: OltpOptions {
            tables: 2,
            // Two chunks per table (25k + 5k ids): chunk seeding must not depend on which
            // connection loads which chunk.
            table_size: 30_000,
            ..OltpOptions::default()
        },
        distribution: Distribution::new(RandType::Uniform),
        tpcc: Default::default(),
        script: None,
    }
}

/// Per table: rows, sum of k, and a checksum of every column of every row.
async fn fingerprint(c: &mut Conn) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for t in 1..=2 {
        let sql = format!(
            "SELECT COUNT(*), SUM(k), SUM(CRC32(CONCAT_WS(',', id, k, c, pad))) FROM sbtest{t}"
        );
        out.extend(c.query_rows(&sql).await.expect("fingerprint"));
    }
    out
}

/// Prepare into `opts`: the tables' fingerprint, LOAD DATA and INSERT statements the server
/// counted, and how many times loading said the server refused LOAD DATA LOCAL (and whether
/// the result says the rows went that way).
async fn load(opts: &ConnectOptions) -> (Vec<Vec<Option<String>>>, u64, u64, usize, bool) {
    let mut c = connect(opts).await;
    let (load0, insert0) = (
        global_status(&mut c, "Com_load").await,
        global_status(&mut c, "Com_insert").await,
    );
    let refusals = std::sync::atomic::AtomicUsize::new(0);
    let told = |p: dataset::Progress| {
        if p == dataset::Progress::LocalInfileRefused {
            refusals.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let spec = spec();
    let job = dataset::Loading {
        spec: &spec,
        threads: 1,
        parallel: 3,
        seed: 42,
        interrupt: &AtomicBool::new(false),
        progress: &told,
    };
    let prepared = dataset::prepare(opts, &job).await.expect("prepare");
    let loads = global_status(&mut c, "Com_load").await - load0;
    let inserts = global_status(&mut c, "Com_insert").await - insert0;
    let told = refusals.load(std::sync::atomic::Ordering::Relaxed);
    (
        fingerprint(&mut c).await,
        loads,
        inserts,
        told,
        prepared.local_infile,
    )
}

#[test]
fn load_data_local_and_the_insert_fallback_give_identical_tables() {
    let fast = schema("load_local");
    let (rows_local, loads, _, told, local) = rt().block_on(load(&fast));
    assert_eq!(loads, 4, "one LOAD DATA per chunk, two chunks per table");
    assert_eq!((told, local), (0, true));

    let no_local = Server::start(&ServerSpec {
        options: vec!["local-infile=0".into()],
        ..ServerSpec::default()
    })
    .unwrap_or_else(|e| panic!("could not start a second MariaDB: {e}\n\nTo fix: {INSTALL_HINT}"));
    let (rows_insert, loads, inserts, told, local) =
        rt().block_on(load(&no_local.connect_options()));
    // The fallback is said once (the CLI and a study's note print it), and in the result.
    assert_eq!((told, local), (1, false));
    // The server counts refused statements too: each of the 3 connections may try once
    // before the first refusal is seen, never again after it.
    assert!(
        (1..=3).contains(&loads),
        "{loads} refused LOAD DATA attempts"
    );
    assert!(inserts > 0, "the fallback inserted the rows");

    assert_eq!(rows_local[0][0].as_deref(), Some("30000"));
    assert_eq!(rows_local, rows_insert, "same rows either way");
}
