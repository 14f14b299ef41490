//! The ingress state machine of one input stream (docs/semantics.md, sections 1–3).
//!
//! CTI rule: the ingress emits `CTI(t)` when an adapter CTI, a generated candidate, a watermark
//! strategy or an imported CTI advances application time to `t`; just before it, it releases
//! every held event with sync time `< t`, sorted by sync time (ties in arrival order). Events
//! with sync `>= t` stay held. A CTI that would not advance time is a no-op (counted as
//! `stale_ctis` when it came from the adapter or an import). An unordered stream
//! ([`EventOrder::Arrival`]) releases each accepted event at once instead, in arrival order,
//! with the same CTIs, drops and adjustments.
//!
//! Per item, in arrival order: validate (invalid → rejected), compare with the current CTI
//! (violation → the policy's table, see [`AdvanceTimePolicy`], or rejected without one), accept
//! (held until a CTI passes it, or released at once on an unordered stream), generate. Every item ends up exactly once as released, dropped, rejected,
//! unreleased or filtered (by a filter fused into the ingress, [`Ingress::fuse_filter`]);
//! dropped and rejected items go to the dead-letter output with their reason.
//!
//! ```
//! use punctual_core::{StreamItem, Time};
//! use punctual_policies::{AdvanceTimeSettings, Enqueued, Ingress, IngressConfig, IngressOutput};
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

mod accept;
mod bulk;
mod clock;
mod edges;
mod hold;
mod output;
pub(crate) mod policy;
mod refused;
mod run;
mod saved;
mod select;

pub use edges::EdgeKey;
pub use output::{
    DeadLetter, DeadLetterReason, EnqueueSummary, Enqueued, IngressCounters, IngressOutput,
    LateEvent, MalformedRecord,
};

use punctual_core::ops::Predicate;
use punctual_core::{Event, EventKind, EventOrder, EventShape, InvalidEvent, StreamItem, Time};

use crate::settings::GenerationFrequency;
use crate::settings::{AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings};
use crate::watermark::{Arrival, ClockReading, State, Watermark};
use crate::Error;
use edges::OpenEdges;
use hold::Hold;
use select::PointSelection;

/// The default cap on events held in one stream's reorder buffer.
pub const DEFAULT_MAX_BUFFERED: usize = 1_000_000;

/// The ingress' resolved configuration. Import is wired by whoever owns several ingresses (the
/// query driver), which calls [`Ingress::import_cti`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct IngressConfig {
    /// CTI generation, if any.
    pub generation: Option<AdvanceTimeGenerationSettings>,
    /// The violation policy; `None` rejects violating events.
    pub policy: Option<AdvanceTimePolicy>,
    /// Events the reorder buffer may hold; one more is rejected with [`Error::BufferFull`].
    /// A stream that never gets a CTI reaches it instead of growing without bound.
    pub max_buffered: usize,
    /// The order of the stream the ingress releases: [`EventOrder::Sorted`] (the default)
    /// holds each event until a CTI passes it and releases it sorted;
    /// [`EventOrder::Arrival`] releases each accepted point or interval at once, in arrival
    /// order, for an unordered stream whose consumers do not depend on order (windowed
    /// aggregates, the join's left side). CTIs are generated, imported and enforced the same:
    /// an event after `CTI(t)` still has sync time `>= t`, and the policies drop or adjust the
    /// same events. On arrival, edges are rejected with [`Error::EdgeOnArrival`] (an end edge
    /// can still change or remove its start edge, which must therefore wait for its CTI).
    pub order: EventOrder,
    /// The shape of the stream: a [`EventShape::Point`] stream takes points only (anything
    /// else is rejected with [`Error::WrongShape`]), an [`EventShape::Interval`] stream points
    /// and intervals, an [`EventShape::Edge`] stream (the default) every kind of event.
    pub shape: EventShape,
}

impl Default for IngressConfig {
    /// No generation, no policy (violations are rejected), [`DEFAULT_MAX_BUFFERED`], sorted,
    /// every kind of event.
    fn default() -> Self {
        IngressConfig {
            generation: None,
            policy: None,
            max_buffered: DEFAULT_MAX_BUFFERED,
            order: EventOrder::Sorted,
            shape: EventShape::Edge,
        }
    }
}

impl From<&AdvanceTimeSettings> for IngressConfig {
    fn from(s: &AdvanceTimeSettings) -> Self {
        IngressConfig {
            generation: s.generation().copied(),
            policy: s.policy(),
            ..IngressConfig::default()
        }
    }
}

/// The predicate of the filters fused into an ingress.
struct Fused<P>(Box<dyn Predicate<P>>);

impl<P> std::fmt::Debug for Fused<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a fused filter")
    }
}

/// The ingress of one input stream; see the module doc.
#[derive(Debug)]
pub struct Ingress<P> {
    config: IngressConfig,
    app: Time,
    high: Time,
    since_cti: u64,
    hold: Hold<P>,
    edges: OpenEdges<P>,
    counters: IngressCounters,
    finished: bool,
    watermark: Option<State<P>>,
    clock_record: Vec<ClockReading>,
    items_seen: u64,
    late_output: bool,
    /// The predicate of the filters fused into this ingress, if any.
    filter: Option<Fused<P>>,
    /// Room for the points the fused filter keeps.
    selection: PointSelection<P>,
    /// Room for the points [`Ingress::enqueue_points`] takes from its iterator.
    scratch: Vec<(Time, P)>,
    /// The same for payloads with drop glue, which the bulk loop moves out as it reads them:
    /// their times, and the payloads not read yet.
    moving: (Vec<Time>, Vec<Option<P>>),
}

impl<P: Clone + PartialEq> Ingress<P> {
    /// A new ingress at application time `-inf`.
    pub fn new(config: IngressConfig) -> Self {
        Ingress {
            config,
            app: Time::NEG_INF,
            high: Time::NEG_INF,
            since_cti: 0,
            hold: Hold::new(config.order),
            edges: OpenEdges::new(),
            counters: IngressCounters::default(),
            finished: false,
            watermark: None,
            clock_record: Vec::new(),
            items_seen: 0,
            late_output: false,
            filter: None,
            selection: PointSelection::new(),
            scratch: Vec::new(),
            moving: (Vec::new(), Vec::new()),
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

    /// Fuses a filter into the ingress: from now on only the accepted events whose payload
    /// `keep` keeps are released; the others go nowhere. They still count for CTI generation
    /// and the CTI checks (a late one is dropped or rejected as usual), so the released stream
    /// is exactly what the filter would pass downstream, and they are counted as the filter
    /// downstream would see them: `filtered` once a CTI passes them (at once on an unordered
    /// stream, which releases on arrival), `buffered` until then and `unreleased` if the
    /// stream closes first (its dead letter has no item: only a refused event's times are
    /// kept); a refused start edge that its end edge removes is `dropped` with it. A second
    /// call adds a filter after the first.
    pub fn fuse_filter(&mut self, keep: Box<dyn Predicate<P>>)
    where
        P: 'static,
    {
        self.filter = Some(Fused(match self.filter.take() {
            None => keep,
            Some(Fused(first)) => punctual_core::ops::both(first, keep),
        }));
    }

    /// Whether the fused filter (if any) keeps an event with this payload.
    #[inline]
    fn keeps(&self, payload: &P) -> bool {
        self.filter.as_ref().is_none_or(|f| f.0.keep(payload))
    }

    /// Starts the late-data side output in [`IngressOutput::late`].
    pub fn enable_late_output(&mut self) {
        self.late_output = true;
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
        c.buffered = self.hold.len() as u64;
        c.open_edges = self.edges.released_len() as u64;
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
                    let error = Error::Invalid(InvalidEvent::CtiAtNegInf);
                    return Err(self.reject(StreamItem::Cti(t), error, out));
                }
                Ok(self.external_cti(t, out))
            }
            StreamItem::Insert(event) => {
                self.counters.events_in += 1;
                let keep = self.keeps(&event.payload);
                self.insert(event, arrival, keep, out)
            }
        }
    }

    /// Issues a CTI imported from another stream; returns whether it advanced application time
    /// (a stale import is counted as `stale_ctis`).
    pub fn import_cti(&mut self, t: Time, out: &mut IngressOutput<P>) -> bool {
        self.external_cti(t, out) == Enqueued::Cti
    }

    /// End of input: issues `CTI(+inf)` if the generation settings (or the watermark strategy)
    /// ask for a final CTI. Returns whether it did. Held events may still be released by
    /// imported CTIs afterwards.
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

    /// Closes the stream for good (the query has ended): every event still held is counted
    /// as `unreleased` and sent to the dead letters with that reason (with no item for one a
    /// fused filter refused: its payload was not kept).
    pub fn close(&mut self, out: &mut IngressOutput<P>) {
        self.finished = true;
        self.counters.unreleased += self.hold.len() as u64;
        let app = self.app;
        for (sync, other, payload) in self.hold.drain() {
            out.dead_letters.push(DeadLetter {
                item: Some(StreamItem::Insert(Event {
                    kind: EventKind::decode(sync, other),
                    payload,
                })),
                reason: DeadLetterReason::Unreleased,
                cti: app,
            });
        }
        for _ in 0..self.hold.forget_refused() {
            out.dead_letters.push(DeadLetter {
                item: None,
                reason: DeadLetterReason::Unreleased,
                cti: app,
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

    /// Matches end edges to their start edges by `key` as well as by start time: equal
    /// payloads must have equal keys. Without a key, an end edge is matched by a scan of the
    /// open edges that share its start, which is slow for many edges at one start (a snapshot
    /// of reference data all valid from the same time); with one, by a lookup.
    pub fn index_edges_by(&mut self, key: EdgeKey<P>) {
        self.edges.index_by(key);
    }

    /// Records `n` input records that carry no item and need none (blank lines, an `eof`
    /// line): counted as `skipped`, so that every record read is counted somewhere.
    pub fn report_skipped(&mut self, n: u64) {
        self.counters.skipped += n;
    }

    fn external_cti(&mut self, t: Time, out: &mut IngressOutput<P>) -> Enqueued {
        if self.issue(t, out) {
            Enqueued::Cti
        } else {
            self.counters.stale_ctis += 1;
            Enqueued::StaleCti
        }
    }

    /// Step 4: a generated CTI, if the settings ask for one now.
    fn generate(&mut self, out: &mut IngressOutput<P>) {
        let Some(g) = self.config.generation else {
            return;
        };
        let candidate = self.high - g.delay();
        match g.frequency() {
            GenerationFrequency::EveryEvents(n) => {
                if self.since_cti >= n.get() {
                    self.since_cti = 0;
                    self.issue(candidate, out);
                }
            }
            GenerationFrequency::EveryDuration(t) => {
                if self.app == Time::NEG_INF || candidate >= self.app + t {
                    self.issue(candidate, out);
                }
            }
        }
    }

    /// Step 5: issues `CTI(t)` if it advances application time: releases held events with
    /// sync `< t` in sync order (ties in arrival order), then emits the CTI.
    fn issue(&mut self, t: Time, out: &mut IngressOutput<P>) -> bool {
        if t <= self.app {
            return false;
        }
        self.app = t;
        let (n, filtered) = self.hold.release(t, &mut out.batch);
        self.edges.release(t);
        if self.late_output {
            out.late.push_cti(t);
        }
        self.counters.released += n as u64;
        self.counters.filtered += filtered as u64;
        self.counters.ctis_out += 1;
        true
    }
}
