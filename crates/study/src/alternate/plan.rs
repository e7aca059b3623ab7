//! Whether a study's blocks take turns, and how its workloads share a block's servers.

use crate::{StudySpec, Workload};

/// Why `spec`'s blocks cannot take turns, or None when they can.
pub fn why_not(spec: &StudySpec) -> Option<String> {
    let reason = if !spec.alternation.enabled {
        "[alternation] enabled = false".to_string()
    } else if spec.block_variants() < 2 {
        "it has one variant, nothing to take turns with".to_string()
    } else if spec.order == crate::Order::Sequential {
        "order = \"sequential\" runs each variant's series back to back".to_string()
    } else if spec.server_host.is_some() || !spec.client_hosts.is_empty() {
        "its servers or its load are on other hosts ([hosts])".to_string()
    } else if let Some(v) = spec.variants.iter().find(|v| v.given.is_some()) {
        format!(
            "variant '{}' is a server you run (bakeoff does not hold it between turns)",
            v.name
        )
    } else if let Some(w) = spec.workloads.iter().find(|w| w.fixed.is_some()) {
        format!(
            "workload '{}' is fixed work, which no slice can cut",
            w.label
        )
    } else if !same_client(spec) {
        "its variants put the load on different CPUs (client_cpus)".to_string()
    } else {
        super::fits::too_big(spec)?
    };
    Some(reason)
}

/// How a study runs its blocks, in a line for `study check` and `study plan`.
pub fn mode_line(spec: &StudySpec) -> String {
    let a = &spec.alternation;
    match why_not(spec) {
        None => format!(
            "blocks alternate: each block's {} servers take turns every {} ms (idle servers {}), {} s each per cell",
            spec.block_variants(),
            a.slice.as_millis(),
            match a.idle {
                crate::Idle::Run => "left running",
                crate::Idle::Freeze => "frozen",
            },
            spec.duration.as_secs()
        ) + &match a.validate_every {
            0 => String::new(),
            1 => "; after each, a check block runs its variants one server at a time (validate_every = 1), to test that the two ways agree".to_string(),
            k => format!("; after every {k}th, a check block runs its variants one server at a time (validate_every = {k}), to test that the two ways agree"),
        },
        Some(why) => format!(
            "blocks run one server at a time: {why}{}",
            match a.validate_every {
                0 => "",
                _ => "; validate_every has nothing to check (no block takes turns)",
            }
        ),
    }
}

/// What taking turns is known to misread, for `study check` and `study plan`. Measured with
/// `bench/alternation` on this project's 2-CPU VM (issue 48's A/A/B:
/// innodb_flush_log_at_trx_commit 2 against 1, oltp_write_only), four sessions each way (the fourth 2026-11-27):
/// with the client on the servers' CPUs, b/a read 1.83-1.98x taking turns (frozen or running,
/// 50 ms or 500 ms turns, the filesystem flushed at every switch or not) against 1.52-1.69x one
/// server at a time; with the servers on CPU 0 and the client on CPU 1, 1.66-1.67x against
/// 1.55-1.62x (intervals overlapping in two sessions of three). The A/A checks held in every
/// way; the server waiting on fsync lost more in turns than the one that does not wait. On a
/// 16-CPU VM (two sessions, idle servers frozen) the two ways agreed: 1.43-1.45x against
/// 1.42-1.43x. The caveat says both, since a user's machine may be either kind.
pub fn caveat(spec: &StudySpec) -> Option<String> {
    let writer = spec.workloads.iter().find(|w| w.spec.kind.writes())?;
    if why_not(spec).is_some() || spec.block_variants() < 2 {
        return None;
    }
    let how = match client_apart(spec) {
        true => "the servers and the client on CPUs apart, as here, 1.66-1.67x taking turns against 1.55-1.62x one server at a time",
        false => "the client on the servers' CPUs, as here, 1.83-1.98x taking turns against 1.52-1.69x one server at a time (pinned apart: 1.66-1.67x against 1.55-1.62x)",
    };
    let check = match spec.alternation.validate_every {
        0 => "check such a verdict with [alternation] enabled = false, or let the study check it ([alternation] validate_every = 1)".to_string(),
        k => format!("this study checks its verdicts one server at a time (validate_every = {k}), and the report sets them side by side"),
    };
    Some(format!(
        "caveat: workload '{}' writes, and on bakeoff's own 2-CPU VM taking turns overstated the difference between variants that write differently: its A/A/B (durability settings) read, with {how}, its A/A checks holding every way; on a 16-CPU VM the two agreed (1.43-1.45x against 1.42-1.43x); {check}",
        writer.label
    ))
}

/// Whether every variant's load runs on CPUs none of its servers use (as a series places it).
fn client_apart(spec: &StudySpec) -> bool {
    use bakeoff_server::placement::{launch_cpus, ClientPlacement};
    let own = launch_cpus();
    spec.variants.iter().all(|v| {
        let (given, servers) = spec.client_request(v);
        ClientPlacement::choose(given, &servers, &own).apart
    })
}

/// Every variant's load on the same CPUs: the turns share one set of client threads.
fn same_client(spec: &StudySpec) -> bool {
    let first = spec.variants.first().and_then(|v| v.client_cpus.as_ref());
    spec.variants
        .iter()
        .all(|v| v.client_cpus.as_ref() == first)
}

/// The study's workloads in groups that share tables (the same tables, rows and layout):
/// a group's workloads run on one set of servers per block, one after another.
pub(crate) fn table_groups(spec: &StudySpec) -> Vec<Vec<usize>> {
    let threads = spec.threads.iter().copied().max().unwrap_or(1);
    let shape = |w: &Workload| {
        // A script's tables are what its own prepare (or pgbench's -i at its scale) makes:
        // only the same script, with the same options, shares them.
        if let Some(script) = &w.spec.script {
            return serde_json::to_string(script).unwrap_or_else(|_| w.label.clone());
        }
        let o = &w.spec.options;
        format!(
            "{:?}|{}|{}",
            bakeoff_workload::dataset::tables(&w.spec, threads, true),
            o.tables,
            o.table_size
        )
    };
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, w) in spec.workloads.iter().enumerate() {
        let s = shape(w);
        match groups.iter_mut().find(|(k, _)| *k == s) {
            Some((_, g)) => g.push(i),
            None => groups.push((s, vec![i])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extra: &str, variants: &str) -> StudySpec {
        let src = format!("threads = [4]\nrepetitions = 2\n{extra}\n[[workload]]\nname = \"oltp_point_select\"\n[[workload]]\nname = \"oltp_read_only\"\n{variants}");
        crate::parse(&src, "t").unwrap_or_else(|e| panic!("{e:?}"))
    }

    const TWO: &str = "[axes]\nallocator = [\"glibc\", \"jemalloc\"]\n";

    #[test]
    fn a_study_alternates_unless_something_stands_in_the_way_and_says_what() {
        assert_eq!(why_not(&spec("", TWO)), None);
        assert!(mode_line(&spec("", TWO)).starts_with(
            "blocks alternate: each block's 2 servers take turns every 50 ms (idle servers frozen)"
        ));
        let off = why_not(&spec("[alternation]\nenabled = false", TWO)).unwrap();
        assert!(off.contains("enabled = false"), "{off}");
        let one = why_not(&spec("", "")).unwrap();
        assert!(one.contains("one variant"), "{one}");
        let seq = why_not(&spec("order = \"sequential\"", TWO)).unwrap();
        assert!(seq.contains("sequential"), "{seq}");
        let given = spec("", "[[variant]]\nname = \"mine\"\nserver = \"mysql://u@127.0.0.1:3306/db\"\n[[variant]]\nname = \"b\"\n");
        let why = why_not(&given).unwrap();
        assert!(why.contains("'mine' is a server you run"), "{why}");
        let big = spec("", "[[variant]]\nname = \"a\"\nsettings = { innodb_buffer_pool_size = \"4000G\" }\n[[variant]]\nname = \"b\"\n");
        let why = why_not(&big).unwrap();
        assert!(
            why.contains("MiB together") && why.contains("available"),
            "{why}"
        );
        assert!(mode_line(&big).starts_with("blocks run one server at a time: its 2 servers need"));
    }

    #[test]
    fn a_write_workload_taking_turns_carries_the_caveat_measured_and_nothing_else_does() {
        assert_eq!(caveat(&spec("", TWO)), None, "reads only");
        let src = "threads = [4]\n[[workload]]\nname = \"oltp_write_only\"\n[axes]\nallocator = [\"glibc\", \"jemalloc\"]\n";
        let writes = crate::parse(src, "t").unwrap_or_else(|e| panic!("{e:?}"));
        let said = caveat(&writes).unwrap();
        assert!(
            said.contains("'oltp_write_only' writes") && said.contains("enabled = false"),
            "{said}"
        );
        assert!(said.contains("on the servers' CPUs, as here"), "{said}");
        assert!(said.contains("on a 16-CPU VM the two agreed"), "{said}");
        // Servers on CPU 0, the client on CPU 1: a smaller gap, said as measured.
        let apart = format!("client_cpus = \"1\"\n{src}cpus = [\"0\"]\n");
        let apart = crate::parse(&apart, "t").unwrap_or_else(|e| panic!("{e:?}"));
        let said = caveat(&apart).unwrap();
        assert!(
            said.contains("on CPUs apart, as here, 1.66-1.67x"),
            "{said}"
        );
        let blocks = format!("{src}[alternation]\nenabled = false\n");
        let blocks = crate::parse(&blocks, "t").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(caveat(&blocks), None, "one server at a time");
    }

    #[test]
    fn workloads_on_the_same_tables_share_a_blocks_servers() {
        assert_eq!(table_groups(&spec("", TWO)), vec![vec![0, 1]]);
        let src = "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[[workload]]\nname = \"oltp_read_only\"\nsecondary = true\n[[workload]]\nname = \"oltp_write_only\"\n";
        let s = crate::parse(src, "t").unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(table_groups(&s), vec![vec![0, 2], vec![1]]);
    }
}
