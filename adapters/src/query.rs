//! Query binding and the tokio runtime: create named input streams from adapter factories, bind
//! outputs, start, stop, wait.
//!
//! Every input adapter runs as a task; so does every output adapter. A stream closes when its
//! adapter has returned (then the final CTI, if configured, is issued) and every stream it
//! imports CTIs from has closed; its output adapter then gets [`OutputAdapter::finish`]. The
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
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use punctual_core::{Batch, EventShape};
use punctual_policies::{
    AdvanceTimeSettings, Ingress, IngressConfig, IngressCounters, DEFAULT_MAX_BUFFERED,
};

use crate::adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, Payload,
};
use crate::context::{
    BatchChannel, DeadLetterSink, ImportTarget, InputContext, QueryShared, StreamCore, StreamShared,
};
use crate::error::QueryError;

/// How a stream is created: its name, shape, advance-time settings and buffer cap.
#[derive(Clone, Debug)]
pub struct InputOptions {
    name: String,
    shape: EventShape,
    settings: Option<AdvanceTimeSettings>,
    max_buffered: usize,
}

impl InputOptions {
    /// A stream with this name and shape; defaults: the factory's declared settings (if any),
    /// a buffer cap of [`DEFAULT_MAX_BUFFERED`] events.
    pub fn new(name: impl Into<String>, shape: EventShape) -> Self {
        InputOptions {
            name: name.into(),
            shape,
            settings: None,
            max_buffered: DEFAULT_MAX_BUFFERED,
        }
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

/// A typed handle on a stream created by [`Query::create_stream`].
#[derive(Debug)]
pub struct InputStream<P> {
    index: usize,
    name: String,
    _payload: PhantomData<fn() -> P>,
}

impl<P> InputStream<P> {
    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

struct PendingStream<P: Payload> {
    name: String,
    shape: EventShape,
    config: IngressConfig,
    import: Option<String>,
    adapter: Option<Box<dyn InputAdapter<P>>>,
    output: Option<Box<dyn OutputAdapter<P>>>,
    dead_letters: Option<Box<dyn DeadLetterSink<P>>>,
    core: Option<Arc<StreamCore<P>>>,
    rx: Option<OutputEnds<P>>,
}

/// The output task's ends of a stream's channels: batches in, emptied batches back.
struct OutputEnds<P> {
    batches: mpsc::Receiver<Batch<P>>,
    recycle: mpsc::Sender<Batch<P>>,
}

/// A pending stream with its payload type erased.
trait ErasedStream: Send {
    fn name(&self) -> &str;
    fn import_source(&self) -> Option<&str>;
    fn as_any(&mut self) -> &mut dyn Any;
    fn build(&mut self, query: &Arc<QueryShared>, capacity: usize) -> Arc<StreamShared>;
    fn target(&self) -> Option<Arc<dyn ImportTarget>>;
    fn set_importers(&mut self, importers: Vec<Arc<dyn ImportTarget>>);
    fn spawn(self: Box<Self>, tasks: &mut Tasks);
}

impl<P: Payload> ErasedStream for PendingStream<P> {
    fn name(&self) -> &str {
        &self.name
    }

    fn import_source(&self) -> Option<&str> {
        self.import.as_deref()
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }

    fn build(&mut self, query: &Arc<QueryShared>, capacity: usize) -> Arc<StreamShared> {
        let shared = Arc::new(StreamShared::new(self.name.clone()));
        let channel = self.output.as_ref().map(|_| {
            let (tx, rx) = mpsc::channel(capacity);
            // Room for every batch in flight, so that returning one never waits.
            let (recycle_tx, recycled) = mpsc::channel(capacity + 2);
            self.rx = Some(OutputEnds {
                batches: rx,
                recycle: recycle_tx,
            });
            BatchChannel { tx, recycled }
        });
        let mut core = StreamCore::new(
            Arc::clone(&shared),
            Ingress::new(self.config),
            channel,
            Arc::clone(query),
        );
        if let Some(sink) = self.dead_letters.take() {
            core.set_dead_letters(sink);
        }
        self.core = Some(Arc::new(core));
        shared
    }

    fn target(&self) -> Option<Arc<dyn ImportTarget>> {
        self.core
            .as_ref()
            .map(|c| Arc::clone(c) as Arc<dyn ImportTarget>)
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
        let name = this.name;
        let grace = tasks.grace;
        let mut ctx = InputContext::new(core);
        let stream = name.clone();
        let query = Arc::clone(&tasks.query);
        tasks.spawn(format!("input `{name}`"), async move {
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
        if let (Some(mut output), Some(ends)) = (this.output, this.rx) {
            let OutputEnds {
                batches: mut rx,
                recycle,
            } = ends;
            let stream = name.clone();
            tasks.spawn(format!("output `{name}`"), async move {
                let fail = |source| QueryError::Adapter {
                    role: "output",
                    stream: stream.clone(),
                    source,
                };
                while let Some(mut batch) = rx.recv().await {
                    output.write(&batch).await.map_err(fail)?;
                    batch.clear();
                    let _ = recycle.try_send(batch);
                }
                output.finish().await.map_err(fail)
            });
        }
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

/// A query being bound: streams, outputs, dead-letter sinks. [`Query::start`] runs it.
pub struct Query {
    name: String,
    streams: Vec<Box<dyn ErasedStream>>,
    grace: Duration,
    channel_capacity: usize,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("name", &self.name)
            .field(
                "streams",
                &self.streams.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Query {
    /// A new, empty query. Defaults: a stop grace period of 5 s, 16 batches in flight per
    /// stream.
    pub fn new(name: impl Into<String>) -> Self {
        Query {
            name: name.into(),
            streams: Vec::new(),
            grace: Duration::from_secs(5),
            channel_capacity: 16,
        }
    }

    /// How long tasks get to finish after a stop before they are aborted.
    pub fn stop_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How many released batches may wait between a stream and its output adapter before the
    /// stream's adapter awaits in `enqueue` (at least 1).
    pub fn channel_capacity(mut self, batches: usize) -> Self {
        self.channel_capacity = batches.max(1);
        self
    }

    /// Creates a named input stream fed by an adapter from `factory` and `config`. Settings in
    /// `options` replace the factory's declared settings; with neither, only the adapter's own
    /// CTIs exist and violating events are rejected.
    pub fn create_stream<C, P, F>(
        &mut self,
        options: InputOptions,
        factory: &F,
        config: &C,
    ) -> Result<InputStream<P>, QueryError>
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
        let adapter =
            factory
                .create(config, options.shape)
                .map_err(|source| QueryError::Create {
                    stream: options.name.clone(),
                    source,
                })?;
        let index = self.streams.len();
        self.streams.push(Box::new(PendingStream::<P> {
            name: options.name.clone(),
            shape: options.shape,
            config: ingress,
            import: settings
                .as_ref()
                .and_then(|s| s.import())
                .map(|i| i.stream().to_owned()),
            adapter: Some(Box::new(adapter)),
            output: None,
            dead_letters: None,
            core: None,
            rx: None,
        }));
        Ok(InputStream {
            index,
            name: options.name,
            _payload: PhantomData,
        })
    }

    fn pending<P: Payload>(
        &mut self,
        stream: &InputStream<P>,
    ) -> Result<&mut PendingStream<P>, QueryError> {
        self.streams
            .get_mut(stream.index)
            .and_then(|s| s.as_any().downcast_mut::<PendingStream<P>>())
            .ok_or_else(|| {
                QueryError::Bind(format!("stream `{}` is not of this query", stream.name))
            })
    }

    /// Binds an output adapter to a stream: it receives the stream's released events and CTIs.
    /// One output per stream.
    pub fn bind_output<C, P, F>(
        &mut self,
        stream: &InputStream<P>,
        factory: &F,
        config: &C,
    ) -> Result<(), QueryError>
    where
        P: Payload,
        F: OutputAdapterFactory<C, P>,
    {
        let pending = self.pending(stream)?;
        if pending.output.is_some() {
            return Err(QueryError::Bind(format!(
                "stream `{}` already has an output adapter",
                stream.name
            )));
        }
        let adapter =
            factory
                .create(config, pending.shape)
                .map_err(|source| QueryError::Create {
                    stream: stream.name.clone(),
                    source,
                })?;
        pending.output = Some(Box::new(adapter));
        Ok(())
    }

    /// Sends the stream's dead letters (dropped, rejected, malformed and unreleased items, with
    /// reasons) to `sink`. Without a sink they are only counted.
    pub fn bind_dead_letters<P: Payload>(
        &mut self,
        stream: &InputStream<P>,
        sink: impl DeadLetterSink<P> + 'static,
    ) -> Result<(), QueryError> {
        self.pending(stream)?.dead_letters = Some(Box::new(sink));
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
    /// `#[tokio::main]` and `#[tokio::test]` build it); otherwise it returns an error.
    pub fn start(mut self) -> Result<RunningQuery, QueryError> {
        self.check_imports()?;
        check_runtime()?;
        let query = Arc::new(QueryShared::new());
        let shared: Vec<Arc<StreamShared>> = self
            .streams
            .iter_mut()
            .map(|s| s.build(&query, self.channel_capacity))
            .collect();
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
        for s in self.streams {
            s.spawn(&mut tasks);
        }
        Ok(RunningQuery {
            name: self.name,
            tasks,
            streams: shared,
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
            }),
        }
    }
}
