//! TPC-C spread over client hosts (network namespaces with an sshd each, as in hosts.rs):
//! the hosts' counts merge exactly (the client's new orders are the server's
//! sum(d_next_o_id)), every host's terminals draw the run's one C for last names, and a paced
//! run's terminals are split between the hosts, not paced once on each.

use bakeoff_testkit::hosts::{Hosts, Kind};

const BAKEOFF: &str = env!("CARGO_BIN_EXE_bakeoff");

/// `bakeoff tpcc run ARGS --format=json` from this machine's namespace, its connections
/// spread over b and c, onto the embedded server here.
fn spread(hosts: &Hosts, args: &[&str]) -> serde_json::Value {
    let o = hosts
        .local_command(BAKEOFF)
        .args([
            "tpcc",
            "run",
            "--warehouses=2",
            "--connections=4",
            "--time=4",
        ])
        .args(["--rampup=1", "--format=json"])
        .args(args)
        .args([
            "--client-host",
            &hosts.url("b"),
            "--client-host",
            &hosts.url("c"),
        ])
        .output()
        .expect("run bakeoff");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{args:?}: {err}");
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {err}"))
}

/// Both hosts ran their share, and the merged counts are the server's.
fn merged_exactly(doc: &serde_json::Value) {
    let shares = doc["client_hosts"].as_array().expect("client_hosts");
    assert_eq!(shares.len(), 2, "{doc}");
    for s in shares {
        assert_eq!(s["connections"], 2, "{s}");
        assert!(s["events"].as_u64() > Some(0), "{s}");
    }
    let events: u64 = shares.iter().map(|s| s["events"].as_u64().unwrap()).sum();
    let tx = doc["transactions"].as_array().expect("transactions");
    let by_class: u64 = tx.iter().map(|t| t["count"].as_u64().unwrap()).sum();
    assert_eq!(by_class, events, "every event in its class: {doc}");
    let client = doc["new_orders"].as_i64().unwrap();
    let server = doc["server_new_orders"]
        .as_i64()
        .expect("the server's count");
    // The server's reading starts a moment after the measured span does (a connect).
    assert!(
        (client - server).abs() <= 2 + client / 50,
        "client {client}, server {server}"
    );
    assert_eq!(doc["audit_passed"], true, "{doc}");
}

#[test]
fn tpcc_spread_over_client_hosts_merges_exactly_and_splits_paced_terminals() {
    let hosts = Hosts::new(&[("b", Kind::NoServer), ("c", Kind::NoServer)]);
    let doc = spread(&hosts, &[]);
    merged_exactly(&doc);
    assert!(doc.get("paced").is_none(), "{doc}");

    // Paced: 20 terminals (two warehouses) at 1/200 of the specification's waits. Paced
    // once on each host, they would order twice as often: about 196% of the ceiling.
    let doc = spread(&hosts, &["--keying=0.005"]);
    merged_exactly(&doc);
    let p = &doc["paced"];
    assert_eq!(p["terminals"], 20, "{p}");
    let eff = p["efficiency_percent"].as_f64().expect("efficiency");
    assert!((60.0..=105.0).contains(&eff), "efficiency {eff}%: {p}");
    assert_eq!(p["response_times_passed"], true, "{p}");
}
