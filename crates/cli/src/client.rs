//! `--client-cpus`: where bakeoff's own load runs. The CLI pins its main thread before any load
//! thread starts, so every client thread (run, prewarm, prepare, fixed work, host probes)
//! inherits the set; servers get their own set at launch and never inherit this one.

use anyhow::{bail, Context, Result};
use bakeoff_server::placement::{
    launch_cpus, online_cpus, place_this_thread, ClientPlacement, WhenRefused,
};
use bakeoff_server::variant::CpuList;

/// Parse `--client-cpus`, checked against the CPUs this machine has online.
pub(crate) fn parse(given: Option<&str>) -> Result<Option<CpuList>> {
    let Some(text) = given else {
        return Ok(None);
    };
    let cpus: CpuList = text
        .parse()
        .map_err(|e| anyhow::anyhow!("--client-cpus: {e}"))?;
    let online = online_cpus().context("reading the CPUs online")?;
    if !cpus.is_subset(&online) {
        bail!(
            "--client-cpus={cpus}: this machine has CPUs {online} online; choose CPUs among them"
        );
    }
    Ok(Some(cpus))
}

/// Choose where the client runs beside servers on `servers` (each server's CPU list, None for
/// an unpinned one; empty for a server bakeoff did not start), pin this thread there, and say
/// so on stderr.
pub(crate) fn place(
    given: Option<&CpuList>,
    servers: &[Option<&CpuList>],
) -> Result<ClientPlacement> {
    let placement = place_this_thread(given, servers, WhenRefused::Fail).with_context(|| {
        let cpus = ClientPlacement::choose(given, servers, &launch_cpus()).cpus;
        format!("pinning the client to CPUs {cpus}")
    })?;
    if let Some(note) = placement.note() {
        crate::dialect::said!("note: {note}");
    }
    if let Some(w) = placement.warning() {
        eprintln!(
            "warning: {w}; the figures measure client and server together ({})",
            advice(&placement)
        );
    }
    Ok(placement)
}

/// What to change so client and server stop sharing.
pub(crate) fn advice(p: &ClientPlacement) -> &'static str {
    match p.chosen {
        bakeoff_server::placement::Chosen::Given => {
            "give --client-cpus CPUs outside the server's --cpus"
        }
        _ => "leave CPUs outside the server's --cpus, or give --client-cpus",
    }
}
