//! Query binding and the tokio runtime: create named input streams from adapter factories,
//! compose operators on them (the typed [`Stream`] API), bind outputs to any stream, start,
//! stop, wait.
//!
//! A query is a [`Plan`] (the inputs, the operators, the outputs) plus the adapters that feed
//! and read it. [`Query::start`] builds the plan's [`Driver`](punctual_engine::Driver) and runs
//! it in a thin shell: every input adapter runs as a task whose enqueue calls run the driver
//! (ingress, CTI imports, operators) under one lock; every output adapter runs as a task fed
//! over a bounded channel, so an adapter awaits in `enqueue` when an output is behind; a clock
//! task hands readings to the watermark strategies. An input ends when its adapter returns
//! (then its final CTI, if configured, is issued); when every input has ended, the query ends:
//! what no CTI released is counted as `unreleased`, and each output adapter gets
//! [`OutputAdapter::finish`]. Any task's error or panic stops the query and comes back from
//! [`RunningQuery::wait`]; tasks that do not end within the grace period after a stop are
//! aborted and named in [`QueryError::StopTimeout`].
//!
//! ```
//! use punctual_adapters::{CollectOutput, MemoryInput};
//! use punctual_runtime::{InputOptions, Query};
//! use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
//! use punctual_policies::AdvanceTimeSettings;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let t = Time::from_ticks;
//! let mut query = Query::new("demo");
//! let items = vec![StreamItem::point(t(3), 'b'), StreamItem::point(t(1), 'a')];
//! let input = query.create_stream(
//!     InputOptions::new("in", EventShape::Point)
//!         .settings(AdvanceTimeSettings::unordered_start_time(TimeSpan::from_ticks(5))),
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
//!     StreamItem::point(t(1), 'a'), StreamItem::point(t(3), 'b'), StreamItem::Cti(Time::INF),
//! ]);
//! assert_eq!(report.counters("in").unwrap().released, 2);
//! # Ok::<(), punctual_runtime::QueryError>(())
//! # }).unwrap();
//! ```

mod cut;
mod gate;
mod held_payloads;
mod ports;
mod report;
mod restore;
mod running;
pub(crate) mod shell;
mod signals;
mod snapshots;
pub use report::held_items;
mod tasks;
mod worker;
pub use cut::WorkerCut;
pub use worker::{Backlog, Exchange, QueryWorker};

use std::sync::Arc;
use std::time::Duration;

use punctual_core::ops::{AnyStream, Stream};
use punctual_core::Order;
use punctual_engine::{DeadLetterSink, InputOptions, Plan};
use punctual_policies::{AdvanceTimeSettings, LateEvent};

pub use running::{
    Ending, HeldItem, Monitor, OperatorDropItem, QueryFailure, QueryReport, RunningQuery,
    StopHandle, StopMode, MAX_REPORTED_HELD,
};

use crate::adapter::{InputAdapterFactory, OutputAdapterFactory, Payload};
use crate::checkpoint::Checkpoints;
use crate::clock::{Clock, SystemClock};
use crate::error::{AdapterError, QueryError};
use ports::{ErasedOutput, PendingOutput};
use shell::{Shell, Signals, WorkerSide};
use tasks::{ErasedInput, PendingInput, Tasks};

#[cfg(doc)]
use crate::adapter::OutputAdapter;

/// A query being bound: input streams with their adapters, the operators composed on them,
/// outputs, dead-letter sinks. [`Query::start`] runs it.
pub struct Query {
    plan: Plan,
    inputs: Vec<Box<dyn ErasedInput>>,
    outputs: Vec<Box<dyn ErasedOutput>>,
    grace: Duration,
    channel_capacity: usize,
    /// `None`: no clock is read ([`Query::clock_from_inputs`]).
    clock: Option<Arc<dyn Clock>>,
    clock_interval: Duration,
    monitor: Monitor,
    checkpoints: Option<Checkpoints>,
    /// Inputs whose adapters cannot resume their source at a position, for checkpoints.
    not_resumable: Vec<String>,
    /// The files the resumable inputs read, by input, for checkpoints.
    input_files: Vec<(String, std::path::PathBuf)>,
    /// Payload types the report can show.
    shows: held_payloads::Shows,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("plan", &self.plan)
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

impl Query {
    /// A new, empty query. Defaults: a stop grace period of 5 s, 16 batches in flight on each
    /// output's channel, the system clock read every second.
    pub fn new(name: impl Into<String>) -> Self {
        Query {
            plan: Plan::new(name),
            inputs: Vec::new(),
            outputs: Vec::new(),
            grace: Duration::from_secs(5),
            channel_capacity: 16,
            clock: Some(Arc::new(SystemClock)),
            clock_interval: Duration::from_secs(1),
            monitor: Monitor::default(),
            checkpoints: None,
            not_resumable: Vec::new(),
            input_files: Vec::new(),
            shows: held_payloads::Shows::default(),
        }
    }

    /// Runs with checkpoints in `checkpoints`' directory: a snapshot of the whole query (its
    /// state, where each input's source stands, where each output has durably written) every
    /// [`Checkpoints::every`], and a query started again with the same directory continues
    /// from its last snapshot: each input resumes at its position, each output exactly where
    /// it was (no duplicate, no gap). See [`crate::checkpoint`] for how, and what it needs of
    /// the inputs, operators and outputs (checked by [`Query::start`]). On several workers
    /// (`punctual_cluster::run_query`, threads of one process) each snapshot is cut across
    /// the workers, and restores on any number of workers (its keys in as many parts as
    /// workers took it: [`Query::start_worker`]).
    ///
    /// ```no_run
    /// use punctual_adapters::{
    ///     JsonLinesInput, JsonLinesInputConfig, JsonLinesOutput, JsonLinesOutputConfig,
    /// };
    /// use punctual_runtime::{Checkpoints, InputOptions, Query};
    /// use punctual_core::{EventShape};
    /// use punctual_rows::{Row};
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut query = Query::new("resilient").checkpoints(Checkpoints::new("state/"));
    /// let rows = query.create_stream::<_, Row, _, _>(
    ///     InputOptions::new("in", EventShape::Point),
    ///     &JsonLinesInput,
    ///     &JsonLinesInputConfig::new("in.jsonl"),
    /// )?;
    /// query.bind_output(&rows, &JsonLinesOutput, &JsonLinesOutputConfig::new("out.jsonl"))?;
    /// // Killed and started again, it goes on from its last snapshot.
    /// query.start()?.wait().await?;
    /// # Ok(()) }
    /// ```
    pub fn checkpoints(mut self, checkpoints: Checkpoints) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// Shows payloads of type `T` (with `Debug`) in [`QueryReport::held_items`]: what the
    /// operators still held when the query ended. [`Row`](punctual_rows::Row), strings,
    /// numbers, `bool` and `char` are shown without it; other payloads are listed with their
    /// lifetimes only.
    ///
    /// ```
    /// use punctual_runtime::Query;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Reading { device: u32, celsius: f64 }
    /// let query = Query::new("sensors").show_held::<Reading>();
    /// # drop(query);
    /// ```
    pub fn show_held<T: std::fmt::Debug + 'static>(mut self) -> Self {
        self.shows.add::<T>();
        self
    }

    /// A handle on the query's counters, usable before it starts (it knows none until then)
    /// and after it ends.
    pub fn monitor(&self) -> Monitor {
        self.monitor.clone()
    }

    /// The clock whose readings drive the watermark strategies when no events come (default:
    /// the system clock); tests pass a [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Reads no clock: the watermark strategies advance with their streams' events and with
    /// the clock readings the input adapters give themselves
    /// ([`InputContext::tick`](crate::InputContext::tick)), as a replay of recorded arrivals
    /// does, so that the CTIs depend on the input alone. [`Query::clock`] reads a clock again.
    ///
    /// ```
    /// use punctual_runtime::Query;
    /// let query = Query::new("replay").clock_from_inputs();
    /// ```
    pub fn clock_from_inputs(mut self) -> Self {
        self.clock = None;
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

    /// The most events (or groups) the query may hold waiting for CTIs, across every input's
    /// reorder buffer and every operator (default
    /// [`DEFAULT_MAX_HELD`](punctual_engine::DEFAULT_MAX_HELD), 4,000,000): one more fails
    /// the query with [`EnqueueError::OverBudget`](crate::EnqueueError::OverBudget), which
    /// names what holds the most and the input whose CTI it waits for. Checked after every
    /// call into the query.
    pub fn max_held(mut self, n: usize) -> Self {
        self.plan.max_held(n);
        self
    }

    /// How many released batches may wait on each output's channel before the query awaits
    /// (at least 1).
    pub fn channel_capacity(mut self, batches: usize) -> Self {
        self.channel_capacity = batches.max(1);
        self
    }

    /// Creates a named input stream fed by an adapter from `factory` and `config`, and returns
    /// it for composing operators and binding outputs. Settings in `options` replace the
    /// factory's declared settings; with neither, only the adapter's own CTIs exist and
    /// violating events are rejected. The stream is ordered, or unordered after
    /// [`InputOptions::unordered`]: its events then go on in arrival order, which spares the
    /// reorder buffer for operators that do not need the order (windows, filters, the join's
    /// left side); see [`punctual_core::order`].
    ///
    /// A source of several partitions ([`InputAdapterFactory::partitions`]) becomes one input
    /// per partition, named `NAME#0`, `NAME#1`, ..., each with its own adapter and with the
    /// settings applied to its own items, and the stream returned is their union (see
    /// [`Plan::partitioned_input`]): on several workers, each worker reads the partitions
    /// assigned to it. The stream's counters are each partition's.
    ///
    /// ```
    /// use punctual_adapters::{CollectOutput, MemoryInput};
    /// use punctual_runtime::{InputOptions, Query};
    /// use punctual_core::ops::Count;
    /// use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
    /// use punctual_policies::AdvanceTimeSettings;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let t = Time::from_ticks;
    /// let mut query = Query::new("counts");
    /// let items: Vec<StreamItem<char>> = [12, 3, 15, 7, 21]
    ///     .into_iter()
    ///     .map(|x| StreamItem::point(t(x), 'r'))
    ///     .collect();
    /// let input = query.create_stream(
    ///     InputOptions::new("in", EventShape::Point)
    ///         .settings(AdvanceTimeSettings::unordered_start_time(TimeSpan::from_ticks(10)))
    ///         .unordered(),
    ///     &MemoryInput,
    ///     &items,
    /// )?;
    /// let counts = input.tumbling_window(TimeSpan::from_ticks(10)).aggregate(Count);
    /// let out = CollectOutput::new();
    /// query.bind_output(&counts, &out, &())?;
    /// query.start()?.wait().await?;
    /// // Windows [0, 10), [10, 20), [20, 30): results at their ends, as an ordered input gives.
    /// let results: Vec<_> = out
    ///     .items()
    ///     .into_iter()
    ///     .filter_map(|i| match i {
    ///         StreamItem::Insert(e) => Some((e.kind.start(), e.payload)),
    ///         StreamItem::Cti(_) => None,
    ///     })
    ///     .collect();
    /// assert_eq!(results, vec![(t(10), 2), (t(20), 2), (t(30), 1)]);
    /// # Ok::<(), punctual_runtime::QueryError>(())
    /// # }).unwrap();
    /// ```
    pub fn create_stream<C, P, F, O>(
        &mut self,
        options: InputOptions<O>,
        factory: &F,
        config: &C,
    ) -> Result<Stream<P, O>, QueryError>
    where
        P: Payload,
        F: InputAdapterFactory<C, P>,
        O: Order,
    {
        let name = options.name().to_owned();
        if self.plan.has_input(&name) {
            return Err(QueryError::Bind(format!(
                "query `{}` already has a stream named `{name}`",
                self.plan.name()
            )));
        }
        let options = match options.given_settings() {
            Some(_) => options,
            None => match factory.declare_advance_time_properties(config, options.shape()) {
                Some(declared) => options.settings(AdvanceTimeSettings::from(declared)),
                None => options,
            },
        };
        let partitions = factory.partitions(config);
        if partitions == 0 {
            return Err(QueryError::Create {
                stream: name,
                error: AdapterError::Config("the source has no partitions".into()),
            });
        }
        let mut adapters = Vec::with_capacity(partitions);
        for p in 0..partitions {
            let made = match partitions {
                1 => factory.create(config, options.shape()),
                _ => factory.create_partition(config, options.shape(), p),
            };
            adapters.push(made.map_err(|source| QueryError::Create {
                stream: match partitions {
                    1 => name.clone(),
                    _ => format!("{name}#{p}"),
                },
                error: source,
            })?);
        }
        if factory.resumable(config) {
            let files = factory.source_files(config);
            self.input_files
                .extend(files.into_iter().map(|f| (name.clone(), f)));
        } else {
            self.not_resumable.push(name.clone());
        }
        let (ids, stream) = self.plan.partitioned_input::<P, O>(options, partitions)?;
        for (id, adapter) in ids.into_iter().zip(adapters) {
            let name = self
                .plan
                .input_name(id)
                .map_or_else(|| name.clone(), str::to_owned);
            self.inputs.push(Box::new(PendingInput {
                id,
                name,
                adapter: Box::new(adapter),
            }));
        }
        Ok(stream)
    }

    /// Binds an output adapter to a stream (an input stream or an operator's output, ordered
    /// or unordered: a `&Stream<P, O>` or an `&AnyStream<P>`): it receives the stream's events and CTIs in release order (on an
    /// unordered stream, each event as soon as it is final, in arrival order between CTIs).
    /// One output per stream; the factory is asked for an adapter of the stream's shape: an
    /// input's declared shape, or what the operators make of it (`Point` for a window's
    /// results, `Edge`, any kind, where an operator cannot say; see `Plan::shape_of`).
    pub fn bind_output<C, P, F>(
        &mut self,
        stream: impl Into<AnyStream<P>>,
        factory: &F,
        config: &C,
    ) -> Result<(), QueryError>
    where
        P: Payload,
        F: OutputAdapterFactory<C, P>,
    {
        match stream.into() {
            AnyStream::Ordered(s) => self.bind(&s, factory, config),
            AnyStream::Arrival(s) => self.bind(&s, factory, config),
        }
    }

    fn bind<C, P, F, O>(
        &mut self,
        stream: &Stream<P, O>,
        factory: &F,
        config: &C,
    ) -> Result<(), QueryError>
    where
        P: Payload,
        F: OutputAdapterFactory<C, P>,
        O: Order,
    {
        let name = match self.plan.input_of(stream) {
            Some(input) => self.plan.input_name(input).unwrap_or_default().to_owned(),
            None => {
                (stream.graph().label(stream)).unwrap_or_else(|| format!("node {}", stream.node()))
            }
        };
        if self.outputs.iter().any(|o| o.node() == stream.node()) {
            return Err(QueryError::Bind(format!(
                "stream `{name}` already has an output adapter"
            )));
        }
        let shape = self.plan.shape_of(stream);
        let id = self.plan.output(stream)?;
        let adapter = factory
            .create(config, shape)
            .map_err(|source| QueryError::Create {
                stream: name.clone(),
                error: source,
            })?;
        self.outputs.push(Box::new(PendingOutput {
            name,
            shape,
            id,
            adapter: Box::new(adapter),
            per_worker: factory.per_worker(config),
        }));
        Ok(())
    }

    /// The late-data side output of an input stream: every event its policy or watermark
    /// strategy drops, with the reason and the CTI it broke, as an ordinary stream (each a point
    /// at that CTI, sealed by the input's CTIs). Bind an output adapter to it, or compose on it.
    pub fn late_events<P: Payload, O: Order>(
        &mut self,
        stream: &Stream<P, O>,
    ) -> Result<Stream<LateEvent<P>>, QueryError> {
        Ok(self.plan.late_events(stream)?)
    }

    /// Sends an input stream's dead letters (dropped, rejected, malformed and unreleased items,
    /// with reasons) to `sink`. Without a sink they are only counted.
    pub fn bind_dead_letters<P: Payload, O: Order>(
        &mut self,
        stream: &Stream<P, O>,
        sink: impl DeadLetterSink<P> + 'static,
    ) -> Result<(), QueryError> {
        Ok(self.plan.dead_letters(stream, sink)?)
    }

    /// Starts every adapter. Must be called within a tokio runtime with timers enabled (as
    /// `#[tokio::main]` and `#[tokio::test]` build it); otherwise it returns an error. The
    /// operators move into the query's driver: compose every operator before starting
    /// (operators added to this query's streams afterwards are not part of it).
    pub fn start(mut self) -> Result<RunningQuery, QueryError> {
        check_runtime()?;
        let driver = self.take_plan().build()?;
        self.launch(driver, None)
    }

    /// The plan, moved out for its driver (an empty one left in its place).
    fn take_plan(&mut self) -> Plan {
        let name = self.plan.name().to_owned();
        std::mem::replace(&mut self.plan, Plan::new(name))
    }

    /// Starts the adapters around `driver`, the query's own or one worker's share of it.
    fn launch(
        self,
        mut driver: punctual_engine::Driver,
        worker: Option<(usize, WorkerSide)>,
    ) -> Result<RunningQuery, QueryError> {
        let clocked = (0..driver.input_count()).any(|i| driver.has_watermark(i));
        let restored = self.restore(
            &mut driver,
            worker.as_ref().map(|(w, side)| (*w, side.workers)),
        )?;
        let signals = Arc::new(Signals::new());
        let mut tasks = Tasks::new(Arc::clone(&signals), self.grace);
        // As one worker of several: the outputs are read on worker 0, but for those each
        // worker writes its share of.
        let (outputs, side) = match worker {
            Some((0, side)) => (self.outputs, Some(side)),
            Some((_, side)) => (
                self.outputs
                    .into_iter()
                    .filter(|o| o.per_worker())
                    .collect(),
                Some(side),
            ),
            None => (self.outputs, None),
        };
        // (As one worker of several, only the inputs it owns.)
        let owns = |i: usize| side.as_ref().is_none_or(|s| s.owned.get(i) == Some(&true));
        let finished: Vec<bool> = (0..driver.input_count())
            .map(|i| {
                restored.as_ref().is_some_and(|r| r.from_snapshot)
                    && driver.is_finished(i)
                    && owns(i)
            })
            .collect();
        let resume = restored.as_ref().map(|r| r.inputs.clone());
        let shell = Arc::new(Shell::new(driver, signals, self.shows, side, resume));
        self.monitor.attach(&shell);
        if let (Some(c), Some(r)) = (self.checkpoints.clone(), &restored) {
            let _ = shell
                .snapshots
                .set(snapshots::Snapshots::new(c, r.seq, r.executor.clone()));
        }
        let ports = outputs
            .into_iter()
            .map(|o| {
                let rewind = restored.as_ref().map(|r| {
                    r.outputs
                        .iter()
                        .find(|(n, _)| n == o.name())
                        .map_or(0, |(_, at)| *at)
                });
                o.spawn(&mut tasks, self.channel_capacity, &self.monitor, rewind)
            })
            .collect();
        shell.install_ports(ports);
        if let Some(clock) = self.clock.filter(|_| clocked) {
            tasks::spawn_clock(&mut tasks, &shell, (clock, self.clock_interval));
        }
        if tracing::enabled!(target: "punctual::explain", tracing::Level::DEBUG) {
            tasks::spawn_explain_log(&mut tasks, &shell);
        }
        let mut no_inputs = true;
        for input in self.inputs {
            let index = input.index();
            if finished.get(index).copied().unwrap_or(false) {
                // Ended before the snapshot: not started again.
                no_inputs = false;
                let ended = Arc::clone(&shell);
                tasks.spawn(
                    format!("input #{index} (ended before the snapshot)"),
                    async move {
                        ended.end_input(index, false).await;
                        Ok(())
                    },
                );
            } else if shell.owns(index) {
                no_inputs = false;
                input.spawn(&mut tasks, &shell);
            }
        }
        if no_inputs {
            // Nothing will end an input: the query is over at once.
            let ended = Arc::clone(&shell);
            tasks.spawn("end of an empty query".into(), async move {
                ended.start().await;
                Ok(())
            });
        }
        Ok(RunningQuery {
            tasks,
            shell,
            monitor: self.monitor,
            _checkpoint_lock: restored.and_then(|r| r.lock),
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

impl From<punctual_engine::Error> for QueryError {
    fn from(e: punctual_engine::Error) -> Self {
        match e {
            punctual_engine::Error::Bind(message) => QueryError::Bind(message),
            other => QueryError::Bind(other.to_string()),
        }
    }
}
