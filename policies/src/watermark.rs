//! Watermark strategies beyond StreamInsight (SEMANTICS.md section 5): CTIs from arrival-time
//! tolerances (Azure Stream Analytics), from bounded out-of-orderness (Flink), per partition
//! (YTsaurus Flow, Flink), and from an injected clock when an input goes quiet. They plug into
//! the same [`Ingress`](crate::Ingress) and produce ordinary CTIs, so every operator works with
//! them unchanged.
//!
//! | strategy | CTI | latency | completeness | pick it when |
//! |---|---|---|---|---|
//! | [`Watermark::arrival`] (ASA) | highest `time - out_of_order`; with substreams, `arrival - late` | out-of-order tolerance (substreams: late tolerance) | events outside the tolerances are adjusted or dropped, and counted | events carry an arrival time (broker, gateway) and clocks may be off |
//! | ... with `substream(key)` | `arrival - late` | late tolerance | one device's clock skew does not adjust another's events | many devices with their own clocks |
//! | [`Watermark::bounded`] (Flink) | `max time - bound` | `bound` | events more than `bound` behind the newest are late | disorder is bounded and there is no arrival time |
//! | [`Watermark::ascending`] (Flink) | `max time` | none | any event behind the newest is late | the source is ordered (a log, a single sensor) |
//! | [`Watermark::partitioned`] | min over active partitions of `max - bound` | the slowest active partition | idle partitions are left out after a timeout (their late events are then dropped or adjusted) | partitioned logs (Kafka, YTsaurus) |
//!
//! Emission: punctuated (a candidate after every event, the default) or periodic (the pending
//! candidate is issued at clock readings at least an interval apart). Idle inputs: with a clock,
//! `arrival` strategies issue `CTI(now - late)` and the others, after `idle_timeout` without
//! events, `CTI(now - idle_timeout)`, so joins and unions fed by a quiet input do not stall.
//! Clock readings come from the runtime (or a test's manual clock) through
//! [`Ingress::on_clock`](crate::Ingress::on_clock); those that issued a CTI are recorded
//! ([`Ingress::clock_record`](crate::Ingress::clock_record)) so that a replay of the same input
//! with the same record gives the same output.

use std::collections::HashMap;
use std::sync::Arc;

use punctual_core::{Time, TimeSpan};

use crate::settings::AdvanceTimePolicy;

/// Picks a substream key for a payload: events with equal keys share a watermark. Keys are
/// compared by this 64-bit value (return the key itself for integer keys, or a hash of it).
pub type SubstreamKey<P> = Arc<dyn Fn(&P) -> u64 + Send + Sync>;

/// When candidates become CTIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Emission {
    /// After every event (Flink's punctuated generator).
    #[default]
    Punctuated,
    /// At clock readings at least this far apart (Flink's periodic generator).
    Periodic(TimeSpan),
}

/// Azure Stream Analytics' arrival-time tolerances.
#[derive(Clone)]
pub struct ArrivalTolerances<P> {
    pub(crate) out_of_order: TimeSpan,
    pub(crate) late: Option<TimeSpan>,
    pub(crate) early: Option<TimeSpan>,
    pub(crate) policy: AdvanceTimePolicy,
    pub(crate) substream: Option<SubstreamKey<P>>,
}

/// The kind of strategy.
#[derive(Clone)]
pub(crate) enum Kind<P> {
    Arrival(ArrivalTolerances<P>),
    Bounded(TimeSpan),
    Partitioned {
        bound: TimeSpan,
        partitions: usize,
        max_drift: Option<TimeSpan>,
    },
}

/// A watermark strategy; see the module doc. Built with [`Watermark::arrival`],
/// [`Watermark::bounded`], [`Watermark::ascending`] or [`Watermark::partitioned`], then refined.
///
/// ```
/// use punctual_policies::{AdvanceTimePolicy, Watermark};
/// use punctual_core::TimeSpan;
/// let asa = Watermark::<()>::arrival(TimeSpan::from_secs(2))
///     .late(TimeSpan::from_secs(5))
///     .early(TimeSpan::from_secs(5))
///     .policy(AdvanceTimePolicy::Adjust);
/// let flink = Watermark::<()>::bounded(TimeSpan::from_secs(2)).idle_timeout(TimeSpan::from_secs(30));
/// # let _ = (asa, flink);
/// ```
#[derive(Clone)]
pub struct Watermark<P> {
    pub(crate) kind: Kind<P>,
    pub(crate) emission: Emission,
    pub(crate) idle_timeout: Option<TimeSpan>,
    pub(crate) final_cti: bool,
}

impl<P> std::fmt::Debug for Watermark<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Arrival(a) => format!(
                "arrival(out_of_order {:?}, late {:?}, early {:?}, {:?}, substreams: {})",
                a.out_of_order,
                a.late,
                a.early,
                a.policy,
                a.substream.is_some()
            ),
            Kind::Bounded(b) => format!("bounded({b:?})"),
            Kind::Partitioned {
                bound,
                partitions,
                max_drift,
            } => {
                format!("partitioned({partitions} x bounded({bound:?}), max drift {max_drift:?})")
            }
        };
        f.debug_struct("Watermark")
            .field("kind", &kind)
            .field("emission", &self.emission)
            .field("idle_timeout", &self.idle_timeout)
            .field("final_cti", &self.final_cti)
            .finish()
    }
}

impl<P> Watermark<P> {
    fn new(kind: Kind<P>) -> Self {
        Watermark {
            kind,
            emission: Emission::Punctuated,
            idle_timeout: None,
            final_cti: true,
        }
    }

    /// ASA: watermark = highest `time - out_of_order`; events below it are adjusted up to it (or
    /// dropped). Defaults: no late or early limit, `Adjust`, a final CTI. Needs arrival times.
    pub fn arrival(out_of_order: TimeSpan) -> Self {
        Self::new(Kind::Arrival(ArrivalTolerances {
            out_of_order,
            late: None,
            early: None,
            policy: AdvanceTimePolicy::Adjust,
            substream: None,
        }))
    }

    /// Flink's bounded out-of-orderness (`WatermarkStrategy.forBoundedOutOfOrderness`): CTI =
    /// highest time - `bound`, so an event at least `bound` behind the newest is on time and
    /// one further behind is late. (Flink's watermark is that minus one millisecond, and an
    /// element at or below it is late: the same rule. Flink's older
    /// `BoundedOutOfOrdernessTimestampExtractor` took `max - bound` itself as the watermark and
    /// counted an element exactly `bound` behind as late: `bounded(bound - 1 tick)` here.)
    pub fn bounded(bound: TimeSpan) -> Self {
        Self::new(Kind::Bounded(bound))
    }

    /// Flink's monotonous timestamps (`forMonotonousTimestamps`, watermark = highest - 1 ms):
    /// CTI = the highest time, so an event at the newest time is on time and any event behind
    /// it is late. `bounded(0)`.
    pub fn ascending() -> Self {
        Self::bounded(TimeSpan::ZERO)
    }

    /// One bounded watermark per partition (events say which); CTI = the minimum over the
    /// partitions seen within the idle timeout (all of them without a timeout).
    pub fn partitioned(partitions: usize, bound: TimeSpan) -> Self {
        Self::new(Kind::Partitioned {
            bound,
            partitions: partitions.max(1),
            max_drift: None,
        })
    }

    /// ASA: an event that arrives more than `late` after its time gets time `arrival - late`
    /// (or is dropped); with a clock, an idle input's CTI advances to `now - late`.
    pub fn late(mut self, late: TimeSpan) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.late = Some(late);
        }
        self
    }

    /// ASA: an event whose time is more than `early` after its arrival is dropped.
    pub fn early(mut self, early: TimeSpan) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.early = Some(early);
        }
        self
    }

    /// ASA: what to do with late and out-of-order events (default `Adjust`).
    pub fn policy(mut self, policy: AdvanceTimePolicy) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.policy = policy;
        }
        self
    }

    /// ASA substreams: one watermark per key for the out-of-order decision. The stream's CTI is
    /// then `highest arrival - late` (a late tolerance is required): every later event's time
    /// is at least that after the late adjustment, whatever its key, and it keeps advancing when
    /// a key goes quiet.
    pub fn substream(mut self, key: impl Fn(&P) -> u64 + Send + Sync + 'static) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.substream = Some(Arc::new(key));
        }
        self
    }

    /// Partitioned: pause partitions whose watermark is more than `max_drift` ahead of the
    /// stream's CTI (watermark alignment); see [`Ingress::paused_partitions`](crate::Ingress::paused_partitions).
    pub fn max_drift(mut self, max_drift: TimeSpan) -> Self {
        if let Kind::Partitioned { max_drift: m, .. } = &mut self.kind {
            *m = Some(max_drift);
        }
        self
    }

    /// When candidates become CTIs (default: punctuated).
    pub fn emission(mut self, emission: Emission) -> Self {
        self.emission = emission;
        self
    }

    /// After this long (by the clock) without events, an input (or partition) counts as idle.
    pub fn idle_timeout(mut self, timeout: TimeSpan) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Whether end of input issues `CTI(+inf)` (default: yes).
    pub fn final_cti(mut self, yes: bool) -> Self {
        self.final_cti = yes;
        self
    }
}

/// Where an event came from, besides its own times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrival {
    /// When the event arrived (broker or adapter time), for the arrival strategy.
    pub time: Option<Time>,
    /// Which partition it came from, for the partitioned strategy.
    pub partition: Option<usize>,
}

/// A clock reading that issued a CTI: after how many items (events and CTIs) the ingress had
/// seen, and the reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockReading {
    /// Items enqueued before the reading.
    pub after_items: u64,
    /// The clock's value.
    pub now: Time,
}

/// What a watermark decided about one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Keep it with this (possibly changed) start; whether it was late or out of order.
    Keep {
        start: Time,
        late: bool,
        out_of_order: bool,
    },
    /// Drop it, for this reason.
    Drop(DropCause),
}

/// Why a watermark dropped an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// Its time was too far after its arrival.
    Early,
    /// It arrived too long after its time.
    LateArrival,
    /// Its time was below its (sub)stream's watermark.
    OutOfOrder,
}

/// Per-partition state.
#[derive(Clone, Copy, Debug)]
struct Partition {
    max: Time,
    /// The clock reading at its last event (`None`: never seen while a clock was known).
    last_seen: Option<Time>,
}

/// The running state of a strategy.
pub(crate) struct State<P> {
    pub(crate) spec: Watermark<P>,
    watermark: Time,
    substreams: HashMap<u64, Time>,
    max_arrival: Time,
    max_time: Time,
    partitions: Vec<Partition>,
    /// The latest clock reading, the first one, and the one at the last event.
    now: Option<Time>,
    started: Option<Time>,
    last_event_clock: Option<Time>,
    last_emit_clock: Option<Time>,
    pending: Time,
}

impl<P> std::fmt::Debug for State<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("spec", &self.spec)
            .field("watermark", &self.watermark)
            .field("substreams", &self.substreams.len())
            .finish()
    }
}

impl<P> State<P> {
    pub(crate) fn new(spec: Watermark<P>) -> Self {
        let n = match &spec.kind {
            Kind::Partitioned { partitions, .. } => *partitions,
            _ => 0,
        };
        State {
            spec,
            watermark: Time::NEG_INF,
            substreams: HashMap::new(),
            max_arrival: Time::NEG_INF,
            max_time: Time::NEG_INF,
            partitions: vec![
                Partition {
                    max: Time::NEG_INF,
                    last_seen: None,
                };
                n
            ],
            now: None,
            started: None,
            last_event_clock: None,
            last_emit_clock: None,
            pending: Time::NEG_INF,
        }
    }

    /// Whether the final CTI is issued at end of input.
    pub(crate) fn final_cti(&self) -> bool {
        self.spec.final_cti
    }

    /// Steps 1–3 of the arrival strategy; the identity for the others.
    pub(crate) fn judge(
        &self,
        start: Time,
        payload: &P,
        arrival: Arrival,
    ) -> Result<Verdict, &'static str> {
        let Kind::Arrival(a) = &self.spec.kind else {
            return Ok(Verdict::Keep {
                start,
                late: false,
                out_of_order: false,
            });
        };
        let at = arrival
            .time
            .ok_or("the arrival watermark strategy needs each event's arrival time")?;
        if a.early.is_some_and(|e| start - at > e) {
            return Ok(Verdict::Drop(DropCause::Early));
        }
        let mut t = start;
        let mut late = false;
        if let Some(l) = a.late {
            if at - t > l {
                if a.policy == AdvanceTimePolicy::Drop {
                    return Ok(Verdict::Drop(DropCause::LateArrival));
                }
                t = at - l;
                late = true;
            }
        }
        let wm = match &a.substream {
            Some(key) => self
                .substreams
                .get(&key(payload))
                .copied()
                .unwrap_or(Time::NEG_INF),
            None => self.watermark,
        };
        let mut out_of_order = false;
        if t < wm {
            if a.policy == AdvanceTimePolicy::Drop {
                return Ok(Verdict::Drop(DropCause::OutOfOrder));
            }
            t = wm;
            out_of_order = true;
        }
        Ok(Verdict::Keep {
            start: t,
            late,
            out_of_order,
        })
    }

    /// Step 4 and the other strategies' bookkeeping after an accepted event; returns a CTI
    /// candidate to issue now (punctuated emission), if any.
    pub(crate) fn observe(&mut self, start: Time, payload: &P, arrival: Arrival) -> Option<Time> {
        if let Some(at) = arrival.time {
            self.max_arrival = self.max_arrival.max(at);
        }
        self.max_time = self.max_time.max(start);
        self.last_event_clock = self.now;
        let candidate = match &self.spec.kind {
            Kind::Arrival(a) => {
                let w = start - a.out_of_order;
                match &a.substream {
                    Some(key) => {
                        let slot = self.substreams.entry(key(payload)).or_insert(Time::NEG_INF);
                        *slot = (*slot).max(w);
                        a.late.map(|l| self.max_arrival - l)
                    }
                    None => {
                        self.watermark = self.watermark.max(w);
                        Some(self.watermark)
                    }
                }
            }
            Kind::Bounded(b) => Some(self.max_time - *b),
            Kind::Partitioned { bound, .. } => {
                let last = self.partitions.len() - 1;
                let part = &mut self.partitions[arrival.partition.unwrap_or(0).min(last)];
                part.max = part.max.max(start);
                part.last_seen = self.now.or(part.last_seen);
                self.partition_candidate(*bound)
            }
        };
        let candidate = candidate?;
        match self.spec.emission {
            Emission::Punctuated => Some(candidate),
            Emission::Periodic(_) => {
                self.pending = self.pending.max(candidate);
                None
            }
        }
    }

    /// Whether a partition counts for the stream's CTI: always without an idle timeout or a
    /// clock; else if seen within the timeout, or never seen but the stream started less than
    /// the timeout ago (an unavailable partition is waited for that long).
    fn counts(&self, p: &Partition) -> bool {
        match (self.spec.idle_timeout, self.now) {
            (Some(timeout), Some(now)) => match p.last_seen {
                Some(seen) => now - seen < timeout,
                None => self.started.is_none_or(|s| now - s < timeout),
            },
            _ => true,
        }
    }

    /// Min over the partitions that count of `max - bound`; if none counts, the input is idle:
    /// `now - idle_timeout`.
    fn partition_candidate(&self, bound: TimeSpan) -> Option<Time> {
        let counting: Vec<Time> = self
            .partitions
            .iter()
            .filter(|p| self.counts(p))
            .map(|p| p.max - bound)
            .collect();
        match counting.iter().min() {
            Some(&m) => Some(m),
            None => self.spec.idle_timeout.zip(self.now).map(|(t, now)| now - t),
        }
    }

    /// A clock reading: the candidate that the clock allows (periodic emission, idle inputs,
    /// idle partitions), if any.
    pub(crate) fn on_clock(&mut self, now: Time) -> Option<Time> {
        self.now = Some(now);
        self.started.get_or_insert(now);
        let mut best = None::<Time>;
        let mut offer = |t: Time| best = Some(best.map_or(t, |b: Time| b.max(t)));
        if let Emission::Periodic(interval) = self.spec.emission {
            if self.pending > Time::NEG_INF
                && self.last_emit_clock.is_none_or(|l| now - l >= interval)
            {
                self.last_emit_clock = Some(now);
                offer(self.pending);
            }
        }
        match &self.spec.kind {
            Kind::Arrival(a) => {
                if let Some(l) = a.late {
                    let c = now - l;
                    if a.substream.is_none() {
                        self.watermark = self.watermark.max(c);
                    }
                    offer(c);
                }
            }
            Kind::Bounded(_) => {
                if let Some(timeout) = self.spec.idle_timeout {
                    let quiet_since = self.last_event_clock.or(self.started);
                    if quiet_since.is_some_and(|s| now - s >= timeout) {
                        offer(now - timeout);
                    }
                }
            }
            Kind::Partitioned { bound, .. } => {
                if self.spec.idle_timeout.is_some() {
                    if let Some(c) = self.partition_candidate(*bound) {
                        offer(c);
                    }
                }
            }
        }
        best
    }

    /// Partitions whose watermark is more than the maximum drift ahead of `cti`.
    pub(crate) fn paused(&self, cti: Time) -> Vec<usize> {
        let Kind::Partitioned {
            bound,
            max_drift: Some(drift),
            ..
        } = &self.spec.kind
        else {
            return Vec::new();
        };
        if cti == Time::NEG_INF {
            return Vec::new();
        }
        self.partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.max - *bound > cti + *drift)
            .map(|(i, _)| i)
            .collect()
    }
}
