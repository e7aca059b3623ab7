//! Telemetry of several intervals as one: a turn-taking run samples each server over each of
//! its slices, and its run is the slices together (the time between them is other servers').

use super::status::GAUGES;
use super::{HostSample, ServerSample, Telemetry};

impl Telemetry {
    /// `parts` as one interval of their summed seconds and `events`: CPU, context switches and
    /// status counters summed; memory as the last part ends, its growth summed; the host's
    /// shares and the client's weighted by each part's seconds. None without parts.
    pub fn merged(parts: &[Telemetry], events: u64) -> Option<Telemetry> {
        let last = parts.last()?;
        let seconds: f64 = parts.iter().map(|p| p.seconds).sum();
        let weight = |f: fn(&Telemetry) -> f64| {
            parts.iter().map(|p| f(p) * p.seconds).sum::<f64>() / seconds.max(1e-9)
        };
        let server = merged_server(parts);
        let mut status = std::collections::BTreeMap::new();
        for p in parts {
            for (k, v) in &p.status {
                let e = status.entry(k.clone()).or_insert(0);
                *e = if GAUGES.contains(&k.as_str()) {
                    *v
                } else {
                    *e + v
                };
            }
        }
        let per_event = |v: f64| (events > 0).then(|| v / events as f64);
        let client_cpu_share = weight(|p| p.client_cpu_share);
        Some(Telemetry {
            seconds,
            host: HostSample {
                user: weight(|p| p.host.user),
                sys: weight(|p| p.host.sys),
                irq: weight(|p| p.host.irq),
                iowait: weight(|p| p.host.iowait),
                idle: weight(|p| p.host.idle),
                steal: weight(|p| p.host.steal),
                kernel_threads: weight(|p| p.host.kernel_threads),
            },
            client_cpu_seconds: parts.iter().map(|p| p.client_cpu_seconds).sum(),
            client_cpu_share,
            client_bound: client_cpu_share >= 0.9,
            client_idle_poll_seconds: parts.iter().map(|p| p.client_idle_poll_seconds).sum(),
            status,
            server_cpu_us_per_event: server
                .as_ref()
                .and_then(|s| per_event((s.cpu_user_seconds + s.cpu_sys_seconds) * 1e6)),
            context_switches_per_event: server.as_ref().and_then(|s| {
                per_event((s.voluntary_context_switches + s.involuntary_context_switches) as f64)
            }),
            server: server.or_else(|| last.server.clone()),
        })
    }
}

/// The server's parts summed, when every part has the server (a part without it would make
/// the sum read as a smaller server).
fn merged_server(parts: &[Telemetry]) -> Option<ServerSample> {
    let all: Option<Vec<&ServerSample>> = parts.iter().map(|p| p.server.as_ref()).collect();
    let all = all?;
    let last = (*all.last()?).clone();
    Some(ServerSample {
        cpu_user_seconds: all.iter().map(|s| s.cpu_user_seconds).sum(),
        cpu_sys_seconds: all.iter().map(|s| s.cpu_sys_seconds).sum(),
        rss_growth_bytes: all.iter().map(|s| s.rss_growth_bytes).sum(),
        vsz_growth_bytes: all.iter().map(|s| s.vsz_growth_bytes).sum(),
        voluntary_context_switches: all.iter().map(|s| s.voluntary_context_switches).sum(),
        involuntary_context_switches: all.iter().map(|s| s.involuntary_context_switches).sum(),
        ..last
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(seconds: f64, cpu: f64, steal: f64) -> Telemetry {
        Telemetry {
            seconds,
            server: Some(ServerSample {
                cpu_user_seconds: cpu,
                rss_bytes: 100,
                rss_growth_bytes: 10,
                ..Default::default()
            }),
            host: HostSample {
                steal,
                ..Default::default()
            },
            status: [
                ("Com_select".to_string(), 5),
                ("Threads_running".to_string(), 3),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn slices_merge_into_one_interval_of_their_seconds() {
        let m = Telemetry::merged(&[part(1.0, 0.5, 0.0), part(3.0, 1.5, 0.4)], 1000).unwrap();
        assert_eq!(m.seconds, 4.0);
        let s = m.server.as_ref().unwrap();
        assert_eq!(
            (s.cpu_user_seconds, s.rss_growth_bytes, s.rss_bytes),
            (2.0, 20, 100)
        );
        assert!((m.host.steal - 0.3).abs() < 1e-12, "weighted by seconds");
        assert_eq!(m.server_cpu_us_per_event, Some(2000.0));
        assert_eq!(m.status["Com_select"], 10, "counters add up");
        assert_eq!(m.status["Threads_running"], 3, "a gauge is its last value");
        let mut gone = part(1.0, 1.0, 0.0);
        gone.server = None;
        let m = Telemetry::merged(&[part(1.0, 1.0, 0.0), gone], 10).unwrap();
        assert!(
            m.server_cpu_us_per_event.is_none(),
            "a part without the server sums nothing"
        );
        assert!(Telemetry::merged(&[], 1).is_none());
    }
}
