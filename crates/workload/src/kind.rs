//! Which workload, with which options: sysbench's scripts and oltp_common.lua's option set.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Distribution;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    OltpReadWrite,
    OltpReadOnly,
    OltpWriteOnly,
    OltpPointSelect,
    OltpUpdateIndex,
    OltpUpdateNonIndex,
    OltpInsert,
    OltpDelete,
    SelectRandomPoints,
    SelectRandomRanges,
    BulkInsert,
    /// TPC-C's five transactions (`crate::tpcc`), bakeoff's own: not one of sysbench's.
    Tpcc,
    /// A user's Lua script ([`WorkloadSpec::script`]): no name of its own, so not in
    /// [`WorkloadKind::ALL`].
    Lua,
    /// A user's pgbench scripts ([`WorkloadSpec::script`]); not in [`WorkloadKind::ALL`].
    Pgbench,
}

use WorkloadKind::*;

impl WorkloadKind {
    pub const ALL: &'static [(WorkloadKind, &'static str)] = &[
        (OltpReadWrite, "oltp_read_write"),
        (OltpReadOnly, "oltp_read_only"),
        (OltpWriteOnly, "oltp_write_only"),
        (OltpPointSelect, "oltp_point_select"),
        (OltpUpdateIndex, "oltp_update_index"),
        (OltpUpdateNonIndex, "oltp_update_non_index"),
        (OltpInsert, "oltp_insert"),
        (OltpDelete, "oltp_delete"),
        (SelectRandomPoints, "select_random_points"),
        (SelectRandomRanges, "select_random_ranges"),
        (BulkInsert, "bulk_insert"),
        (Tpcc, "tpcc"),
    ];

    pub fn name(self) -> &'static str {
        match self {
            Lua => return "lua",
            Pgbench => return "pgbench",
            _ => {}
        }
        WorkloadKind::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }

    /// Whether its events change rows (so its server writes its log and pages to disk).
    pub fn writes(self) -> bool {
        !matches!(
            self,
            OltpReadOnly | OltpPointSelect | SelectRandomPoints | SelectRandomRanges
        )
    }

    /// Whether BEGIN/COMMIT wrap the event (before --skip-trx).
    pub fn transactional(self) -> bool {
        matches!(self, OltpReadWrite | OltpReadOnly | OltpWriteOnly)
    }

    /// Whether this workload reads option `name` (sysbench's name, with dashes). sysbench
    /// accepts every option of oltp_common.lua for every OLTP script, used or not; bakeoff
    /// accepts them too and lists the unused ones, so a pasted line runs and says what it
    /// changed nothing about.
    pub fn uses(self, name: &str) -> bool {
        if matches!(self, BulkInsert | Tpcc | Lua | Pgbench) {
            // bulk_insert: its own tables, one per thread; TPC-C and scripts: their own
            // options.
            return false;
        }
        const RANGES: &[&str] = &[
            "range-size",
            "simple-ranges",
            "sum-ranges",
            "order-ranges",
            "distinct-ranges",
            "range-selects",
        ];
        const WRITES: &[&str] = &["index-updates", "non-index-updates", "delete-inserts"];
        let event: &[&str] = match self {
            OltpReadWrite => &[],
            OltpReadOnly => &["point-selects", "skip-trx"],
            OltpWriteOnly => &[
                "index-updates",
                "non-index-updates",
                "delete-inserts",
                "skip-trx",
            ],
            OltpUpdateIndex => &["index-updates"],
            OltpUpdateNonIndex => &["non-index-updates"],
            SelectRandomPoints => &["random-points"],
            SelectRandomRanges => &["number-of-ranges", "delta"],
            OltpPointSelect | OltpInsert | OltpDelete | BulkInsert | Tpcc | Lua | Pgbench => &[],
        };
        let read_write = self == OltpReadWrite
            && (RANGES.contains(&name)
                || WRITES.contains(&name)
                || matches!(name, "point-selects" | "skip-trx"));
        let read_only = self == OltpReadOnly && RANGES.contains(&name);
        PREPARE_OPTIONS.contains(&name) || event.contains(&name) || read_write || read_only
    }
}

/// The options that shape the tables: every OLTP workload's prepare reads them.
const PREPARE_OPTIONS: &[&str] = &[
    "tables",
    "table-size",
    "auto-inc",
    "secondary",
    "create-secondary",
    "mysql-storage-engine",
];

/// Every workload option bakeoff takes, by sysbench's name (oltp_common.lua's set and the
/// select_random_* scripts' own).
pub const OPTION_NAMES: &[&str] = &[
    "tables",
    "table-size",
    "range-size",
    "point-selects",
    "simple-ranges",
    "sum-ranges",
    "order-ranges",
    "distinct-ranges",
    "index-updates",
    "non-index-updates",
    "delete-inserts",
    "range-selects",
    "auto-inc",
    "skip-trx",
    "secondary",
    "create-secondary",
    "mysql-storage-engine",
    "random-points",
    "number-of-ranges",
    "delta",
];

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WorkloadKind {
    type Err = String;

    /// Accepts 1.0 names, script paths (`/usr/share/sysbench/oltp_read_only.lua`) and the 0.5
    /// script names used in published studies (`oltp.lua`, `select.lua`, ...).
    fn from_str(s: &str) -> Result<Self, String> {
        let base = s.rsplit('/').next().unwrap_or(s);
        let base = base.strip_suffix(".lua").unwrap_or(base);
        // TPC-C natively only by its bare name: `tpcc.lua` and `./tpcc.lua` are a script
        // (Percona's sysbench-tpcc), which runs as the Lua it is.
        if base == "tpcc" && s != "tpcc" {
            return Err(format!("'{s}' is a script, not bakeoff's native tpcc"));
        }
        if let Some((k, _)) = WorkloadKind::ALL.iter().find(|(_, n)| *n == base) {
            return Ok(*k);
        }
        let legacy = match base {
            "oltp" => Some(OltpReadWrite),
            "select" | "oltp_simple" => Some(OltpPointSelect),
            "update_index" => Some(OltpUpdateIndex),
            "update_non_index" => Some(OltpUpdateNonIndex),
            "insert" => Some(OltpInsert),
            "delete" => Some(OltpDelete),
            _ => None,
        };
        legacy.ok_or_else(|| {
            let names: Vec<&str> = WorkloadKind::ALL.iter().map(|(_, n)| *n).collect();
            format!(
                "unknown workload '{s}'; expected one of: {}",
                names.join(", ")
            )
        })
    }
}

/// `--db-ps-mode`: server-side prepared statements (`auto`) or values substituted into text
/// (`disable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PsMode {
    Auto,
    Disable,
}

/// oltp_common.lua's options, with sysbench's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OltpOptions {
    pub tables: u32,
    pub table_size: u32,
    pub range_size: u32,
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_selects: bool,
    pub auto_inc: bool,
    pub skip_trx: bool,
    pub secondary: bool,
    pub create_secondary: bool,
    pub storage_engine: String,
    pub table_options: String,
    pub random_points: u32,
    pub number_of_ranges: u32,
    pub delta: u32,
    pub ps_mode: PsMode,
}

impl Default for OltpOptions {
    fn default() -> Self {
        OltpOptions {
            tables: 1,
            table_size: 10_000,
            range_size: 100,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            auto_inc: true,
            skip_trx: false,
            secondary: false,
            create_secondary: true,
            storage_engine: "innodb".into(),
            table_options: String::new(),
            random_points: 10,
            number_of_ranges: 10,
            delta: 5,
            ps_mode: PsMode::Auto,
        }
    }
}

/// A validated workload: kind, options and key distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    pub options: OltpOptions,
    pub distribution: Distribution,
    /// TPC-C's options (`kind` = tpcc); the defaults otherwise.
    #[serde(default)]
    pub tpcc: crate::tpcc::TpccOptions,
    /// The user's script (`kind` = lua or pgbench), carried whole; None otherwise.
    #[serde(default)]
    pub script: Option<crate::scripting::user::UserScript>,
}

impl WorkloadSpec {
    /// A spec for a user's script: its kind, and sysbench's defaults for the rest (unused).
    pub fn of_script(script: crate::scripting::user::UserScript) -> WorkloadSpec {
        let kind = match script {
            crate::scripting::user::UserScript::Lua { .. } => Lua,
            crate::scripting::user::UserScript::Pgbench { .. } => Pgbench,
        };
        WorkloadSpec {
            kind,
            options: OltpOptions::default(),
            distribution: Distribution::new(crate::RandType::Uniform),
            tpcc: Default::default(),
            script: Some(script),
        }
    }

    /// The name results and reports give it by default: the built-in's, or the script's stem.
    pub fn default_label(&self) -> String {
        match &self.script {
            Some(s) => s.default_label(),
            None => self.kind.to_string(),
        }
    }
}

impl WorkloadSpec {
    /// Checks sysbench would make, with the option named in the message.
    pub fn validate(&self) -> Result<(), String> {
        let o = &self.options;
        if matches!(self.kind, Lua | Pgbench) != self.script.is_some() {
            return Err(format!("the {} workload carries no script", self.kind));
        }
        if self.script.is_some() {
            return Ok(());
        }
        if self.kind == Tpcc {
            return match self.tpcc.warehouses {
                0..=100_000 => Ok(()),
                w => Err(format!("--warehouses={w}: at most 100000")),
            };
        }
        if o.tables == 0 {
            return Err("--tables must be at least 1".into());
        }
        if o.table_size == 0 && !matches!(self.kind, OltpInsert | BulkInsert) {
            return Err(format!("--table-size must be at least 1 for {}", self.kind));
        }
        if !o
            .storage_engine
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "--mysql-storage-engine '{}' is not an engine name",
                o.storage_engine
            ));
        }
        if self.kind == SelectRandomPoints && o.random_points == 0 {
            return Err("--random-points must be at least 1".into());
        }
        if self.kind == SelectRandomRanges && o.number_of_ranges == 0 {
            return Err("--number-of-ranges must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod uses_tests {
    use super::*;

    #[test]
    fn each_workload_names_the_options_it_reads() {
        assert!(OltpPointSelect.uses("tables"));
        assert!(
            !OltpPointSelect.uses("point-selects"),
            "point_select forces one"
        );
        assert!(!OltpPointSelect.uses("range-size"));
        assert!(OltpReadOnly.uses("range-size") && !OltpReadOnly.uses("index-updates"));
        assert!(OltpReadWrite.uses("delete-inserts") && !OltpReadWrite.uses("random-points"));
        assert!(SelectRandomPoints.uses("random-points") && !SelectRandomPoints.uses("delta"));
        assert!(SelectRandomRanges.uses("delta") && SelectRandomRanges.uses("number-of-ranges"));
        assert!(!BulkInsert.uses("tables"));
        for (kind, _) in WorkloadKind::ALL {
            for name in OPTION_NAMES {
                let _ = kind.uses(name); // every name is answered, none panics
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_paths_and_legacy_scripts_parse() {
        assert_eq!("oltp_read_only".parse::<WorkloadKind>(), Ok(OltpReadOnly));
        assert_eq!(
            "/usr/share/sysbench/oltp_point_select.lua".parse::<WorkloadKind>(),
            Ok(OltpPointSelect)
        );
        assert_eq!("oltp.lua".parse::<WorkloadKind>(), Ok(OltpReadWrite));
        assert_eq!("tpcc".parse::<WorkloadKind>(), Ok(Tpcc));
        assert!(
            "tpcc.lua".parse::<WorkloadKind>().is_err(),
            "sysbench-tpcc stays a script"
        );
        assert!("./tpcc".parse::<WorkloadKind>().is_err());
        assert_eq!(
            "/usr/share/doc/sysbench/tests/db/select.lua".parse::<WorkloadKind>(),
            Ok(OltpPointSelect)
        );
        let err = "oltp_readonly".parse::<WorkloadKind>().unwrap_err();
        assert!(err.contains("oltp_read_only"), "{err}");
    }
}
