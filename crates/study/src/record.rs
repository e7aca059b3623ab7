//! A measured run as the store keeps it: its figures, its summary and its ticks.

use bakeoff_engine::{RunResult, RunStatus, Slice, Tick, TurnSpec, TurnsResult};
use bakeoff_store::{RunRecord, TickRecord};
use bakeoff_telemetry::{Telemetry, WindowSummary};

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
    figures(r, res.elapsed_seconds, t, res.telemetry.as_ref());
    r.summary_json = serde_json::to_string(&serde_json::json!({
        "total": t, "telemetry": res.telemetry, "unfinished_events": res.unfinished_events,
        "connections": res.connections, "connect": res.connect,
    }))
    .unwrap_or_else(|_| "{}".into());
    r.ticks = res.ticks.iter().map(tick).collect();
}

fn tick(t: &Tick) -> TickRecord {
    tick_record(t.t, &t.window, serde_json::to_string(t))
}

/// A run's figures: over `seconds`, its events and latency `t`, and what was sampled.
fn figures(r: &mut RunRecord, seconds: f64, t: &WindowSummary, tel: Option<&Telemetry>) {
    r.seconds = seconds;
    r.events = t.events;
    r.tps = t.tps;
    r.qps = t.qps;
    r.errors = t.errors;
    r.reconnects = t.reconnects;
    r.p50_ms = t.latency.p50_ms;
    r.p95_ms = t.latency.p95_ms;
    r.p99_ms = t.latency.p99_ms;
    r.max_ms = t.latency.max_ms;
    if let Some(tel) = tel {
        r.server_cpu_us_per_event = tel.server_cpu_us_per_event;
        r.rss_growth_bytes = tel.server.as_ref().map(|s| s.rss_growth_bytes);
        r.client_bound = tel.client_bound;
    }
}

/// A stored tick: its end `t`, its figures, and the whole of it as JSON.
fn tick_record(t: f64, w: &WindowSummary, json: serde_json::Result<String>) -> TickRecord {
    TickRecord {
        t,
        tps: w.tps,
        qps: w.qps,
        p99_ms: w.latency.p99_ms,
        errors: w.errors,
        json: json.unwrap_or_else(|_| "{}".into()),
    }
}

/// Fill `r` with what server `i` of a turn-taking run measured: its events over its slices'
/// seconds (every server has a slice in every round, so a spell that slows a round cancels
/// in two servers' ratio), its latency and telemetry over its slices merged, one tick per
/// slice.
pub(crate) fn fill_turns(r: &mut RunRecord, res: &TurnsResult, i: usize, how: &TurnSpec) {
    let s = &res.servers[i];
    let t = &s.total;
    r.status = match (&s.failure, &res.status) {
        (Some(reason), _) => {
            r.reason = Some(reason.clone());
            "failed".into()
        }
        (None, RunStatus::Interrupted) => "interrupted".into(),
        // A throughput of 0 would poison every ratio it is in: it is a failure, said.
        (None, _) if s.total.events == 0 => {
            r.reason = Some(format!(
                "no event ended within its {} ms turns: its events take longer; give [alternation] slice_ms a few times their length, or enabled = false",
                how.slice.as_millis()
            ));
            "failed".into()
        }
        (None, _) => "ok".into(),
    };
    figures(r, s.seconds, t, s.telemetry.as_ref());
    r.summary_json = serde_json::to_string(&serde_json::json!({
        "total": t, "telemetry": s.telemetry,
        "turns": {
            "servers": res.servers.len(), "server": i, "rounds": res.rounds,
            "slice_ms": how.slice.as_millis() as u64, "settle_ms": how.settle.as_millis() as u64,
            "drain_ms": res.drain_ms, "settle_ms_at_end": s.settle_ms,
            "geometric_tps": s.round_tps(),
            "setup_seconds": res.setup_seconds, "elapsed_seconds": res.elapsed_seconds,
        },
    }))
    .unwrap_or_else(|_| "{}".into());
    r.ticks = s.slices.iter().map(slice_tick).collect();
}

fn slice_tick(s: &Slice) -> TickRecord {
    tick_record(s.t, &s.window, serde_json::to_string(s))
}
