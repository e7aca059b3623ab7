//! Variants against a real mariadbd: every axis applied and read back from the process, and
//! the ways a variant fails, each leaving no process behind.

use std::path::Path;

use bakeoff_server::variant::{Allocator, NumaPolicy, Setting};
use bakeoff_server::{Check, Server, ServerError, ServerSpec, Variant, INSTALL_HINT};

fn start(variant: Variant) -> Server {
    Server::start(&ServerSpec {
        variant,
        ..ServerSpec::default()
    })
    .unwrap_or_else(|e| panic!("could not start mariadbd: {e}\n\nTo fix: {INSTALL_HINT}"))
}

fn check<'a>(s: &'a Server, axis: &str) -> &'a Check {
    s.checks()
        .iter()
        .find(|c| c.axis == axis)
        .unwrap_or_else(|| panic!("no {axis} check in {:?}", s.checks()))
}

fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

fn setting(s: &str) -> Setting {
    s.parse().unwrap()
}

#[test]
fn jemalloc_one_cpu_interleave_and_settings_all_take_effect() {
    let s = start(Variant {
        allocator: Allocator::Jemalloc,
        cpus: Some("0".parse().unwrap()),
        numa: "interleave=all".parse().unwrap(),
        settings: vec![
            setting("max_connections=123"),
            setting("innodb_adaptive_hash_index=OFF"),
        ],
    });
    let pid = s.pid().unwrap();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    assert!(maps.contains("libjemalloc.so"), "jemalloc mapped");
    let a = check(&s, "allocator");
    assert!(
        a.ok && a.seen.contains("libjemalloc2"),
        "{a:?} (package recorded)"
    );
    let c = check(&s, "cpus");
    assert!(c.ok && c.seen == "0", "{c:?}");
    let n = check(&s, "numa");
    assert!(n.ok && n.seen.starts_with("interleave:"), "{n:?}");
    let settings: Vec<_> = s.checks().iter().filter(|c| c.axis == "setting").collect();
    assert_eq!(settings.len(), 2);
    assert!(settings.iter().all(|c| c.ok), "{settings:?}");
    assert_eq!(settings[0].seen, "123");
    assert!(s.variant_problems().is_none());
    s.stop();
    assert!(gone(pid), "server {pid} still running after stop");
}

#[test]
fn tcmalloc_and_mimalloc_are_mapped_glibc_maps_none() {
    for a in [Allocator::Tcmalloc, Allocator::Mimalloc, Allocator::Glibc] {
        let s = start(Variant {
            allocator: a.clone(),
            ..Variant::default()
        });
        let c = check(&s, "allocator");
        assert!(c.ok, "{a}: {c:?}");
    }
}

#[test]
fn a_setting_the_server_ignores_is_reported_not_in_effect() {
    // MariaDB 10.6+ accepts innodb_thread_concurrency at start and has no such variable.
    let s = start(Variant {
        settings: vec![setting("innodb_thread_concurrency=8")],
        ..Variant::default()
    });
    let c = check(&s, "setting");
    assert!(!c.ok, "{c:?}");
    let why = s.variant_problems().expect("the variant is not in effect");
    assert!(why.contains("innodb_thread_concurrency"), "{why}");
}

#[test]
fn variants_that_cannot_be_set_up_fail_before_anything_starts() {
    let cases = [
        (
            Variant {
                allocator: Allocator::Path("/nonexistent/libfast.so".into()),
                ..Variant::default()
            },
            "/nonexistent/libfast.so",
        ),
        (
            Variant {
                cpus: Some("1000".parse().unwrap()),
                ..Variant::default()
            },
            "online",
        ),
        (
            Variant {
                numa: NumaPolicy::Bind("7".parse().unwrap()),
                ..Variant::default()
            },
            "NUMA nodes online",
        ),
    ];
    for (variant, needle) in cases {
        match Server::start(&ServerSpec {
            variant: variant.clone(),
            ..ServerSpec::default()
        }) {
            Err(ServerError::Variant(msg)) => assert!(msg.contains(needle), "{variant}: {msg}"),
            Err(e) => panic!("{variant}: expected a variant error, got {e}"),
            Ok(_) => panic!("{variant}: started"),
        }
    }
}
