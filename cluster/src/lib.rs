//! # punctual-cluster
//!
//! Runs a query on several workers of a [timely dataflow](https://docs.rs/timely) cluster with
//! the results it gives on one ([`run_query`]). Every worker builds the same query (the
//! ordinary [`Query`](punctual_runtime::Query), with its adapters) and runs its operators on
//! its share of the events:
//!
//! - each input belongs to one worker (inputs that import each other's CTIs to the same one),
//!   whose adapter reads it and which runs its ingress: CTI generation, import, Drop/Adjust
//!   against that input's own CTIs, so policy outcomes do not depend on the number of workers;
//! - operators that need events together (windows and aggregates per key, group-and-apply,
//!   equijoins) get them by a hash of the key; operators without a key get all of them on one
//!   worker; stateless operators run where the events are; outputs are gathered to worker 0;
//! - every CTI goes to every worker, so every worker's operators see the CTIs the query would
//!   see on one.
//!
//! Timely carries the batches between workers, and its progress tracking says when the
//! workers have passed a CTI: a timely time is a CTI, the least CTI of the inputs a worker
//! owns (see [`Graph::split`](punctual_core::ops::Graph::split) for the stages). Each stage of
//! the query is one timely operator that runs what was sent at a time once every worker has
//! passed it; a receiving worker merges what the senders sent into one stream whose CTI is the
//! one every sender has passed. So the output holds the events and the final CTI the query
//! gives on one worker; the CTIs in between are those the merged workers passed together.
//!
//! Workers run as threads of one process ([`ClusterConfig::threads`]) or in several
//! processes, on one machine or many ([`ClusterConfig::processes`]): then what crosses
//! between processes travels as bytes ([`Batch::to_bytes`](punctual_core::Batch::to_bytes));
//! every payload type is serializable ([`Payload`](punctual_core::ops::Payload)), so
//! whether a query can run on several processes is checked when it compiles.

#![warn(missing_docs)]

mod cut;
mod error;
mod heartbeat;
mod ingress;
mod live;
mod net;
mod shipment;
mod stop;
pub use error::Error;
pub use heartbeat::DEFAULT_PEER_TIMEOUT;
pub use live::{run_query, ClusterReport};
use shipment::Carried;
pub use shipment::Shipment;
pub use stop::StopSignal;

use punctual_core::ops::{AnyBatch, Edge, EdgeEnd, Graph, Received};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;

/// Where the workers run: threads of this process, or also other processes (on this machine
/// or others), each running the same program with the same configuration but its own
/// `process` index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Worker threads in each process (at least one).
    pub workers: usize,
    /// This process's index, in `0..hosts.len()` (0 with one process).
    pub process: usize,
    /// Each process's `host:port`, by index; empty for one process.
    pub hosts: Vec<String>,
    /// Stops a run of [`run_query`] with a drain, on every process (a new signal per
    /// configuration; clone it before the run to give it later).
    pub stop: StopSignal,
    /// How many events a worker's inputs may have sent that its operators have not taken
    /// yet before they wait ([`run_query`]; [`DEFAULT_BACKLOG`] unless set): more lets the
    /// inputs read further ahead, in more memory.
    pub backlog: usize,
    /// How long the processes of a run may take to connect to each other (each connection,
    /// and the index each sends on it): past it the run fails naming the process it waited
    /// for ([`DEFAULT_CONNECT_TIMEOUT`] unless set).
    pub connect_timeout: std::time::Duration,
    /// How long another process of a run may send nothing (not even its heartbeat, sent
    /// several times per timeout from a thread of its own) before it is lost and the run fails
    /// naming it ([`DEFAULT_PEER_TIMEOUT`] unless set): a stopped or frozen process.
    pub peer_timeout: std::time::Duration,
}

/// [`ClusterConfig::connect_timeout`] by default.
pub const DEFAULT_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// [`ClusterConfig::backlog`] by default: 64 K events, a few of the operators' reads' worth.
pub const DEFAULT_BACKLOG: usize = 1 << 16;

/// The most workers a run may have in all (workers per process times processes): every pair
/// of workers has its channels, so memory and start-up grow with the square of the count
/// (64 workers take about 350 MB before any data). A configuration over it is refused
/// ([`Error::Start`]) rather than left to run the machine out of memory.
pub const MAX_WORKERS: usize = 128;

impl ClusterConfig {
    /// `workers` worker threads in this process.
    pub fn threads(workers: usize) -> Self {
        ClusterConfig {
            workers: workers.max(1),
            process: 0,
            hosts: Vec::new(),
            stop: StopSignal::new(),
            backlog: DEFAULT_BACKLOG,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            peer_timeout: DEFAULT_PEER_TIMEOUT,
        }
    }

    /// `workers` worker threads in each of the processes at `hosts` (`host:port`, one per
    /// process), this one being number `process`. Process `i` connects to processes `0..i`
    /// and accepts connections from the others, so they may start in any order.
    pub fn processes(workers: usize, process: usize, hosts: Vec<String>) -> Self {
        ClusterConfig {
            workers: workers.max(1),
            process,
            hosts,
            stop: StopSignal::new(),
            backlog: DEFAULT_BACKLOG,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            peer_timeout: DEFAULT_PEER_TIMEOUT,
        }
    }

    /// How many processes run workers.
    pub fn process_count(&self) -> usize {
        self.hosts.len().max(1)
    }

    pub(crate) fn timely(&self) -> timely::Config {
        if self.hosts.len() > 1 {
            timely::Config {
                communication: timely::CommunicationConfig::Cluster {
                    threads: self.workers,
                    process: self.process,
                    addresses: self.hosts.clone(),
                    report: false,
                    zerocopy: false,
                },
                worker: timely::WorkerConfig::default(),
            }
        } else if self.workers <= 1 {
            timely::Config::thread()
        } else {
            timely::Config::process(self.workers)
        }
    }
}

/// The first lost connection to another process, as timely's network threads report it
/// (`timely:recv-N` / `timely:send-N`, `N` the other process's index).
pub(crate) static LOST: std::sync::Mutex<Option<(usize, String)>> = std::sync::Mutex::new(None);

/// Installs (once) a panic hook that turns the panics of timely's network threads, and the
/// workers' panics that follow from them, into one record in [`LOST`] instead of a backtrace
/// each; every other panic goes to the hook that was there before.
fn watch_connections() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("");
            let peer = name
                .strip_prefix("timely:recv-")
                .or_else(|| name.strip_prefix("timely:send-"))
                .and_then(|n| n.parse::<usize>().ok());
            let message = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| {
                    info.payload()
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                })
                .unwrap_or_default();
            let mut lost = LOST
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match peer {
                Some(p) => {
                    lost.get_or_insert((p, message.replace("timely communication error: ", "")));
                }
                // A worker whose channels broke with the connection, or the join of the
                // network threads: already reported.
                None if lost.is_some()
                    && (name.starts_with("timely:work-") || message.contains("thread panic")) => {}
                None => {
                    drop(lost);
                    previous(info);
                }
            }
        }));
    });
}

/// Runs `f` (a run on the cluster `config` describes); with several processes, a lost
/// connection to one of them (its network thread's panic, and the panics of the workers
/// that follow) becomes [`Error::LostPeer`].
pub(crate) fn guarded<T>(
    config: &ClusterConfig,
    f: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    if config.process_count() <= 1 {
        return f();
    }
    watch_connections();
    let hosts = config.hosts.clone();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let lost = LOST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match (result, lost) {
        (_, Some((process, message))) => Err(Error::LostPeer {
            process,
            address: hosts.get(process).cloned().unwrap_or_default(),
            message,
        }),
        (Ok(r), None) => r,
        (Err(panic), None) => Err(Error::Worker {
            worker: 0,
            message: panic
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "a panic".to_owned()),
        }),
    }
}

/// Stage `stage` of a split query as a timely operator: what the workers sent at each timely
/// time goes to `process` once the frontier says every worker has sent all of it, times in
/// order; what `process` returns goes on at the same time. `held` keeps what waits for its
/// time (a snapshot's part); `cuts` counts what the stage takes and gives.
pub(crate) fn run_stage<'scope>(
    stream: timely::dataflow::StreamVec<'scope, i64, Shipment>,
    stage: usize,
    (held, cuts): (cut::Held, std::sync::Arc<cut::Cuts>),
    mut process: impl FnMut(Vec<Shipment>) -> Vec<Shipment> + 'static,
    mut on_stop: impl FnMut() + 'static,
) -> timely::dataflow::StreamVec<'scope, i64, Shipment> {
    stream.unary_frontier(
        Exchange::new(|m: &Shipment| m.dest as u64),
        &format!("stage {stage}"),
        move |cap: Capability<i64>, _info| {
            let mut cap = Some(cap);
            move |(input, frontier), output| {
                input.for_each(|time, data| {
                    cuts.took(data.len());
                    // A stop acts when it arrives, not when its time is complete: the
                    // sender's time may be ahead of what this worker's inputs have passed.
                    data.retain(|s| {
                        if s.is_stop() {
                            on_stop();
                        }
                        !s.is_stop()
                    });
                    // Every shipment is sent under one capability: one time.
                    if let Some(&t) = time.least() {
                        held.borrow_mut().entry(t).or_default().append(data);
                    }
                });
                let Some(c) = cap.as_mut() else { return };
                loop {
                    let next = {
                        let mut map = held.borrow_mut();
                        match map.first_key_value() {
                            Some((t, _)) if !frontier.less_equal(t) => map.pop_first(),
                            _ => None,
                        }
                    };
                    let Some((time, shipments)) = next else {
                        break;
                    };
                    let give = process(shipments);
                    cuts.gave(give.len());
                    output
                        .session(&c.delayed(&time))
                        .give_iterator(give.into_iter());
                }
                match frontier.frontier().first() {
                    Some(t) if *t > *c.time() => c.downgrade(t),
                    Some(_) => {}
                    None if held.borrow().is_empty() => cap = None,
                    None => {}
                }
            }
        },
    )
}

/// Hands a stage's shipments at one time to this worker's graph: those for later stages come back to be forwarded. Each sender's batches for one
/// edge are joined in the order sent, so that the graph merges one stream per sender.
pub(crate) fn arrive(
    graph: &mut Graph,
    stage: usize,
    shipments: Vec<Shipment>,
    edges: &[(Edge, Option<usize>)],
    failure: &mut Option<String>,
) -> Vec<Shipment> {
    let mut forward = Vec::new();
    let mut injected: Vec<(usize, usize, Box<dyn AnyBatch>)> = Vec::new();
    let mut received: Vec<Received> = Vec::new();
    for s in shipments {
        let Some((edge, _)) = edges.get(s.edge) else {
            continue;
        };
        if edge.to_stage != stage {
            forward.push(s);
            continue;
        }
        // From another process: bytes, read as a batch of the edge's payload type.
        let mut batch = match s.batch {
            Carried::Batch(b) => b,
            Carried::Bytes(bytes) => {
                let decoded = graph
                    .edge_batch(s.edge)
                    .ok_or_else(|| "an edge this worker does not have".to_owned())
                    .and_then(|b| b.decode(&bytes).map_err(|e| e.to_string()));
                match decoded {
                    Ok(b) => b,
                    Err(e) => {
                        failure.get_or_insert(format!(
                            "a batch from worker {} cannot be read: {e}",
                            s.sender
                        ));
                        continue;
                    }
                }
            }
        };
        if matches!(edge.to, EdgeEnd::Source(_)) {
            injected.push((s.sender, s.edge, batch));
        } else {
            match received.iter_mut().find(|r| r.0 == s.edge) {
                Some(r) => match r.1.iter_mut().find(|(sender, _)| *sender == s.sender) {
                    Some((_, joined)) => batch.move_into(joined.as_any_mut()),
                    None => r.1.push((s.sender, batch)),
                },
                None => received.push((s.edge, vec![(s.sender, batch)])),
            }
        }
    }
    injected.sort_by_key(|s| s.0);
    for (_, edge, batch) in injected {
        graph.receive_injection(edge, batch);
    }
    for r in &mut received {
        r.1.sort_by_key(|x| x.0);
    }
    if !received.is_empty() {
        graph.receive(received);
    }
    forward
}

/// Adds what this worker's graph routed to other workers (and itself) to `give`.
pub(crate) fn route(graph: &mut Graph, me: usize, give: &mut Vec<Shipment>) {
    graph.take_routed(|edge, parts| {
        for (dest, batch) in parts.into_iter().enumerate() {
            if !batch.is_empty() {
                give.push(Shipment::new(dest, me, edge, batch));
            }
        }
    });
}
