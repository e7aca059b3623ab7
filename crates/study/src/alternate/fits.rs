//! Whether a block's servers fit in memory together: alternation keeps every variant's server
//! up at once, so their buffer pools and their connections' memory add up. Checked before the
//! study starts; a study that would not fit runs one server at a time (blocks).

use bakeoff_server::variant::Setting;
use bakeoff_server::Engine;

use crate::StudySpec;

const MIB: u64 = 1 << 20;

/// What a server takes besides its pool, by engine (measured RSS of an idle embedded server
/// on this project's machine, rounded up): MariaDB ~90 MiB, PostgreSQL ~40 MiB.
fn base(engine: Engine) -> u64 {
    match engine {
        Engine::PostgreSql => 64 * MIB,
        _ => 128 * MIB,
    }
}

/// Each connection's own memory: a MariaDB thread (stack, network and statement buffers)
/// ~1 MiB; a PostgreSQL backend process ~8 MiB (its private memory and catalog caches).
fn per_connection(engine: Engine) -> u64 {
    match engine {
        Engine::PostgreSql => 8 * MIB,
        _ => MIB,
    }
}

/// The pool a server of `engine` gets with `settings`: the setting where a variant gives it,
/// else the engine's default (128 MiB for both).
fn pool(engine: Engine, settings: &[Setting]) -> u64 {
    let name = match engine {
        Engine::PostgreSql => "shared_buffers",
        _ => "innodb_buffer_pool_size",
    };
    settings
        .iter()
        .rev()
        .find(|s| s.name == name)
        .and_then(|s| size(&s.value, engine))
        .unwrap_or(128 * MIB)
}

/// A size setting as the server reads it: bytes, or with a K/M/G suffix (PostgreSQL's
/// shared_buffers without a unit counts 8 kB pages).
fn size(v: &str, engine: Engine) -> Option<u64> {
    let v = v.trim().trim_matches(['\'', '"']).to_ascii_uppercase();
    let v = v.strip_suffix('B').unwrap_or(&v);
    let (num, unit) = match v.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&v[..i], &v[i..]),
        None => (v, ""),
    };
    let n: u64 = num.trim().parse().ok()?;
    let unit = match unit {
        "" if engine == Engine::PostgreSql => 8 << 10,
        "" => 1,
        "K" => 1 << 10,
        "M" => MIB,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(unit)
}

/// What a server's datadir holds: ~300 bytes a row with its indexes, as sysbench's tables
/// measure in InnoDB, plus the redo log and system tablespace (~100 MiB). It counts as
/// memory where the datadirs live in memory (a tmpfs temporary directory).
fn datadir(spec: &StudySpec) -> u64 {
    u64::from(spec.tables) * u64::from(spec.table_size) * 300 + 100 * MIB
}

/// Whether `dir` is a tmpfs (its files are memory).
fn in_memory(dir: &std::path::Path) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain data, for which all zeroes is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statfs buffer of the right size.
    let ok = unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0;
    ok && st.f_type as i64 == TMPFS_MAGIC
}

/// The memory a block's servers need at once, at the study's most threads, their datadirs
/// included when they are in memory (`files_in_memory`).
pub fn needed(spec: &StudySpec, files_in_memory: bool) -> u64 {
    let threads = u64::from(spec.threads.iter().copied().max().unwrap_or(1));
    let files = if files_in_memory { datadir(spec) } else { 0 };
    (0..spec.block_variants())
        .map(|i| {
            let v = spec.variant(i);
            let per_instance = threads.div_ceil(v.instances.len().max(1) as u64);
            v.instances
                .iter()
                .map(|inst| {
                    let settings = inst.with_settings_before(&v.engine_settings).settings;
                    base(v.engine)
                        + pool(v.engine, &settings)
                        + per_instance * per_connection(v.engine)
                        + files
                })
                .sum::<u64>()
        })
        .sum()
}

/// The memory this machine has to give: MemAvailable.
pub fn available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb << 10)
}

/// Why the servers would not fit (need more than 80% of what is available), if so.
pub fn too_big(spec: &StudySpec) -> Option<String> {
    let tmpfs = in_memory(&std::env::temp_dir());
    let (need, have) = (needed(spec, tmpfs), available()?);
    (need > have / 10 * 8).then(|| {
        format!(
            "its {} servers need about {} MiB together (buffer pools and {} connections each{}), more than 80% of the {} MiB available",
            spec.block_variants(),
            need / MIB,
            spec.threads.iter().max().unwrap_or(&1),
            if tmpfs { ", and their datadirs on the tmpfs temporary directory" } else { "" },
            have / MIB
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_the_server_reads_them() {
        assert_eq!(size("1G", Engine::MariaDb), Some(1 << 30));
        assert_eq!(size("512M", Engine::MariaDb), Some(512 * MIB));
        assert_eq!(size("134217728", Engine::MariaDb), Some(128 * MIB));
        assert_eq!(size("'256MB'", Engine::PostgreSql), Some(256 * MIB));
        assert_eq!(
            size("16384", Engine::PostgreSql),
            Some(128 * MIB),
            "8 kB pages"
        );
        assert_eq!(size("lots", Engine::MariaDb), None);
    }

    #[test]
    fn the_pools_and_the_connections_of_every_server_add_up() {
        let src = "threads = [4, 100]\nrepetitions = 2\n[[workload]]\nname = \"oltp_point_select\"\n[[variant]]\nname = \"a\"\nsettings = { innodb_buffer_pool_size = \"1G\" }\n[[variant]]\nname = \"b\"\n";
        let spec = crate::parse(src, "t").unwrap();
        assert_eq!(spec.block_variants(), 2);
        let each = |pool: u64| base(Engine::MariaDb) + pool + 100 * MIB;
        assert_eq!(needed(&spec, false), each(1 << 30) + each(128 * MIB));
        // Datadirs on a tmpfs are memory too: 10,000 rows at ~300 bytes and the logs, each.
        let files = 10_000 * 300 + 100 * MIB;
        assert_eq!(needed(&spec, true), needed(&spec, false) + 2 * files);
        assert!(
            in_memory(std::path::Path::new("/dev/shm"))
                || !std::path::Path::new("/dev/shm").exists()
        );
        assert!(!in_memory(std::path::Path::new("/proc")));
    }
}
