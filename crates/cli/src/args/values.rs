//! Value types and parsers the argument tables share: sysbench's booleans and sizes, the
//! output format.

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// sysbench's text report (existing parsers keep working), plus HDR percentiles.
    Text,
    /// One JSON document: options, per-interval series, totals, percentiles, errors per code.
    Json,
}

/// sysbench's booleans: on/off, true/false, 1/0, yes/no.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(format!("'{s}' is not a boolean; use on or off")),
    }
}

pub use bakeoff_driver::{parse_max_packet, parse_size};

/// sysbench's --report-checkpoints: seconds into the run, comma-separated ("" for none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seconds(pub Vec<u64>);

pub fn parse_seconds(s: &str) -> Result<Seconds, String> {
    s.split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                format!(
                    "'{v}' is not a whole number of seconds above 0; write a list such as 10,20"
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Seconds)
}
