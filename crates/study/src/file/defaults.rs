//! What the server lab sets on the servers it starts, said where a study is checked: a
//! "large buffer pool" variant equal to the lab's own default measures nothing new, and a
//! reader finds the lab's settings only here, not in a cross-engine section.

use bakeoff_server::Engine;

use super::spec::StudySpec;

/// A line per engine the study starts servers of, with what the lab sets on each, then a
/// line per variant setting equal to one of them.
pub fn lab_lines(spec: &StudySpec) -> Vec<String> {
    let started: Vec<_> = spec.variants.iter().filter(|v| v.given.is_none()).collect();
    let mut engines: Vec<Engine> = started.iter().map(|v| v.engine).collect();
    engines.sort();
    engines.dedup();
    let mut out = Vec::new();
    for e in &engines {
        let set: Vec<String> = e
            .lab_defaults()
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        out.push(format!(
            "the lab starts every {} with {} (a variant's own settings win)",
            e.title(),
            set.join(" ")
        ));
    }
    for v in &started {
        let defaults = v.engine.lab_defaults();
        let own = v
            .engine_settings
            .iter()
            .chain(v.instances.iter().flat_map(|i| &i.settings));
        for s in own {
            let name = s.name.to_ascii_lowercase().replace('-', "_");
            let bare_bytes = v.engine != Engine::PostgreSql;
            let same = defaults
                .iter()
                .find(|(n, d)| *n == name && same_value(d, &s.value, bare_bytes));
            if let Some((n, d)) = same {
                out.push(format!(
                    "variant '{}' sets {}={}, which the lab sets anyway ({n}={d}): in that it is the same server as one that leaves it out",
                    v.name, s.name, s.value
                ));
            }
        }
    }
    out
}

/// Whether two setting values say the same: sizes by their bytes (512M, 512MB; a bare
/// number is bytes where `bare_bytes`, MySQL's way: PostgreSQL counts a bare number in the
/// setting's own unit, 8 kB pages for shared_buffers), anything else case-blind.
fn same_value(a: &str, b: &str, bare_bytes: bool) -> bool {
    let sized = |v: &str| {
        let unit = v.trim().ends_with(|c: char| c.is_ascii_alphabetic());
        bytes(v).filter(|_| bare_bytes || unit)
    };
    match (sized(a), sized(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.trim().eq_ignore_ascii_case(b.trim()),
    }
}

/// A size as MySQL (K, M, G, T) or PostgreSQL (kB, MB, GB, TB) writes it, in bytes.
fn bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" => 0,
        "k" | "kb" => 10,
        "m" | "mb" => 20,
        "g" | "gb" => 30,
        "t" | "tb" => 40,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_variant_equal_to_the_labs_default_is_said_and_others_are_not() {
        let file = "threads = [4]\n[[workload]]\nname = \"oltp_point_select\"\n[axes]\nsettings = [{ innodb_buffer_pool_size = \"536870912\" }, { innodb_buffer_pool_size = \"2G\" }]\n";
        let spec = crate::parse(file, "t").unwrap_or_else(|p| panic!("{p:?}"));
        let lines = super::lab_lines(&spec);
        assert!(
            lines[0].starts_with("the lab starts every MariaDB with ")
                && lines[0].contains("innodb_buffer_pool_size=512M"),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[1].contains("sets innodb_buffer_pool_size=536870912, which the lab sets anyway"),
            "{lines:?}"
        );
        assert!(super::same_value("512MB", "512M", true) && !super::same_value("512M", "1G", true));
        assert!(super::same_value("ON", "on", true) && !super::same_value("8Q", "8G", true));
        // PostgreSQL: 65536 is pages of 8 kB, not bytes; sizes with units still compare.
        assert!(!super::same_value("512MB", "536870912", false));
        assert!(super::same_value("512MB", "524288kB", false));
    }
}
