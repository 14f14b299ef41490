//! The ingress state machine of one input stream (SEMANTICS.md sections 1–3).
//!
//! CTI rule: the ingress emits `CTI(t)` when an adapter CTI, a generated candidate or an imported
//! CTI advances application time to `t`; just before it, it releases every buffered event with
//! sync time `< t`, sorted by sync time (ties in arrival order). Events with sync `>= t` stay in the
//! reorder buffer. A CTI that would not advance time is a no-op (counted as `stale_ctis` when it
//! came from the adapter or an import).
//!
//! Per item, in arrival order: validate (invalid → rejected), compare with the current CTI
//! (violation → policy, or rejected without one), accept into the reorder buffer, generate.
//! Every item ends up exactly once as released, dropped, rejected, unreleased or filtered (by a
//! predicate pushed down into the ingress); dropped and rejected items go to the dead-letter
//! output with their reason.
//!
//! ```
//! use punctual_core::{StreamItem, Time};
//! use punctual_policies::{AdvanceTimeSettings, Ingress, IngressConfig, IngressOutput};
//! let t = Time::from_ticks;
//! let mut ingress = Ingress::new(IngressConfig::from(&AdvanceTimeSettings::increasing_start_time()));
//! let mut out = IngressOutput::new();
//! for x in [1, 3, 2, 4] {
//!     ingress.enqueue(StreamItem::point(t(x), x), &mut out).unwrap();
//! }
//! ingress.finish(&mut out);
//! let released: Vec<_> = out.batch.items().map(|i| i.map(|p| *p)).collect();
//! assert_eq!(released, vec![
//!     StreamItem::Cti(t(1)), StreamItem::point(t(1), 1),
//!     StreamItem::Cti(t(3)), StreamItem::point(t(3), 3),      // 2 came after CTI(3): dropped
//!     StreamItem::Cti(t(4)), StreamItem::point(t(4), 4),
//!     StreamItem::Cti(Time::INF),
//! ]);
//! assert_eq!(ingress.counters().dropped, 1);
//! assert_eq!(out.dead_letters.len(), 1);
//! ```

use std::collections::HashMap;

use punctual_core::ops::ReleaseBuffer;

use punctual_core::{Batch, Event, EventKind, InvalidEvent, PointSelection, StreamItem, Time};

use crate::settings::{
    AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings, GenerationFrequency,
};
use crate::watermark::{Arrival, ClockReading, DropCause, State, Verdict, Watermark};
use crate::Error;

/// The default cap on events held in one stream's reorder buffer.
pub const DEFAULT_MAX_BUFFERED: usize = 1_000_000;

/// The ingress' resolved configuration. Import is wired by whoever owns several ingresses (the
/// runtime or the conformance runner), which calls [`Ingress::import_cti`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct IngressConfig {
    /// CTI generation, if any.
    pub generation: Option<AdvanceTimeGenerationSettings>,
    /// The violation policy; `None` rejects violating events.
    pub policy: Option<AdvanceTimePolicy>,
    /// Events the reorder buffer may hold; one more is rejected with [`Error::BufferFull`].
    /// A stream that never gets a CTI reaches it instead of growing without bound.
    pub max_buffered: usize,
    /// Release each accepted point or interval at once, in arrival order, instead of holding it
    /// in the reorder buffer until a CTI passes it: for a source made with
    /// `QueryGraph::unordered_source`, whose consumers do not depend on order (windowed
    /// aggregates). CTIs are generated, imported and enforced as usual: an event after `CTI(t)`
    /// still has sync time `>= t`, and the policies drop or adjust the same events. Edges are
    /// rejected with [`Error::EdgeOnArrival`] (an end edge can still change or remove its start
    /// edge, which must therefore wait for its CTI). Default `false`.
    pub on_arrival: bool,
}

impl Default for IngressConfig {
    /// No generation, no policy (violations are rejected), [`DEFAULT_MAX_BUFFERED`].
    fn default() -> Self {
        IngressConfig {
            generation: None,
            policy: None,
            max_buffered: DEFAULT_MAX_BUFFERED,
            on_arrival: false,
        }
    }
}

impl From<&AdvanceTimeSettings> for IngressConfig {
    fn from(s: &AdvanceTimeSettings) -> Self {
        IngressConfig {
            generation: s.generation().copied(),
            policy: s.policy(),
            max_buffered: DEFAULT_MAX_BUFFERED,
            on_arrival: false,
        }
    }
}

/// Per-stream counters. Accounting: `events_in = released + dropped + rejected + buffered +
/// unreleased + filtered` at every moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct IngressCounters {
    /// Events enqueued (valid or not).
    pub events_in: u64,
    /// CTIs enqueued by the adapter.
    pub ctis_in: u64,
    /// Events released downstream.
    pub released: u64,
    /// Events dropped by the policy (late).
    pub dropped: u64,
    /// Events changed by the `Adjust` policy (start moved up, end clamped, end edge re-keyed).
    pub adjusted: u64,
    /// Items rejected: invalid, violating with no policy, or over the buffer cap.
    pub rejected: u64,
    /// Adapter or imported CTIs that did not advance application time.
    pub stale_ctis: u64,
    /// Events left in the reorder buffer when the stream was closed.
    pub unreleased: u64,
    /// Valid events that a predicate pushed down into the ingress
    /// ([`Ingress::enqueue_point_records_where`]) kept out of the query: accepted (they count
    /// for CTI generation and the CTI checks as any other), never released.
    pub filtered: u64,
    /// Start edges left open because their end edge was dropped.
    pub dangling_edges: u64,
    /// CTIs emitted downstream.
    pub ctis_out: u64,
    /// Events in the reorder buffer now.
    pub buffered: u64,
    /// Input records the adapter could not parse into items (reported with
    /// [`Ingress::report_malformed`]); not part of `events_in`.
    pub malformed: u64,
    /// Events whose time was too far after their arrival (watermark strategies; also counted
    /// as `dropped`).
    pub early: u64,
    /// Events that arrived too late (watermark strategies; also counted as `dropped` or
    /// `adjusted`).
    pub late: u64,
    /// Events below their (sub)stream's watermark (watermark strategies; also counted as
    /// `dropped` or `adjusted`).
    pub out_of_order: u64,
    /// The stream's application time: its last CTI (`-inf` before the first).
    pub cti: Time,
    /// The highest start accepted so far (`-inf` before the first event); `max_start - cti` is
    /// how far the CTI lags behind the events.
    pub max_start: Time,
}

/// Why an item went to the dead-letter output.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DeadLetterReason {
    /// Dropped by the policy for breaking the CTI.
    Late,
    /// Rejected; the error says why.
    Rejected(Error),
    /// Still buffered when the stream was closed (no CTI ever passed it).
    Unreleased,
    /// An input record that could not be parsed into an item.
    Malformed(MalformedRecord),
    /// Dropped by a watermark strategy.
    Watermark(DropCause),
}

/// An input record that an adapter could not parse into an item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MalformedRecord {
    /// Where it was (`file:line`, `socket peer:line`).
    pub location: String,
    /// What was wrong with it.
    pub message: String,
    /// The record's text.
    pub text: String,
}

impl std::fmt::Display for DeadLetterReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeadLetterReason::Late => f.write_str("late"),
            DeadLetterReason::Rejected(e) => write!(f, "rejected: {e}"),
            DeadLetterReason::Unreleased => f.write_str("unreleased"),
            DeadLetterReason::Watermark(DropCause::Early) => f.write_str("early"),
            DeadLetterReason::Watermark(DropCause::LateArrival) => f.write_str("late arrival"),
            DeadLetterReason::Watermark(DropCause::OutOfOrder) => f.write_str("out of order"),
            DeadLetterReason::Malformed(m) => {
                write!(f, "malformed at {}: {}", m.location, m.message)
            }
        }
    }
}

/// An item that was not released, with the reason and the stream's CTI at that moment.
#[derive(Clone, Debug, PartialEq)]
pub struct DeadLetter<P> {
    /// The item as it was enqueued (or as adjusted, for a start edge removed later); `None` for
    /// a malformed record that never became an item.
    pub item: Option<StreamItem<P>>,
    /// Why it was not released.
    pub reason: DeadLetterReason,
    /// The stream's application time (last CTI) when it happened.
    pub cti: Time,
}

/// An event dropped by a policy or a watermark strategy, as the late-data side output carries
/// it: the event as it arrived, why, and the CTI it broke.
#[derive(Clone, Debug, PartialEq)]
pub struct LateEvent<P> {
    /// The event as it arrived.
    pub event: Event<P>,
    /// Why it was dropped.
    pub reason: DeadLetterReason,
    /// The stream's CTI when it was dropped.
    pub cti: Time,
}

/// What [`Ingress::enqueue`] did with an accepted item.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Enqueued {
    /// The event is in the reorder buffer (or already released by a CTI it caused).
    Accepted,
    /// The event was changed by the `Adjust` policy and accepted.
    Adjusted,
    /// The event broke the CTI and was dropped by the policy.
    Dropped,
    /// The CTI advanced application time.
    Cti,
    /// The CTI did not advance application time and was ignored.
    StaleCti,
}

/// Where an ingress puts what it releases: a batch of sorted events and CTIs, and dead letters.
#[derive(Debug)]
pub struct IngressOutput<P> {
    /// Released events and emitted CTIs.
    pub batch: Batch<P>,
    /// Dropped, rejected and unreleased items.
    pub dead_letters: Vec<DeadLetter<P>>,
    /// The late-data side output, when enabled ([`Ingress::enable_late_output`]): each event
    /// dropped by a policy or a watermark strategy as a point at the CTI it broke, and the
    /// stream's CTIs, so it is an ordinary stream.
    pub late: Batch<LateEvent<P>>,
}

impl<P> Default for IngressOutput<P> {
    fn default() -> Self {
        IngressOutput::new()
    }
}

impl<P> IngressOutput<P> {
    /// Empty output.
    pub fn new() -> Self {
        IngressOutput {
            batch: Batch::new(),
            dead_letters: Vec::new(),
            late: Batch::new(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum EdgeState {
    /// Accepted (possibly adjusted); its end edge is awaited.
    Open,
    /// Its end edge was dropped; a later valid end edge may still close it.
    Dangling,
    /// Dropped by the policy; its end edge will be dropped too.
    Dropped,
}

#[derive(Debug)]
struct OpenEdge<P> {
    /// Start as accepted (after any adjustment).
    start: Time,
    payload: P,
    state: EdgeState,
}

/// The ingress of one input stream; see the module doc.
#[derive(Debug)]
pub struct Ingress<P> {
    config: IngressConfig,
    app: Time,
    high: Time,
    since_cti: u64,
    buffer: ReleaseBuffer<P>,
    /// Open start edges by their original start time.
    edges: HashMap<Time, Vec<OpenEdge<P>>>,
    counters: IngressCounters,
    finished: bool,
    watermark: Option<State<P>>,
    last_adjustment: Option<(EventKind, EventKind)>,
    clock_record: Vec<ClockReading>,
    items_seen: u64,
    late_output: bool,
    /// Room for the points a pushed-down filter keeps
    /// ([`Ingress::enqueue_point_records_where`], released on arrival).
    selection: PointSelection<P>,
}

impl<P: Clone + PartialEq> Ingress<P> {
    /// A new ingress at application time `-inf`.
    pub fn new(config: IngressConfig) -> Self {
        Ingress {
            config,
            app: Time::NEG_INF,
            high: Time::NEG_INF,
            since_cti: 0,
            buffer: ReleaseBuffer::new(),
            edges: HashMap::new(),
            counters: IngressCounters::default(),
            finished: false,
            watermark: None,
            last_adjustment: None,
            clock_record: Vec::new(),
            items_seen: 0,
            late_output: false,
            selection: PointSelection::new(),
        }
    }

    /// A new ingress whose CTIs come from a watermark strategy (which takes the place of any
    /// generation settings in `config`). Events that still break a CTI (behind a bounded
    /// watermark, say) are handled by `config`'s policy, `Drop` if it has none: late data is
    /// dropped, counted and sent to the dead letters and the late output, as Flink does.
    pub fn with_watermark(config: IngressConfig, watermark: Watermark<P>) -> Self {
        let mut ingress = Ingress::new(IngressConfig {
            generation: None,
            policy: config.policy.or(Some(AdvanceTimePolicy::Drop)),
            ..config
        });
        ingress.watermark = Some(State::new(watermark));
        ingress
    }

    /// After an enqueue that returned [`Enqueued::Adjusted`]: the event's kind and times as
    /// enqueued and as accepted (for diagnostics and the timeline picture).
    pub fn last_adjustment(&self) -> Option<(EventKind, EventKind)> {
        self.last_adjustment
    }

    /// Starts the late-data side output in [`IngressOutput::late`].
    pub fn enable_late_output(&mut self) {
        self.late_output = true;
    }

    /// The clock readings that issued CTIs so far; feeding the same readings after the same
    /// numbers of items (see [`ClockReading`]) replays the same output.
    pub fn clock_record(&self) -> &[ClockReading] {
        &self.clock_record
    }

    /// Partitions whose watermark runs more than the strategy's maximum drift ahead of the
    /// stream's CTI: the adapter should pause reading them (watermark alignment).
    pub fn paused_partitions(&self) -> Vec<usize> {
        self.watermark
            .as_ref()
            .map(|w| w.paused(self.app))
            .unwrap_or_default()
    }

    /// A clock reading (application-time scale): lets a watermark strategy advance the CTI with
    /// no events (idle input, idle partitions, periodic emission). Returns whether it issued a
    /// CTI; such readings are recorded in [`Ingress::clock_record`].
    pub fn on_clock(&mut self, now: Time, out: &mut IngressOutput<P>) -> bool {
        let Some(w) = self.watermark.as_mut() else {
            return false;
        };
        let issued = match w.on_clock(now) {
            Some(c) => self.issue(c, out),
            None => false,
        };
        if issued {
            self.clock_record.push(ClockReading {
                after_items: self.items_seen,
                now,
            });
        }
        issued
    }

    /// The configuration.
    pub fn config(&self) -> &IngressConfig {
        &self.config
    }

    /// Application time: the last CTI issued (`-inf` before the first).
    pub fn app_time(&self) -> Time {
        self.app
    }

    /// The counters so far.
    pub fn counters(&self) -> IngressCounters {
        let mut c = self.counters;
        c.buffered = self.buffer.len() as u64;
        c.cti = self.app;
        c.max_start = self.high;
        c
    }

    /// Whether [`Ingress::finish`] has run.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Processes one item from the adapter. Releases and CTIs go to `out.batch`; dropped and
    /// rejected items to `out.dead_letters`. An error means the item was rejected (it is counted
    /// and dead-lettered too); the stream goes on.
    pub fn enqueue(
        &mut self,
        item: StreamItem<P>,
        out: &mut IngressOutput<P>,
    ) -> Result<Enqueued, Error> {
        self.enqueue_with(item, Arrival::default(), out)
    }

    /// Like [`Ingress::enqueue`], with the item's arrival time and partition, which the watermark
    /// strategies use.
    pub fn enqueue_with(
        &mut self,
        item: StreamItem<P>,
        arrival: Arrival,
        out: &mut IngressOutput<P>,
    ) -> Result<Enqueued, Error> {
        self.items_seen += 1;
        match item {
            StreamItem::Cti(t) => {
                self.counters.ctis_in += 1;
                if t == Time::NEG_INF {
                    return Err(self.reject(
                        StreamItem::Cti(t),
                        Error::Invalid(InvalidEvent::CtiAtNegInf),
                        out,
                    ));
                }
                Ok(self.external_cti(t, out))
            }
            StreamItem::Insert(event) => {
                self.counters.events_in += 1;
                self.insert(event, arrival, true, out)
            }
        }
    }

    /// Enqueues point events in arrival order, with the same result as enqueuing
    /// `StreamItem::point(t, p)` for each (CTIs generated between them included), in one call:
    /// the way to feed a stream of points at full speed. Returns how many were rejected (each
    /// is also counted and sent to the dead letters with its reason, as by [`Ingress::enqueue`]),
    /// or [`Error::BufferFull`] when the reorder buffer is full: that point was rejected, the
    /// points after it were not taken from the iterator, and the rejections before it are in
    /// the counters.
    ///
    /// ```
    /// use punctual_core::Time;
    /// use punctual_policies::{AdvanceTimeGenerationSettings, Ingress, IngressConfig, IngressOutput};
    /// use punctual_policies::AdvanceTimePolicy;
    /// let t = Time::from_ticks;
    /// let mut ingress = Ingress::new(IngressConfig {
    ///     generation: Some(AdvanceTimeGenerationSettings::every_events(2).build().unwrap()),
    ///     policy: Some(AdvanceTimePolicy::Drop),
    ///     ..IngressConfig::default()
    /// });
    /// let mut out = IngressOutput::new();
    /// let points = [(t(1), 'a'), (t(3), 'b'), (t(2), 'c'), (t(4), 'd')];
    /// assert_eq!(ingress.enqueue_points(points, &mut out), Ok(0));
    /// // CTI(3) after 'b' releases 'a'; 'c' at 2 breaks it and is dropped; 'd' waits for a CTI.
    /// assert_eq!(out.batch.payloads(), &['a']);
    /// assert_eq!(out.batch.last_cti(), Some(t(3)));
    /// assert_eq!(ingress.counters().dropped, 1);
    /// ```
    pub fn enqueue_points(
        &mut self,
        points: impl IntoIterator<Item = (Time, P)>,
        out: &mut IngressOutput<P>,
    ) -> Result<usize, Error> {
        // Points the tight loop may take before generation must look: up to the next CTI by
        // count, one at a time by duration, any number without generation.
        let every = match self.config.generation.map(|g| g.frequency()) {
            Some(GenerationFrequency::EveryEvents(n)) => Some(n.get()),
            Some(GenerationFrequency::EveryDuration(_)) => Some(1),
            None => None,
        };
        let mut rejected = 0;
        let mut points = points.into_iter();
        if self.watermark.is_some() || self.config.on_arrival {
            for (t, payload) in points {
                match self.enqueue(StreamItem::point(t, payload), out) {
                    Ok(_) => {}
                    Err(e @ Error::BufferFull { .. }) => return Err(e),
                    Err(_) => rejected += 1,
                }
            }
            return Ok(rejected);
        }
        loop {
            // The common case in a tight loop: valid points at or after the CTI, with room in
            // the buffer, up to the next generated CTI. The first point that is not (or the
            // CTI) leaves the loop and takes the general path.
            let low = self.app.max(Time::MIN_FINITE);
            let room = self.config.max_buffered.saturating_sub(self.buffer.len());
            let budget = match every {
                Some(1) => 1,
                Some(n) => n.saturating_sub(self.since_cti),
                None => u64::MAX,
            };
            let limit = room.min(usize::try_from(budget).unwrap_or(usize::MAX));
            let mut high = self.high;
            let mut taken = 0usize;
            let mut stray = None;
            for (t, payload) in points.by_ref() {
                if t >= low && t < Time::MAX_FINITE && taken < limit {
                    self.buffer.push_point(t, payload);
                    high = high.max(t);
                    taken += 1;
                    if taken == limit && limit == budget as usize {
                        break;
                    }
                } else {
                    stray = Some((t, payload));
                    break;
                }
            }
            let n = taken as u64;
            self.items_seen += n;
            self.counters.events_in += n;
            self.high = high;
            self.since_cti += n;
            if taken > 0 {
                self.generate(out);
            }
            match stray {
                Some((t, payload)) => match self.enqueue(StreamItem::point(t, payload), out) {
                    Ok(_) => {}
                    Err(e @ Error::BufferFull { .. }) => return Err(e),
                    Err(_) => rejected += 1,
                },
                None if taken == 0 || (taken < limit) => return Ok(rejected),
                None => {}
            }
        }
    }

    /// Enqueues point events given as columns (start times and payloads, in arrival order),
    /// with the same result as [`Ingress::enqueue_points`] on the pairs: the fastest way in for
    /// an adapter that parses its input into columns. Runs of valid points in time order (the
    /// common case) are appended to the reorder buffer with one copy per column; the others take
    /// the general path (payloads are cloned). Errors as [`Ingress::enqueue_points`], and
    /// [`Error::ColumnLengths`] (nothing enqueued) when the columns differ in length.
    ///
    /// ```
    /// use punctual_core::Time;
    /// use punctual_policies::{AdvanceTimeGenerationSettings, Ingress, IngressConfig, IngressOutput};
    /// use punctual_policies::AdvanceTimePolicy;
    /// let t = Time::from_ticks;
    /// let mut ingress = Ingress::new(IngressConfig {
    ///     generation: Some(AdvanceTimeGenerationSettings::every_events(2).build().unwrap()),
    ///     policy: Some(AdvanceTimePolicy::Drop),
    ///     ..IngressConfig::default()
    /// });
    /// let mut out = IngressOutput::new();
    /// let times = [t(1), t(3), t(2), t(4)];
    /// assert_eq!(ingress.enqueue_point_columns(&times, &['a', 'b', 'c', 'd'], &mut out), Ok(0));
    /// assert_eq!(out.batch.payloads(), &['a']); // CTI(3); 'c' at 2 is dropped
    /// assert_eq!(ingress.counters().dropped, 1);
    /// ```
    pub fn enqueue_point_columns(
        &mut self,
        times: &[Time],
        payloads: &[P],
        out: &mut IngressOutput<P>,
    ) -> Result<usize, Error> {
        if times.len() != payloads.len() {
            return Err(Error::ColumnLengths {
                times: times.len(),
                payloads: payloads.len(),
            });
        }
        self.enqueue_point_run(&Columns { times, payloads }, out)
    }

    /// Enqueues point events given as records (in arrival order) with the functions that read
    /// a record's start time and payload: the same result as [`Ingress::enqueue_points`] on
    /// `records.iter().map(|r| (time(r), payload(r)))`, and the same speed path as
    /// [`Ingress::enqueue_point_columns`] without building the columns first: for an adapter
    /// whose decoded records are already in memory (a slice of structs), each record is read
    /// straight into the reorder buffer or, on arrival, into the output batch. `time` and
    /// `payload` may be called more than once for a record. Errors as
    /// [`Ingress::enqueue_points`].
    ///
    /// ```
    /// use punctual_core::Time;
    /// use punctual_policies::{AdvanceTimeGenerationSettings, Ingress, IngressConfig, IngressOutput};
    /// use punctual_policies::AdvanceTimePolicy;
    /// // (milliseconds, value, sensor): a decoded record.
    /// let records = [(1_i64, 10_i64, 7_u32), (3, 30, 7), (2, 20, 8), (4, 40, 8)];
    /// let mut ingress = Ingress::new(IngressConfig {
    ///     generation: Some(AdvanceTimeGenerationSettings::every_events(2).build().unwrap()),
    ///     policy: Some(AdvanceTimePolicy::Drop),
    ///     ..IngressConfig::default()
    /// });
    /// let mut out = IngressOutput::new();
    /// let ms = |r: &(i64, i64, u32)| Time::from_ticks(r.0 * 10_000);
    /// let rejected = ingress.enqueue_point_records(&records, ms, |r| (r.1, r.2), &mut out);
    /// assert_eq!(rejected, Ok(0));
    /// assert_eq!(out.batch.payloads(), &[(10, 7)]); // CTI(3 ms); the record at 2 ms is dropped
    /// assert_eq!(ingress.counters().dropped, 1);
    /// ```
    pub fn enqueue_point_records<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        out: &mut IngressOutput<P>,
    ) -> Result<usize, Error> {
        self.enqueue_point_run(
            &Records {
                records,
                time,
                payload,
                keep: KeepAll,
            },
            out,
        )
    }

    /// [`Ingress::enqueue_point_records`] with a filter pushed down into the ingress: of the
    /// points accepted, only those whose payload satisfies `keep` are released (or buffered);
    /// the others are counted as `filtered` and go nowhere. Everything else is as if every
    /// point entered: they count for CTI generation (every N events, the highest start
    /// time), a point that breaks the CTI is dropped or rejected as usual whatever `keep`
    /// says, and the stream's output is exactly what
    /// [`Unordered::filter`](punctual_core::ops::Unordered::filter) (or `Stream::filter`) with
    /// the same predicate would give downstream. On an unordered stream
    /// ([`IngressConfig::on_arrival`]) the predicate runs inside the read loop: a point it
    /// refuses is never written out, which spares the query the released batch's copy of it
    /// (the filter query of the benchmark runs about 1.35 times as fast this way). Errors as
    /// [`Ingress::enqueue_points`].
    ///
    /// ```
    /// use punctual_core::Time;
    /// use punctual_policies::{AdvanceTimeGenerationSettings, Ingress, IngressConfig, IngressOutput};
    /// use punctual_policies::AdvanceTimePolicy;
    /// // (milliseconds, value): decoded records.
    /// let records = [(1_i64, 10_i64), (3, 30), (2, 20), (4, 40), (5, 50)];
    /// let mut ingress = Ingress::new(IngressConfig {
    ///     generation: Some(AdvanceTimeGenerationSettings::every_events(2).build().unwrap()),
    ///     policy: Some(AdvanceTimePolicy::Drop),
    ///     on_arrival: true,
    ///     ..IngressConfig::default()
    /// });
    /// let mut out = IngressOutput::new();
    /// let ms = |r: &(i64, i64)| Time::from_ticks(r.0 * 10_000);
    /// let big = |v: &i64| *v >= 30;
    /// assert_eq!(ingress.enqueue_point_records_where(&records, ms, |r| r.1, big, &mut out), Ok(0));
    /// // 10 was filtered; the point at 2 ms broke CTI(3 ms) after 1 and 3 and was dropped; the
    /// // points at 4 and 5 ms generated CTI(5 ms).
    /// assert_eq!(out.batch.payloads(), &[30, 40, 50]);
    /// assert_eq!(out.batch.last_cti(), Some(Time::from_ticks(50_000)));
    /// let c = ingress.counters();
    /// assert_eq!((c.events_in, c.released, c.filtered, c.dropped), (5, 3, 1, 1));
    /// ```
    pub fn enqueue_point_records_where<R>(
        &mut self,
        records: &[R],
        time: impl Fn(&R) -> Time,
        payload: impl Fn(&R) -> P,
        keep: impl Fn(&P) -> bool,
        out: &mut IngressOutput<P>,
    ) -> Result<usize, Error> {
        self.enqueue_point_run(
            &Records {
                records,
                time,
                payload,
                keep: KeepWhere(keep),
            },
            out,
        )
    }

    /// One point through the general path ([`Ingress::enqueue`]), with a pushed-down
    /// predicate's verdict.
    fn enqueue_point(
        &mut self,
        t: Time,
        payload: P,
        keep: bool,
        out: &mut IngressOutput<P>,
    ) -> Result<Enqueued, Error> {
        self.items_seen += 1;
        self.counters.events_in += 1;
        let event = Event {
            kind: EventKind::Point(t),
            payload,
        };
        self.insert(event, Arrival::default(), keep, out)
    }

    /// The bulk path behind [`Ingress::enqueue_point_columns`] and
    /// [`Ingress::enqueue_point_records`].
    fn enqueue_point_run(
        &mut self,
        points: &impl PointRun<P>,
        out: &mut IngressOutput<P>,
    ) -> Result<usize, Error> {
        let len = points.len();
        if self.watermark.is_some() {
            if points.keeps_all() {
                let all = (0..len).map(|i| (points.time(i), points.payload(i)));
                return self.enqueue_points(all, out);
            }
            // A watermark strategy looks at each point: one by one, as `enqueue` would.
            let mut rejected = 0;
            for i in 0..len {
                let p = points.payload(i);
                let keep = points.keep(&p);
                match self.enqueue_point(points.time(i), p, keep, out) {
                    Ok(_) => {}
                    Err(e @ Error::BufferFull { .. }) => return Err(e),
                    Err(_) => rejected += 1,
                }
            }
            return Ok(rejected);
        }
        let every = match self.config.generation.map(|g| g.frequency()) {
            Some(GenerationFrequency::EveryEvents(n)) => Some(n.get()),
            Some(GenerationFrequency::EveryDuration(_)) => Some(1),
            None => None,
        };
        let mut rejected = 0;
        let mut i = 0;
        while i < len {
            // Up to the next generated CTI, with room in the buffer, one pass: runs of valid
            // points in time order go in with one copy per column, valid points behind the
            // run (out of order, at or after the CTI) go in one by one (released on arrival:
            // every valid point goes straight to the output); the first point that is not
            // valid (or breaks the CTI) ends the pass and takes the general path.
            let room = self.config.max_buffered.saturating_sub(self.buffer.len());
            let budget = match every {
                Some(n) => usize::try_from(n.saturating_sub(self.since_cti)).unwrap_or(usize::MAX),
                None => usize::MAX,
            };
            let end = len.min(i.saturating_add(budget.min(room)));
            let low = self.app.max(Time::MIN_FINITE);
            let mut top = Time::NEG_INF;
            let mut j = i;
            // Released on arrival through a pushed-down filter: one pass reads, checks and
            // writes out the kept points.
            let selected = if self.config.on_arrival {
                points.select(i..end, &mut self.selection, low)
            } else {
                None
            };
            if let Some((read, high)) = selected {
                self.selection.append_to(&mut out.batch);
                let kept = self.selection.len();
                top = high;
                j = i + read;
                self.counters.released += kept as u64;
                self.counters.filtered += (read - kept) as u64;
            } else if self.config.on_arrival {
                // Released on arrival: the run of valid points goes straight to the output.
                while j < end {
                    let t = points.time(j);
                    if t < low || t >= Time::MAX_FINITE {
                        break;
                    }
                    top = top.max(t);
                    j += 1;
                }
                points.release_on_arrival(i..j, &mut out.batch);
                self.counters.released += (j - i) as u64;
            } else {
                let mut last = self.buffer.last_in_order().max(low);
                let mut run = i;
                while j < end {
                    let t = points.time(j);
                    if t >= last && t < Time::MAX_FINITE {
                        last = t;
                        top = t;
                        j += 1;
                        continue;
                    }
                    if t < low || t >= Time::MAX_FINITE {
                        break;
                    }
                    // Out of order but valid: after the run before it, so that ties keep
                    // arrival order.
                    let refused = points.hold_sorted(run..j, &mut self.buffer, &mut self.selection);
                    self.counters.filtered += refused as u64;
                    let p = points.payload(j);
                    if points.keep(&p) {
                        self.buffer.push_point(t, p);
                    } else {
                        self.counters.filtered += 1;
                    }
                    j += 1;
                    run = j;
                }
                let refused = points.hold_sorted(run..j, &mut self.buffer, &mut self.selection);
                self.counters.filtered += refused as u64;
            }
            let n = (j - i) as u64;
            self.items_seen += n;
            self.counters.events_in += n;
            self.since_cti += n;
            if top > self.high {
                self.high = top;
            }
            if j > i {
                self.generate(out);
            }
            let progressed = j > i;
            i = j;
            if i < len && (i < end || !progressed) {
                // Invalid, breaking the CTI, over the cap, or generation must look at each
                // point (by duration): the general path.
                let p = points.payload(i);
                let keep = points.keep(&p);
                match self.enqueue_point(points.time(i), p, keep, out) {
                    Ok(_) => {}
                    Err(e @ Error::BufferFull { .. }) => return Err(e),
                    Err(_) => rejected += 1,
                }
                i += 1;
            }
        }
        Ok(rejected)
    }

    /// Issues a CTI imported from another stream; returns whether it advanced application time
    /// (a stale import is counted as `stale_ctis`).
    pub fn import_cti(&mut self, t: Time, out: &mut IngressOutput<P>) -> bool {
        self.external_cti(t, out) == Enqueued::Cti
    }

    /// End of input: issues `CTI(+inf)` if the generation settings ask for a final CTI. Returns
    /// whether it did. Buffered events may still be released by imported CTIs afterwards.
    pub fn finish(&mut self, out: &mut IngressOutput<P>) -> bool {
        if self.finished {
            return false;
        }
        self.finished = true;
        let final_cti = match (&self.watermark, self.config.generation) {
            (Some(w), _) => w.final_cti(),
            (None, Some(g)) => g.final_cti(),
            (None, None) => false,
        };
        final_cti && self.issue(Time::INF, out)
    }

    /// Closes the stream for good (the query has ended): every event still buffered is counted
    /// as `unreleased` and sent to the dead letters with that reason.
    pub fn close(&mut self, out: &mut IngressOutput<P>) {
        self.finished = true;
        self.counters.unreleased += self.buffer.len() as u64;
        for (sync, other, payload) in self.buffer.drain_all() {
            out.dead_letters.push(DeadLetter {
                item: Some(StreamItem::Insert(Event {
                    kind: EventKind::decode(sync, other),
                    payload,
                })),
                reason: DeadLetterReason::Unreleased,
                cti: self.app,
            });
        }
    }

    /// Records an input record the adapter could not parse: counted as `malformed` and sent to
    /// the dead letters with its location, text and what was wrong.
    pub fn report_malformed(&mut self, record: MalformedRecord, out: &mut IngressOutput<P>) {
        self.counters.malformed += 1;
        out.dead_letters.push(DeadLetter {
            item: None,
            reason: DeadLetterReason::Malformed(record),
            cti: self.app,
        });
    }

    fn external_cti(&mut self, t: Time, out: &mut IngressOutput<P>) -> Enqueued {
        if self.issue(t, out) {
            Enqueued::Cti
        } else {
            self.counters.stale_ctis += 1;
            Enqueued::StaleCti
        }
    }

    fn reject(&mut self, item: StreamItem<P>, error: Error, out: &mut IngressOutput<P>) -> Error {
        self.counters.rejected += 1;
        out.dead_letters.push(DeadLetter {
            item: Some(item),
            reason: DeadLetterReason::Rejected(error.clone()),
            cti: self.app,
        });
        error
    }

    fn drop_late(&mut self, item: StreamItem<P>, out: &mut IngressOutput<P>) -> Enqueued {
        self.drop_for(item, DeadLetterReason::Late, out)
    }

    fn drop_for(
        &mut self,
        item: StreamItem<P>,
        reason: DeadLetterReason,
        out: &mut IngressOutput<P>,
    ) -> Enqueued {
        self.counters.dropped += 1;
        if self.late_output {
            if let StreamItem::Insert(event) = &item {
                let at = self.app.max(Time::MIN_FINITE);
                out.late.push_event(
                    at,
                    at.next_tick(),
                    LateEvent {
                        event: event.clone(),
                        reason: reason.clone(),
                        cti: self.app,
                    },
                );
            }
        }
        out.dead_letters.push(DeadLetter {
            item: Some(item),
            reason,
            cti: self.app,
        });
        Enqueued::Dropped
    }

    /// Validates, polices and accepts one event. `keep` is a pushed-down predicate's verdict
    /// (always true for edges): an accepted event it refuses is counted as filtered instead of
    /// released or buffered.
    fn insert(
        &mut self,
        event: Event<P>,
        arrival: Arrival,
        keep: bool,
        out: &mut IngressOutput<P>,
    ) -> Result<Enqueued, Error> {
        // The common case first: a valid point at or after the CTI, no watermark strategy, room
        // in the buffer. It needs none of the checks below (the general path gives the same
        // result for it).
        if let EventKind::Point(t) = event.kind {
            if self.watermark.is_none()
                && t >= self.app
                && t < Time::MAX_FINITE
                && t > Time::NEG_INF
                && self.buffer.len() < self.config.max_buffered
            {
                if !keep {
                    self.counters.filtered += 1;
                } else if self.config.on_arrival {
                    out.batch.push_on_arrival(t, t.next_tick(), event.payload);
                    self.counters.released += 1;
                } else {
                    self.buffer.push(t, t.next_tick(), event.payload);
                }
                if t > self.high {
                    self.high = t;
                }
                self.since_cti += 1;
                self.generate(out);
                return Ok(Enqueued::Accepted);
            }
        }
        if let Err(e) = event.kind.validate() {
            return Err(self.reject(StreamItem::Insert(event), Error::Invalid(e), out));
        }
        if self.config.on_arrival
            && matches!(
                event.kind,
                EventKind::StartEdge(_) | EventKind::EndEdge { .. }
            )
        {
            return Err(self.reject(StreamItem::Insert(event), Error::EdgeOnArrival, out));
        }
        let original_kind = event.kind;
        let mut event = event;
        let mut watermark_adjusted = false;
        if let (Some(w), false) = (
            self.watermark.as_ref(),
            matches!(event.kind, EventKind::EndEdge { .. }),
        ) {
            let start = event.kind.start();
            match w.judge(start, &event.payload, arrival) {
                Err(why) => {
                    let error = Error::InvalidSettings(why.into());
                    return Err(self.reject(StreamItem::Insert(event), error, out));
                }
                Ok(Verdict::Drop(cause)) => {
                    match cause {
                        DropCause::Early => self.counters.early += 1,
                        DropCause::LateArrival => self.counters.late += 1,
                        DropCause::OutOfOrder => self.counters.out_of_order += 1,
                    }
                    let reason = DeadLetterReason::Watermark(cause);
                    return Ok(self.drop_for(StreamItem::Insert(event), reason, out));
                }
                Ok(Verdict::Keep {
                    start: moved,
                    late,
                    out_of_order,
                }) => {
                    self.counters.late += u64::from(late);
                    self.counters.out_of_order += u64::from(out_of_order);
                    if moved != start {
                        watermark_adjusted = true;
                        self.counters.adjusted += 1;
                        event.kind = shift_start(event.kind, moved);
                    }
                }
            }
        }
        if self.buffer.len() >= self.config.max_buffered {
            let error = Error::BufferFull {
                cap: self.config.max_buffered,
                app: self.app,
            };
            return Err(self.reject(StreamItem::Insert(event), error, out));
        }
        if let EventKind::EndEdge { start, end } = event.kind {
            return self.insert_end_edge(start, end, event.payload, out);
        }
        let a = self.app;
        let start = event.kind.start();
        let mut kind = event.kind;
        let mut adjusted = false;
        if start < a {
            // A violation: a point, an interval or a start edge that begins before the CTI.
            let Some(policy) = self.config.policy else {
                let error = Error::Violation {
                    sync: start,
                    app: a,
                };
                return Err(self.reject(StreamItem::Insert(event), error, out));
            };
            let survives = match (policy, kind) {
                (AdvanceTimePolicy::Adjust, EventKind::Interval { end, .. }) if end > a => {
                    kind = EventKind::Interval { start: a, end };
                    true
                }
                // At CTI(+inf) nothing is left of an edge: it would start at infinity.
                (AdvanceTimePolicy::Adjust, EventKind::StartEdge(_)) if a < Time::INF => {
                    kind = EventKind::StartEdge(a);
                    true
                }
                _ => false,
            };
            if !survives {
                if let EventKind::StartEdge(s) = kind {
                    self.edges.entry(s).or_default().push(OpenEdge {
                        start: s,
                        payload: event.payload.clone(),
                        state: EdgeState::Dropped,
                    });
                }
                return Ok(self.drop_late(StreamItem::Insert(event), out));
            }
            adjusted = true;
            self.counters.adjusted += 1;
        }
        if let EventKind::StartEdge(s) = kind {
            self.edges.entry(start).or_default().push(OpenEdge {
                start: s,
                payload: event.payload.clone(),
                state: EdgeState::Open,
            });
        }
        if adjusted || watermark_adjusted {
            self.last_adjustment = Some((original_kind, kind));
        }
        let accepted_start = kind.start();
        let candidate = self
            .watermark
            .as_mut()
            .and_then(|w| w.observe(accepted_start, &event.payload, arrival));
        if !keep {
            self.counters.filtered += 1;
        } else if self.config.on_arrival {
            let (sync, other) = kind.encode();
            out.batch.push_on_arrival(sync, other, event.payload);
            self.counters.released += 1;
        } else {
            self.push_buffer(kind, event.payload);
        }
        self.high = self.high.max(accepted_start);
        self.since_cti += 1;
        match candidate {
            Some(c) => {
                self.issue(c, out);
            }
            None => self.generate(out),
        }
        Ok(if adjusted || watermark_adjusted {
            Enqueued::Adjusted
        } else {
            Enqueued::Accepted
        })
    }

    fn insert_end_edge(
        &mut self,
        start: Time,
        end: Time,
        payload: P,
        out: &mut IngressOutput<P>,
    ) -> Result<Enqueued, Error> {
        let a = self.app;
        let slot = self
            .edges
            .get(&start)
            .and_then(|v| v.iter().position(|e| e.payload == payload));
        let Some(idx) = slot else {
            let error = Error::Invalid(InvalidEvent::UnmatchedEndEdge { start, end });
            return Err(self.reject(StreamItem::end_edge(start, end, payload), error, out));
        };
        let (edge_start, state) = {
            let e = &self.edges[&start][idx];
            (e.start, e.state)
        };
        if state == EdgeState::Dropped {
            self.remove_edge(start, idx);
            return Ok(self.drop_late(StreamItem::end_edge(start, end, payload), out));
        }
        let mut new_end = end;
        if end < a {
            match self.config.policy {
                None => {
                    let error = Error::Violation { sync: end, app: a };
                    return Err(self.reject(StreamItem::end_edge(start, end, payload), error, out));
                }
                Some(AdvanceTimePolicy::Drop) => {
                    if state == EdgeState::Open {
                        self.counters.dangling_edges += 1;
                        self.edge_mut(start, idx).state = EdgeState::Dangling;
                    }
                    return Ok(self.drop_late(StreamItem::end_edge(start, end, payload), out));
                }
                Some(AdvanceTimePolicy::Adjust) => new_end = a,
            }
        }
        if new_end <= edge_start {
            // Nothing is left of the edge. Its start is still buffered (had a CTI released it,
            // that CTI would be at most `new_end`, contradicting `new_end >= a`), so remove both.
            self.remove_edge(start, idx);
            let removed = self.buffer.remove_first(|sync, other, p| {
                sync == edge_start && other == Time::INF && *p == payload
            });
            if let Some((sync, _, p)) = removed {
                self.drop_late(StreamItem::start_edge(sync, p), out);
            }
            return Ok(self.drop_late(StreamItem::end_edge(start, end, payload), out));
        }
        if state == EdgeState::Dangling {
            self.counters.dangling_edges -= 1;
        }
        self.remove_edge(start, idx);
        let adjusted = new_end != end || edge_start != start;
        if adjusted {
            self.counters.adjusted += 1;
            self.last_adjustment = Some((
                EventKind::EndEdge { start, end },
                EventKind::EndEdge {
                    start: edge_start,
                    end: new_end,
                },
            ));
        }
        self.push_buffer(
            EventKind::EndEdge {
                start: edge_start,
                end: new_end,
            },
            payload,
        );
        Ok(if adjusted {
            Enqueued::Adjusted
        } else {
            Enqueued::Accepted
        })
    }

    fn edge_mut(&mut self, start: Time, idx: usize) -> &mut OpenEdge<P> {
        let list = self
            .edges
            .get_mut(&start)
            .expect("edge list looked up just before");
        &mut list[idx]
    }

    fn remove_edge(&mut self, start: Time, idx: usize) {
        if let Some(list) = self.edges.get_mut(&start) {
            list.remove(idx);
            if list.is_empty() {
                self.edges.remove(&start);
            }
        }
    }

    fn push_buffer(&mut self, kind: EventKind, payload: P) {
        let (sync, other) = kind.encode();
        self.buffer.push(sync, other, payload);
    }

    fn generate(&mut self, out: &mut IngressOutput<P>) {
        let Some(g) = self.config.generation else {
            return;
        };
        match g.frequency() {
            GenerationFrequency::EveryEvents(n) => {
                if self.since_cti >= n.get() {
                    self.since_cti = 0;
                    self.issue(self.high - g.delay(), out);
                }
            }
            GenerationFrequency::EveryDuration(t) => {
                let candidate = self.high - g.delay();
                if self.app == Time::NEG_INF || candidate >= self.app + t {
                    self.issue(candidate, out);
                }
            }
        }
    }

    /// Issues `CTI(t)` if it advances application time: releases buffered events with sync `< t`
    /// in sync order (ties in arrival order), then emits the CTI.
    fn issue(&mut self, t: Time, out: &mut IngressOutput<P>) -> bool {
        if t <= self.app {
            return false;
        }
        self.app = t;
        let n = self.buffer.release_into(t, &mut out.batch);
        if self.config.on_arrival {
            out.batch.push_cti_on_arrival(t);
        } else {
            out.batch.push_cti(t);
        }
        if self.late_output {
            out.late.push_cti(t);
        }
        self.counters.released += n as u64;
        self.counters.ctis_out += 1;
        true
    }
}

/// The event with its start moved to `start`, keeping its duration.
fn shift_start(kind: EventKind, start: Time) -> EventKind {
    let delta = start - kind.start();
    match kind {
        EventKind::Point(_) => EventKind::Point(start),
        EventKind::Interval { end, .. } => EventKind::Interval {
            start,
            end: end + delta,
        },
        EventKind::StartEdge(_) => EventKind::StartEdge(start),
        other => other,
    }
}

/// Points handed to the ingress in bulk, read by index and moved in runs: the common core of
/// [`Ingress::enqueue_point_columns`], [`Ingress::enqueue_point_records`] and
/// [`Ingress::enqueue_point_records_where`].
trait PointRun<P> {
    fn len(&self) -> usize;
    fn time(&self, i: usize) -> Time;
    fn payload(&self, i: usize) -> P;
    /// Whether every accepted point goes on (no predicate pushed down).
    fn keeps_all(&self) -> bool {
        true
    }
    /// The pushed-down predicate's verdict on a payload.
    fn keep(&self, _payload: &P) -> bool {
        true
    }
    /// Appends points `range`, released on arrival, to `batch`.
    fn release_on_arrival(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>);
    /// With a predicate pushed down: reads points from the start of `range` while their time
    /// is finite and at or after `low` into `selection`, the kept ones only, and returns
    /// (points read, highest time read). Without one: `None`, nothing read.
    fn select(
        &self,
        range: std::ops::Range<usize>,
        selection: &mut PointSelection<P>,
        low: Time,
    ) -> Option<(usize, Time)>;
    /// Holds the kept points of `range` (valid, sorted, at or after the buffer's last in-order
    /// time), through `selection` if a predicate was pushed down; returns how many it
    /// filtered out.
    fn hold_sorted(
        &self,
        range: std::ops::Range<usize>,
        buffer: &mut ReleaseBuffer<P>,
        selection: &mut PointSelection<P>,
    ) -> usize;
}

/// Columns of equal length: runs move with one copy per column.
struct Columns<'a, P> {
    times: &'a [Time],
    payloads: &'a [P],
}

impl<P: Clone> PointRun<P> for Columns<'_, P> {
    fn len(&self) -> usize {
        self.times.len()
    }
    #[inline]
    fn time(&self, i: usize) -> Time {
        self.times[i]
    }
    #[inline]
    fn payload(&self, i: usize) -> P {
        self.payloads[i].clone()
    }
    #[inline]
    fn release_on_arrival(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>) {
        batch.extend_points_on_arrival(&self.times[range.clone()], &self.payloads[range]);
    }
    fn select(
        &self,
        _: std::ops::Range<usize>,
        _: &mut PointSelection<P>,
        _: Time,
    ) -> Option<(usize, Time)> {
        None
    }
    #[inline]
    fn hold_sorted(
        &self,
        range: std::ops::Range<usize>,
        buffer: &mut ReleaseBuffer<P>,
        _: &mut PointSelection<P>,
    ) -> usize {
        buffer.push_sorted_points(&self.times[range.clone()], &self.payloads[range]);
        0
    }
}

/// A predicate pushed down into the ingress, or none.
trait Keep<P> {
    const ALL: bool;
    fn keep(&self, payload: &P) -> bool;
}

/// No predicate: every accepted point goes on.
struct KeepAll;

impl<P> Keep<P> for KeepAll {
    const ALL: bool = true;
    #[inline]
    fn keep(&self, _payload: &P) -> bool {
        true
    }
}

/// A predicate on the payload.
struct KeepWhere<F>(F);

impl<P, F: Fn(&P) -> bool> Keep<P> for KeepWhere<F> {
    const ALL: bool = false;
    #[inline]
    fn keep(&self, payload: &P) -> bool {
        (self.0)(payload)
    }
}

/// Records with the functions that read them (and a pushed-down predicate, or none): runs are
/// read straight into their destination.
struct Records<'a, R, T, F, K> {
    records: &'a [R],
    time: T,
    payload: F,
    keep: K,
}

impl<P, R, T, F, K> PointRun<P> for Records<'_, R, T, F, K>
where
    P: Clone,
    T: Fn(&R) -> Time,
    F: Fn(&R) -> P,
    K: Keep<P>,
{
    fn len(&self) -> usize {
        self.records.len()
    }
    #[inline]
    fn time(&self, i: usize) -> Time {
        (self.time)(&self.records[i])
    }
    #[inline]
    fn payload(&self, i: usize) -> P {
        (self.payload)(&self.records[i])
    }
    fn keeps_all(&self) -> bool {
        K::ALL
    }
    #[inline]
    fn keep(&self, payload: &P) -> bool {
        self.keep.keep(payload)
    }
    #[inline]
    fn release_on_arrival(&self, range: std::ops::Range<usize>, batch: &mut Batch<P>) {
        batch.extend_points_on_arrival_with(&self.records[range], &self.time, &self.payload);
    }
    #[inline]
    fn select(
        &self,
        range: std::ops::Range<usize>,
        selection: &mut PointSelection<P>,
        low: Time,
    ) -> Option<(usize, Time)> {
        if K::ALL {
            return None;
        }
        let records = &self.records[range];
        let keep = |p: &P| self.keep.keep(p);
        Some(selection.select(records, &self.time, &self.payload, keep, low))
    }
    #[inline]
    fn hold_sorted(
        &self,
        range: std::ops::Range<usize>,
        buffer: &mut ReleaseBuffer<P>,
        selection: &mut PointSelection<P>,
    ) -> usize {
        let records = &self.records[range];
        if K::ALL {
            buffer.push_sorted_points_with(records, &self.time, &self.payload);
            return 0;
        }
        // The run is valid and sorted: every record is admitted, the kept ones held in one
        // copy per column.
        let keep = |p: &P| self.keep.keep(p);
        let (read, _) = selection.select(records, &self.time, &self.payload, keep, Time::NEG_INF);
        debug_assert_eq!(read, records.len(), "a valid run is read whole");
        buffer.push_sorted_points(selection.times(), selection.payloads());
        records.len() - selection.len()
    }
}
