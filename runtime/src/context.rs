//! [`InputContext`]: how an input adapter enqueues items.
//!
//! Every enqueue call runs the query's driver for its stream (ingress, the CTI imports, the
//! operators) under the query's lock, then hands what the outputs produced to their tasks,
//! awaiting when an output is behind (backpressure). Enqueue many items per call: the lock,
//! the operators and the hand-over are paid per call, not per item.

use std::sync::Arc;

use tokio::sync::watch;

use punctual_core::{StreamItem, Time};
use punctual_engine::{Driver, InputId};
use punctual_policies::{Arrival, EnqueueSummary, Enqueued, IngressCounters, MalformedRecord};

use crate::adapter::Payload;
use crate::checkpoint::SourcePosition;
use crate::error::{EnqueueError, TryEnqueueError};
use crate::query::shell::{SendMode, Shell};

/// An input adapter's handle on its stream: enqueue items (awaiting under backpressure), learn
/// that the query is stopping, report malformed records.
///
/// Items are validated and checked against the stream's CTI as they are enqueued: an invalid or
/// (without a policy) violating item comes back as [`EnqueueError::Rejected`], after being counted
/// and dead-lettered; the stream goes on. For throughput, enqueue in blocks:
/// [`InputContext::enqueue_batch`] for items, [`InputContext::enqueue_points`] and its
/// siblings for points.
pub struct InputContext<P: Payload> {
    shell: Arc<Shell>,
    input: InputId<P>,
    stop: watch::Receiver<bool>,
}

impl<P: Payload> InputContext<P> {
    pub(crate) fn new(shell: Arc<Shell>, input: InputId<P>) -> Self {
        let stop = shell.signals.subscribe();
        InputContext { shell, input, stop }
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.shell.streams[self.input.index()].name
    }

    /// Whether the query is stopping: the adapter should return soon.
    pub fn is_stopping(&self) -> bool {
        // An atomic load: adapters ask once per record (reading the stop watch's value takes
        // its lock: a twentieth of a file input's time).
        self.shell.signals.stopping()
    }

    /// Resolves when the query starts stopping (for `select!` with the adapter's own I/O).
    pub async fn stopping(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|s| *s).await;
    }

    /// Whether the query is being stopped with a drain ([`StopMode::Drain`]): an adapter that
    /// ends its input with a final CTI of its own enqueues it (see [`InputContext::enqueue_read`]).
    ///
    /// [`StopMode::Drain`]: crate::StopMode::Drain
    pub fn is_draining(&self) -> bool {
        self.shell.signals.draining()
    }

    /// [`InputContext::stopping`] as a future that does not borrow the context.
    pub fn stop_signal(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut stop = self.stop.clone();
        async move {
            let _ = stop.wait_for(|s| *s).await;
        }
    }

    /// Says that the stream's initial snapshot is in: on a reference input
    /// ([`InputOptions::reference`]), the query starts its other inputs once every reference
    /// input is ready, which it also is once its adapter has enqueued a CTI of its own, or
    /// ended. On an ordinary input it does nothing.
    ///
    /// [`InputOptions::reference`]: punctual_engine::InputOptions::reference
    pub fn ready(&self) {
        self.shell.mark_ready(self.input.index());
    }

    /// Where a query restored from a snapshot resumes this input: the position its adapter
    /// committed last before the snapshot ([`InputContext::commit_position`]); `None` for a
    /// run from the start. An adapter that can resume
    /// ([`InputAdapterFactory::resumable`](crate::InputAdapterFactory::resumable)) reads its
    /// source from there.
    pub fn resume_from(&self) -> Option<&SourcePosition> {
        self.shell
            .resume
            .as_ref()?
            .get(self.input.index())
            .and_then(Option::as_ref)
    }

    /// Whether the query takes snapshots ([`Query::checkpoints`](crate::Query::checkpoints)):
    /// then the adapter commits its position ([`InputContext::commit_position`]) each time
    /// everything it has read is enqueued.
    pub fn commits_positions(&self) -> bool {
        self.shell.resume.is_some()
    }

    /// Says where the source stands after every item read so far has been enqueued (a file:
    /// the byte offset and line after the last line read): a snapshot may record the input
    /// there, and a restored query resumes it there ([`InputContext::resume_from`]). A
    /// snapshot waits while an input has enqueued something since its last commit: an
    /// adapter of a query with checkpoints commits after each batch. Cheap: one lock, no
    /// work for the operators.
    pub async fn commit_position(&mut self, at: SourcePosition) {
        self.shell.commit(self.input.index(), at).await;
    }

    /// The stream's counters as of its last call into the query.
    pub fn counters(&self) -> IngressCounters {
        self.shell.streams[self.input.index()].counters()
    }

    /// Partitions the stream's watermark alignment asks to pause (they run too far ahead of the
    /// stream's CTI); an adapter reading a partitioned source should stop reading them until
    /// they are no longer listed.
    pub fn paused_partitions(&self) -> Vec<usize> {
        self.shell.streams[self.input.index()].paused()
    }

    /// The one way in: runs `f` on the driver with this stream's input, unless the query is
    /// stopping. A rejected item comes back as [`EnqueueError::Rejected`]; a full reorder
    /// buffer fails the query ([`EnqueueError::BufferFull`]).
    async fn drive<R>(
        &mut self,
        f: impl FnOnce(&mut Driver, InputId<P>) -> Result<R, punctual_policies::Error>,
    ) -> Result<R, EnqueueError> {
        if self.is_stopping() {
            return Err(EnqueueError::Stopping);
        }
        let input = self.input;
        let r = self
            .shell
            .drive(
                SendMode::StopAware(&mut self.stop),
                Some(input.index()),
                |d| f(d, input),
            )
            .await?;
        self.after(r)
    }

    /// Enqueues the items an adapter has read, emptying `items`, even once the query is
    /// stopping: what was read from a source that cannot give it again (standard input, a
    /// socket) is never lost at a stop (a drain releases it, an abort reports it unreleased).
    /// While running it waits for the outputs as [`InputContext::enqueue_batch`] does.
    pub async fn enqueue_read(
        &mut self,
        items: &mut Vec<StreamItem<P>>,
    ) -> Result<EnqueueSummary, EnqueueError> {
        let input = self.input;
        let mode = if self.is_stopping() {
            SendMode::Always
        } else {
            SendMode::StopAware(&mut self.stop)
        };
        let r = self
            .shell
            .drive(mode, Some(input.index()), |d| {
                d.enqueue_items(input, items.drain(..))
            })
            .await?;
        self.after(r)
    }

    /// What a call into the driver gave: a reference input's own CTI says its snapshot is in;
    /// a full reorder buffer fails the query; any other error is the item's rejection.
    fn after<R>(&self, r: Result<R, punctual_policies::Error>) -> Result<R, EnqueueError> {
        let index = self.input.index();
        let view = &self.shell.streams[index];
        if !view.is_ready() && view.counters().ctis_in > 0 {
            self.shell.mark_ready(index);
        }
        r.map_err(|error| {
            let stream = self.stream_name().to_owned();
            match error {
                punctual_policies::Error::BufferFull { .. } => {
                    let err = EnqueueError::BufferFull { stream, error };
                    self.shell.signals.fail(err.clone());
                    err
                }
                error => EnqueueError::Rejected { stream, error },
            }
        })
    }

    /// Enqueues many items in one call if the query can take them now, without waiting:
    /// [`TryEnqueueError::Full`] gives them back (nothing enqueued) when an output's queue is
    /// full, another call is running, or (as one worker of several) the executor's
    /// [`Backlog`](crate::Backlog) is full (StreamInsight's `Full`: try again later, or await
    /// [`InputContext::enqueue_batch`], which waits). Otherwise as `enqueue_batch`.
    ///
    /// ```
    /// use punctual_runtime::{AdapterError, InputContext, TryEnqueueError};
    /// use punctual_core::StreamItem;
    /// /// Hands over what the query takes now; keeps the items for the next turn if none.
    /// fn offer(
    ///     ctx: &mut InputContext<i64>,
    ///     pending: &mut Vec<StreamItem<i64>>,
    /// ) -> Result<(), AdapterError> {
    ///     match ctx.try_enqueue_batch(std::mem::take(pending)) {
    ///         Ok(_) => Ok(()),
    ///         Err(TryEnqueueError::Full(items)) => {
    ///             *pending = items;
    ///             Ok(())
    ///         }
    ///         Err(TryEnqueueError::Enqueue(e)) => Err(e.into()),
    ///     }
    /// }
    /// ```
    pub fn try_enqueue_batch(
        &mut self,
        items: Vec<StreamItem<P>>,
    ) -> Result<EnqueueSummary, TryEnqueueError<P>> {
        if self.is_stopping() {
            return Err(TryEnqueueError::Enqueue(EnqueueError::Stopping));
        }
        let input = self.input;
        let mut items = Some(items);
        let r = self.shell.try_drive(Some(input.index()), |d| {
            let items = items.take().unwrap_or_default();
            d.enqueue_items(input, items)
        });
        match r {
            None => Err(TryEnqueueError::Full(items.unwrap_or_default())),
            Some(r) => self.after(r).map_err(TryEnqueueError::Enqueue),
        }
    }

    /// Enqueues one item.
    pub async fn enqueue(&mut self, item: StreamItem<P>) -> Result<Enqueued, EnqueueError> {
        self.drive(|d, i| d.enqueue(i, item)).await
    }

    /// Enqueues one item with its arrival time and partition, for the watermark strategies.
    pub async fn enqueue_with(
        &mut self,
        item: StreamItem<P>,
        arrival: Arrival,
    ) -> Result<Enqueued, EnqueueError> {
        self.drive(|d, i| d.enqueue_with(i, item, arrival)).await
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

    /// Enqueues many items in one call (runs of points take the ingress' bulk loop). Rejected
    /// items do not stop the batch (they are counted in the summary and dead-lettered); a full
    /// reorder buffer does, and fails the query.
    pub async fn enqueue_batch(
        &mut self,
        items: impl IntoIterator<Item = StreamItem<P>>,
    ) -> Result<EnqueueSummary, EnqueueError> {
        self.drive(|d, i| d.enqueue_items(i, items)).await
    }

    /// [`InputContext::enqueue_batch`] with each item's arrival (its time and partition, which
    /// the stream's watermark strategy judges events by): for a partitioned source that reads
    /// in blocks.
    pub async fn enqueue_batch_with(
        &mut self,
        items: impl IntoIterator<Item = (StreamItem<P>, Arrival)>,
    ) -> Result<EnqueueSummary, EnqueueError> {
        self.drive(|d, i| d.enqueue_items_with(i, items)).await
    }

    /// Enqueues point events `(start, payload)` in one call, through the ingress' bulk path
    /// ([`Ingress::enqueue_points`]): the same result as enqueuing them one by one, faster. A
    /// full reorder buffer fails the query, as with [`InputContext::enqueue_batch`].
    ///
    /// [`Ingress::enqueue_points`]: punctual_policies::Ingress::enqueue_points
    pub async fn enqueue_points(
        &mut self,
        points: impl IntoIterator<Item = (Time, P)>,
    ) -> Result<EnqueueSummary, EnqueueError> {
        self.drive(|d, i| d.enqueue_points(i, points)).await
    }

    /// Enqueues point events given as columns (start times and payloads, in arrival order) in
    /// one call ([`Ingress::enqueue_point_columns`]): runs of in-order points go into the
    /// reorder buffer with one copy per column. Columns of different lengths are refused
    /// (nothing enqueued).
    ///
    /// [`Ingress::enqueue_point_columns`]: punctual_policies::Ingress::enqueue_point_columns
    pub async fn enqueue_point_columns(
        &mut self,
        times: &[Time],
        payloads: &[P],
    ) -> Result<EnqueueSummary, EnqueueError> {
        self.drive(|d, i| d.enqueue_point_columns(i, times, payloads))
            .await
    }

    /// Enqueues point events given as records (in arrival order) with the functions that read
    /// a record's start time and payload, in one call ([`Ingress::enqueue_point_records`]):
    /// each record is read straight into the reorder buffer (or, for an unordered stream, the
    /// released batch), without columns built first. For adapters whose decoded records are
    /// already in memory.
    ///
    /// [`Ingress::enqueue_point_records`]: punctual_policies::Ingress::enqueue_point_records
    pub async fn enqueue_point_records<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
    ) -> Result<EnqueueSummary, EnqueueError> {
        self.drive(|d, i| d.enqueue_point_records(i, records, time, payload))
            .await
    }

    /// Tells the stream's watermark strategy the least and highest start times of the next
    /// batch this adapter has read for input partition `partition` and not enqueued yet (the
    /// look-ahead term of `Watermark::partitioned(..).look_ahead()`, YTsaurus Flow's
    /// estimate): the CTI may move up to `min(min, max - bound)` at once. Does nothing for
    /// other strategies. Call it once everything before that batch is enqueued, and enqueue
    /// the batch next.
    pub async fn look_ahead(
        &mut self,
        partition: usize,
        (min, max): (Time, Time),
    ) -> Result<(), EnqueueError> {
        self.drive(|d, i| Ok(d.look_ahead(i, partition, (min, max))))
            .await
            .map(|_| ())
    }

    /// A reading of the clock, given by the adapter: hands `now` to this stream's watermark
    /// strategy as the query's clock would (idle partitions, periodic emission). For a source
    /// that knows when each record arrived (a replay of recorded arrivals), with
    /// [`Query::clock_from_inputs`](crate::Query::clock_from_inputs) so that no other clock
    /// is read. Does nothing on a stream without a watermark strategy. Returns whether it
    /// issued a CTI.
    pub async fn tick(&mut self, now: Time) -> bool {
        self.shell.tick(now, Some(self.input.index())).await
    }

    /// Reports `n` input records that carry no item and need none (blank lines, an `eof`
    /// line): counted as `skipped`, so that every record read is counted somewhere.
    pub async fn report_skipped(&mut self, n: u64) {
        let input = self.input;
        let _ = self
            .shell
            .drive(SendMode::Always, Some(input.index()), |d| {
                d.report_skipped(input, n)
            })
            .await;
    }

    /// Reports an input record that could not be parsed: counted as `malformed` and sent to the
    /// dead letters with its location and text. The stream goes on.
    pub async fn report_malformed(&mut self, record: MalformedRecord) {
        let input = self.input;
        let _ = self
            .shell
            .drive(SendMode::Always, Some(input.index()), |d| {
                d.report_malformed(input, record)
            })
            .await;
    }
}
