//! What a variant is: its axes (allocator, CPUs, NUMA policy, settings) as plain data.

use std::fmt;

use super::allocator::Allocator;
use super::cpus::CpuList;
use super::numa::NumaPolicy;

/// A server variable the variant sets, checked against the running value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Setting {
    pub name: String,
    pub value: String,
}

impl std::str::FromStr for Setting {
    type Err = String;

    fn from_str(s: &str) -> Result<Setting, String> {
        let (name, value) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not name=value (e.g. innodb_thread_concurrency=8)"))?;
        let name = name.trim().replace('-', "_");
        // Dots: PostgreSQL's extension settings (pg_stat_statements.track).
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
        if name.is_empty() || !name.chars().all(ok) || name.starts_with('.') {
            return Err(format!("'{name}' is not a server variable name"));
        }
        Ok(Setting {
            name,
            value: value.trim().to_string(),
        })
    }
}

/// Everything that makes one server setup differ from another, besides the binary.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Variant {
    pub allocator: Allocator,
    /// CPUs the server may run on (taskset); None = all.
    pub cpus: Option<CpuList>,
    pub numa: NumaPolicy,
    pub settings: Vec<Setting>,
}

impl Variant {
    /// This variant with `first` set before its own settings, which win where both name one
    /// (each setting is verified, so only the value that holds is kept): an engine's settings
    /// for every variant of it.
    pub fn with_settings_before(&self, first: &[Setting]) -> Variant {
        let own = |s: &&Setting| self.settings.iter().any(|o| o.name == s.name);
        let mut v = self.clone();
        v.settings = first
            .iter()
            .filter(|s| !own(s))
            .chain(&self.settings)
            .cloned()
            .collect();
        v
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "allocator={}", self.allocator)?;
        if let Some(c) = &self.cpus {
            write!(f, " cpus={c}")?;
        }
        if self.numa != NumaPolicy::Default {
            write!(f, " numa={}", self.numa)?;
        }
        for s in &self.settings {
            write!(f, " {}={}", s.name, s.value)?;
        }
        Ok(())
    }
}
