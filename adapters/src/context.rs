//! [`InputContext`]: how an input adapter enqueues items, and the per-stream core behind it.
//!
//! Each input stream's [`Ingress`] runs inside the enqueue call of the adapter's own task, behind
//! an async mutex that the stream's import sources also take when they deliver a CTI. What the
//! ingress releases (only ever at a CTI) goes as one [`Batch`] per enqueue call over a bounded
//! channel to the output task, so an adapter awaits in `enqueue` when the output is behind
//! (backpressure), and there is no channel send per event. A CTI the ingress emits is then
//! imported, at once, by every stream that imports this one.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};

use punctual_core::ops::{AnyBatch, NodeId};
use punctual_core::{Batch, StreamItem, Time};
use punctual_policies::{
    Arrival, ClockReading, DeadLetter, Enqueued, Ingress, IngressCounters, IngressOutput,
    LateEvent, MalformedRecord,
};

use crate::adapter::Payload;
use crate::error::EnqueueError;
use crate::observe::StreamMetrics;

/// Receives a stream's dead letters: every dropped, rejected, malformed or unreleased item with
/// its reason. Closures `FnMut(DeadLetter<P>)` are sinks.
pub trait DeadLetterSink<P>: Send {
    /// One dead letter.
    fn dead_letter(&mut self, letter: DeadLetter<P>);
}

impl<P, F: FnMut(DeadLetter<P>) + Send> DeadLetterSink<P> for F {
    fn dead_letter(&mut self, letter: DeadLetter<P>) {
        self(letter)
    }
}

/// A dead-letter sink that keeps every letter in memory; clone it to read them while or after the
/// query runs.
#[derive(Debug)]
pub struct DeadLetterCollector<P> {
    letters: Arc<Mutex<Vec<DeadLetter<P>>>>,
}

impl<P> Clone for DeadLetterCollector<P> {
    fn clone(&self) -> Self {
        DeadLetterCollector {
            letters: Arc::clone(&self.letters),
        }
    }
}

impl<P> Default for DeadLetterCollector<P> {
    fn default() -> Self {
        DeadLetterCollector {
            letters: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<P: Clone> DeadLetterCollector<P> {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The letters received so far.
    pub fn letters(&self) -> Vec<DeadLetter<P>> {
        self.letters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<P: Send> DeadLetterSink<P> for DeadLetterCollector<P> {
    fn dead_letter(&mut self, letter: DeadLetter<P>) {
        self.letters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(letter);
    }
}

/// Query-wide state shared by every task: the stop signal and the first stream failure.
#[derive(Debug)]
pub(crate) struct QueryShared {
    stop: watch::Sender<bool>,
    failure: Mutex<Option<EnqueueError>>,
    failed: std::sync::atomic::AtomicBool,
}

impl QueryShared {
    pub(crate) fn new() -> Self {
        QueryShared {
            stop: watch::channel(false).0,
            failure: Mutex::new(None),
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(crate) fn request_stop(&self) {
        self.stop.send_replace(true);
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Marks the query failed (a task returned an error): streams issue no final CTIs, so that
    /// no output looks complete when it is not.
    pub(crate) fn mark_failed(&self) {
        self.failed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.request_stop();
    }

    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(crate) fn fail(&self, e: EnqueueError) {
        self.failed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(e);
        self.request_stop();
    }

    pub(crate) fn failure(&self) -> Option<EnqueueError> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What the query handle keeps of a stream: its name and a snapshot of its counters.
#[derive(Debug)]
pub(crate) struct StreamShared {
    pub(crate) name: String,
    counters: Mutex<IngressCounters>,
    metrics: Mutex<StreamMetrics>,
    paused: Mutex<Vec<usize>>,
    clock_record: Mutex<Vec<ClockReading>>,
}

impl StreamShared {
    pub(crate) fn new(name: String) -> Self {
        StreamShared {
            metrics: Mutex::new(StreamMetrics::new(&name)),
            name,
            counters: Mutex::new(IngressCounters::default()),
            paused: Mutex::new(Vec::new()),
            clock_record: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn counters(&self) -> IngressCounters {
        *self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, c: IngressCounters) {
        *self.counters.lock().unwrap_or_else(PoisonError::into_inner) = c;
        self.metrics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(&c);
    }

    pub(crate) fn clock_record(&self) -> Vec<ClockReading> {
        self.clock_record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record_clock(&self, now: Time) {
        let cti = self.counters().cti;
        self.metrics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record_clock(now, cti);
    }

    pub(crate) fn paused(&self) -> Vec<usize> {
        self.paused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A stream that imports CTIs: type-erased so that streams of different payloads can import
/// each other's CTIs.
#[async_trait]
pub(crate) trait ImportTarget: Send + Sync {
    async fn import_cti(&self, t: Time);
}

/// A stream whose watermark strategy takes clock readings.
#[async_trait]
pub(crate) trait ClockTarget: Send + Sync {
    async fn on_clock(&self, now: Time);
}

struct StreamState<P> {
    ingress: Ingress<P>,
    out: IngressOutput<P>,
    dead: Option<Box<dyn DeadLetterSink<P>>>,
}

/// A released batch on its way from a stream to the query task, which feeds it into the graph
/// at the stream's source node.
pub(crate) struct Delivery {
    pub(crate) node: NodeId,
    pub(crate) batch: Box<dyn AnyBatch>,
}

/// A stream's end of the channel to the query task, and the batches the task hands back emptied
/// (reused, so that the steady state does not allocate).
pub(crate) struct SourceChannel {
    pub(crate) node: NodeId,
    /// Where the late-data side output goes, if it is bound.
    pub(crate) late_node: Option<NodeId>,
    pub(crate) tx: mpsc::Sender<Delivery>,
    pub(crate) recycled: mpsc::Receiver<Box<dyn AnyBatch>>,
}

/// One input stream at run time, shared by its adapter's context and its import sources. The
/// output channel closes when the last holder drops it.
pub(crate) struct StreamCore<P: Payload> {
    shared: Arc<StreamShared>,
    state: tokio::sync::Mutex<StreamState<P>>,
    node: NodeId,
    late_node: Option<NodeId>,
    tx: mpsc::Sender<Delivery>,
    recycled: Mutex<mpsc::Receiver<Box<dyn AnyBatch>>>,
    importers: OnceLock<Vec<Arc<dyn ImportTarget>>>,
    query: Arc<QueryShared>,
}

/// Whether a blocked send gives way to the stop signal.
enum SendMode<'a> {
    StopAware(&'a mut watch::Receiver<bool>),
    Always,
}

impl<P: Payload> StreamCore<P> {
    pub(crate) fn new(
        shared: Arc<StreamShared>,
        ingress: Ingress<P>,
        channel: SourceChannel,
        query: Arc<QueryShared>,
    ) -> Self {
        StreamCore {
            shared,
            state: tokio::sync::Mutex::new(StreamState {
                ingress,
                out: IngressOutput::new(),
                dead: None,
            }),
            node: channel.node,
            late_node: channel.late_node,
            tx: channel.tx,
            recycled: Mutex::new(channel.recycled),
            importers: OnceLock::new(),
            query,
        }
    }

    pub(crate) fn set_dead_letters(&mut self, sink: Box<dyn DeadLetterSink<P>>) {
        self.state.get_mut().dead = Some(sink);
    }

    pub(crate) fn set_importers(&self, importers: Vec<Arc<dyn ImportTarget>>) {
        // Set once at start, before any task runs.
        let _ = self.importers.set(importers);
    }

    /// Runs `f` on the ingress; then hands out dead letters, publishes the counters, sends what
    /// was released, and imports the emitted CTIs into the importing streams.
    async fn with_ingress<R>(
        &self,
        f: impl FnOnce(&mut Ingress<P>, &mut IngressOutput<P>) -> R,
        mode: SendMode<'_>,
    ) -> Result<R, EnqueueError> {
        let importers = self.importers.get().map(Vec::as_slice).unwrap_or(&[]);
        let mut ctis = Vec::new();
        let r = {
            let mut guard = self.state.lock().await;
            let st = &mut *guard;
            let r = f(&mut st.ingress, &mut st.out);
            match &mut st.dead {
                Some(sink) => st
                    .out
                    .dead_letters
                    .drain(..)
                    .for_each(|d| sink.dead_letter(d)),
                None => st.out.dead_letters.clear(),
            }
            self.shared.publish(st.ingress.counters());
            let paused = st.ingress.paused_partitions();
            *self
                .shared
                .paused
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = paused;
            if !importers.is_empty() {
                ctis.extend(st.out.batch.ctis().iter().map(|m| m.time));
            }
            let mut mode = mode;
            self.send(&mut st.out.batch, &mut mode).await?;
            if let (Some(node), false) = (self.late_node, st.out.late.is_empty()) {
                self.send_late(node, &mut st.out.late, &mut mode).await?;
            }
            r
        };
        for t in ctis {
            for target in importers {
                target.import_cti(t).await;
            }
        }
        Ok(r)
    }

    /// Sends the released batch to the query task, leaving it in place (to go with the next
    /// send) if the stop signal interrupts a blocked send.
    async fn send(
        &self,
        batch: &mut Batch<P>,
        mode: &mut SendMode<'_>,
    ) -> Result<(), EnqueueError> {
        if batch.is_empty() {
            return Ok(());
        }
        let Some(permit) = self.reserve(mode).await? else {
            batch.clear();
            return Err(EnqueueError::Stopping);
        };
        let mut boxed = self
            .recycled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .try_recv()
            .unwrap_or_else(|_| Box::new(Batch::<P>::new()));
        boxed.swap_with(batch);
        permit.send(Delivery {
            node: self.node,
            batch: boxed,
        });
        Ok(())
    }

    /// Sends the late-data side output (rare: not recycled).
    async fn send_late(
        &self,
        node: NodeId,
        batch: &mut Batch<LateEvent<P>>,
        mode: &mut SendMode<'_>,
    ) -> Result<(), EnqueueError> {
        let Some(permit) = self.reserve(mode).await? else {
            batch.clear();
            return Err(EnqueueError::Stopping);
        };
        permit.send(Delivery {
            node,
            batch: Box::new(std::mem::take(batch)),
        });
        Ok(())
    }

    /// A place on the channel to the query task; `None` if the task is gone (it failed, or the
    /// query is shutting down).
    async fn reserve(
        &self,
        mode: &mut SendMode<'_>,
    ) -> Result<Option<mpsc::Permit<'_, Delivery>>, EnqueueError> {
        let permit = match mode {
            SendMode::Always => self.tx.reserve().await,
            SendMode::StopAware(stop) => tokio::select! {
                biased;
                p = self.tx.reserve() => p,
                _ = stop.wait_for(|s| *s) => return Err(EnqueueError::Stopping),
            },
        };
        Ok(permit.ok())
    }
}

#[async_trait]
impl<P: Payload> ImportTarget for StreamCore<P> {
    async fn import_cti(&self, t: Time) {
        let _ = self
            .with_ingress(|ing, out| ing.import_cti(t, out), SendMode::Always)
            .await;
    }
}

#[async_trait]
impl<P: Payload> ClockTarget for StreamCore<P> {
    async fn on_clock(&self, now: Time) {
        let _ = self
            .with_ingress(|ing, out| ing.on_clock(now, out), SendMode::Always)
            .await;
        self.shared.record_clock(now);
    }
}

impl<P: Payload> Drop for StreamCore<P> {
    /// The stream is gone for good: count what no CTI released as `unreleased`.
    fn drop(&mut self) {
        let st = self.state.get_mut();
        *self
            .shared
            .clock_record
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = st.ingress.clock_record().to_vec();
        st.ingress.close(&mut st.out);
        if let Some(sink) = &mut st.dead {
            st.out
                .dead_letters
                .drain(..)
                .for_each(|d| sink.dead_letter(d));
        }
        self.shared.publish(st.ingress.counters());
    }
}

/// Counts of what one [`InputContext::enqueue_batch`] call did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct EnqueueSummary {
    /// Events accepted unchanged.
    pub accepted: usize,
    /// Events accepted after an adjustment.
    pub adjusted: usize,
    /// Events dropped by the policy.
    pub dropped: usize,
    /// Items rejected (invalid, or violating with no policy); they are dead-lettered.
    pub rejected: usize,
    /// CTIs that advanced application time.
    pub ctis: usize,
    /// CTIs that did not.
    pub stale_ctis: usize,
}

/// An input adapter's handle on its stream: enqueue items (awaiting under backpressure), learn
/// that the query is stopping, report malformed records.
///
/// Items are validated and checked against the stream's CTI as they are enqueued: an invalid or
/// (without a policy) violating item comes back as [`EnqueueError::Rejected`], after being counted
/// and dead-lettered; the stream goes on. Prefer [`InputContext::enqueue_batch`] for throughput.
pub struct InputContext<P: Payload> {
    pub(crate) core: Arc<StreamCore<P>>,
    stop: watch::Receiver<bool>,
}

impl<P: Payload> InputContext<P> {
    pub(crate) fn new(core: Arc<StreamCore<P>>) -> Self {
        let stop = core.query.subscribe();
        InputContext { core, stop }
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.core.shared.name
    }

    /// Whether the query is stopping: the adapter should return soon.
    pub fn is_stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Resolves when the query starts stopping (for `select!` with the adapter's own I/O).
    pub async fn stopping(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|s| *s).await;
    }

    /// The stream's counters now.
    pub fn counters(&self) -> IngressCounters {
        self.core.shared.counters()
    }

    fn check_stopping(&self) -> Result<(), EnqueueError> {
        if self.is_stopping() {
            Err(EnqueueError::Stopping)
        } else {
            Ok(())
        }
    }

    fn classify(&self, e: punctual_policies::Error) -> EnqueueError {
        let stream = self.stream_name().to_owned();
        match e {
            punctual_policies::Error::BufferFull { .. } => {
                let err = EnqueueError::BufferFull { stream, source: e };
                self.core.query.fail(err.clone());
                err
            }
            source => EnqueueError::Rejected { stream, source },
        }
    }

    /// Enqueues one item.
    pub async fn enqueue(&mut self, item: StreamItem<P>) -> Result<Enqueued, EnqueueError> {
        self.check_stopping()?;
        let core = Arc::clone(&self.core);
        let r = core
            .with_ingress(
                |ing, out| ing.enqueue(item, out),
                SendMode::StopAware(&mut self.stop),
            )
            .await?;
        r.map_err(|e| self.classify(e))
    }

    /// Enqueues one item with its arrival time and partition, for the watermark strategies.
    pub async fn enqueue_with(
        &mut self,
        item: StreamItem<P>,
        arrival: Arrival,
    ) -> Result<Enqueued, EnqueueError> {
        self.check_stopping()?;
        let core = Arc::clone(&self.core);
        let r = core
            .with_ingress(
                |ing, out| ing.enqueue_with(item, arrival, out),
                SendMode::StopAware(&mut self.stop),
            )
            .await?;
        r.map_err(|e| self.classify(e))
    }

    /// Partitions the stream's watermark alignment asks to pause (they run too far ahead of the
    /// stream's CTI); an adapter reading a partitioned source should stop reading them until
    /// they are no longer listed.
    pub fn paused_partitions(&self) -> Vec<usize> {
        self.core.shared.paused()
    }

    /// Enqueues a point event at `t`.
    pub async fn enqueue_point(&mut self, t: Time, payload: P) -> Result<Enqueued, EnqueueError> {
        self.enqueue(StreamItem::point(t, payload)).await
    }

    /// Enqueues an interval event `[start, end)`.
    pub async fn enqueue_interval(
        &mut self,
        start: Time,
        end: Time,
        payload: P,
    ) -> Result<Enqueued, EnqueueError> {
        self.enqueue(StreamItem::interval(start, end, payload))
            .await
    }

    /// Enqueues a start edge at `start`.
    pub async fn enqueue_start_edge(
        &mut self,
        start: Time,
        payload: P,
    ) -> Result<Enqueued, EnqueueError> {
        self.enqueue(StreamItem::start_edge(start, payload)).await
    }

    /// Enqueues the end edge (at `end`) of the start edge at `start` with an equal payload.
    pub async fn enqueue_end_edge(
        &mut self,
        start: Time,
        end: Time,
        payload: P,
    ) -> Result<Enqueued, EnqueueError> {
        self.enqueue(StreamItem::end_edge(start, end, payload))
            .await
    }

    /// Enqueues a CTI.
    pub async fn enqueue_cti(&mut self, t: Time) -> Result<Enqueued, EnqueueError> {
        self.enqueue(StreamItem::Cti(t)).await
    }

    /// Enqueues many items under one lock and at most one channel send. Rejected items do not
    /// stop the batch (they are counted in the summary and dead-lettered); a full reorder buffer
    /// does, and fails the query.
    pub async fn enqueue_batch(
        &mut self,
        items: impl IntoIterator<Item = StreamItem<P>>,
    ) -> Result<EnqueueSummary, EnqueueError> {
        self.check_stopping()?;
        let core = Arc::clone(&self.core);
        let r = core
            .with_ingress(
                |ing, out| {
                    let mut summary = EnqueueSummary::default();
                    for item in items {
                        match ing.enqueue(item, out) {
                            Ok(Enqueued::Accepted) => summary.accepted += 1,
                            Ok(Enqueued::Adjusted) => summary.adjusted += 1,
                            Ok(Enqueued::Dropped) => summary.dropped += 1,
                            Ok(Enqueued::Cti) => summary.ctis += 1,
                            Ok(Enqueued::StaleCti) => summary.stale_ctis += 1,
                            Err(e @ punctual_policies::Error::BufferFull { .. }) => return Err(e),
                            Err(_) => summary.rejected += 1,
                        }
                    }
                    Ok(summary)
                },
                SendMode::StopAware(&mut self.stop),
            )
            .await?;
        r.map_err(|e| self.classify(e))
    }

    /// Enqueues point events `(start, payload)` under one lock and at most one channel send,
    /// through the ingress' batched path ([`Ingress::enqueue_points`]): the fastest way in for a
    /// stream of points. Returns how many were rejected (counted and dead-lettered); a full
    /// reorder buffer fails the query, as with [`InputContext::enqueue_batch`].
    ///
    /// [`Ingress::enqueue_points`]: punctual_policies::Ingress::enqueue_points
    pub async fn enqueue_points(
        &mut self,
        points: impl IntoIterator<Item = (Time, P)>,
    ) -> Result<usize, EnqueueError> {
        self.check_stopping()?;
        let core = Arc::clone(&self.core);
        let r = core
            .with_ingress(
                |ing, out| ing.enqueue_points(points, out),
                SendMode::StopAware(&mut self.stop),
            )
            .await?;
        r.map_err(|e| self.classify(e))
    }

    /// Enqueues point events given as columns (start times and payloads, in arrival order)
    /// under one lock and at most one channel send, through
    /// [`Ingress::enqueue_point_columns`]: runs of in-order points go into the reorder buffer
    /// with one copy per column. For adapters that parse their input into columns. Returns
    /// how many were rejected; a full reorder buffer fails the query, and columns of different
    /// lengths are refused (nothing enqueued).
    ///
    /// [`Ingress::enqueue_point_columns`]: punctual_policies::Ingress::enqueue_point_columns
    pub async fn enqueue_point_columns(
        &mut self,
        times: &[Time],
        payloads: &[P],
    ) -> Result<usize, EnqueueError> {
        self.check_stopping()?;
        let core = Arc::clone(&self.core);
        let r = core
            .with_ingress(
                |ing, out| ing.enqueue_point_columns(times, payloads, out),
                SendMode::StopAware(&mut self.stop),
            )
            .await?;
        r.map_err(|e| self.classify(e))
    }

    /// Enqueues point events given as records (in arrival order) with the functions that read
    /// a record's start time and payload, under one lock and at most one channel send, through
    /// [`Ingress::enqueue_point_records`]: each record is read straight into the reorder buffer
    /// (or, for an unordered stream, the released batch), without columns built first. For
    /// adapters whose decoded records are already in memory. Returns how many were rejected; a
    /// full reorder buffer fails the query.
    ///
    /// [`Ingress::enqueue_point_records`]: punctual_policies::Ingress::enqueue_point_records
    pub async fn enqueue_point_records<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
    ) -> Result<usize, EnqueueError> {
        self.check_stopping()?;
        let core = Arc::clone(&self.core);
        let r = core
            .with_ingress(
                |ing, out| ing.enqueue_point_records(records, time, payload, out),
                SendMode::StopAware(&mut self.stop),
            )
            .await?;
        r.map_err(|e| self.classify(e))
    }

    /// [`InputContext::enqueue_point_records`] with a filter pushed down into the stream's
    /// ingress, through [`Ingress::enqueue_point_records_where`]: of the points accepted, only
    /// those whose payload satisfies `keep` enter the query; the others still count for CTI
    /// generation and the CTI checks, and are counted as `filtered` in the stream's counters.
    /// The query sees exactly what a `filter(keep)` on the stream would pass, and on an
    /// unordered stream ([`Query::create_unordered_stream`]) the refused points are never
    /// written out. For an adapter that knows (from its configuration, say) that the query
    /// wants only some records.
    ///
    /// [`Ingress::enqueue_point_records_where`]: punctual_policies::Ingress::enqueue_point_records_where
    /// [`Query::create_unordered_stream`]: crate::Query::create_unordered_stream
    pub async fn enqueue_point_records_where<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        keep: impl Fn(&P) -> bool,
    ) -> Result<usize, EnqueueError> {
        self.check_stopping()?;
        let core = Arc::clone(&self.core);
        let r = core
            .with_ingress(
                |ing, out| ing.enqueue_point_records_where(records, time, payload, keep, out),
                SendMode::StopAware(&mut self.stop),
            )
            .await?;
        r.map_err(|e| self.classify(e))
    }

    /// Reports an input record that could not be parsed: counted as `malformed` and sent to the
    /// dead letters with its location and text. The stream goes on.
    pub async fn report_malformed(&mut self, record: MalformedRecord) {
        let _ = self
            .core
            .with_ingress(
                |ing, out| ing.report_malformed(record, out),
                SendMode::Always,
            )
            .await;
    }

    /// End of input: the final CTI, if the settings ask for one. Sent even while stopping.
    pub(crate) async fn finish(&mut self) {
        let _ = self
            .core
            .with_ingress(|ing, out| ing.finish(out), SendMode::Always)
            .await;
    }
}
