//! Query binding and the tokio runtime: create named input streams from adapter factories,
//! compose operators on them (the typed [`Stream`] API), bind outputs to any stream, start,
//! stop, wait.
//!
//! Every input adapter runs as a task, with its stream's ingress; the operator graph runs on one
//! query task, fed by every input stream over a bounded channel; every output adapter runs as a
//! task fed by the query task. A stream closes when its adapter has returned (then the final CTI,
//! if configured, is issued) and every stream it imports CTIs from has closed; when every stream
//! has closed, the query task ends and each output adapter gets [`OutputAdapter::finish`]. The
//! query ends when every task has ended. Any task's error or panic stops the query and comes
//! back from [`RunningQuery::wait`]; tasks that do not end within the grace period after a stop
//! are aborted and named in [`QueryError::StopTimeout`].
//!
//! ```
//! use punctual_adapters::{CollectOutput, InputOptions, MemoryInput, Query};
//! use punctual_core::{EventShape, StreamItem, Time};
//! use punctual_policies::AdvanceTimeSettings;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let t = Time::from_ticks;
//! let mut query = Query::new("demo");
//! let items = vec![StreamItem::point(t(3), "b"), StreamItem::point(t(1), "a")];
//! let input = query.create_stream(
//!     InputOptions::new("in", EventShape::Point)
//!         .settings(AdvanceTimeSettings::unordered_start_time(punctual_core::TimeSpan::from_ticks(5))),
//!     &MemoryInput,
//!     &items,
//! )?;
//! let out = CollectOutput::new();
//! query.bind_output(&input, &out, &())?;
//! let report = query.start()?.wait().await?;
//! // The first event (at 3, delay 5) generates CTI(-2); the second (at 1) is within the grace
//! // period; the final CTI releases both, sorted.
//! assert_eq!(out.items(), vec![
//!     StreamItem::Cti(t(-2)),
//!     StreamItem::point(t(1), "a"), StreamItem::point(t(3), "b"), StreamItem::Cti(Time::INF),
//! ]);
//! assert_eq!(report.counters("in").unwrap().released, 2);
//! # Ok::<(), punctual_adapters::QueryError>(())
//! # }).unwrap();
//! ```

use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use async_trait::async_trait;
use punctual_core::ops::{AnyBatch, Explanation, Graph, NodeId, QueryGraph, Stream, Unordered};
use punctual_core::{Batch, EventShape};
use punctual_policies::{
    AdvanceTimeSettings, ClockReading, Ingress, IngressConfig, IngressCounters, LateEvent,
    Watermark, DEFAULT_MAX_BUFFERED,
};

use crate::adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, Payload,
};
use crate::clock::{Clock, SystemClock};
use crate::context::{
    ClockTarget, DeadLetterSink, Delivery, ImportTarget, InputContext, QueryShared, SourceChannel,
    StreamCore, StreamShared,
};
use crate::error::QueryError;

/// How a stream is created: its name, shape, advance-time settings and buffer cap.
#[derive(Clone)]
pub struct InputOptions {
    name: String,
    shape: EventShape,
    settings: Option<AdvanceTimeSettings>,
    watermark: Option<Arc<dyn Any + Send + Sync>>,
    max_buffered: usize,
}

impl std::fmt::Debug for InputOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputOptions")
            .field("name", &self.name)
            .field("shape", &self.shape)
            .field("settings", &self.settings)
            .field("watermark", &self.watermark.is_some())
            .field("max_buffered", &self.max_buffered)
            .finish()
    }
}

impl InputOptions {
    /// A stream with this name and shape; defaults: the factory's declared settings (if any),
    /// a buffer cap of [`DEFAULT_MAX_BUFFERED`] events.
    pub fn new(name: impl Into<String>, shape: EventShape) -> Self {
        InputOptions {
            name: name.into(),
            shape,
            settings: None,
            watermark: None,
            max_buffered: DEFAULT_MAX_BUFFERED,
        }
    }

    /// A watermark strategy for this stream's CTIs (instead of generation settings; the policy
    /// of `settings`, if given, handles events that still break a CTI, else `Drop`). Its payload
    /// type must be the stream's. Idle inputs and periodic emission use the query's clock
    /// ([`Query::clock`]).
    pub fn watermark<P: Send + Sync + 'static>(mut self, watermark: Watermark<P>) -> Self {
        self.watermark = Some(Arc::new(watermark));
        self
    }

    /// Advance-time settings for this stream; they replace the factory's declared settings
    /// entirely.
    pub fn settings(mut self, settings: AdvanceTimeSettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// How many events the reorder buffer may hold before the stream fails with a clear error
    /// (instead of growing without bound when no CTI comes).
    pub fn max_buffered(mut self, n: usize) -> Self {
        self.max_buffered = n;
        self
    }
}

struct PendingStream<P: Payload> {
    name: String,
    source: NodeId,
    late: Option<Stream<LateEvent<P>>>,
    watermark: Option<Watermark<P>>,
    config: IngressConfig,
    import: Option<String>,
    adapter: Option<Box<dyn InputAdapter<P>>>,
    dead_letters: Option<Box<dyn DeadLetterSink<P>>>,
    core: Option<Arc<StreamCore<P>>>,
}

/// A pending stream with its payload type erased.
trait ErasedStream: Send {
    fn name(&self) -> &str;
    fn node(&self) -> NodeId;
    fn import_source(&self) -> Option<&str>;
    fn as_any(&mut self) -> &mut dyn Any;
    /// Creates the stream's core; returns its shared view and the sender of emptied batches.
    fn build(
        &mut self,
        query: &Arc<QueryShared>,
        tx: &mpsc::Sender<Delivery>,
    ) -> (Arc<StreamShared>, mpsc::Sender<Box<dyn AnyBatch>>);
    fn target(&self) -> Option<Arc<dyn ImportTarget>>;
    /// The stream as a clock target, if its watermark strategy takes clock readings.
    fn clock_target(&self) -> Option<Weak<dyn ClockTarget>>;
    fn set_importers(&mut self, importers: Vec<Arc<dyn ImportTarget>>);
    fn spawn(self: Box<Self>, tasks: &mut Tasks);
}

impl<P: Payload> ErasedStream for PendingStream<P> {
    fn name(&self) -> &str {
        &self.name
    }

    fn node(&self) -> NodeId {
        self.source
    }

    fn import_source(&self) -> Option<&str> {
        self.import.as_deref()
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }

    fn build(
        &mut self,
        query: &Arc<QueryShared>,
        tx: &mpsc::Sender<Delivery>,
    ) -> (Arc<StreamShared>, mpsc::Sender<Box<dyn AnyBatch>>) {
        let shared = Arc::new(StreamShared::new(self.name.clone()));
        // Room for every batch in flight, so that handing one back never waits.
        let (recycle, recycled) = mpsc::channel(tx.max_capacity() + 2);
        let channel = SourceChannel {
            node: self.source,
            late_node: self.late.as_ref().map(Stream::node),
            tx: tx.clone(),
            recycled,
        };
        let mut ingress = match self.watermark.clone() {
            Some(w) => Ingress::with_watermark(self.config, w),
            None => Ingress::new(self.config),
        };
        if self.late.is_some() {
            ingress.enable_late_output();
        }
        let mut core = StreamCore::new(Arc::clone(&shared), ingress, channel, Arc::clone(query));
        if let Some(sink) = self.dead_letters.take() {
            core.set_dead_letters(sink);
        }
        self.core = Some(Arc::new(core));
        (shared, recycle)
    }

    fn target(&self) -> Option<Arc<dyn ImportTarget>> {
        self.core
            .as_ref()
            .map(|c| Arc::clone(c) as Arc<dyn ImportTarget>)
    }

    fn clock_target(&self) -> Option<Weak<dyn ClockTarget>> {
        self.watermark.as_ref()?;
        let core = self.core.as_ref()?;
        let weak: Weak<StreamCore<P>> = Arc::downgrade(core);
        Some(weak as Weak<dyn ClockTarget>)
    }

    fn set_importers(&mut self, importers: Vec<Arc<dyn ImportTarget>>) {
        if let Some(core) = &self.core {
            core.set_importers(importers);
        }
    }

    fn spawn(self: Box<Self>, tasks: &mut Tasks) {
        let this = *self;
        let (Some(core), Some(mut adapter)) = (this.core, this.adapter) else {
            return;
        };
        let grace = tasks.grace;
        let mut ctx = InputContext::new(core);
        let stream = this.name.clone();
        let query = Arc::clone(&tasks.query);
        tasks.spawn(format!("input `{}`", this.name), async move {
            let mut stop = query.subscribe();
            let result = tokio::select! {
                r = adapter.run(&mut ctx) => Some(r),
                _ = async {
                    let _ = stop.wait_for(|s| *s).await;
                    tokio::time::sleep(grace).await;
                } => None,
            };
            if let Some(Err(e)) = result {
                if !e.is_stopping() {
                    return Err(QueryError::Adapter {
                        role: "input",
                        stream,
                        source: e,
                    });
                }
            }
            if !query.has_failed() {
                ctx.finish().await;
            }
            Ok(())
        });
    }
}

/// An output binding before start: which node, and the adapter.
struct PendingOutput<P: Payload> {
    name: String,
    node: NodeId,
    adapter: Box<dyn OutputAdapter<P>>,
}

trait ErasedOutput: Send {
    fn node(&self) -> NodeId;
    /// Spawns the output task; returns the query task's port to it.
    fn spawn(self: Box<Self>, tasks: &mut Tasks, capacity: usize) -> Box<dyn OutputPort>;
}

impl<P: Payload> ErasedOutput for PendingOutput<P> {
    fn node(&self) -> NodeId {
        self.node
    }

    fn spawn(self: Box<Self>, tasks: &mut Tasks, capacity: usize) -> Box<dyn OutputPort> {
        let PendingOutput {
            name,
            node,
            mut adapter,
        } = *self;
        let (tx, mut rx) = mpsc::channel::<Batch<P>>(capacity);
        let (recycle, recycled) = mpsc::channel::<Batch<P>>(capacity + 2);
        let stream = name.clone();
        tasks.spawn(format!("output `{name}`"), async move {
            let fail = |source| QueryError::Adapter {
                role: "output",
                stream: stream.clone(),
                source,
            };
            while let Some(mut batch) = rx.recv().await {
                adapter.write(&batch).await.map_err(fail)?;
                batch.clear();
                let _ = recycle.try_send(batch);
            }
            adapter.finish().await.map_err(fail)
        });
        Box::new(Port {
            node,
            pending: Batch::new(),
            tx,
            recycled,
        })
    }
}

/// The query task's end of an output: takes what the graph produced for the output's node and
/// sends it to the output task.
#[async_trait]
trait OutputPort: Send {
    /// Sends what the graph produced since the last call; `false` if the output task is gone.
    async fn flush(&mut self, graph: &mut Graph) -> bool;
}

struct Port<P> {
    node: NodeId,
    pending: Batch<P>,
    tx: mpsc::Sender<Batch<P>>,
    recycled: mpsc::Receiver<Batch<P>>,
}

#[async_trait]
impl<P: Payload> OutputPort for Port<P> {
    async fn flush(&mut self, graph: &mut Graph) -> bool {
        graph.take_output(self.node, &mut self.pending);
        if self.pending.is_empty() {
            return true;
        }
        let mut batch = self.recycled.try_recv().unwrap_or_default();
        std::mem::swap(&mut batch, &mut self.pending);
        self.tx.send(batch).await.is_ok()
    }
}

struct Tasks {
    set: JoinSet<Result<(), QueryError>>,
    alive: Arc<Mutex<BTreeSet<String>>>,
    query: Arc<QueryShared>,
    grace: Duration,
}

impl Tasks {
    fn spawn(
        &mut self,
        name: String,
        fut: impl std::future::Future<Output = Result<(), QueryError>> + Send + 'static,
    ) {
        let alive = Arc::clone(&self.alive);
        let query = Arc::clone(&self.query);
        alive
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.clone());
        self.set.spawn(async move {
            let r = AssertUnwindSafe(fut).catch_unwind().await;
            alive
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&name);
            if !matches!(r, Ok(Ok(()))) {
                query.mark_failed();
            }
            r.unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_owned());
                Err(QueryError::Panicked {
                    task: name,
                    message,
                })
            })
        });
    }
}

/// A query being bound: input streams, the operators composed on them, outputs, dead-letter
/// sinks. [`Query::start`] runs it.
pub struct Query {
    name: String,
    graph: QueryGraph,
    streams: Vec<Box<dyn ErasedStream>>,
    outputs: Vec<Box<dyn ErasedOutput>>,
    shapes: HashMap<NodeId, EventShape>,
    grace: Duration,
    channel_capacity: usize,
    clock: Arc<dyn Clock>,
    clock_interval: Duration,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("name", &self.name)
            .field(
                "streams",
                &self.streams.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

impl Query {
    /// A new, empty query. Defaults: a stop grace period of 5 s, 16 batches in flight on each
    /// channel.
    pub fn new(name: impl Into<String>) -> Self {
        Query {
            name: name.into(),
            graph: QueryGraph::new(),
            streams: Vec::new(),
            outputs: Vec::new(),
            shapes: HashMap::new(),
            grace: Duration::from_secs(5),
            channel_capacity: 16,
            clock: Arc::new(SystemClock),
            clock_interval: Duration::from_secs(1),
        }
    }

    /// The clock whose readings drive the watermark strategies when no events come (default:
    /// the system clock); tests pass a [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How often the clock is read (default 1 s of tokio time; pausing tokio's clock pauses
    /// it).
    pub fn clock_interval(mut self, every: Duration) -> Self {
        self.clock_interval = every.max(Duration::from_millis(1));
        self
    }

    /// How long tasks get to finish after a stop before they are aborted.
    pub fn stop_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How many released batches may wait on each channel (streams to the query task, the query
    /// task to each output) before the sender awaits (at least 1).
    pub fn channel_capacity(mut self, batches: usize) -> Self {
        self.channel_capacity = batches.max(1);
        self
    }

    /// Creates a named input stream fed by an adapter from `factory` and `config`, and returns
    /// it for composing operators and binding outputs. Settings in `options` replace the
    /// factory's declared settings; with neither, only the adapter's own CTIs exist and
    /// violating events are rejected.
    pub fn create_stream<C, P, F>(
        &mut self,
        options: InputOptions,
        factory: &F,
        config: &C,
    ) -> Result<Stream<P>, QueryError>
    where
        P: Payload,
        F: InputAdapterFactory<C, P>,
    {
        let name = options.name.clone();
        self.add_stream(options, factory, config, false, |graph| {
            let source = graph.source::<P>().named(name);
            (source.node(), source)
        })
    }

    /// Like [`Query::create_stream`], for an *unordered* stream: its ingress releases each
    /// point or interval on arrival (`IngressConfig::on_arrival`) instead of holding it sorted
    /// until a CTI passes it, with the same CTIs and policies. Only order-insensitive operators
    /// take the stream ([`Unordered`]: filter, map, hopping and tumbling windows with an
    /// aggregate, and `ordered()`, which sorts it back into an ordinary stream), and it
    /// saves them the reorder buffer. A stream of the edge shape is refused
    /// ([`QueryError::Bind`]); edges enqueued anyway are rejected (`Error::EdgeOnArrival`,
    /// counted and sent to the dead letters).
    ///
    /// ```
    /// use punctual_adapters::{CollectOutput, InputOptions, MemoryInput, Query};
    /// use punctual_core::ops::Count;
    /// use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
    /// use punctual_policies::AdvanceTimeSettings;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let t = Time::from_ticks;
    /// let mut query = Query::new("counts");
    /// let items: Vec<StreamItem<&str>> = [12, 3, 15, 7, 21]
    ///     .into_iter()
    ///     .map(|x| StreamItem::point(t(x), "reading"))
    ///     .collect();
    /// let input = query.create_unordered_stream(
    ///     InputOptions::new("in", EventShape::Point)
    ///         .settings(AdvanceTimeSettings::unordered_start_time(TimeSpan::from_ticks(10))),
    ///     &MemoryInput,
    ///     &items,
    /// )?;
    /// let counts = input.tumbling_window(TimeSpan::from_ticks(10)).aggregate(Count);
    /// let out = CollectOutput::new();
    /// query.bind_output(&counts, &out, &())?;
    /// query.start()?.wait().await?;
    /// // Windows [0, 10), [10, 20), [20, 30): results at their ends, as an ordered query gives.
    /// let results: Vec<_> = out
    ///     .items()
    ///     .into_iter()
    ///     .filter_map(|i| match i {
    ///         StreamItem::Insert(e) => Some((e.kind.start(), e.payload)),
    ///         StreamItem::Cti(_) => None,
    ///     })
    ///     .collect();
    /// assert_eq!(results, vec![(t(10), 2), (t(20), 2), (t(30), 1)]);
    /// # Ok::<(), punctual_adapters::QueryError>(())
    /// # }).unwrap();
    /// ```
    pub fn create_unordered_stream<C, P, F>(
        &mut self,
        options: InputOptions,
        factory: &F,
        config: &C,
    ) -> Result<Unordered<P>, QueryError>
    where
        P: Payload,
        F: InputAdapterFactory<C, P>,
    {
        if options.shape == EventShape::Edge {
            return Err(QueryError::Bind(format!(
                "stream `{}` has the edge shape: an unordered stream takes points or intervals \
                 (an end edge can still change its start edge, which must wait for its CTI)",
                options.name
            )));
        }
        let name = options.name.clone();
        self.add_stream(options, factory, config, true, |graph| {
            let source = graph.unordered_source::<P>().named(name);
            (source.node(), source)
        })
    }

    fn add_stream<C, P, F, S>(
        &mut self,
        options: InputOptions,
        factory: &F,
        config: &C,
        on_arrival: bool,
        make_source: impl FnOnce(&QueryGraph) -> (NodeId, S),
    ) -> Result<S, QueryError>
    where
        P: Payload,
        F: InputAdapterFactory<C, P>,
    {
        if self.streams.iter().any(|s| s.name() == options.name) {
            return Err(QueryError::Bind(format!(
                "query `{}` already has a stream named `{}`",
                self.name, options.name
            )));
        }
        let settings = options.settings.or_else(|| {
            factory
                .declare_advance_time_properties(config, options.shape)
                .map(AdvanceTimeSettings::from)
        });
        let mut ingress = settings
            .as_ref()
            .map(IngressConfig::from)
            .unwrap_or_default();
        ingress.max_buffered = options.max_buffered;
        ingress.on_arrival = on_arrival;
        let adapter =
            factory
                .create(config, options.shape)
                .map_err(|source| QueryError::Create {
                    stream: options.name.clone(),
                    source,
                })?;
        let watermark = match &options.watermark {
            None => None,
            Some(w) => Some(w.downcast_ref::<Watermark<P>>().cloned().ok_or_else(|| {
                QueryError::Bind(format!(
                    "the watermark strategy of `{}` is for another payload type than the stream's",
                    options.name
                ))
            })?),
        };
        let (node, source) = make_source(&self.graph);
        self.shapes.insert(node, options.shape);
        self.streams.push(Box::new(PendingStream::<P> {
            name: options.name,
            source: node,
            late: None,
            watermark,
            config: ingress,
            import: settings
                .as_ref()
                .and_then(|s| s.import())
                .map(|i| i.stream().to_owned()),
            adapter: Some(Box::new(adapter)),
            dead_letters: None,
            core: None,
        }));
        Ok(source)
    }

    fn check_stream<P: Payload>(&self, stream: &Stream<P>) -> Result<(), QueryError> {
        self.check_graph(stream.graph())
    }

    /// Refuses a stream of another query's graph.
    fn check_graph(&self, graph: &QueryGraph) -> Result<(), QueryError> {
        if graph.same(&self.graph) {
            Ok(())
        } else {
            Err(QueryError::Bind(format!(
                "the stream is not of query `{}`",
                self.name
            )))
        }
    }

    /// Binds an output adapter to a stream (an input stream or an operator's output): it
    /// receives the stream's events and CTIs in release order. One output per stream; the
    /// factory is asked for an adapter of the input's shape, or `Interval` for an operator's
    /// output (which may hold points, intervals and edges).
    pub fn bind_output<C, P, F>(
        &mut self,
        stream: &Stream<P>,
        factory: &F,
        config: &C,
    ) -> Result<(), QueryError>
    where
        P: Payload,
        F: OutputAdapterFactory<C, P>,
    {
        self.check_stream(stream)?;
        self.bind_output_at(stream.node(), factory, config)?;
        self.graph.keep_output(stream);
        Ok(())
    }

    /// Binds an output adapter to an unordered stream ([`Query::create_unordered_stream`] and
    /// the filters and maps on it): the adapter receives each event as it is released, in
    /// arrival order, and the CTIs; every event after `CTI(t)` has sync time `>= t`, but
    /// events between two CTIs are not sorted and may lie at or after the next CTI. For
    /// outputs that count, sum or store, which do not need the order: it spares the hold until
    /// the CTI and the sort ([`Unordered::ordered`] gives the ordinary stream instead).
    ///
    /// ```
    /// use punctual_adapters::{CollectOutput, InputOptions, MemoryInput, Query};
    /// use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
    /// use punctual_policies::AdvanceTimeSettings;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let t = Time::from_ticks;
    /// let mut query = Query::new("big");
    /// let items: Vec<StreamItem<i64>> = [(7, 70), (3, 30), (9, 5), (8, 80)]
    ///     .into_iter()
    ///     .map(|(at, v)| StreamItem::point(t(at), v))
    ///     .collect();
    /// // A CTI after every event, 5 behind the highest start.
    /// let input = query.create_unordered_stream(
    ///     InputOptions::new("in", EventShape::Point)
    ///         .settings(AdvanceTimeSettings::unordered_start_time(TimeSpan::from_ticks(5))),
    ///     &MemoryInput,
    ///     &items,
    /// )?;
    /// let out = CollectOutput::new();
    /// query.bind_unordered_output(&input.filter(|v| *v >= 10), &out, &())?;
    /// query.start()?.wait().await?;
    /// // Each kept event as soon as it is enqueued, 3 after 7 (and after CTI(2)).
    /// let items: Vec<_> = out
    ///     .items()
    ///     .into_iter()
    ///     .map(|i| match i {
    ///         StreamItem::Insert(e) => (e.kind.start(), Some(e.payload)),
    ///         StreamItem::Cti(c) => (c, None),
    ///     })
    ///     .collect();
    /// assert_eq!(
    ///     items,
    ///     vec![
    ///         (t(7), Some(70)),
    ///         (t(2), None),
    ///         (t(3), Some(30)),
    ///         (t(4), None),
    ///         (t(8), Some(80)),
    ///         (Time::INF, None),
    ///     ]
    /// );
    /// # Ok::<(), punctual_adapters::QueryError>(())
    /// # }).unwrap();
    /// ```
    pub fn bind_unordered_output<C, P, F>(
        &mut self,
        stream: &Unordered<P>,
        factory: &F,
        config: &C,
    ) -> Result<(), QueryError>
    where
        P: Payload,
        F: OutputAdapterFactory<C, P>,
    {
        self.check_graph(stream.graph())?;
        self.bind_output_at(stream.node(), factory, config)?;
        self.graph.keep_unordered_output(stream);
        Ok(())
    }

    /// Creates the output adapter for `node` and records it (the caller keeps the node's
    /// output in the graph).
    fn bind_output_at<C, P, F>(
        &mut self,
        node: NodeId,
        factory: &F,
        config: &C,
    ) -> Result<(), QueryError>
    where
        P: Payload,
        F: OutputAdapterFactory<C, P>,
    {
        let input = self.streams.iter().find(|s| s.node() == node);
        let name = input.map_or_else(|| format!("node {node}"), |s| s.name().to_owned());
        if self.outputs.iter().any(|o| o.node() == node) {
            return Err(QueryError::Bind(format!(
                "stream `{name}` already has an output adapter"
            )));
        }
        let shape = if input.is_some() {
            self.shape_of(node)
        } else {
            EventShape::Interval
        };
        let adapter = factory
            .create(config, shape)
            .map_err(|source| QueryError::Create {
                stream: name.clone(),
                source,
            })?;
        self.outputs.push(Box::new(PendingOutput {
            name,
            node,
            adapter: Box::new(adapter),
        }));
        Ok(())
    }

    fn shape_of(&self, node: NodeId) -> EventShape {
        self.shapes
            .get(&node)
            .copied()
            .unwrap_or(EventShape::Interval)
    }

    /// The late-data side output of an input stream: every event its policy or watermark
    /// strategy drops, with the reason and the CTI it broke, as an ordinary stream (each a point
    /// at that CTI, sealed by the input's CTIs). Bind an output adapter to it, or compose on it.
    pub fn late_events<P: Payload>(
        &mut self,
        stream: &Stream<P>,
    ) -> Result<Stream<LateEvent<P>>, QueryError> {
        self.check_stream(stream)?;
        let graph = self.graph.clone();
        let pending = self
            .streams
            .iter_mut()
            .find(|s| s.node() == stream.node())
            .and_then(|s| s.as_any().downcast_mut::<PendingStream<P>>())
            .ok_or_else(|| {
                QueryError::Bind("late events belong to input streams, not operator outputs".into())
            })?;
        Ok(pending.late.get_or_insert_with(|| graph.source()).clone())
    }

    /// Sends an input stream's dead letters (dropped, rejected, malformed and unreleased items,
    /// with reasons) to `sink`. Without a sink they are only counted.
    pub fn bind_dead_letters<P: Payload>(
        &mut self,
        stream: &Stream<P>,
        sink: impl DeadLetterSink<P> + 'static,
    ) -> Result<(), QueryError> {
        self.check_stream(stream)?;
        let pending = self
            .streams
            .iter_mut()
            .find(|s| s.node() == stream.node())
            .and_then(|s| s.as_any().downcast_mut::<PendingStream<P>>())
            .ok_or_else(|| {
                QueryError::Bind(
                    "dead letters belong to input streams, not operator outputs".into(),
                )
            })?;
        pending.dead_letters = Some(Box::new(sink));
        Ok(())
    }

    fn check_imports(&self) -> Result<(), QueryError> {
        let find = |n: &str| self.streams.iter().position(|s| s.name() == n);
        for (i, s) in self.streams.iter().enumerate() {
            let mut chain = vec![s.name().to_owned()];
            let mut cur = i;
            while let Some(src) = self.streams[cur].import_source() {
                let Some(j) = find(src) else {
                    return Err(QueryError::Bind(format!(
                        "stream `{}` imports CTIs from `{src}`, which is not a stream of query `{}`",
                        self.streams[cur].name(),
                        self.name
                    )));
                };
                chain.push(src.to_owned());
                if j == i {
                    return Err(QueryError::Bind(format!(
                        "import cycle: {}",
                        chain.join(" imports ")
                    )));
                }
                cur = j;
                if chain.len() > self.streams.len() + 1 {
                    break; // a cycle not through `i`; found when starting from a stream on it
                }
            }
        }
        Ok(())
    }

    /// Starts every adapter. Must be called within a tokio runtime with timers enabled (as
    /// `#[tokio::main]` and `#[tokio::test]` build it); otherwise it returns an error. The
    /// operator graph moves to the query's task: compose every operator before starting
    /// (operators added to this query's streams afterwards are not part of it).
    pub fn start(mut self) -> Result<RunningQuery, QueryError> {
        self.check_imports()?;
        check_runtime()?;
        let query = Arc::new(QueryShared::new());
        let (tx, mut rx) = mpsc::channel::<Delivery>(self.channel_capacity);
        let mut shared = Vec::new();
        let mut recycle = HashMap::new();
        for s in &mut self.streams {
            let (view, back) = s.build(&query, &tx);
            shared.push(view);
            recycle.insert(s.node(), back);
        }
        // The channel closes when the last stream core (which hold clones) is dropped.
        drop(tx);
        let mut importers: Vec<Vec<Arc<dyn ImportTarget>>> =
            (0..self.streams.len()).map(|_| Vec::new()).collect();
        for s in &self.streams {
            if let Some(src) = s.import_source() {
                if let (Some(j), Some(target)) = (
                    self.streams.iter().position(|x| x.name() == src),
                    s.target(),
                ) {
                    importers[j].push(target);
                }
            }
        }
        for (s, imp) in self.streams.iter_mut().zip(importers) {
            s.set_importers(imp);
        }
        let mut tasks = Tasks {
            set: JoinSet::new(),
            alive: Arc::new(Mutex::new(BTreeSet::new())),
            query: Arc::clone(&query),
            grace: self.grace,
        };
        let mut ports: Vec<Box<dyn OutputPort>> = self
            .outputs
            .into_iter()
            .map(|o| o.spawn(&mut tasks, self.channel_capacity))
            .collect();
        let clock_targets: Vec<Weak<dyn ClockTarget>> = self
            .streams
            .iter()
            .filter_map(|s| s.clock_target())
            .collect();
        if !clock_targets.is_empty() {
            let (clock, every) = (Arc::clone(&self.clock), self.clock_interval);
            tasks.spawn(format!("clock of `{}`", self.name), async move {
                let mut ticks = tokio::time::interval(every);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticks.tick().await;
                    let now = clock.now();
                    let mut alive = false;
                    for target in &clock_targets {
                        // Weak: the clock must not keep a finished stream open.
                        if let Some(t) = target.upgrade() {
                            alive = true;
                            t.on_clock(now).await;
                        }
                    }
                    if !alive {
                        return Ok(());
                    }
                }
            });
        }
        let mut graph = self.graph.take_graph();
        let (explain_tx, mut explain_rx) =
            mpsc::channel::<tokio::sync::oneshot::Sender<Vec<Explanation>>>(4);
        let query_name = self.name.clone();
        tasks.spawn(format!("query `{}`", self.name), async move {
            // When each source's CTI last advanced, for "no new CTI for N s" in explain.
            let mut last_cti: HashMap<NodeId, (punctual_core::Time, Instant)> = HashMap::new();
            let started = Instant::now();
            let aged = |graph: &Graph, last_cti: &HashMap<NodeId, (punctual_core::Time, Instant)>| {
                let now = Instant::now();
                let mut lines = graph.explain();
                let quiet: HashMap<String, Duration> = lines
                    .iter()
                    .filter(|e| e.operator == "input" && e.cti < punctual_core::Time::INF)
                    .map(|e| {
                        let since = last_cti.get(&e.node).map_or(started, |&(_, at)| at);
                        (e.label.clone(), now - since)
                    })
                    .collect();
                for e in &mut lines {
                    e.quiet_for = quiet.get(&e.label).copied().filter(|_| e.operator == "input");
                    e.held_quiet_for = e.held_by.as_ref().and_then(|(l, _)| quiet.get(l).copied());
                }
                lines
            };
            let mut operator_metrics = crate::observe::OperatorMetrics::default();
            let mut explain_every = tokio::time::interval(Duration::from_secs(10));
            explain_every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let Delivery { node, mut batch } = tokio::select! {
                    d = rx.recv() => match d {
                        Some(d) => d,
                        None => return Ok(()),
                    },
                    Some(reply) = explain_rx.recv() => {
                        let _ = reply.send(aged(&graph, &last_cti));
                        continue;
                    }
                    _ = explain_every.tick(), if tracing::enabled!(target: "punctual::explain", tracing::Level::DEBUG) => {
                        for e in aged(&graph, &last_cti) {
                            tracing::debug!(target: "punctual::explain", query = %query_name, "{e}");
                        }
                        continue;
                    }
                };
                if let Some(t) = batch.last_cti() {
                    let entry = last_cti.entry(node).or_insert((t, Instant::now()));
                    if t > entry.0 {
                        *entry = (t, Instant::now());
                    }
                }
                graph.feed_any(node, &mut *batch);
                if let Some(back) = recycle.get(&node) {
                    let _ = back.try_send(batch);
                }
                for port in &mut ports {
                    // An output that is gone has failed and reported it; keep feeding the rest.
                    let _ = port.flush(&mut graph).await;
                }
                operator_metrics.record(&query_name, &graph);
            }
        });
        for s in self.streams {
            s.spawn(&mut tasks);
        }
        Ok(RunningQuery {
            name: self.name,
            tasks,
            streams: shared,
            explain: explain_tx,
        })
    }
}

/// The query needs a current tokio runtime whose timer is enabled (for the stop grace period).
fn check_runtime() -> Result<(), QueryError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(QueryError::Bind(
            "Query::start must be called within a tokio runtime".into(),
        ));
    }
    // Creating a timer on a runtime without one panics; ask once, here, rather than later.
    let has_timer = std::panic::catch_unwind(|| {
        drop(tokio::time::sleep(Duration::ZERO));
    })
    .is_ok();
    if has_timer {
        Ok(())
    } else {
        Err(QueryError::Bind(
            "the tokio runtime has no timer: build it with enable_time() or enable_all()".into(),
        ))
    }
}

/// A handle that reads a running query's counters from elsewhere (while another task awaits
/// [`RunningQuery::wait`], say).
#[derive(Clone, Debug)]
pub struct Monitor {
    streams: Vec<Arc<StreamShared>>,
}

impl Monitor {
    /// The counters of the stream named `name`, as of its last enqueue.
    pub fn counters(&self, name: &str) -> Option<IngressCounters> {
        self.streams
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.counters())
    }
}

/// A handle that can stop a running query from elsewhere.
#[derive(Clone, Debug)]
pub struct StopHandle {
    query: Arc<QueryShared>,
}

impl StopHandle {
    /// Tells every adapter that the query is stopping.
    pub fn stop(&self) {
        self.query.request_stop();
    }
}

/// A started query.
pub struct RunningQuery {
    name: String,
    tasks: Tasks,
    streams: Vec<Arc<StreamShared>>,
    explain: mpsc::Sender<tokio::sync::oneshot::Sender<Vec<Explanation>>>,
}

impl std::fmt::Debug for RunningQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningQuery")
            .field("name", &self.name)
            .finish()
    }
}

/// Each stream's counters when the query ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryReport {
    /// Stream names and counters, in creation order.
    pub streams: Vec<(String, IngressCounters)>,
    /// Per stream with a watermark strategy: the clock readings that issued CTIs. Feeding the
    /// same input to an [`Ingress`] with these readings at the same positions
    /// ([`Ingress::on_clock`]) gives the same output.
    pub clock_records: Vec<(String, Vec<ClockReading>)>,
}

impl QueryReport {
    /// The counters of the stream named `name`.
    pub fn counters(&self, name: &str) -> Option<IngressCounters> {
        self.streams
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
    }
}

impl RunningQuery {
    /// The counters of the stream named `name`, as of its last enqueue.
    pub fn counters(&self, name: &str) -> Option<IngressCounters> {
        self.streams
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.counters())
    }

    /// Where every input and operator of the running query stands: its CTI, each input's CTI,
    /// the input holding it back, the state it holds. Empty once the query task has ended.
    pub async fn explain(&self) -> Vec<Explanation> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.explain.send(tx).await.is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }

    /// A handle to read the streams' counters from another task.
    pub fn monitor(&self) -> Monitor {
        Monitor {
            streams: self.streams.clone(),
        }
    }

    /// A handle to stop the query from another task.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            query: Arc::clone(&self.tasks.query),
        }
    }

    /// Stops the query: adapters are told to stop, final CTIs are issued where configured,
    /// outputs drain, and every task is joined.
    pub async fn stop(self) -> Result<QueryReport, QueryError> {
        self.tasks.query.request_stop();
        self.wait().await
    }

    /// Waits until every task has ended (all inputs exhausted, or a stop). Returns the first
    /// error of any task (after stopping the others), or each stream's counters.
    pub async fn wait(mut self) -> Result<QueryReport, QueryError> {
        let mut first: Option<QueryError> = None;
        let mut stop = self.tasks.query.subscribe();
        let mut deadline: Option<Instant> = None;
        loop {
            if deadline.is_none() && *stop.borrow() {
                deadline = Some(Instant::now() + self.tasks.grace);
            }
            let next = match deadline {
                None => tokio::select! {
                    r = self.tasks.set.join_next() => r,
                    _ = stop.changed() => continue,
                },
                Some(d) => tokio::select! {
                    r = self.tasks.set.join_next() => r,
                    _ = tokio::time::sleep_until(d) => {
                        let tasks: Vec<String> = self
                            .tasks
                            .alive
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .iter()
                            .cloned()
                            .collect();
                        self.tasks.set.abort_all();
                        while self.tasks.set.join_next().await.is_some() {}
                        first.get_or_insert(QueryError::StopTimeout {
                            grace: self.tasks.grace,
                            tasks,
                        });
                        break;
                    }
                },
            };
            match next {
                None => break,
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => {
                    first.get_or_insert(e);
                    self.tasks.query.mark_failed();
                }
                // Only aborted tasks end this way; panics are caught inside the task.
                Some(Err(_)) => {}
            }
        }
        if let Some(f) = self.tasks.query.failure() {
            first.get_or_insert(QueryError::Stream(f));
        }
        match first {
            Some(e) => Err(e),
            None => Ok(QueryReport {
                streams: self
                    .streams
                    .iter()
                    .map(|s| (s.name.clone(), s.counters()))
                    .collect(),
                clock_records: self
                    .streams
                    .iter()
                    .map(|s| (s.name.clone(), s.clock_record()))
                    .filter(|(_, r)| !r.is_empty())
                    .collect(),
            }),
        }
    }
}
