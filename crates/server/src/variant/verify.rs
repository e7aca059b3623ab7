//! Reading back what the running server actually got.

use super::allocator::{check_maps, Library};
use super::axes::Variant;
use super::cpus::CpuList;
use super::numa::online_nodes;
use super::numa::NumaPolicy;

/// One verified axis of a variant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    /// "allocator", "cpus", "numa" or "setting".
    pub axis: String,
    pub wanted: String,
    pub seen: String,
    pub ok: bool,
    /// Why it failed, or what the reader should know (a one-node machine).
    pub note: Option<String>,
}

pub(crate) fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

fn read(pid: u32, file: &str) -> Result<String, String> {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .map_err(|e| format!("reading /proc/{pid}/{file}: {e}"))
}

/// The process-level axes (allocator, CPUs, NUMA) of server `pid`.
pub(crate) fn check_process(pid: u32, v: &Variant, lib: Option<&Library>) -> Vec<Check> {
    let mut checks = vec![allocator(pid, v, lib)];
    if let Some(cpus) = &v.cpus {
        checks.push(cpu_check(pid, cpus));
    }
    if v.numa != NumaPolicy::Default {
        checks.push(numa_check(pid, &v.numa));
    }
    checks
}

fn allocator(pid: u32, v: &Variant, lib: Option<&Library>) -> Check {
    let seen = match lib {
        Some(l) => format!(
            "{}{}",
            l.path.display(),
            match (&l.package, &l.version) {
                (Some(p), Some(ver)) => format!(" ({p} {ver})"),
                _ => String::new(),
            }
        ),
        None => "no allocator preloaded".into(),
    };
    let result = read(pid, "maps").and_then(|maps| check_maps(&maps, &v.allocator, lib));
    Check {
        axis: "allocator".into(),
        wanted: v.allocator.to_string(),
        seen,
        ok: result.is_ok(),
        note: result.err(),
    }
}

fn cpu_check(pid: u32, cpus: &CpuList) -> Check {
    let seen = read(pid, "status").map(|s| {
        status_field(&s, "Cpus_allowed_list")
            .unwrap_or("")
            .to_string()
    });
    let (seen, ok, note) = match seen {
        Ok(s) => {
            let ok = s.parse::<CpuList>().is_ok_and(|c| &c == cpus);
            let note = (!ok).then(|| format!("the server may run on CPUs {s}, not {cpus}"));
            (s, ok, note)
        }
        Err(e) => (String::new(), false, Some(e)),
    };
    Check {
        axis: "cpus".into(),
        wanted: cpus.to_string(),
        seen,
        ok,
        note,
    }
}

fn numa_check(pid: u32, policy: &NumaPolicy) -> Check {
    let word = policy.numa_maps_word();
    let mut check = Check {
        axis: "numa".into(),
        wanted: policy.to_string(),
        seen: String::new(),
        ok: false,
        note: None,
    };
    match read(pid, "numa_maps") {
        Ok(maps) => {
            let total = maps.lines().count();
            let matching = maps
                .lines()
                .filter(|l| l.split_whitespace().nth(1) == Some(word.as_str()))
                .count();
            check.seen = format!("{word} on {matching} of {total} mappings");
            check.ok = matching > 0;
            if !check.ok {
                check.note = Some(format!("no mapping of the server has the policy {word}"));
            } else if online_nodes().is_ok_and(|n| n.len() == 1) {
                check.note = Some(
                    "this machine has one NUMA node: the policy is in place, but every policy puts memory on node 0"
                        .into(),
                );
            }
        }
        Err(e) => check.note = Some(e),
    }
    check
}

/// Whether a running variable value is what was asked for, allowing the server's spellings:
/// ON/OFF for 1/0, sizes with K/M/G/T suffixes as bytes, numbers compared as numbers.
pub fn same_value(wanted: &str, seen: &str) -> bool {
    let (w, s) = (wanted.trim(), seen.trim());
    if w.eq_ignore_ascii_case(s) {
        return true;
    }
    let boolean = |v: &str| match v.to_ascii_uppercase().as_str() {
        "ON" | "TRUE" | "1" => Some(1),
        "OFF" | "FALSE" | "0" => Some(0),
        _ => None,
    };
    if let (Some(a), Some(b)) = (boolean(w), boolean(s)) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (size(w), size(s)) {
        return a == b;
    }
    matches!((w.parse::<f64>(), s.parse::<f64>()), (Ok(a), Ok(b)) if a == b)
}

fn size(v: &str) -> Option<u128> {
    let (num, mult) = match v.chars().last()?.to_ascii_uppercase() {
        'K' => (&v[..v.len() - 1], 1u128 << 10),
        'M' => (&v[..v.len() - 1], 1 << 20),
        'G' => (&v[..v.len() - 1], 1 << 30),
        'T' => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1),
    };
    num.parse::<u128>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_spellings_of_the_same_value_match() {
        for (w, s) in [
            ("512M", "536870912"),
            ("ON", "1"),
            ("off", "OFF"),
            ("8", "8"),
            ("0.5", "0.500000"),
            ("O_DIRECT", "O_DIRECT"),
        ] {
            assert!(same_value(w, s), "{w} vs {s}");
        }
        for (w, s) in [
            ("5000", "4096"),
            ("ON", "0"),
            ("1G", "536870912"),
            ("O_DIRECT", "fsync"),
        ] {
            assert!(!same_value(w, s), "{w} vs {s}");
        }
    }

    #[test]
    fn status_fields_are_found_by_exact_name() {
        let status = "Name:\tmariadbd\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(status_field(status, "Cpus_allowed_list"), Some("0-1"));
        assert_eq!(status_field(status, "Cpus_allowed"), Some("3"));
    }
}
