//! A series on a server the user runs (a `[[variant]]` with `server = "mysql://..."`): never
//! started, stopped or reconfigured. Its tables are bakeoff's own, loaded for the series and
//! dropped after it (tables bakeoff did not create are refused, unless the variant says
//! `existing_tables = "use"`); the datadir-copy policy does not apply. What is known of the
//! server goes into the manifest: its version, `@@hostname`, the TLS version and cipher, and
//! that its CPU is unknown (its process is not on this machine).

use bakeoff_driver::{Conn, ConnectOptions};
use bakeoff_workload::dataset::{self, DatasetError, Progress};

use crate::cell::{set_up, CellError, Ready, ServerPlan, SetUp, Stop};
use crate::lab::{GivenServers, Servers};
use crate::manifest::GivenInfo;
use crate::results::StudyError;
use crate::series::SeriesCtx;
use crate::GivenServer;

const CPU_UNKNOWN: &str = "unknown: a server bakeoff did not start, whose process is not on this machine (server CPU per transaction is not measured; `ssh` in its [[variant]] reads it on its host)";
/// How the process was found: the unix socket's peer, or the listener of a loopback port.
fn cpu_here(endpoint: &bakeoff_driver::Endpoint) -> &'static str {
    match endpoint {
        bakeoff_driver::Endpoint::Tcp { .. } => {
            "read from its process on this machine (the listener of its loopback port)"
        }
        _ => "read from its process on this machine (its unix socket's peer)",
    }
}

impl SeriesCtx<'_> {
    /// The given server, checked, with its tables; None when nothing can be measured (the
    /// series' runs are recorded as failed with the reason, or left for a resume on Ctrl-C).
    pub(crate) fn set_up_given(
        &mut self,
        given: &GivenServer,
        todo: &[u32],
    ) -> Result<Option<(Servers, GivenInfo)>, StudyError> {
        let opts = match given.connect_options() {
            Ok(o) => o,
            Err(e) => {
                let reason = format!("the given server: {e}");
                self.record_all(todo, "failed", &reason, "{}")?;
                return Ok(None);
            }
        };
        if let Some(w) = opts.unverified_login_warning() {
            self.obs.on_note(&format!("{}: {w}", given.url));
        }
        let mut info = describe(&opts, &given.url);
        if let Err(e) = leftovers(&opts, given) {
            let reason = format!("the given server {}: {e}", given.url);
            self.record_all(todo, "failed", &reason, "{}")?;
            return Ok(None);
        }
        let mut servers = GivenServers::here(vec![opts]);
        if servers.pids.iter().any(Option::is_some) {
            info.server_cpu = cpu_here(&servers.options[0].endpoint).into();
        }
        if let Some(ssh) = &given.ssh {
            match crate::lab::watch_given(ssh, &servers.options[0]) {
                Some(Ok(w)) => {
                    servers.remote[0] = Some(w.reader());
                    info.server_cpu = format!(
                        "read on {} from the process listening on port {} (pid {}, {})",
                        w.host, w.port, w.pid, w.command
                    );
                }
                None => self.obs.on_note(&format!(
                    "{}: `ssh` reads a server reached over TCP; one on a unix socket is read here",
                    given.url
                )),
                Some(Err(e)) => self
                    .obs
                    .on_note(&format!("{}: its CPU stays unknown: `ssh` {e}", given.url)),
            }
        }
        info.dataset = match given.use_existing_tables {
            true => "the server's own sbtest tables (existing_tables = \"use\"): none loaded or dropped".into(),
            false => "loaded into the given server for each series and dropped after it; dataset.policy = \"copy\" applies to servers bakeoff starts only".into(),
        };
        let plan = ServerPlan::Given(servers);
        let refused = std::sync::atomic::AtomicBool::new(false);
        let setup = SetUp {
            servers: &plan,
            tables: self.tables(),
            load: !given.use_existing_tables,
            check: given
                .use_existing_tables
                .then_some(dataset::Adopt::Existing),
            prewarm: self.spec.prewarm,
            connections: None,
        };
        let noted = |p: Progress| {
            if p == Progress::LocalInfileRefused {
                refused.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        };
        let ready = set_up_with(&setup, &noted);
        info.loaded_with_inserts = refused.load(std::sync::atomic::Ordering::Relaxed);
        if info.loaded_with_inserts {
            self.obs.on_note(&format!(
                "{}: the server refuses LOAD DATA LOCAL (local_infile is OFF); the tables were loaded with multi-row INSERTs",
                given.url
            ));
        }
        match ready {
            Ok(Ready {
                servers,
                stop: None,
            }) => Ok(Some((servers, info))),
            Ok(Ready {
                servers,
                stop: Some(stop),
            }) => {
                let stop = match stop {
                    Stop::Failed(CellError::Dataset(
                        DatasetError::Exists(t) | DatasetError::ExistsNotOurs { table: t, .. },
                    )) => Stop::Failed(CellError::Preflight(not_ours(&t))),
                    other => other,
                };
                let manifest = self.manifest(&servers, Some(&info));
                self.stopped(&servers, stop, todo, &manifest)?;
                Ok(None)
            }
            Err(e) => {
                let reason = format!("the given server {}: {e}", given.url);
                self.record_all(todo, "failed", &reason, "{}")?;
                Ok(None)
            }
        }
    }

    /// After the series: drop the tables it loaded (its marked ones only).
    pub(crate) fn clean_up_given(&mut self, given: &GivenServer, servers: &Servers) {
        if given.use_existing_tables {
            return;
        }
        let Some(opts) = servers.endpoints().into_iter().next() else {
            return;
        };
        if let Err(e) = drop_ours(&opts) {
            self.obs.on_note(&format!(
                "{}: dropping the series' tables failed ({e}); `bakeoff cleanup --server {}` drops them",
                given.url, given.url
            ));
        }
    }
}

/// `set_up` with a progress closure for the loaders (the series' own observer is quiet).
fn set_up_with(
    setup: &SetUp<'_>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Ready, CellError> {
    struct Tell<'p>(&'p (dyn Fn(Progress) + Sync));
    impl bakeoff_engine::Observer for Tell<'_> {}
    impl crate::measure::RunObserver for Tell<'_> {}
    impl crate::cell::CellObserver for Tell<'_> {
        fn on_load(&self, p: Progress) {
            (self.0)(p)
        }
    }
    set_up(setup, None, &mut Tell(progress))
}

/// A table in the way that bakeoff did not create (its own were dropped just before).
fn not_ours(table: &str) -> String {
    format!("table '{table}' is there and bakeoff did not create it, so bakeoff will not touch it: drop it yourself, point the variant at another database (mysql://.../OTHER_DB), or set existing_tables = \"use\" to run on the tables that are there")
}

/// Tables an earlier, interrupted series of this study left (marked as bakeoff's): dropped
/// before loading again. Nothing when the variant runs on the server's own tables.
fn leftovers(opts: &ConnectOptions, given: &GivenServer) -> Result<(), String> {
    if given.use_existing_tables {
        return Ok(());
    }
    drop_ours(opts)
}

fn drop_ours(opts: &ConnectOptions) -> Result<(), String> {
    let rt = runtime()?;
    rt.block_on(bakeoff_workload::cleanup_tables(opts, &|_| {}))
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The version, `@@hostname` (PostgreSQL: the address it answered on) and TLS of the server,
/// from one connection; what cannot be read
/// stays None (the runs then say why they failed).
fn describe(opts: &ConnectOptions, url: &str) -> GivenInfo {
    let mut info = GivenInfo {
        url: url.to_string(),
        server_cpu: CPU_UNKNOWN.into(),
        ..GivenInfo::default()
    };
    let Ok(rt) = runtime() else {
        return info;
    };
    let said = rt.block_on(async {
        if opts.protocol == bakeoff_driver::Protocol::Postgres {
            // PostgreSQL has no host name to ask for: the address it answered on.
            const ASK: &str = "SELECT current_setting('server_version'), coalesce(host(inet_server_addr()), 'its unix socket')";
            let mut c = bakeoff_driver::PgConn::connect_pinned(opts).await.ok()?;
            let tls = c.tls();
            let rows = c.query_rows(ASK).await;
            c.quit().await;
            return Some((tls, rows.ok()?));
        }
        let mut c = Conn::connect(opts).await.ok()?;
        let tls = c.tls();
        let rows = c.query_rows("SELECT VERSION(), @@hostname").await;
        c.quit().await;
        Some((tls, rows.ok()?))
    });
    if let Some((tls, rows)) = said {
        info.tls = tls.map(|t| format!("{} {}", t.version, t.cipher));
        if let Some(row) = rows.first() {
            let shown = |v: Option<&Option<String>>| {
                v.cloned().flatten().map(|s| bakeoff_driver::printable(&s))
            };
            info.version = shown(row.first());
            info.hostname = shown(row.get(1));
        }
    }
    info
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_in_the_way_is_named_with_what_to_do() {
        let s = not_ours("sbtest1");
        assert!(
            s.contains("sbtest1") && s.contains("existing_tables"),
            "{s}"
        );
    }
}
