//! The server's side of NOPM: `sum(d_next_o_id)` over the districts (each committed New-Order
//! adds one to its district's), read when the measured span starts and after the run, as
//! HammerDB reads it. The run's printer goes on printing as for any run; this observer only
//! adds the two readings.

use std::time::Duration;

use anyhow::Result;
use bakeoff_driver::{Conn, ConnectOptions, Connection, PgConn, Protocol};
use bakeoff_engine::{Checkpoint, Iteration, Observer, RunSpec, Tick};
use bakeoff_remote::HostUrl;
use bakeoff_server::ServerSpec;
use bakeoff_study::cell::{run_cell, Cell, CellObserver, CellOutcome};
use bakeoff_study::lab::Running;
use bakeoff_study::measure::RunObserver;
use bakeoff_study::spread::ClientHosts;
use bakeoff_telemetry::Window;
use bakeoff_workload::dataset::Progress;

use crate::header::Printer;

/// What the server said of the run's new orders.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ServerNewOrders {
    /// `sum(d_next_o_id)` when the measured span started, and after the run.
    pub before: Option<i64>,
    pub after: Option<i64>,
}

impl ServerNewOrders {
    pub fn delta(&self) -> Option<i64> {
        Some(self.after? - self.before?)
    }
}

struct Watch<'a> {
    inner: Printer<'a>,
    servers: Vec<ConnectOptions>,
    /// Connected when the load starts, so the reading when the measured span starts is a
    /// query's time after it, not a login's.
    reader: Option<Reader>,
    seen: ServerNewOrders,
}

impl Watch<'_> {
    /// `sum(d_next_o_id)` now, connecting first if need be.
    fn new_orders(&mut self) -> Option<i64> {
        if self.reader.is_none() {
            self.reader = Reader::open(&self.servers);
        }
        self.reader.as_mut()?.sum(NEW_ORDERS)
    }
}

const NEW_ORDERS: &str = "SELECT SUM(d_next_o_id) FROM @district";

/// Run the cell with TPC-C's readings around its measured span.
pub(crate) fn run_cell_watched(
    cell: &Cell<'_>,
    clients: Option<&mut ClientHosts>,
    printer: Printer<'_>,
    given: &[ConnectOptions],
) -> Result<(CellOutcome, Option<ServerNewOrders>)> {
    let mut w = Watch {
        inner: printer,
        servers: given.to_vec(),
        reader: None,
        seen: ServerNewOrders::default(),
    };
    let outcome = run_cell(cell, clients, &mut w)?;
    // The servers are still up (the outcome holds them): the reading after the run.
    w.servers = outcome.servers.endpoints();
    w.seen.after = w.new_orders();
    if let Some(r) = w.reader.take() {
        r.close();
    }
    Ok((outcome, Some(w.seen)))
}

/// One connection to each server, as the terminals make theirs, and a runtime to drive them
/// on a thread of its own (the engine may call its observer from inside its own runtime).
struct Reader {
    rt: tokio::runtime::Runtime,
    /// Each connection, and where its tables are (`Connection::own_place`).
    conns: Vec<(Either, String)>,
}

enum Either {
    MySql(Conn),
    Postgres(PgConn),
}

impl Reader {
    fn open(servers: &[ConnectOptions]) -> Option<Reader> {
        if servers.is_empty() {
            return None;
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                let conns = rt.block_on(async {
                    let mut conns = Vec::new();
                    for o in servers {
                        let c = tokio::time::timeout(Duration::from_secs(10), async {
                            Some(match o.protocol {
                                Protocol::MySql => {
                                    let mut c = Conn::connect(o).await.ok()?;
                                    let place = c.own_place().await.ok()?;
                                    (Either::MySql(c), place)
                                }
                                Protocol::Postgres => {
                                    let mut c = PgConn::connect(o).await.ok()?;
                                    let place = c.own_place().await.ok()?;
                                    (Either::Postgres(c), place)
                                }
                            })
                        });
                        conns.push(c.await.ok().flatten()?);
                    }
                    Some(conns)
                })?;
                Some(Reader { rt, conns })
            })
            .join()
            .ok()
            .flatten()
        })
    }

    /// A one-number query's answer summed over the servers; None when one cannot say.
    fn sum(&mut self, sql: &str) -> Option<i64> {
        let Reader { rt, conns } = self;
        std::thread::scope(|s| {
            s.spawn(|| {
                rt.block_on(async {
                    let mut sum = 0;
                    for (c, place) in conns.iter_mut() {
                        let sql = sql.replace('@', place);
                        let read = tokio::time::timeout(Duration::from_secs(10), async {
                            let rows = match c {
                                Either::MySql(c) => c.query_rows(&sql).await.ok()?,
                                Either::Postgres(c) => c.query_rows(&sql).await.ok()?,
                            };
                            rows.first()?.first()?.as_deref()?.parse::<i64>().ok()
                        });
                        sum += read.await.ok().flatten()?;
                    }
                    Some(sum)
                })
            })
            .join()
            .ok()
            .flatten()
        })
    }

    /// Leave politely (a connection dropped unannounced is an aborted one in the server's log).
    fn close(self) {
        let Reader { rt, conns } = self;
        std::thread::scope(|s| {
            s.spawn(|| {
                rt.block_on(async {
                    for (c, _) in conns {
                        match c {
                            Either::MySql(c) => c.quit().await,
                            Either::Postgres(c) => c.quit().await,
                        }
                    }
                })
            });
        })
    }
}

/// A one-number query's answer summed over `servers`, on connections of its own (`@` before
/// a table's name: where the tables are).
pub(crate) fn read_sum(servers: &[ConnectOptions], sql: &str) -> Option<i64> {
    let mut r = Reader::open(servers)?;
    let sum = r.sum(sql);
    r.close();
    sum
}

impl CellObserver for Watch<'_> {
    fn on_starting(&mut self, host: Option<&HostUrl>) {
        self.inner.on_starting(host)
    }
    fn on_server_up(&mut self, index: usize, of: usize, server: &Running, spec: &ServerSpec) {
        self.servers.push(server.connect_options());
        self.inner.on_server_up(index, of, server, spec)
    }
    fn on_note(&mut self, note: &str) {
        self.inner.on_note(note)
    }
    fn on_load(&self, p: Progress) {
        self.inner.on_load(p)
    }
    fn on_loading_stopped(&mut self) {
        self.inner.on_loading_stopped()
    }
    fn on_prewarmed(&mut self, tables: u32) {
        self.inner.on_prewarmed(tables)
    }
}

impl RunObserver for Watch<'_> {
    fn on_warmup(&mut self, seconds: Duration) {
        self.inner.on_warmup(seconds)
    }
    fn on_measuring(&mut self, run: &RunSpec) {
        self.inner.on_measuring(run)
    }
}

impl Observer for Watch<'_> {
    fn on_tick(&mut self, t: &Tick) {
        self.inner.on_tick(t)
    }
    fn on_ready(&mut self) -> bool {
        self.inner.on_ready()
    }
    fn on_start(&mut self) {
        // Without a ramp-up the measured span starts here; with one, at `on_measure`.
        self.seen.before = self.new_orders();
        self.inner.on_start()
    }
    fn on_window(&mut self, t: &Tick, w: &Window) {
        self.inner.on_window(t, w)
    }
    fn on_measure(&mut self) {
        self.seen.before = self.new_orders();
        self.inner.on_measure()
    }
    fn on_checkpoint(&mut self, c: &Checkpoint) {
        self.inner.on_checkpoint(c)
    }
    fn on_iteration(&mut self, index: usize, it: &Iteration) {
        self.inner.on_iteration(index, it)
    }
}
