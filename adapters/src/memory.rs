//! In-memory adapters: items from a `Vec`, an iterator, a `futures::Stream` or a channel; an
//! output that collects everything it receives.
//!
//! | adapter | factory | config |
//! |---|---|---|
//! | items from a vector (cloned per query) | [`MemoryInput`] | `Vec<StreamItem<P>>` |
//! | decoded records in memory, as points, in blocks | [`RecordsInput`] | `()` |
//! | items from an iterator (used once) | [`IterInput`] | `()` |
//! | items from a `futures::Stream` (used once) | [`StreamInput`] | `()` |
//! | items sent on a channel by the application | [`ChannelInput`] from [`channel_input`] | `()` |
//! | collect output items in memory | [`CollectOutput`] | `()` |
//! | output as a `futures::Stream` | [`StreamOutput`] from [`stream_output`] | `()` |
//!
//! Inputs enqueue in batches of up to [`BATCH`] items and stop when the query stops.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::stream::{BoxStream, StreamExt};
use tokio::sync::mpsc;

use punctual_core::{EventShape, StreamItem};

use punctual_runtime::adapter::{InputAdapter, InputAdapterFactory, Payload};
use punctual_runtime::context::InputContext;
use punctual_runtime::error::AdapterError;

mod output;
pub use output::{stream_output, CollectOutput, StreamOutput, StreamOutputAdapter};

/// How many items the in-memory inputs enqueue per call.
pub const BATCH: usize = 1024;

/// An input adapter that enqueues items from any iterator, in batches.
pub struct IterAdapter<I> {
    iter: Option<I>,
}

impl<I> IterAdapter<I> {
    /// An adapter over `iter`.
    pub fn new(iter: I) -> Self {
        IterAdapter { iter: Some(iter) }
    }
}

#[async_trait]
impl<P, I> InputAdapter<P> for IterAdapter<I>
where
    P: Payload,
    I: Iterator<Item = StreamItem<P>> + Send,
{
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let Some(mut iter) = self.iter.take() else {
            return Ok(());
        };
        let mut chunk = Vec::with_capacity(BATCH);
        loop {
            chunk.extend(iter.by_ref().take(BATCH));
            if chunk.is_empty() {
                return Ok(());
            }
            ctx.enqueue_batch(chunk.drain(..)).await?;
        }
    }
}

/// Factory for items held in memory: the config is the items, cloned for each adapter.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryInput;

impl<P: Payload> InputAdapterFactory<Vec<StreamItem<P>>, P> for MemoryInput {
    type Adapter = IterAdapter<std::vec::IntoIter<StreamItem<P>>>;

    fn create(
        &self,
        items: &Vec<StreamItem<P>>,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        Ok(IterAdapter::new(items.clone().into_iter()))
    }
}

/// Factory for decoded records held in memory (a slice of structs, shared), replayed as point
/// events in blocks through [`InputContext::enqueue_point_records`]: each record's start time
/// and payload are read by the functions given, straight into the stream's ingress, without
/// building items or columns first. The fastest way to feed a stream from memory; the records
/// are shared, not copied, by every adapter the factory makes. With
/// [`RecordsInput::partitions`], the records are a source of several partitions (block `b` in
/// partition `b % n`), each its own input: on several workers, each reads its own.
///
/// ```
/// use punctual_adapters::{CollectOutput, RecordsInput};
/// use punctual_runtime::{InputOptions, Query};
/// use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
/// use punctual_policies::AdvanceTimeSettings;
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// // (milliseconds, reading): decoded records.
/// let records = vec![(1_i64, 20.5_f64), (2, 21.0), (3, 21.5)];
/// let ms = |r: &(i64, f64)| Time::EPOCH + TimeSpan::from_millis(r.0);
/// let replay = RecordsInput::new(records, ms, |r: &(i64, f64)| r.1);
/// let mut query = Query::new("replay");
/// let options = InputOptions::new("readings", EventShape::Point)
///     .settings(AdvanceTimeSettings::increasing_start_time());
/// let readings = query.create_stream(options, &replay.block(2), &())?;
/// let out = CollectOutput::new();
/// query.bind_output(&readings, &out, &())?;
/// query.start()?.wait().await?;
/// // A CTI after each reading releases the one before it.
/// assert_eq!(out.items()[1], StreamItem::point(Time::EPOCH + TimeSpan::from_millis(1), 20.5));
/// # Ok::<(), punctual_runtime::QueryError>(())
/// # }).unwrap();
/// ```
pub struct RecordsInput<R, T, F> {
    records: Arc<[R]>,
    time: T,
    payload: F,
    block: usize,
    partitions: usize,
}

impl<R, T, F> std::fmt::Debug for RecordsInput<R, T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordsInput")
            .field("records", &self.records.len())
            .field("block", &self.block)
            .field("partitions", &self.partitions)
            .finish()
    }
}

impl<R, T, F> RecordsInput<R, T, F> {
    /// Replays `records` (in arrival order) with `time` and `payload` reading each record's
    /// start time and payload, [`BATCH`] records per call.
    pub fn new(records: impl Into<Arc<[R]>>, time: T, payload: F) -> Self {
        RecordsInput {
            records: records.into(),
            time,
            payload,
            block: BATCH,
            partitions: 1,
        }
    }

    /// How many records each call enqueues (at least one).
    pub fn block(mut self, records: usize) -> Self {
        self.block = records.max(1);
        self
    }

    /// Reads the records as `n` partitions (at least one): block `b` (of
    /// [`RecordsInput::block`] records) goes to partition `b % n`. Each partition is an input
    /// of its own, with its own CTIs ([`InputAdapterFactory::partitions`]).
    ///
    /// ```
    /// use punctual_adapters::{CollectOutput, RecordsInput};
    /// use punctual_runtime::{InputOptions, Query};
    /// use punctual_core::{EventShape, Time};
    /// use punctual_policies::AdvanceTimeSettings;
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let replay = RecordsInput::new(vec![1_i64, 2, 3, 4, 5], |r: &i64| Time::from_ticks(*r), |r: &i64| *r)
    ///     .block(2)
    ///     .partitions(2); // [1, 2] and [5] in partition 0, [3, 4] in partition 1
    /// let mut query = Query::new("split");
    /// let options = InputOptions::new("n", EventShape::Point)
    ///     .settings(AdvanceTimeSettings::increasing_start_time());
    /// let n = query.create_stream(options, &replay, &())?;
    /// let out = CollectOutput::new();
    /// query.bind_output(&n, &out, &())?;
    /// let report = query.start()?.wait().await?;
    /// let names: Vec<&str> = report.streams.iter().map(|(n, _)| n.as_str()).collect();
    /// assert_eq!(names, ["n#0", "n#1"]);
    /// assert_eq!(out.payloads(), [1, 2, 3, 4, 5]); // the union of the two, in time order
    /// # Ok::<(), punctual_runtime::QueryError>(())
    /// # }).unwrap();
    /// ```
    pub fn partitions(mut self, n: usize) -> Self {
        self.partitions = n.max(1);
        self
    }
}

impl<R, P, T, F> InputAdapterFactory<(), P> for RecordsInput<R, T, F>
where
    R: Send + Sync + 'static,
    P: Payload,
    T: Fn(&R) -> punctual_core::Time + Clone + Send + Sync + 'static,
    F: Fn(&R) -> P + Clone + Send + Sync + 'static,
{
    type Adapter = RecordsAdapter<R, T, F>;

    fn create(&self, _: &(), shape: EventShape) -> Result<Self::Adapter, AdapterError> {
        self.create_partition(&(), shape, 0)
    }

    fn partitions(&self, _: &()) -> usize {
        self.partitions
    }

    fn create_partition(
        &self,
        _: &(),
        _shape: EventShape,
        partition: usize,
    ) -> Result<Self::Adapter, AdapterError> {
        Ok(RecordsAdapter {
            records: Arc::clone(&self.records),
            time: self.time.clone(),
            payload: self.payload.clone(),
            block: self.block,
            partition: (partition, self.partitions),
        })
    }
}

/// The adapter a [`RecordsInput`] makes.
pub struct RecordsAdapter<R, T, F> {
    records: Arc<[R]>,
    time: T,
    payload: F,
    block: usize,
    /// Which partition it reads, of how many.
    partition: (usize, usize),
}

#[async_trait]
impl<R, P, T, F> InputAdapter<P> for RecordsAdapter<R, T, F>
where
    R: Send + Sync + 'static,
    P: Payload,
    T: Fn(&R) -> punctual_core::Time + Send + Sync + 'static,
    F: Fn(&R) -> P + Send + Sync + 'static,
{
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let (p, n) = self.partition;
        for block in self.records.chunks(self.block).skip(p).step_by(n.max(1)) {
            ctx.enqueue_point_records(block, &self.time, &self.payload)
                .await?;
        }
        Ok(())
    }
}

/// Takes a value out of a factory once; a second `create` is a configuration error.
#[derive(Debug)]
struct Once<T>(Mutex<Option<T>>);

impl<T> Once<T> {
    fn new(v: T) -> Self {
        Once(Mutex::new(Some(v)))
    }

    fn take(&self, what: &str) -> Result<T, AdapterError> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| AdapterError::Config(format!("{what} can feed only one stream")))
    }
}

/// Factory for an iterator of items; it can create one adapter.
#[derive(Debug)]
pub struct IterInput<I> {
    iter: Once<I>,
}

impl<I> IterInput<I> {
    /// A factory over `iter`.
    pub fn new(iter: I) -> Self {
        IterInput {
            iter: Once::new(iter),
        }
    }
}

impl<P, I> InputAdapterFactory<(), P> for IterInput<I>
where
    P: Payload,
    I: Iterator<Item = StreamItem<P>> + Send + 'static,
{
    type Adapter = IterAdapter<I>;

    fn create(&self, _: &(), _shape: EventShape) -> Result<Self::Adapter, AdapterError> {
        Ok(IterAdapter::new(self.iter.take("an IterInput")?))
    }
}

/// Factory for a `futures::Stream` of items; it can create one adapter.
pub struct StreamInput<P> {
    stream: Once<BoxStream<'static, StreamItem<P>>>,
}

impl<P> std::fmt::Debug for StreamInput<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamInput")
    }
}

impl<P> StreamInput<P> {
    /// A factory over `stream`.
    pub fn new(stream: impl futures::Stream<Item = StreamItem<P>> + Send + 'static) -> Self {
        StreamInput {
            stream: Once::new(stream.boxed()),
        }
    }
}

/// Enqueues the items of a `futures::Stream`, as many per call as are ready (up to [`BATCH`]).
pub struct StreamAdapter<P> {
    stream: BoxStream<'static, StreamItem<P>>,
}

#[async_trait]
impl<P: Payload> InputAdapter<P> for StreamAdapter<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let mut chunks = (&mut self.stream).ready_chunks(BATCH);
        loop {
            let chunk = tokio::select! {
                c = chunks.next() => c,
                _ = ctx.stopping() => return Ok(()),
            };
            match chunk {
                Some(items) => {
                    ctx.enqueue_batch(items).await?;
                }
                None => return Ok(()),
            }
        }
    }
}

impl<P: Payload> InputAdapterFactory<(), P> for StreamInput<P> {
    type Adapter = StreamAdapter<P>;

    fn create(&self, _: &(), _shape: EventShape) -> Result<Self::Adapter, AdapterError> {
        Ok(StreamAdapter {
            stream: self.stream.take("a StreamInput")?,
        })
    }
}

/// Factory for items the application sends on a channel; see [`channel_input`].
#[derive(Debug)]
pub struct ChannelInput<P> {
    rx: Once<mpsc::Receiver<StreamItem<P>>>,
}

/// A bounded channel (`capacity` items) whose receiving end feeds one stream: the application
/// sends items (awaiting when the query is behind) and drops the sender to end the input.
///
/// ```
/// use punctual_adapters::{channel_input, CollectOutput};
/// use punctual_runtime::{InputOptions, Query};
/// use punctual_core::{EventShape, StreamItem, Time};
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let (tx, factory) = channel_input::<u32>(64);
/// let mut query = Query::new("q");
/// let s = query.create_stream(InputOptions::new("in", EventShape::Point), &factory, &())?;
/// let out = CollectOutput::new();
/// query.bind_output(&s, &out, &())?;
/// let running = query.start()?;
/// tx.send(StreamItem::point(Time::from_ticks(1), 7)).await.unwrap();
/// tx.send(StreamItem::Cti(Time::from_ticks(2))).await.unwrap();
/// drop(tx);
/// running.wait().await?;
/// assert_eq!(out.items().len(), 2);
/// # Ok::<(), punctual_runtime::QueryError>(())
/// # }).unwrap();
/// ```
pub fn channel_input<P>(capacity: usize) -> (mpsc::Sender<StreamItem<P>>, ChannelInput<P>) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (tx, ChannelInput { rx: Once::new(rx) })
}

/// Enqueues what arrives on a channel, as many items per call as are waiting (up to [`BATCH`]).
pub struct ChannelAdapter<P> {
    rx: mpsc::Receiver<StreamItem<P>>,
}

#[async_trait]
impl<P: Payload> InputAdapter<P> for ChannelAdapter<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let mut buf = Vec::with_capacity(BATCH);
        loop {
            let n = tokio::select! {
                n = self.rx.recv_many(&mut buf, BATCH) => n,
                _ = ctx.stopping() => return Ok(()),
            };
            if n == 0 {
                return Ok(());
            }
            ctx.enqueue_batch(buf.drain(..)).await?;
        }
    }
}

impl<P: Payload> InputAdapterFactory<(), P> for ChannelInput<P> {
    type Adapter = ChannelAdapter<P>;

    fn create(&self, _: &(), _shape: EventShape) -> Result<Self::Adapter, AdapterError> {
        Ok(ChannelAdapter {
            rx: self.rx.take("a ChannelInput")?,
        })
    }
}
