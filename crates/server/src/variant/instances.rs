//! One variant run as several servers (the one-instance-per-NUMA-node study): each instance
//! gets its own CPU set and NUMA policy, spelled per instance with '/' or `each`.

use super::axes::Variant;
use super::cpus::CpuList;
use super::numa::online_nodes;
use super::numa::NumaPolicy;

/// `count` variants from `base`: `cpus` is one CPU list for all or one per instance
/// ("0-3/4-7"); `numa` is one policy for all, one per instance ("bind=0/bind=1"), or
/// `bind=each` / `preferred=each` / `interleave=each`: instance i on node i.
pub fn expand(
    base: &Variant,
    count: u32,
    cpus: Option<&str>,
    numa: &str,
) -> Result<Vec<Variant>, String> {
    let count = count.max(1) as usize;
    let cpu_sets: Vec<Option<CpuList>> = match cpus {
        None => vec![None; count],
        Some(spec) => per_instance(spec, count, "--cpus")?
            .into_iter()
            .map(|s| {
                s.parse::<CpuList>()
                    .map(Some)
                    .map_err(|e| format!("--cpus: {e}"))
            })
            .collect::<Result<_, _>>()?,
    };
    let policies: Vec<NumaPolicy> = match numa.split_once("=each") {
        Some((mode, "")) => {
            let nodes: Vec<u32> = online_nodes()
                .map_err(|e| format!("--numa={numa}: reading NUMA nodes: {e}"))?
                .iter()
                .collect();
            if nodes.len() < count {
                return Err(format!(
                    "--numa={numa}: {count} instances, but this machine has {} NUMA node(s) online; use at most {} instances, or one policy for all",
                    nodes.len(),
                    nodes.len()
                ));
            }
            nodes[..count]
                .iter()
                .map(|n| {
                    format!("{mode}={n}")
                        .parse::<NumaPolicy>()
                        .map_err(|e| format!("--numa: {e}"))
                })
                .collect::<Result<_, _>>()?
        }
        _ => per_instance(numa, count, "--numa")?
            .into_iter()
            .map(|s| s.parse::<NumaPolicy>().map_err(|e| format!("--numa: {e}")))
            .collect::<Result<_, _>>()?,
    };
    Ok(cpu_sets
        .into_iter()
        .zip(policies)
        .map(|(cpus, numa)| Variant {
            cpus,
            numa,
            ..base.clone()
        })
        .collect())
}

/// "a/b/c" -> one part per instance; a single part applies to every instance.
fn per_instance(spec: &str, count: usize, option: &str) -> Result<Vec<String>, String> {
    let parts: Vec<String> = spec.split('/').map(str::to_string).collect();
    match parts.len() {
        1 => Ok(vec![parts[0].clone(); count]),
        n if n == count => Ok(parts),
        n => Err(format!(
            "{option}={spec} names {n} instances' settings, but --instances={count}; give one for all or one per instance, separated by '/'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_instance_settings_are_spread_or_shared() {
        let v = expand(&Variant::default(), 2, Some("0/1"), "default").unwrap();
        assert_eq!(v[0].cpus.as_ref().unwrap().to_string(), "0");
        assert_eq!(v[1].cpus.as_ref().unwrap().to_string(), "1");
        let v = expand(&Variant::default(), 3, Some("0-1"), "interleave=0").unwrap();
        assert!(v
            .iter()
            .all(|x| x.cpus.as_ref().unwrap().to_string() == "0-1"));
        let e = expand(&Variant::default(), 3, Some("0/1"), "default").unwrap_err();
        assert!(e.contains("--instances=3"), "{e}");
        let v = expand(&Variant::default(), 1, None, "bind=each").unwrap();
        assert_eq!(v[0].numa.to_string(), "bind=0");
        let e = expand(&Variant::default(), 64, None, "bind=each").unwrap_err();
        assert!(e.contains("NUMA node(s) online"), "{e}");
    }
}
