//! [`run_query`]: a [`Query`] built with the ordinary API, run on the cluster with its own
//! adapters.
//!
//! Every worker builds the same query and starts it as one worker of several
//! ([`Query::start_worker`]) on a tokio runtime of this process: the adapters of the inputs
//! a worker owns run there, the output adapters on worker 0. The timely side carries the
//! batches: each worker's inputs hand what they release to its `ingress` operator, which
//! sends it at a timely time that is the worker's CTI (the least CTI of the inputs it owns
//! that have not ended) and holds its capability there; so a stage runs what was sent at
//! time `t` once every worker's inputs have passed `t`: the frontier is the global CTI.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use punctual_core::Time;
use punctual_engine::Driver;
use punctual_runtime::{Backlog, Exchange, Query, QueryError, QueryReport, QueryWorker};
use timely::dataflow::operators::generic::operator::source;
use timely::dataflow::operators::probe::Probe;
use timely::dataflow::operators::Capability;
use timely::scheduling::SyncActivator;

use crate::cut::{Cuts, Cutter, Pending};
use crate::{arrive, guarded, route, run_stage, ClusterConfig, Error, Shipment, StopSignal};

/// What a run of [`run_query`] reports in this process: each of its workers' report, and who
/// owns each input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterReport {
    /// The report of each worker of this process, from worker `first_worker` on.
    pub workers: Vec<QueryReport>,
    /// The index of this process's first worker.
    pub first_worker: usize,
    /// Which worker owns each input, by input (creation order).
    pub owners: Vec<usize>,
}

impl ClusterReport {
    /// One report for the query as this process saw it: the counters (and clock records) of
    /// each input this process owns, from the worker that owns it (another process's inputs
    /// are in that process's report), what
    /// every worker's operators held and dropped, and the first ending that is not
    /// `Completed`.
    pub fn report(&self) -> QueryReport {
        let mut merged = QueryReport {
            streams: Vec::new(),
            clock_records: Vec::new(),
            ending: punctual_runtime::Ending::Completed,
            held: Vec::new(),
            held_items: Vec::new(),
            dropped: Vec::new(),
            lateness: Vec::new(),
            drops: Vec::new(),
            explanations: Vec::new(),
        };
        let owner_of = |input: usize| {
            self.owners
                .get(input)
                .and_then(|o| o.checked_sub(self.first_worker))
                .and_then(|w| self.workers.get(w))
        };
        let names = self
            .workers
            .first()
            .map(|r| r.streams.as_slice())
            .unwrap_or(&[]);
        for (i, (name, _)) in names.iter().enumerate() {
            // An input of another process is in that process's report.
            let Some(owner) = owner_of(i) else { continue };
            merged
                .streams
                .push((name.clone(), owner.counters(name).unwrap_or_default()));
            if let Some(r) = owner.clock_records.iter().find(|(n, _)| n == name) {
                merged.clock_records.push(r.clone());
            }
        }
        for r in &self.workers {
            merged.held.extend(r.held.iter().cloned());
            merged.held_items.extend(r.held_items.iter().cloned());
            merged.dropped.extend(r.dropped.iter().cloned());
            merged.lateness.extend(r.lateness.iter().cloned());
            merged.drops.extend(r.drops.iter().cloned());
            if merged.ending == punctual_runtime::Ending::Completed {
                merged.ending = r.ending.clone();
            }
        }
        merged
    }
}

/// What a worker's inputs sent, for its `ingress` operator.
enum Sent {
    /// Batches for the workers, how many events they hold, then the worker's CTI (`None`:
    /// every input it owns has finished).
    Batches(Vec<Shipment>, usize, Option<i64>),
    /// Every input the worker owns has ended.
    Ended,
}

/// The executor's side of one worker's query: under the query's lock, takes what the inputs
/// released for the workers and hands it to the worker's timely thread.
struct Outbox {
    me: usize,
    workers: usize,
    /// Set on the first call: who owns each input.
    owners: OnceLock<Vec<usize>>,
    tx: Mutex<Sender<Sent>>,
    activator: OnceLock<SyncActivator>,
    /// Whether something was sent that the timely side has not read: only the first send
    /// after a read wakes it.
    unread: std::sync::atomic::AtomicBool,
    /// The events sent that the timely side has not read: the inputs wait while there are
    /// more than [`ClusterConfig::backlog`]. Without a bound, inputs that read faster than
    /// the operators run would gather the whole input in memory (each batch in fresh memory,
    /// never in cache).
    backlog: Backlog,
    /// Counts what is on its way, for snapshots.
    cuts: Arc<Cuts>,
}

/// The timely side reads what the inputs sent at most once per this long, however often they
/// send (a wake-up of another thread costs more than a small batch): the latency it adds.
const READ_EVERY: Duration = Duration::from_millis(1);

impl Outbox {
    fn send(&self, sent: Sent) {
        let tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        self.cuts.gave(1);
        // The timely side is gone only once the run is over.
        let _ = tx.send(sent);
        if !self.unread.swap(true, std::sync::atomic::Ordering::AcqRel) {
            if let Some(a) = self.activator.get() {
                let _ = a.activate();
            }
        }
    }
}

impl Exchange for Outbox {
    fn sent(&self, driver: &mut Driver) {
        let owners = self.owners.get_or_init(|| driver.owners(self.workers));
        let me = self.me;
        let mut shipments = Vec::new();
        let mut events = 0;
        driver.graph_mut().take_injections(|edge, parts| {
            for (dest, batch) in parts.into_iter().enumerate() {
                if !batch.is_empty() {
                    events += batch.events();
                    shipments.push(Shipment::new(dest, me, edge, batch));
                }
            }
        });
        let cti = (0..driver.input_count())
            .filter(|&i| owners.get(i) == Some(&me) && !driver.is_finished(i))
            .map(|i| driver.counters(i).map_or(Time::NEG_INF, |c| c.cti).ticks())
            .min();
        self.backlog.add(events);
        self.send(Sent::Batches(shipments, events, cti));
    }

    fn backlog(&self) -> Option<&Backlog> {
        Some(&self.backlog)
    }

    fn ended(&self, _driver: &mut Driver) {
        self.send(Sent::Ended);
    }
}

/// Runs the query `build` makes on the cluster, with its adapters: `build(worker)` is called
/// on every worker of every process and must make the same query (the same inputs, operators
/// and outputs, in the same order). Each input's adapter runs on the worker that owns it
/// (inputs that import each other's CTIs together, round robin otherwise); the output
/// adapters run on worker 0 and get the query's output as one stream, as on one worker (an
/// output whose factory says
/// [`per_worker`](punctual_runtime::OutputAdapterFactory::per_worker) runs on every worker
/// instead, each adapter with its worker's share).
///
/// With checkpoints ([`Query::checkpoints`](punctual_runtime::Query::checkpoints)) every
/// snapshot is cut across the workers at one moment: their inputs are held at their commit
/// points for the few milliseconds it takes. It restores on the same number of workers; a run
/// of several processes with checkpoints is refused ([`Error::Build`]).
///
/// Returns what this process's workers report ([`ClusterReport::report`] makes it one
/// report). A query that fails on a worker (an adapter's error) ends with [`Error::Query`].
///
/// The query ends when every input has ended everywhere, or once [`ClusterConfig::stop`] is
/// given in any process (a drain on every worker: see [`StopSignal`]). A worker's inputs
/// wait while its timely thread has not read [`ClusterConfig::backlog`] of the events they
/// sent (a [`Backlog`]);
/// there is no backpressure from a worker that is behind to the inputs of the others: what
/// an input sends them waits in memory until they take it.
///
/// ```
/// use punctual_adapters::{CollectOutput, MemoryInput};
/// use punctual_runtime::{InputOptions, Query};
/// use punctual_cluster::{run_query, ClusterConfig};
/// use punctual_core::ops::Count;
/// use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
/// use punctual_policies::AdvanceTimeSettings;
///
/// let t = Time::from_ticks;
/// let out = CollectOutput::new();
/// let sink = out.clone();
/// let reports = run_query(ClusterConfig::threads(2), move |_worker| {
///     let mut query = Query::new("counts");
///     let items: Vec<StreamItem<i64>> = (0..20).map(|i| StreamItem::point(t(i), i % 3)).collect();
///     let input = query.create_stream(
///         InputOptions::new("in", EventShape::Point)
///             .settings(AdvanceTimeSettings::strictly_increasing_start_time()),
///         &MemoryInput,
///         &items,
///     )?;
///     let counts = input
///         .tumbling_window(TimeSpan::from_ticks(10))
///         .group_by(|k: &i64| *k)
///         .aggregate(Count);
///     query.bind_output(&counts, &sink, &())?;
///     Ok(query)
/// })
/// .unwrap();
/// assert_eq!(reports.workers.len(), 2);
/// assert_eq!(reports.report().counters("in").unwrap().events_in, 20);
/// let events = out.items().iter().filter(|i| matches!(i, StreamItem::Insert(_))).count();
/// assert_eq!(events, 6); // two windows, three keys each
/// ```
pub fn run_query<F>(config: ClusterConfig, build: F) -> Result<ClusterReport, Error>
where
    F: Fn(usize) -> Result<Query, QueryError> + Send + Sync + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.workers.max(1))
        .thread_name("punctual-cluster-io")
        .enable_all()
        .build()
        .map_err(|e| Error::Start(format!("cannot start the adapters' runtime: {e}")))?;
    let handle = runtime.handle().clone();
    let build = Arc::new(build);
    let first_worker = config.process * config.workers;
    let result = guarded(&config, || {
        let stop = config.stop.clone();
        let backlog = config.backlog;
        let cuts = Arc::new(Cuts::new(config.workers));
        let processes = config.process_count();
        let guards = crate::net::execute(&config, move |worker| {
            let run = Run {
                handle: &handle,
                stop: &stop,
                backlog,
                cuts: Arc::clone(&cuts),
                processes,
            };
            run_worker(worker, &*build, &run)
        })?;
        let mut report = ClusterReport {
            workers: Vec::new(),
            first_worker,
            owners: Vec::new(),
        };
        for (worker, result) in guards.join().into_iter().enumerate() {
            match result {
                Ok(Ok((r, owners))) => {
                    report.workers.push(r);
                    report.owners = owners;
                }
                Ok(Err(e)) => return Err(e),
                Err(message) => return Err(Error::Worker { worker, message }),
            }
        }
        Ok(report)
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// What the workers of a run in this process share.
struct Run<'a> {
    handle: &'a tokio::runtime::Handle,
    stop: &'a StopSignal,
    backlog: usize,
    cuts: Arc<Cuts>,
    processes: usize,
}

/// One worker of [`run_query`].
fn run_worker(
    worker: &mut timely::worker::Worker,
    build: &(dyn Fn(usize) -> Result<Query, QueryError> + Send + Sync),
    run: &Run<'_>,
) -> Result<(QueryReport, Vec<usize>), Error> {
    let (handle, stop) = (run.handle, run.stop);
    let me = worker.index();
    let peers = worker.peers();
    let _runtime = handle.enter();
    let build_error = |message: String| Error::Build {
        worker: me,
        message,
    };
    let query = build(me).map_err(|e| build_error(e.to_string()))?;
    let (tx, rx): (Sender<Sent>, Receiver<Sent>) = channel();
    let outbox = Arc::new(Outbox {
        me,
        workers: peers,
        owners: OnceLock::new(),
        tx: Mutex::new(tx),
        activator: OnceLock::new(),
        unread: std::sync::atomic::AtomicBool::new(false),
        backlog: Backlog::new(run.backlog),
        cuts: Arc::clone(&run.cuts),
    });
    let (running, query) = query
        .start_worker(me, peers, Arc::clone(&outbox) as Arc<dyn Exchange>)
        .map_err(|e| build_error(e.to_string()))?;
    // A stop from the outside, or from another worker: this worker's query stops with a
    // drain (its inputs end, what is held comes out).
    let stopping = running.stop_handle();
    let signal = stop.clone();
    handle.spawn(async move {
        signal.stopped().await;
        stopping.stop();
    });
    let (every, mut restored) = crate::cut::start(&query, run.processes).map_err(build_error)?;
    let edges = query.edges().to_vec();
    let owners = query.owners().to_vec();
    let query = Arc::new(query);
    let edges = Arc::new(edges);
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let last = edges.iter().map(|(e, _)| e.to_stage).max().unwrap_or(0);
    let probe = timely::dataflow::ProbeHandle::new();
    // The ingress operator's address, for the inputs' wake-ups.
    let address = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let inbox = Arc::clone(&outbox);
    let signal = stop.clone();
    let mut pending = Pending::default();
    worker.dataflow::<i64, _, _>(|scope| {
        let ingress = live_ingress(
            scope,
            rx,
            Arc::clone(&inbox),
            signal,
            std::rc::Rc::clone(&address),
            me,
            peers,
        );
        let stages = Stages {
            query: &query,
            edges: &edges,
            failure: &failure,
            handle,
            stop,
            me,
            cuts: &run.cuts,
        };
        let stream = live_stages(ingress, last, &stages, &mut pending, &mut restored);
        stream.probe_with(&probe);
    });
    // In place first, then one wake-up: what the inputs sent before it was in place is read
    // then, what they send after wakes the operator itself.
    let activator = worker.sync_activator_for(address.borrow().clone());
    let _ = outbox.activator.set(activator.clone());
    run.cuts.set_waker(me, activator.clone());
    let _ = activator.activate();
    let cutter = every.map(|every| Cutter::new(me, every));
    let parts = (&*query, &probe, &pending, &*failure);
    steps(worker, run, &activator, cutter, parts);
    // A round begun as the run ended is never over: its gate would hold the worker's clock
    // (a watermark's idle timeout) for ever.
    query.resume_inputs();
    handle.block_on(query.finish());
    let message = failure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let result = handle.block_on(running.wait());
    if let Some(message) = message {
        return Err(Error::Worker {
            worker: me,
            message,
        });
    }
    match result {
        Ok(report) => Ok((report, owners)),
        Err(failure) => Err(Error::Query {
            worker: me,
            message: failure.error.to_string(),
        }),
    }
}

/// A worker's steps until its probe says the run is over: a stop wakes its ingress once, and
/// with checkpoints each step goes with the worker's side of the snapshots' rounds.
fn steps(
    worker: &mut timely::worker::Worker,
    run: &Run<'_>,
    activator: &SyncActivator,
    mut cutter: Option<Cutter>,
    (query, probe, pending, failure): (
        &QueryWorker,
        &timely::dataflow::ProbeHandle<i64>,
        &Pending,
        &Mutex<Option<String>>,
    ),
) {
    let (handle, stop) = (run.handle, run.stop);
    let mut poked = false;
    while !probe.done() {
        if stop.is_stopped() && !poked {
            // The ingress tells the other workers, even if no input of this worker sends.
            poked = true;
            let _ = activator.activate();
        }
        let mut busy = false;
        if let Some(cutter) = cutter.as_mut() {
            let stopping = stop.is_stopped() || query.has_failed();
            match cutter.step(&run.cuts, query, handle, probe, pending, stopping) {
                Ok(b) => busy = b,
                Err(e) => {
                    failure
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(format!("a snapshot: {e}"));
                    stop.stop();
                }
            }
        }
        // While a snapshot is cut, the worker looks again soon (its inputs are held).
        let park = if busy { 1 } else { 100 };
        worker.step_or_park(Some(Duration::from_millis(park)));
    }
}

/// A live worker's `ingress` operator: reads what the worker's inputs sent (at most once per
/// [`READ_EVERY`]) and sends it on at the worker's CTI, holding its capability there; tells
/// the other workers of a stop; lets its capability go once the inputs have ended.
fn live_ingress<'scope>(
    scope: timely::dataflow::Scope<'scope, i64>,
    rx: Receiver<Sent>,
    inbox: Arc<Outbox>,
    signal: StopSignal,
    at: std::rc::Rc<std::cell::RefCell<Vec<usize>>>,
    me: usize,
    peers: usize,
) -> timely::dataflow::StreamVec<'scope, i64, Shipment> {
    source(scope, "ingress", move |cap: Capability<i64>, info| {
        *at.borrow_mut() = info.address.to_vec();
        let later = scope.activator_for(info.address);
        let mut read_at: Option<std::time::Instant> = None;
        let mut cap = Some(cap);
        let mut told = false;
        move |output| {
            let Some(c) = cap.as_mut() else {
                // Ended: what the worker's clock still sends (a watermark's idle timeout
                // drives a worker without inputs) carries nothing, but counts as on its way
                // until read.
                inbox
                    .unread
                    .store(false, std::sync::atomic::Ordering::Release);
                while rx.try_recv().is_ok() {
                    inbox.cuts.took(1);
                }
                return;
            };
            if let Some(wait) = read_at.and_then(|t| READ_EVERY.checked_sub(t.elapsed())) {
                // Read a moment ago: what came since waits for a batch to gather.
                later.activate_after(wait);
                return;
            }
            read_at = Some(std::time::Instant::now());
            inbox
                .unread
                .store(false, std::sync::atomic::Ordering::Release);
            let mut ended = false;
            while let Ok(sent) = rx.try_recv() {
                match sent {
                    Sent::Batches(shipments, events, cti) => {
                        inbox.backlog.take(events);
                        if !shipments.is_empty() {
                            inbox.cuts.gave(shipments.len());
                            output.session(&*c).give_iterator(shipments.into_iter());
                        }
                        if let Some(t) = cti {
                            if t > *c.time() {
                                c.downgrade(&t);
                            }
                        }
                    }
                    Sent::Ended => ended = true,
                }
                inbox.cuts.took(1);
            }
            inbox.cuts.set_cap(me, Some(*c.time()));
            if signal.is_stopped() && !told {
                // Every other worker learns of the stop (while this one can still send).
                told = true;
                let stops = (0..peers)
                    .filter(|&w| w != me)
                    .map(|w| Shipment::stop(w, me));
                inbox.cuts.gave(peers.saturating_sub(1));
                output.session(&*c).give_iterator(stops);
            }
            if ended {
                cap = None;
                inbox.cuts.set_cap(me, None);
            }
        }
    })
}

/// What a live worker's stages share.
struct Stages<'a> {
    query: &'a Arc<QueryWorker>,
    edges: &'a Arc<Vec<(punctual_core::ops::Edge, Option<usize>)>>,
    failure: &'a Arc<Mutex<Option<String>>>,
    handle: &'a tokio::runtime::Handle,
    stop: &'a StopSignal,
    me: usize,
    cuts: &'a Arc<Cuts>,
}

/// The stages after a live worker's ingress: each hands what arrives to the worker's query
/// (under its lock) and routes what it sends on; a stop from another worker stops this one.
/// Each stage's store of what waits for its time goes to `pending`, with what `restored`
/// (a snapshot's) held for it.
fn live_stages<'scope>(
    ingress: timely::dataflow::StreamVec<'scope, i64, Shipment>,
    last: usize,
    shared: &Stages<'_>,
    pending: &mut Pending,
    restored: &mut crate::cut::Restored,
) -> timely::dataflow::StreamVec<'scope, i64, Shipment> {
    let mut stream = ingress;
    let me = shared.me;
    for stage in 1..=last {
        let query = Arc::clone(shared.query);
        let edges = Arc::clone(shared.edges);
        let failure = Arc::clone(shared.failure);
        let handle = shared.handle.clone();
        let signal = shared.stop.clone();
        let held = pending.stage(stage, restored);
        stream = run_stage(
            stream,
            stage,
            (held, Arc::clone(shared.cuts)),
            move |shipments| {
                handle.block_on(query.receive(|driver| {
                    let mut fail = failure.lock().unwrap_or_else(PoisonError::into_inner);
                    let graph = driver.graph_mut();
                    let mut give = arrive(graph, stage, shipments, &edges, &mut fail);
                    route(graph, me, &mut give);
                    give
                }))
            },
            move || signal.stop(),
        );
    }
    stream
}
