//! [`run_query`]: a [`Query`] built with the ordinary API, run on the cluster with its own
//! adapters.
//!
//! The run splits its keys into parts, one per worker (or as many as the snapshot it restores
//! from has); every part builds the same query and starts it as one part of several
//! ([`Query::start_worker`]) on a tokio runtime of this process, worker `w` of `n` running
//! parts `w`, `w + n`, ...: the adapters of the inputs a part owns run there, the output
//! adapters with part 0. The timely side carries the batches: each part's inputs hand what
//! they release to its worker's `ingress` operator, which sends it at a timely time that is
//! the least CTI of the worker's parts (of the inputs they own that have not ended) and holds
//! its capability there; so a stage runs what was sent at time `t` once every worker's inputs
//! have passed `t`: the frontier is the global CTI.

use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use punctual_runtime::{Exchange, Query, QueryError, QueryReport, QueryWorker, RunningQuery};
use timely::dataflow::operators::probe::Probe;
use timely::scheduling::SyncActivator;

use crate::cut::{Cuts, Cutter, Pending};
use crate::ingress::{live_ingress, Outbox};
use crate::{arrive, guarded, route, run_stage, ClusterConfig, Error, Shipment, StopSignal};

/// What a run of [`run_query`] reports in this process: each of its parts' report (a part per
/// worker, or as many as the snapshot it restored from has), and which part owns each input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterReport {
    /// The report of each part this process ran, from part `first_worker` on.
    pub workers: Vec<QueryReport>,
    /// The index of this process's first part (its first worker's).
    pub first_worker: usize,
    /// Which part owns each input, by input (creation order).
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
/// points for the few milliseconds it takes. It restores on any number of workers: the keys
/// stay in as many parts as workers took the snapshot ([`Query::snapshot_workers`]), each
/// worker runs its share of them; a run of several processes with checkpoints is refused
/// ([`Error::Build`]).
///
/// Returns what this process's workers report ([`ClusterReport::report`] makes it one
/// report). A query that fails on a worker (an adapter's error) ends with [`Error::Query`].
///
/// The query ends when every input has ended everywhere, or once [`ClusterConfig::stop`] is
/// given in any process (a drain on every worker: see [`StopSignal`]). A worker's inputs
/// wait while its timely thread has not read [`ClusterConfig::backlog`] of the events they
/// sent (a [`Backlog`](punctual_runtime::Backlog));
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
        let mut parts = Vec::new();
        for (worker, result) in guards.join().into_iter().enumerate() {
            match result {
                Ok(Ok(mut ran)) => parts.append(&mut ran),
                Ok(Err(e)) => return Err(e),
                Err(message) => return Err(Error::Worker { worker, message }),
            }
        }
        // One report per part, in the order of the parts.
        parts.sort_by_key(|(part, _, _)| *part);
        for (_, r, owners) in parts {
            report.workers.push(r);
            report.owners = owners;
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

/// A part a worker runs: its index, its query, how it runs, what its inputs send.
struct Part {
    part: usize,
    query: Arc<QueryWorker>,
    running: RunningQuery,
    outbox: Arc<Outbox>,
}

/// What one worker of [`run_query`] reports: each part it ran, with its report and who owns
/// each input.
type Ran = Vec<(usize, QueryReport, Vec<usize>)>;

/// A worker's parts as it starts them: each one's query started, what the stages held for
/// them in the snapshot, how often a snapshot is due.
struct Starting<'r, 'a> {
    run: &'r Run<'a>,
    tx: std::sync::mpsc::Sender<crate::ingress::Sent>,
    parts: Vec<Part>,
    restored: crate::cut::Restored,
    every: Option<Duration>,
}

/// What makes a part's query.
type Build = dyn Fn(usize) -> Result<Query, QueryError> + Send + Sync;

impl Starting<'_, '_> {
    /// Starts part `part` of `count` with `query`.
    fn start(&mut self, part: usize, count: usize, query: Query) -> Result<(), Error> {
        let run = self.run;
        let build_error = |message: String| Error::Build {
            worker: part,
            message,
        };
        let outbox = Arc::new(Outbox::new(
            (part, count),
            self.tx.clone(),
            run.backlog,
            Arc::clone(&run.cuts),
        ));
        let (running, query) = query
            .start_worker(part, count, Arc::clone(&outbox) as Arc<dyn Exchange>)
            .map_err(|e| build_error(e.to_string()))?;
        // A stop from the outside, or from another worker: the part's query stops with a
        // drain (its inputs end, what is held comes out).
        let stopping = running.stop_handle();
        let signal = run.stop.clone();
        run.handle.spawn(async move {
            signal.stopped().await;
            stopping.stop();
        });
        let (every, mut restored) =
            crate::cut::start(&query, run.processes).map_err(build_error)?;
        self.every = self.every.or(every);
        self.restored.append(&mut restored);
        self.parts.push(Part {
            part,
            query: Arc::new(query),
            running,
            outbox,
        });
        Ok(())
    }

    /// Starts the parts of worker `me` of `peers`: how many parts there are, and how many
    /// stages (0: as the parts' own edges say). Worker 0 of a process says how many parts
    /// (the snapshot's, or one per worker) and stages there are ([`Cuts::publish`]); the
    /// others wait for it.
    fn all(&mut self, (me, peers): (usize, usize), build: &Build) -> Result<(usize, usize), Error> {
        let run = self.run;
        let build_part = |part: usize| {
            build(part).map_err(|e| Error::Build {
                worker: part,
                message: e.to_string(),
            })
        };
        let (count, last) = if run.processes > 1 {
            self.start(me, peers, build_part(me)?)?;
            (peers, 0)
        } else if me == 0 {
            let first = build_part(0)?;
            let count = first.snapshot_workers().ok().flatten().unwrap_or(peers);
            self.start(0, count, first)?;
            (count, 0)
        } else {
            run.cuts.layout().ok_or_else(|| Error::Worker {
                worker: me,
                message: "worker 0 could not start the run".to_owned(),
            })?
        };
        let next = if run.processes > 1 || me == 0 {
            me + peers
        } else {
            me
        };
        for part in (next..count).step_by(peers) {
            self.start(part, count, build_part(part)?)?;
        }
        Ok((count, last))
    }
}

/// One worker of [`run_query`]. The run splits its keys into parts, one per worker (the
/// query's partitions: [`Query::start_worker`]), or as many as the workers that took the
/// snapshot it restores from; worker `w` of `n` runs parts `w`, `w + n`, ... (timely sends a
/// shipment for part `p` to worker `p % n`), so a snapshot restores on any number of workers.
fn run_worker(
    worker: &mut timely::worker::Worker,
    build: &Build,
    run: &Run<'_>,
) -> Result<Ran, Error> {
    let (handle, stop) = (run.handle, run.stop);
    let me = worker.index();
    let peers = worker.peers();
    let _runtime = handle.enter();
    let (tx, rx) = channel();
    let mut starting = Starting {
        run,
        tx,
        parts: Vec::new(),
        restored: Vec::new(),
        every: None,
    };
    let laid = starting.all((me, peers), build);
    let Starting {
        parts,
        mut restored,
        every,
        ..
    } = starting;
    let (count, last) = match laid {
        Ok(laid) => laid,
        Err(e) => {
            if me == 0 && run.processes == 1 {
                run.cuts.publish(None);
            }
            run.cuts.started(None);
            return Err(e);
        }
    };
    let edges: Vec<_> = parts
        .first()
        .map(|p| p.query.edges().to_vec())
        .unwrap_or_default();
    let last = edges.iter().map(|(e, _)| e.to_stage).max().unwrap_or(last);
    if me == 0 && run.processes == 1 {
        run.cuts.publish(Some((count, last)));
    }
    let floor = run
        .cuts
        .started(Some(&restored))
        .ok_or_else(|| Error::Worker {
            worker: me,
            message: "another worker could not start the run".to_owned(),
        })?;
    let owners = parts
        .first()
        .map(|p| p.query.owners().to_vec())
        .unwrap_or_default();
    let edges = Arc::new(edges);
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let probe = timely::dataflow::ProbeHandle::new();
    // The ingress operator's address, for the inputs' wake-ups.
    let address = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let outboxes: Vec<Arc<Outbox>> = parts.iter().map(|p| Arc::clone(&p.outbox)).collect();
    let queries: Vec<(usize, Arc<QueryWorker>)> = parts
        .iter()
        .map(|p| (p.part, Arc::clone(&p.query)))
        .collect();
    let mut pending = Pending::default();
    worker.dataflow::<i64, _, _>(|scope| {
        let ingress = live_ingress(
            scope,
            rx,
            outboxes.clone(),
            (stop.clone(), Arc::clone(&run.cuts)),
            std::rc::Rc::clone(&address),
            (me, floor),
        );
        let stages = Stages {
            queries: &queries,
            edges: &edges,
            failure: &failure,
            handle,
            stop,
            cuts: &run.cuts,
        };
        let stream = live_stages(ingress, last, &stages, &mut pending, &mut restored);
        stream.probe_with(&probe);
    });
    // In place first, then one wake-up: what the inputs sent before it was in place is read
    // then, what they send after wakes the operator itself.
    let activator = worker.sync_activator_for(address.borrow().clone());
    for o in &outboxes {
        let _ = o.activator.set(activator.clone());
    }
    run.cuts.set_waker(me, activator.clone());
    let _ = activator.activate();
    let cutter = every.map(|every| Cutter::new(me, every));
    let hosted: Vec<(usize, &QueryWorker)> = queries.iter().map(|(p, q)| (*p, &**q)).collect();
    steps(
        worker,
        run,
        &activator,
        cutter,
        (&hosted, &probe, &pending, &failure),
    );
    finish(parts, (handle, me), &failure, &owners)
}

/// After its steps: each part the worker ran ends (what a round begun as the run ended holds
/// goes on), with its report.
fn finish(
    parts: Vec<Part>,
    (handle, me): (&tokio::runtime::Handle, usize),
    failure: &Mutex<Option<String>>,
    owners: &[usize],
) -> Result<Ran, Error> {
    let mut ran = Vec::with_capacity(parts.len());
    for p in parts {
        // A round begun as the run ended is never over: its gate would hold the part's clock
        // (a watermark's idle timeout) for ever.
        p.query.resume_inputs();
        handle.block_on(p.query.finish());
        let result = handle.block_on(p.running.wait());
        if let Some(message) = failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Err(Error::Worker {
                worker: me,
                message,
            });
        }
        match result {
            Ok(report) => ran.push((p.part, report, owners.to_vec())),
            Err(failure) => {
                return Err(Error::Query {
                    worker: p.part,
                    message: failure.error.to_string(),
                })
            }
        }
    }
    Ok(ran)
}

/// A worker's steps until its probe says the run is over: a stop wakes its ingress once, and
/// with checkpoints each step goes with the worker's side of the snapshots' rounds.
fn steps(
    worker: &mut timely::worker::Worker,
    run: &Run<'_>,
    activator: &SyncActivator,
    mut cutter: Option<Cutter>,
    (hosted, probe, pending, failure): (
        &crate::cut::Hosted<'_>,
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
            let stopping = stop.is_stopped() || hosted.iter().any(|(_, q)| q.has_failed());
            match cutter.step(&run.cuts, hosted, (handle, probe), pending, stopping) {
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

/// What a live worker's stages share.
struct Stages<'a> {
    queries: &'a [(usize, Arc<QueryWorker>)],
    edges: &'a Arc<Vec<(punctual_core::ops::Edge, Option<usize>)>>,
    failure: &'a Arc<Mutex<Option<String>>>,
    handle: &'a tokio::runtime::Handle,
    stop: &'a StopSignal,
    cuts: &'a Arc<Cuts>,
}

/// The stages after a live worker's ingress: each hands what arrives for a part to that
/// part's query (under its lock) and routes what it sends on; a stop from another worker
/// stops this one. Each stage's store of what waits for its time goes to `pending`, with what
/// `restored` (a snapshot's) held for it.
fn live_stages<'scope>(
    ingress: timely::dataflow::StreamVec<'scope, i64, Shipment>,
    last: usize,
    shared: &Stages<'_>,
    pending: &mut Pending,
    restored: &mut crate::cut::Restored,
) -> timely::dataflow::StreamVec<'scope, i64, Shipment> {
    let mut stream = ingress;
    for stage in 1..=last {
        let queries = shared.queries.to_vec();
        let edges = Arc::clone(shared.edges);
        let failure = Arc::clone(shared.failure);
        let handle = shared.handle.clone();
        let signal = shared.stop.clone();
        let held = pending.stage(stage, restored);
        stream = run_stage(
            stream,
            stage,
            (held, Arc::clone(shared.cuts)),
            move |mut shipments| {
                let mut give = Vec::new();
                for (part, query) in &queries {
                    let mine: Vec<Shipment> =
                        shipments.extract_if(.., |s| s.dest == *part).collect();
                    if mine.is_empty() {
                        continue;
                    }
                    give.append(&mut handle.block_on(query.receive(|driver| {
                        let mut fail = failure.lock().unwrap_or_else(PoisonError::into_inner);
                        let graph = driver.graph_mut();
                        let mut give = arrive(graph, stage, mine, &edges, &mut fail);
                        route(graph, *part, &mut give);
                        give
                    })));
                }
                give
            },
            move || signal.stop(),
        );
    }
    stream
}
