//! `--metrics-addr`: the live OpenMetrics endpoint of a run or a study, kept up while it goes
//! and said on stderr (stdout stays the report's).

use anyhow::Result;
use bakeoff_telemetry::live::{Endpoint, Live};

/// The endpoint at `addr`, when one is asked for; an address that cannot be had is a usage
/// error naming the option.
pub fn serve(addr: Option<&str>) -> Result<Option<(Live, Endpoint)>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let live = Live::default();
    let endpoint = Endpoint::serve(addr, live.clone())
        .map_err(|e| anyhow::anyhow!("--metrics-addr {addr}: {e}"))?;
    crate::dialect::said!(
        "metrics: http://{}/metrics (OpenMetrics, every tick; scrape it with Prometheus)",
        endpoint.addr()
    );
    Ok(Some((live, endpoint)))
}
