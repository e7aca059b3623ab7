//! A measured run as the store keeps it: its figures, its summary and its ticks.

use bakeoff_engine::{RunResult, RunStatus, Tick};
use bakeoff_store::{RunRecord, TickRecord};

/// Fill `r` with what the run measured.
pub(crate) fn fill(r: &mut RunRecord, res: &RunResult) {
    let t = &res.total;
    r.status = match &res.status {
        RunStatus::Completed => "ok".into(),
        RunStatus::Interrupted => "interrupted".into(),
        RunStatus::Failed(reason) => {
            r.reason = Some(reason.clone());
            "failed".into()
        }
    };
    r.seconds = res.elapsed_seconds;
    r.events = t.events;
    r.tps = t.tps;
    r.qps = t.qps;
    r.errors = t.errors;
    r.reconnects = t.reconnects;
    r.p50_ms = t.latency.p50_ms;
    r.p95_ms = t.latency.p95_ms;
    r.p99_ms = t.latency.p99_ms;
    r.max_ms = t.latency.max_ms;
    if let Some(tel) = &res.telemetry {
        r.server_cpu_us_per_event = tel.server_cpu_us_per_event;
        r.rss_growth_bytes = tel.server.as_ref().map(|s| s.rss_growth_bytes);
        r.client_bound = tel.client_bound;
    }
    r.summary_json = serde_json::to_string(&serde_json::json!({
        "total": t, "telemetry": res.telemetry, "unfinished_events": res.unfinished_events,
        "connections": res.connections, "connect": res.connect,
    }))
    .unwrap_or_else(|_| "{}".into());
    r.ticks = res.ticks.iter().map(tick).collect();
}

fn tick(t: &Tick) -> TickRecord {
    TickRecord {
        t: t.t,
        tps: t.window.tps,
        qps: t.window.qps,
        p99_ms: t.window.latency.p99_ms,
        errors: t.window.errors,
        json: serde_json::to_string(t).unwrap_or_else(|_| "{}".into()),
    }
}
