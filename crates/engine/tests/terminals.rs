//! Paced terminals: many terminals share a few connections, each order runs once on
//! whichever connection is free, each terminal waits between its orders as it says, and the
//! latency of an order counts its wait for a connection. A fake source, since what is shown
//! is the engine's pacing: which waits a terminal has is the source's choice (TPC-C's are
//! tested in the workload, and on a real server in the CLI's tests).

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bakeoff_driver::DriverError;
use bakeoff_engine::{run, Quiet, RunSpec, RunStatus};
use bakeoff_workload::{EventError, Events, Source, StmtCounts, Terminal};

/// `terminals` terminals, each waiting `wait` before every order; an order takes `service`
/// on its connection. Every order is (terminal, its sequence number), and the sessions
/// record each one they run.
struct Paced {
    terminals: u32,
    connections: u32,
    wait: Duration,
    service: Duration,
    ran: Arc<Mutex<Vec<(u32, u64)>>>,
    unpaced_events: Arc<AtomicU64>,
}

struct Clerk {
    id: u32,
    n: u64,
    wait: Duration,
    waits: u64,
}

impl Terminal for Clerk {
    fn wait(&mut self, done: u8) -> Duration {
        // The class of what was done comes back: 0 first, then this fake's class 2.
        assert_eq!(done, if self.waits == 0 { 0 } else { 2 });
        self.waits += 1;
        self.wait
    }
    fn order(&mut self) -> Box<dyn Any> {
        self.n += 1;
        Box::new((self.id, self.n))
    }
}

struct Session {
    service: Duration,
    order: Option<(u32, u64)>,
    ran: Arc<Mutex<Vec<(u32, u64)>>>,
    unpaced: Arc<AtomicU64>,
}

impl Source for Paced {
    type Session = Session;
    async fn open(
        self: Arc<Self>,
        _tid: u32,
        _seed: u64,
        blocking: bool,
    ) -> Result<Session, EventError> {
        assert!(!blocking, "a paced connection waits on the reactor");
        Ok(Session {
            service: self.service,
            order: None,
            ran: self.ran.clone(),
            unpaced: self.unpaced_events.clone(),
        })
    }
    fn paced(&self) -> bool {
        true
    }
    fn terminals(&self, first_tid: u32, connections: u32) -> std::ops::Range<u32> {
        // Each connection its slice of the terminals, as TPC-C's source splits them.
        let at = |t: u32| t * self.terminals / self.connections;
        at(first_tid)..at(first_tid + connections)
    }
    fn terminal(&self, id: u32, _seed: u64) -> Option<Box<dyn Terminal>> {
        Some(Box::new(Clerk {
            id,
            n: 0,
            wait: self.wait,
            waits: 0,
        }))
    }
}

impl Events for Session {
    fn take_order(&mut self, order: Box<dyn Any>) {
        self.order = Some(*order.downcast::<(u32, u64)>().expect("the fake's order"));
    }
    async fn event(&mut self, c: &mut StmtCounts) -> Result<(), EventError> {
        match self.order.take() {
            Some(o) => self.ran.lock().unwrap().push(o),
            None => {
                self.unpaced.fetch_add(1, Ordering::Relaxed);
            }
        }
        tokio::time::sleep(self.service).await;
        c.reads += 1;
        c.class = 2;
        Ok(())
    }
    async fn reconnect(&mut self) -> Result<(), DriverError> {
        Ok(())
    }
    async fn finish(self, _c: &mut StmtCounts) -> Result<(), EventError> {
        Ok(())
    }
}

fn paced_run(
    terminals: u32,
    connections: u32,
    wait_ms: u64,
    service_ms: u64,
) -> (bakeoff_engine::RunResult, Vec<(u32, u64)>, u64) {
    paced_spec(
        terminals,
        wait_ms,
        service_ms,
        RunSpec {
            connections,
            client_threads: 2,
            time: Some(Duration::from_millis(1000)),
            tick: Duration::from_millis(250),
            ..RunSpec::default()
        },
    )
}

fn paced_spec(
    terminals: u32,
    wait_ms: u64,
    service_ms: u64,
    spec: RunSpec,
) -> (bakeoff_engine::RunResult, Vec<(u32, u64)>, u64) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let unpaced = Arc::new(AtomicU64::new(0));
    let source = Arc::new(Paced {
        terminals,
        connections: spec.connections,
        wait: Duration::from_millis(wait_ms),
        service: Duration::from_millis(service_ms),
        ran: ran.clone(),
        unpaced_events: unpaced.clone(),
    });
    let r = run(source, &spec, &AtomicBool::new(false), &mut Quiet).expect("run");
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.status);
    let ran = ran.lock().unwrap().clone();
    (r, ran, unpaced.load(Ordering::Relaxed))
}

#[test]
fn many_terminals_share_few_connections_each_order_run_once_and_in_order() {
    // 400 terminals of 100 ms waits over 4 connections: about 4,000 orders a second asked,
    // and the connections can do 4,000 of 1 ms; what matters is that every order runs once.
    let (r, ran, unpaced) = paced_run(400, 4, 100, 1);
    assert_eq!(unpaced, 0, "every event ran a terminal's order");
    assert!(r.total.events > 400, "{} events", r.total.events);
    let mut seen = std::collections::BTreeMap::new();
    for (id, n) in &ran {
        assert!(*id < 400, "terminal {id}");
        let last = seen.insert(*id, *n).unwrap_or(0);
        assert_eq!(*n, last + 1, "terminal {id}: order {n} after {last}");
    }
    // Every terminal got its turn: none starved behind the others.
    assert_eq!(seen.len(), 400, "{} of 400 terminals ordered", seen.len());
}

#[test]
fn a_terminal_waits_between_its_orders_and_its_rate_follows() {
    // 20 terminals of 50 ms waits, 10 ms orders, connections to spare: each does one order
    // per 60 ms or so; about 20/0.06 = 333 a second.
    let (r, ran, _) = paced_run(20, 20, 50, 10);
    let per_s = r.total.events as f64 / r.elapsed_seconds;
    assert!(
        (200.0..=360.0).contains(&per_s),
        "{per_s:.0} orders a second"
    );
    assert!(ran.len() as u64 >= r.total.events);
    // Latency is the order's own time: no connection was short.
    let c = &r.total.classes[1];
    assert!(c.p50_ms >= 10.0 && c.p50_ms < 40.0, "{c:?}");
}

#[test]
fn an_orders_wait_for_a_free_connection_is_in_its_response_time() {
    // 50 terminals that order at once after each answer, one connection, 2 ms orders: the
    // queue is 49 deep, so an order's response is about 50 x 2 ms, not 2 ms.
    let (r, _, _) = paced_run(50, 1, 0, 2);
    let c = &r.total.classes[1];
    assert!(c.p50_ms > 40.0, "response time holds the queue: {c:?}");
    assert!(
        r.ticks.iter().any(|t| t.queue_length > 10),
        "queue shown in the ticks"
    );
}

/// Every terminal ordered, each order once and in its turn: none lost, none doubled.
fn every_terminal_ordered(ran: &[(u32, u64)], terminals: u32) {
    let mut seen = std::collections::BTreeMap::new();
    for (id, n) in ran {
        let last = seen.insert(*id, *n).unwrap_or(0);
        assert_eq!(*n, last + 1, "terminal {id}: order {n} after {last}");
    }
    assert_eq!(seen.len() as u32, terminals, "{seen:?}");
}

#[test]
fn terminals_follow_the_connections_whatever_the_threads() {
    // More client threads than connections (the engine runs one thread): all 40 terminals.
    let spec = |connections, client_threads| RunSpec {
        connections,
        client_threads,
        time: Some(Duration::from_millis(600)),
        ..RunSpec::default()
    };
    let (_, ran, _) = paced_spec(40, 20, 1, spec(1, 4));
    every_terminal_ordered(&ran, 40);
    // 3 connections on 2 threads (2 and 1): each thread paces its connections' terminals.
    let (_, ran, _) = paced_spec(30, 20, 1, spec(3, 2));
    every_terminal_ordered(&ran, 30);
    // Fewer terminals than connections: the connections without any end, the run does not
    // wait on them, and an events budget still ends it with no time given.
    let (r, ran, _) = paced_spec(
        2,
        5,
        1,
        RunSpec {
            time: None,
            events: Some(40),
            ..spec(4, 4)
        },
    );
    assert_eq!(r.total.events, 40, "{:?}", r.total);
    every_terminal_ordered(&ran, 2);
}
