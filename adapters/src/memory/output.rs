//! In-memory outputs: one that collects everything it receives, one that hands it out as a
//! `futures::Stream`.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::stream::StreamExt;
use tokio::sync::mpsc;

use punctual_core::{Batch, EventShape, StreamItem};

use super::Once;
use punctual_runtime::adapter::{OutputAdapter, OutputAdapterFactory, Payload};
use punctual_runtime::error::AdapterError;
use punctual_runtime::query::{Ending, QueryReport};

/// An output delivered as a `futures::Stream` of items: see [`stream_output`].
#[derive(Debug)]
pub struct StreamOutput<P> {
    tx: Once<mpsc::Sender<StreamItem<P>>>,
}

/// An output adapter factory and the `futures::Stream` it feeds: every released event and CTI,
/// in order, ending when the query's output ends. The channel holds `capacity` items; a consumer
/// that falls behind holds the query back.
///
/// ```
/// use futures::StreamExt;
/// use punctual_adapters::{stream_output, MemoryInput};
/// use punctual_runtime::{InputOptions, Query};
/// use punctual_core::{EventShape, StreamItem, Time};
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut query = Query::new("q");
/// let items = vec![StreamItem::point(Time::from_ticks(1), 7u8), StreamItem::Cti(Time::INF)];
/// let s = query.create_stream(InputOptions::new("in", EventShape::Point), &MemoryInput, &items)?;
/// let (factory, mut results) = stream_output::<u8>(16);
/// query.bind_output(&s, &factory, &())?;
/// let running = query.start()?;
/// assert_eq!(results.next().await, Some(StreamItem::point(Time::from_ticks(1), 7)));
/// assert_eq!(results.next().await, Some(StreamItem::Cti(Time::INF)));
/// running.wait().await?;
/// assert_eq!(results.next().await, None);
/// # Ok::<(), punctual_runtime::QueryError>(())
/// # }).unwrap();
/// ```
pub fn stream_output<P: Payload>(
    capacity: usize,
) -> (
    StreamOutput<P>,
    impl futures::Stream<Item = StreamItem<P>> + Send + Unpin,
) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed();
    (StreamOutput { tx: Once::new(tx) }, stream)
}

/// The adapter a [`StreamOutput`] makes.
pub struct StreamOutputAdapter<P> {
    tx: mpsc::Sender<StreamItem<P>>,
}

#[async_trait]
impl<P: Payload> OutputAdapter<P> for StreamOutputAdapter<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        for item in batch.items() {
            // A consumer that dropped its stream no longer wants items: not an error.
            if self.tx.send(item.map(P::clone)).await.is_err() {
                break;
            }
        }
        Ok(())
    }
}

impl<P: Payload> OutputAdapterFactory<(), P> for StreamOutput<P> {
    type Adapter = StreamOutputAdapter<P>;

    fn create(&self, _: &(), _shape: EventShape) -> Result<Self::Adapter, AdapterError> {
        Ok(StreamOutputAdapter {
            tx: self.tx.take("a StreamOutput")?,
        })
    }
}

/// An output that keeps every item it receives. The factory and its adapters share one list:
/// read it with [`CollectOutput::items`].
#[derive(Debug)]
pub struct CollectOutput<P> {
    items: Arc<Mutex<Vec<StreamItem<P>>>>,
    finished: Arc<Mutex<Option<Ending>>>,
    /// Whether each worker of a cluster run writes its share ([`CollectOutput::each_worker`]).
    each_worker: bool,
}

impl<P> Clone for CollectOutput<P> {
    fn clone(&self) -> Self {
        CollectOutput {
            items: Arc::clone(&self.items),
            finished: Arc::clone(&self.finished),
            each_worker: self.each_worker,
        }
    }
}

impl<P> Default for CollectOutput<P> {
    fn default() -> Self {
        CollectOutput {
            items: Arc::new(Mutex::new(Vec::new())),
            finished: Arc::new(Mutex::new(None)),
            each_worker: false,
        }
    }
}

impl<P: Clone> CollectOutput<P> {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same collector, written by every worker of a cluster run, each its own share
    /// ([`OutputAdapterFactory::per_worker`]) instead of the whole output on worker 0: each
    /// worker's items are a stream with every CTI, and the workers' items interleave in this
    /// one list (give each worker a collector of its own to read its share as a stream).
    pub fn each_worker(mut self) -> Self {
        self.each_worker = true;
        self
    }

    /// Every item received so far, in order.
    pub fn items(&self) -> Vec<StreamItem<P>> {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The payloads of the events received so far, in order (the CTIs left out).
    ///
    /// ```
    /// use punctual_adapters::{CollectOutput, MemoryInput};
    /// use punctual_runtime::{InputOptions, Query};
    /// use punctual_core::{EventShape, StreamItem, Time};
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let items = vec![StreamItem::point(Time::from_ticks(1), 'a'), StreamItem::Cti(Time::INF)];
    /// let mut query = Query::new("q");
    /// let s = query.create_stream(InputOptions::new("in", EventShape::Point), &MemoryInput, &items)?;
    /// let out = CollectOutput::new();
    /// query.bind_output(&s, &out, &())?;
    /// query.start()?.wait().await?;
    /// assert_eq!(out.payloads(), ['a']);
    /// # Ok::<(), punctual_runtime::QueryError>(())
    /// # }).unwrap();
    /// ```
    pub fn payloads(&self) -> Vec<P> {
        let items = self.items.lock().unwrap_or_else(PoisonError::into_inner);
        items
            .iter()
            .filter_map(|i| match i {
                StreamItem::Insert(e) => Some(e.payload.clone()),
                StreamItem::Cti(_) => None,
            })
            .collect()
    }

    /// How many items have been received so far.
    pub fn len(&self) -> usize {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether nothing has been received.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the output adapter has been finished (every input ended, or the query stopped
    /// or failed).
    pub fn is_finished(&self) -> bool {
        self.ending().is_some()
    }

    /// How the query ended, once the output has been finished.
    pub fn ending(&self) -> Option<Ending> {
        self.finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl<P: Payload> OutputAdapter<P> for CollectOutput<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        let mut items = self.items.lock().unwrap_or_else(PoisonError::into_inner);
        items.extend(batch.items().map(|i| i.map(P::clone)));
        Ok(())
    }

    async fn finish(&mut self, report: &QueryReport) -> Result<(), AdapterError> {
        *self.finished.lock().unwrap_or_else(PoisonError::into_inner) = Some(report.ending.clone());
        Ok(())
    }
}

impl<P: Payload> OutputAdapterFactory<(), P> for CollectOutput<P> {
    type Adapter = CollectOutput<P>;

    fn create(&self, _: &(), _shape: EventShape) -> Result<Self::Adapter, AdapterError> {
        Ok(self.clone())
    }

    fn per_worker(&self, _: &()) -> bool {
        self.each_worker
    }
}
