//! A load spread over several client hosts, each running its part through its agent.
//!
//! The connections are split in contiguous blocks of connection ids (so each host's block
//! still spreads over every server instance, and per-connection seeds and key ranges are those
//! of one client running them all); the event limit and the open-loop rate are split in the
//! same proportions. Every host connects and prepares its part, then all start at one barrier
//! (`Go`, sent once every host is ready). Each host streams its ticks' windows bucket for
//! bucket; tick `i` of every host is merged into the run's tick `i` (counts added, histograms
//! merged exactly, so percentiles are those of all events together, not an average of
//! percentiles). Each host's own CPU is kept, and a host that used ≥ 90% of its CPUs is named.
//! Fixed work (mysqlslap's iterations) is rounds of such runs, each host running its block
//! of connections' events in every round.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bakeoff_driver::ConnectOptions;
use bakeoff_engine::{run_rounds, ClientWait, FixedWork, Observer, RunSpec};
use bakeoff_remote::session::{Agent, Sender};
use bakeoff_remote::wire::{LoadPart, Reply, Request, Target};
use bakeoff_remote::{HostUrl, RemoteError};
use bakeoff_telemetry::Sampler;
use bakeoff_workload::WorkloadSpec;

use crate::merged::{add_shares, Merge};
pub use crate::merged::{HostShare, Spread};

/// The client hosts of a study or a run, each with its agent started and kept alive.
pub struct ClientHosts {
    links: Vec<Link>,
    /// Every host's replies, in arrival order: (host, reply), None once its link is gone.
    replies: mpsc::Receiver<(usize, Option<Reply>)>,
}

struct Link {
    url: HostUrl,
    tx: Sender,
    peer: Option<IpAddr>,
    address: Option<IpAddr>,
    lost: Arc<Mutex<Option<String>>>,
    done: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

/// Why `ClientHosts::run` did not start when Ctrl-C came first.
pub const INTERRUPTED_BEFORE_START: &str = "interrupted before the start";

impl ClientHosts {
    /// Start an agent on each host (`local` is this machine, through an agent of its own).
    pub fn connect(urls: &[HostUrl]) -> Result<ClientHosts, RemoteError> {
        let (tx, replies) = mpsc::channel();
        let mut links = Vec::new();
        for (i, url) in urls.iter().enumerate() {
            let agent = Agent::start(url)?;
            let (done, lost) = (Arc::new(AtomicBool::new(false)), Arc::default());
            links.push(Link {
                url: url.clone(),
                tx: agent.sender(),
                peer: agent.peer,
                address: agent.address,
                lost: Arc::clone(&lost),
                done: done.clone(),
                reader: Some(read(i, agent, done, lost, tx.clone())),
            });
        }
        Ok(ClientHosts { links, replies })
    }

    pub fn names(&self) -> Vec<String> {
        self.links.iter().map(|l| l.url.to_string()).collect()
    }

    /// The addresses a server's account must admit: each host's own, and for `local` the
    /// address the other hosts see this machine at (its load connects from there).
    pub fn addresses(&self) -> Vec<IpAddr> {
        let here = self.this_machine().ok().flatten();
        let mut all: Vec<IpAddr> = self
            .links
            .iter()
            .filter_map(|l| {
                if l.url == HostUrl::Local {
                    here
                } else {
                    l.address
                }
            })
            .collect();
        all.dedup();
        all
    }

    /// The address every remote host sees this machine at, when they agree: where a server
    /// here listens for them.
    pub fn this_machine(&self) -> Result<Option<IpAddr>, String> {
        let seen: Vec<(String, IpAddr)> = self
            .links
            .iter()
            .filter_map(|l| l.peer.map(|p| (l.url.to_string(), p)))
            .collect();
        match seen.split_first() {
            None => Ok(None),
            Some(((_, first), rest)) => match rest.iter().find(|(_, p)| p != first) {
                None => Ok(Some(*first)),
                Some((host, p)) => Err(format!(
                    "the client hosts reach this machine by different addresses ({first}, and {p} from {host}); a server here listens on one: run the server on a host of its own ([hosts] server)"
                )),
            },
        }
    }

    /// Run `spec` against `endpoints`, spread over the hosts. Err before the start (a host
    /// could not connect or prepare: the others are called off); after it, the result says
    /// how it ended, naming any host that failed or was lost.
    pub fn run(
        &mut self,
        endpoints: &[ConnectOptions],
        workload: &WorkloadSpec,
        spec: &RunSpec,
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
        mut sampler: Option<&mut Sampler>,
    ) -> Result<Spread, String> {
        let targets = targets(endpoints)?;
        let parts = self.parts(spec);
        let active: Vec<usize> = (0..parts.len())
            .filter(|&k| parts[k].connections > 0)
            .collect();
        for &k in &active {
            let _ = self.links[k].tx.send(&Request::Load(LoadPart {
                endpoints: targets.clone(),
                workload: workload.clone(),
                run: parts[k].clone(),
                threads: spec.connections,
                part: k as u32,
                parts: parts.len() as u32,
            }));
        }
        self.barrier(&active, interrupt)?;
        if let Some(s) = sampler.as_deref_mut() {
            s.begin();
        }
        for &k in &active {
            let _ = self.links[k].tx.send(&Request::Go);
        }
        observer.on_start();
        let started = Instant::now();
        let mut merge = Merge::new(spec, &active);
        self.follow(&mut merge, interrupt, observer, &mut sampler);
        let elapsed = merge.elapsed(started);
        Ok(merge.finish(&self.names(), &parts, spec, elapsed, sampler))
    }

    /// Fixed work spread over the hosts: `iterations` rounds, each a run of `spec` (whose
    /// `events_per_connection` is set) in which every host runs its block of connections
    /// from the one barrier. A round's seconds are the slowest host's connecting (the
    /// barrier opens when it is ready) plus the slowest host's events. Each host's share
    /// adds up over the rounds.
    pub fn run_fixed(
        &mut self,
        endpoints: &[ConnectOptions],
        workload: &WorkloadSpec,
        spec: &RunSpec,
        iterations: u32,
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<(FixedWork, Vec<HostShare>), String> {
        let per_conn = spec
            .events_per_connection
            .ok_or("fixed work needs events per connection")?;
        let mut shares: Vec<HostShare> = Vec::new();
        let shape = (spec.connections, per_conn, iterations);
        let fw = run_rounds(shape, interrupt, observer, |obs| {
            let s = self.run(endpoints, workload, spec, interrupt, obs, None)?;
            add_shares(&mut shares, &s.hosts);
            Ok::<_, String>(s.result)
        })?;
        Ok((fw, shares))
    }

    /// Each host's RunSpec: its block of connections and its share of events and rate.
    fn parts(&self, spec: &RunSpec) -> Vec<RunSpec> {
        let n = self.links.len().max(1) as u32;
        let total = spec.connections;
        let mut first = 0;
        (0..n)
            .map(|k| {
                let c = total / n + u32::from(k < total % n);
                let mut part = spec.clone();
                part.connections = c;
                part.first_tid = first;
                part.events = spec.events.map(|e| share(e, first, c, total.max(1)));
                part.rate = spec
                    .rate
                    .map(|r| r * f64::from(c) / f64::from(total.max(1)));
                // The local agent is not pinned to the client's CPUs: polling there could take
                // a server's CPU.
                if self
                    .links
                    .get(k as usize)
                    .is_some_and(|l| l.url == HostUrl::Local)
                {
                    part.client_wait = ClientWait::Sleep;
                }
                first += c;
                part
            })
            .collect()
    }

    /// Wait until every active host is ready. If one fails (or Ctrl-C), every other part is
    /// called off, ready or not, and waited for until it has ended: no host is left holding
    /// its connections at a barrier that will never open.
    fn barrier(&mut self, active: &[usize], interrupt: &AtomicBool) -> Result<(), String> {
        let mut open: Vec<usize> = active.to_vec(); // parts not ended
        let mut ready = Vec::new();
        let mut failure: Option<String> = None;
        loop {
            match &failure {
                None if ready.len() == open.len() => return Ok(()),
                Some(why) if open.is_empty() => return Err(why.clone()),
                _ => {}
            }
            if interrupt.load(Ordering::Relaxed) && failure.is_none() {
                failure = Some(INTERRUPTED_BEFORE_START.into());
                self.call_off(&open);
            }
            let Ok((k, reply)) = self.replies.recv_timeout(Duration::from_millis(100)) else {
                continue;
            };
            let why = match reply {
                // Called off after this: its part still ends with an error that says so.
                Some(Reply::LoadReady) => {
                    ready.push(k);
                    continue;
                }
                Some(Reply::Error { message }) => message,
                Some(Reply::Loaded { .. }) => "it ended before the start".into(),
                None => self.lost(k),
                Some(_) => continue,
            };
            open.retain(|&o| o != k);
            if failure.is_none() {
                failure = Some(format!("client host {}: {why}", self.links[k].url));
                self.call_off(&open);
            }
        }
    }

    fn call_off(&self, hosts: &[usize]) {
        for &k in hosts {
            let _ = self.links[k].tx.send(&Request::CallOff);
        }
    }

    fn lost(&self, k: usize) -> String {
        self.links[k]
            .lost
            .lock()
            .ok()
            .and_then(|l| l.clone())
            .unwrap_or_else(|| "the link was lost".into())
    }

    /// Merge ticks as they come until every host's part has ended.
    fn follow(
        &mut self,
        merge: &mut Merge,
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
        sampler: &mut Option<&mut Sampler>,
    ) {
        let mut told = false;
        while merge.running() {
            if interrupt.load(Ordering::Relaxed) && !told {
                told = true;
                self.interrupt_all(&merge.hosts);
            }
            let Ok((k, reply)) = self.replies.recv_timeout(Duration::from_millis(100)) else {
                continue;
            };
            match reply {
                Some(Reply::LoadTick { tick }) => {
                    if let Some(t) = merge.tick(k, *tick, sampler) {
                        observer.on_window(&t.0, &t.1);
                        observer.on_tick(&t.0);
                        merge.ticks.push(t.0);
                    }
                }
                Some(Reply::Loaded { result }) => merge.ended(k, Ok(*result)),
                Some(Reply::Error { message }) => {
                    merge.ended(
                        k,
                        Err(format!("client host {}: {message}", self.links[k].url)),
                    );
                    self.interrupt_all(&merge.hosts);
                }
                None => {
                    let why = self.lost(k);
                    merge.ended(k, Err(why));
                    self.interrupt_all(&merge.hosts);
                }
                Some(_) => {}
            }
        }
    }

    fn interrupt_all(&self, hosts: &[usize]) {
        for &k in hosts {
            let _ = self.links[k].tx.send(&Request::Interrupt);
        }
    }
}

impl Drop for ClientHosts {
    fn drop(&mut self) {
        for l in &mut self.links {
            l.done.store(true, Ordering::Relaxed);
            l.tx.close();
        }
        for l in &mut self.links {
            if let Some(r) = l.reader.take() {
                let _ = r.join();
            }
        }
    }
}

/// Events `e` shared out by connections: the block of `c` connections from `first` of
/// `total` gets its proportion, the parts adding up to `e` exactly.
/// What each client host connects to, with the password as found now: a `password_command`
/// runs here, once per load sent, and its output travels only inside the ssh sessions.
fn targets(endpoints: &[ConnectOptions]) -> Result<Vec<Target>, String> {
    endpoints
        .iter()
        .map(|o| {
            let password = o.password_now()?;
            Target::of(o, &password).ok_or_else(|| {
                "a server reached by its socket cannot take load from other hosts".to_string()
            })
        })
        .collect()
}

fn share(e: u64, first: u32, c: u32, total: u32) -> u64 {
    let upto = |n: u32| (u128::from(e) * u128::from(n) / u128::from(total)) as u64;
    upto(first + c) - upto(first)
}

/// Pass a host's replies on until its link ends.
fn read(
    i: usize,
    mut agent: Agent,
    done: Arc<AtomicBool>,
    lost: Arc<Mutex<Option<String>>>,
    tx: mpsc::Sender<(usize, Option<Reply>)>,
) -> JoinHandle<()> {
    std::thread::spawn(move || loop {
        match agent.recv() {
            Ok(Some(r)) => {
                let _ = tx.send((i, Some(r)));
            }
            Ok(None) | Err(_) => {
                if !done.load(Ordering::Relaxed) {
                    if let Ok(mut l) = lost.lock() {
                        *l = Some(agent.lost().to_string());
                    }
                    let _ = tx.send((i, None));
                }
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_shared_by_connections_and_add_up() {
        // 7 connections over 3 hosts: blocks of 3, 2, 2.
        let parts = [(0, 3), (3, 2), (5, 2)];
        let got: Vec<u64> = parts.iter().map(|&(f, c)| share(1000, f, c, 7)).collect();
        assert_eq!(got.iter().sum::<u64>(), 1000);
        assert_eq!(got, vec![428, 286, 286]);
    }
}
