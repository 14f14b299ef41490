//! The adapter traits: what an input adapter, an output adapter and their factories promise.
//!
//! An input adapter runs once per query as its own task: [`InputAdapter::run`] enqueues items
//! through the [`InputContext`] (awaiting when the query is behind) and
//! returns when its source is exhausted or the query is stopping. An output adapter receives the
//! released events and CTIs of one stream, in order, batch by batch.
//!
//! A factory makes adapters from a configuration (any type: `serde` structs for adapters
//! configured from files, plain values in code) and the event shape the stream expects. It may
//! also declare advance-time settings for the streams it feeds
//! ([`InputAdapterFactory::declare_advance_time_properties`]); settings given when the stream
//! is bound replace them entirely.
//!
//! ```
//! use punctual_runtime::{AdapterError, InputAdapter, InputAdapterFactory, InputContext};
//! use punctual_core::{EventShape, Time};
//! use punctual_policies::{AdapterAdvanceTimeSettings, AdvanceTimeGenerationSettings, AdvanceTimePolicy};
//!
//! /// Counts from 0 to `n - 1`, one point event per tick.
//! struct Counter { n: i64 }
//!
//! #[async_trait::async_trait]
//! impl InputAdapter<i64> for Counter {
//!     async fn run(&mut self, ctx: &mut InputContext<i64>) -> Result<(), AdapterError> {
//!         for i in 0..self.n {
//!             if ctx.is_stopping() { break; }
//!             ctx.enqueue_point(Time::from_ticks(i), i).await?;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! struct CounterFactory;
//!
//! impl InputAdapterFactory<i64, i64> for CounterFactory {
//!     type Adapter = Counter;
//!     fn create(&self, n: &i64, _shape: EventShape) -> Result<Counter, AdapterError> {
//!         Ok(Counter { n: *n })
//!     }
//!
//!     /// Counting never goes backwards: a CTI after every event, released at once.
//!     fn declare_advance_time_properties(&self, _n: &i64, _shape: EventShape)
//!         -> Option<AdapterAdvanceTimeSettings>
//!     {
//!         let generation = AdvanceTimeGenerationSettings::every_events(1)
//!             .delay(punctual_core::TimeSpan::from_ticks(-1))
//!             .final_cti(true)
//!             .build()
//!             .ok()?;
//!         Some(AdapterAdvanceTimeSettings::new(generation, AdvanceTimePolicy::Drop))
//!     }
//! }
//! ```

use async_trait::async_trait;

use punctual_core::{Batch, EventShape};
use punctual_policies::AdapterAdvanceTimeSettings;

use crate::context::InputContext;
use crate::error::AdapterError;
use crate::query::{Monitor, QueryReport};

pub use punctual_core::ops::Payload;

/// A source of stream items.
#[async_trait]
pub trait InputAdapter<P: Payload>: Send {
    /// Enqueues items until the source is exhausted (return `Ok`), the query is stopping
    /// (check [`InputContext::is_stopping`], or let an
    /// [`EnqueueError::Stopping`](crate::EnqueueError::Stopping) propagate with `?`), or
    /// something fails (return the error: the query fails with it). Returning ends the stream's
    /// input: a final CTI follows if the stream's settings ask for one.
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError>;
}

/// A consumer of one stream's released events and CTIs.
#[async_trait]
pub trait OutputAdapter<P: Payload>: Send {
    /// Called once when the query starts, before the first batch, with what the output is
    /// bound to: its name, the stream's shape, and a [`Monitor`] of the query's counters. An
    /// error fails the query.
    async fn open(&mut self, ctx: &OutputContext) -> Result<(), AdapterError> {
        let _ = ctx;
        Ok(())
    }

    /// Receives the next batch: events sorted by sync time, with CTI marks between them
    /// ([`Batch::items`] iterates them in order). Awaiting here slows the query down
    /// (backpressure); an error fails the query.
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError>;

    /// Whether this output can take part in checkpoints ([`Query::checkpoints`]): make what it
    /// wrote durable and give its position ([`OutputAdapter::checkpoint`]), and go back to a
    /// position ([`OutputAdapter::rewind`]). The default says no.
    ///
    /// [`Query::checkpoints`]: crate::Query::checkpoints
    fn can_checkpoint(&self) -> bool {
        false
    }

    /// Makes everything written so far durable (flushed and synced) and returns the position
    /// just after it (bytes, for a file). Called at each snapshot, after the batches the
    /// output was sent before it, on an output that
    /// [can checkpoint](OutputAdapter::can_checkpoint).
    async fn checkpoint(&mut self) -> Result<u64, AdapterError> {
        Err(AdapterError::Config("this output cannot checkpoint".into()))
    }

    /// Goes back to `position` (one [`OutputAdapter::checkpoint`] gave at the snapshot the
    /// query restarts from, or 0 for a fresh start), discarding what was written after it;
    /// the writes that follow continue from there. Called once before `open`, on an output
    /// that [can checkpoint](OutputAdapter::can_checkpoint), when the query runs with
    /// checkpoints.
    async fn rewind(&mut self, position: u64) -> Result<(), AdapterError> {
        let _ = position;
        Err(AdapterError::Config("this output cannot rewind".into()))
    }

    /// Called after a `write` when no further batch is waiting: the output has caught up.
    /// An adapter that buffers its writes flushes them here, so that what the query has
    /// released reaches its destination while the input is slow or quiet. Default: nothing.
    async fn idle(&mut self) -> Result<(), AdapterError> {
        Ok(())
    }

    /// Called once after the last batch, when every input has ended, with the query's report:
    /// its [`Ending`](crate::Ending) says whether the output is complete (every input ended,
    /// or a stop with a drain), aborted or failed, and its counters what the query did. Not
    /// called for an output whose own `open` or `write` failed.
    async fn finish(&mut self, report: &QueryReport) -> Result<(), AdapterError> {
        let _ = report;
        Ok(())
    }
}

/// What an output adapter is bound to, given to [`OutputAdapter::open`].
#[derive(Clone, Debug)]
pub struct OutputContext {
    name: String,
    shape: EventShape,
    monitor: Monitor,
}

impl OutputContext {
    pub(crate) fn new(name: String, shape: EventShape, monitor: Monitor) -> Self {
        OutputContext {
            name,
            shape,
            monitor,
        }
    }

    /// The output's name: its stream's (an input's name, a step's label, or `node N`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shape of the stream it receives (see [`Query::bind_output`](crate::Query::bind_output)).
    pub fn shape(&self) -> EventShape {
        self.shape
    }

    /// The query's counters so far.
    pub fn monitor(&self) -> &Monitor {
        &self.monitor
    }
}

/// Makes input adapters from a configuration `C`, and may declare the advance-time settings
/// of the streams they feed.
pub trait InputAdapterFactory<C, P: Payload> {
    /// The adapter it makes.
    type Adapter: InputAdapter<P> + 'static;
    /// Makes an adapter for a stream of the given shape; a bad configuration is an error.
    fn create(&self, config: &C, shape: EventShape) -> Result<Self::Adapter, AdapterError>;

    /// The advance-time settings for a stream fed by an adapter with this configuration and
    /// shape (StreamInsight's `IDeclareAdvanceTimeProperties`). The default declares none.
    /// Settings given when the stream is bound replace the declared ones entirely.
    fn declare_advance_time_properties(
        &self,
        config: &C,
        shape: EventShape,
    ) -> Option<AdapterAdvanceTimeSettings> {
        let _ = (config, shape);
        None
    }

    /// Whether an adapter made from `config` can resume its source where a snapshot left it:
    /// it commits its position as it enqueues
    /// ([`InputContext::commit_position`](crate::InputContext::commit_position)) and, in a
    /// query restored from a snapshot, reads on from the position it committed
    /// ([`InputContext::resume_from`](crate::InputContext::resume_from)), the same items in
    /// the same order as an uninterrupted run: what checkpoints need
    /// ([`Query::checkpoints`](crate::Query::checkpoints)). A file can; standard input and a
    /// socket cannot. The default says no.
    fn resumable(&self, config: &C) -> bool {
        let _ = config;
        false
    }

    /// The files a resumable source reads, which checkpoints record (size, modification time,
    /// a hash of the start) so that a restore refuses inputs that changed. The default names
    /// none.
    fn source_files(&self, config: &C) -> Vec<std::path::PathBuf> {
        let _ = config;
        Vec::new()
    }

    /// How many partitions the source `config` names has: parts read independently of each
    /// other (several files, a topic's partitions, several connections). Each partition
    /// becomes an input of its own ([`Query::create_stream`](crate::Query::create_stream)):
    /// its own adapter ([`InputAdapterFactory::create_partition`]), its own CTIs and policy,
    /// read on the worker it is assigned to when the query runs on several. The default is
    /// one; zero is an error.
    fn partitions(&self, config: &C) -> usize {
        let _ = config;
        1
    }

    /// Makes the adapter that reads partition `partition` (of
    /// [`InputAdapterFactory::partitions`]). The default, for a source of one partition, is
    /// [`InputAdapterFactory::create`].
    fn create_partition(
        &self,
        config: &C,
        shape: EventShape,
        partition: usize,
    ) -> Result<Self::Adapter, AdapterError> {
        let _ = partition;
        self.create(config, shape)
    }
}

/// Makes output adapters from a configuration `C`.
pub trait OutputAdapterFactory<C, P: Payload> {
    /// The adapter it makes.
    type Adapter: OutputAdapter<P> + 'static;
    /// Makes an adapter for a stream of the given shape; a bad configuration is an error.
    fn create(&self, config: &C, shape: EventShape) -> Result<Self::Adapter, AdapterError>;

    /// Whether, when the query runs on several workers (the cluster executor), each worker
    /// may write its own share of the output through an adapter of its own, made from
    /// `config` on that worker: a sink that puts the shares together itself (a counter, a
    /// topic, a table). Each adapter gets the events of its worker's operators and every
    /// CTI. By default (`false`) the output is gathered on worker 0 and written there once,
    /// one stream as on one worker. One worker makes no difference.
    fn per_worker(&self, config: &C) -> bool {
        let _ = config;
        false
    }
}

/// A factory whose configuration is a list, one configuration of `F` per partition: with
/// `Partitioned(factory)` and `vec![a, b, ...]`, a source whose partitions are those of `a`,
/// then those of `b`, and so on (one each, unless a configuration names several itself, as a
/// wildcard file path does). Each partition is an input of its own
/// ([`InputAdapterFactory::partitions`]); the advance-time settings the factory declares are
/// those of the first configuration.
///
/// ```
/// use punctual_adapters::{CollectOutput, MemoryInput};
/// use punctual_runtime::{InputOptions, Partitioned, Query};
/// use punctual_core::{EventShape, StreamItem, Time};
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let t = Time::from_ticks;
/// let sensors = vec![
///     vec![StreamItem::point(t(1), 'a'), StreamItem::Cti(t(2))],
///     vec![StreamItem::point(t(3), 'b'), StreamItem::Cti(t(9))],
/// ];
/// let mut query = Query::new("two sensors");
/// let options = InputOptions::new("readings", EventShape::Point);
/// let readings = query.create_stream(options, &Partitioned(MemoryInput), &sensors)?;
/// let out = CollectOutput::new();
/// query.bind_output(&readings, &out, &())?;
/// let report = query.start()?.wait().await?;
/// assert_eq!(report.streams[1].0, "readings#1");
/// // The stream's CTI is the least of its partitions' CTIs.
/// assert_eq!(out.items()[..2], [StreamItem::point(t(1), 'a'), StreamItem::Cti(t(2))]);
/// # Ok::<(), punctual_runtime::QueryError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Partitioned<F>(pub F);

impl<F> Partitioned<F> {
    /// The configuration and its own partition that partition `p` of the list is.
    fn locate<'c, C, P: Payload>(&self, configs: &'c [C], mut p: usize) -> Option<(&'c C, usize)>
    where
        F: InputAdapterFactory<C, P>,
    {
        for config in configs {
            let n = self.0.partitions(config);
            if p < n {
                return Some((config, p));
            }
            p -= n;
        }
        None
    }
}

impl<C, P: Payload, F: InputAdapterFactory<C, P>> InputAdapterFactory<Vec<C>, P>
    for Partitioned<F>
{
    type Adapter = F::Adapter;

    /// The first partition.
    fn create(&self, configs: &Vec<C>, shape: EventShape) -> Result<F::Adapter, AdapterError> {
        self.create_partition(configs, shape, 0)
    }

    fn declare_advance_time_properties(
        &self,
        configs: &Vec<C>,
        shape: EventShape,
    ) -> Option<AdapterAdvanceTimeSettings> {
        self.0
            .declare_advance_time_properties(configs.first()?, shape)
    }

    /// Every configuration is.
    fn resumable(&self, configs: &Vec<C>) -> bool {
        configs.iter().all(|c| self.0.resumable(c))
    }

    fn source_files(&self, configs: &Vec<C>) -> Vec<std::path::PathBuf> {
        configs
            .iter()
            .flat_map(|c| self.0.source_files(c))
            .collect()
    }

    fn partitions(&self, configs: &Vec<C>) -> usize {
        configs.iter().map(|c| self.0.partitions(c)).sum()
    }

    fn create_partition(
        &self,
        configs: &Vec<C>,
        shape: EventShape,
        partition: usize,
    ) -> Result<F::Adapter, AdapterError> {
        let Some((c, p)) = self.locate::<C, P>(configs, partition) else {
            return Err(AdapterError::Config(format!(
                "partition {partition} of a source of {}",
                self.partitions(configs)
            )));
        };
        match self.0.partitions(c) {
            1 => self.0.create(c, shape),
            _ => self.0.create_partition(c, shape, p),
        }
    }
}
