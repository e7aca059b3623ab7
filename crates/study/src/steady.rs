//! How steady this machine is, measured once before an auto study's pilot (and by `study
//! plan`): a fixed loop timed in 100 ms slices on every CPU bakeoff may use, at once
//! (`hostbench::steadiness`). It is stored with the study as the "steadiness" host probe, so
//! a report whose pilot asked for more blocks than allowed can say how much of the runs'
//! spread is the machine's own.

use std::time::Duration;

use bakeoff_hostbench::steadiness::{self, CpuSteadiness};
use bakeoff_server::placement::{launch_cpus, pin_this_thread};
use bakeoff_server::variant::CpuList;
use bakeoff_store::ProbeRecord;

/// The probe's name in the store and the report.
pub const PROBE: &str = bakeoff_report::decide::STEADINESS_PROBE;

/// Every CPU bakeoff may use, each slice 100 ms, for 3 s: long enough for tens of slices per
/// CPU, short beside any pilot.
pub fn measure() -> Vec<CpuSteadiness> {
    measure_for(Duration::from_secs(3))
}

/// [`measure`] for `length` (`study plan` looks for spells of seconds, so looks longer).
pub fn measure_for(length: Duration) -> Vec<CpuSteadiness> {
    steadiness::measure(&cpus(), length, Duration::from_millis(100), pin_to)
}

/// The CPUs measured; the probe's "threads" (one per CPU).
pub fn cpus() -> Vec<usize> {
    launch_cpus().iter().map(|c| c as usize).collect()
}

/// The CPU whose slices varied most: the machine is as steady as its least steady CPU.
pub fn worst(cpus: &[CpuSteadiness]) -> Option<&CpuSteadiness> {
    cpus.iter().max_by(|a, b| a.spread.total_cmp(&b.spread))
}

/// The probe's record: the worst CPU's spread in percent, every CPU's figures in its JSON.
pub fn record(cpus: &[CpuSteadiness]) -> ProbeRecord {
    match worst(cpus) {
        Some(w) => ProbeRecord {
            probe: PROBE.into(),
            threads: cpus.len() as u32,
            figure: w.spread * 100.0,
            unit: "% spread of 100 ms slices (least steady CPU)".into(),
            status: "ok".into(),
            reason: None,
            summary_json: serde_json::to_string(cpus).unwrap_or_else(|_| "[]".into()),
        },
        None => ProbeRecord {
            probe: PROBE.into(),
            status: "failed".into(),
            reason: Some("no CPU could be timed".into()),
            summary_json: "[]".into(),
            ..Default::default()
        },
    }
}

/// One steadiness thread onto its CPU, by the lab's pinning (where that fails the thread
/// stays where it was, which only blurs that CPU's figure).
fn pin_to(cpu: usize) {
    let _ = pin_this_thread(&CpuList::single(cpu as u32));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cpu: usize, spread: f64) -> CpuSteadiness {
        CpuSteadiness {
            cpu,
            median: 1000.0,
            spread,
            slowest: 0.6,
            fastest: 1.4,
            slices: 30,
            spell_ms: 200.0,
        }
    }

    #[test]
    fn the_record_is_the_least_steady_cpus_spread_with_every_cpu_kept() {
        let r = record(&[cpu(0, 0.04), cpu(1, 0.37)]);
        assert_eq!(
            (r.probe.as_str(), r.threads, r.status.as_str()),
            (PROBE, 2, "ok")
        );
        assert!((r.figure - 37.0).abs() < 1e-9);
        let kept: Vec<serde_json::Value> = serde_json::from_str(&r.summary_json).unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[1]["cpu"], 1);
        let none = record(&[]);
        assert_eq!(none.status, "failed");
        assert!(none.reason.is_some());
    }
}
