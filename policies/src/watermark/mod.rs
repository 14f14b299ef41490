//! Watermark strategies beyond StreamInsight (docs/semantics.md, section 5): CTIs from arrival-time
//! tolerances (Azure Stream Analytics), from bounded out-of-orderness (Flink), per partition
//! (YTsaurus Flow, Flink), and from an injected clock when an input goes quiet. They plug into
//! the same [`Ingress`](crate::Ingress) and produce ordinary CTIs, so every operator works with
//! them unchanged.
//!
//! | strategy | source | CTI | latency | completeness | pick it when |
//! |---|---|---|---|---|---|
//! | [`Watermark::arrival`] | Stream Analytics, `TIMESTAMP BY` | per input partition: highest `time - out_of_order` while events come in, estimated arrival `- late` while none do; the minimum over partitions | out-of-order tolerance | events outside the tolerances are adjusted or dropped, and counted | events carry an arrival time (broker, gateway) and clocks may be off |
//! | ... with `substream(key)` | Stream Analytics, `OVER key` | per partition `highest arrival - late` | late tolerance | one device's clock skew does not adjust another's events | many devices with their own clocks |
//! | [`Watermark::arrival_time`] | Stream Analytics, no `TIMESTAMP BY` | highest arrival | none | events take their arrival time | events have no time of their own |
//! | [`Watermark::bounded`] | Flink `forBoundedOutOfOrderness` | `max time - bound` | `bound` | events more than `bound` behind the newest are late | disorder is bounded and there is no arrival time |
//! | [`Watermark::ascending`] | Flink `forMonotonousTimestamps` | `max time` | none | any event behind the newest is late | the source is ordered (a log, a single sensor) |
//! | [`Watermark::partitioned`] | YTsaurus Flow, Flink per split | min over active partitions of `max - bound` (with [`Watermark::look_ahead`], YTsaurus Flow's estimate) | the slowest active partition | idle partitions are left out after a timeout (their late events are then dropped or adjusted) | partitioned logs (Kafka, YTsaurus) |
//!
//! Emission: punctuated (a candidate after every event, the default) or periodic (the pending
//! candidate is issued at clock readings at least an interval apart). Idle inputs: with a clock,
//! a partition of an `arrival` strategy with no events coming in advances to its estimated
//! arrival time minus `late`, and the others, after `idle_timeout` without events, issue
//! `CTI(now - idle_timeout)`, so joins and unions fed by a quiet input do not stall. An event
//! counts as seen at the first clock reading after it.
//! Clock readings come from the runtime (or a test's manual clock) through
//! [`Ingress::on_clock`](crate::Ingress::on_clock); those that issued a CTI are recorded
//! ([`Ingress::clock_record`](crate::Ingress::clock_record)) so that a replay of the same input
//! with the same record gives the same output.

use std::collections::HashMap;
use std::sync::Arc;

use punctual_core::{Time, TimeSpan};

use crate::settings::AdvanceTimePolicy;

/// Input partitions the arrival strategy tells apart; higher indices share the last.
const MAX_ARRIVAL_PARTITIONS: usize = 4096;

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
    /// Events take their arrival time as their time (no `TIMESTAMP BY`).
    pub(crate) arrival_time: bool,
    /// Input partitions known from the start (the CTI waits for each).
    pub(crate) partitions: usize,
}

/// Stream Analytics' default late-arrival tolerance: 5 s.
pub const ASA_DEFAULT_LATE: TimeSpan = TimeSpan::from_secs(5);
/// Stream Analytics' early-arrival window: 5 minutes (fixed there; a default here).
pub const ASA_EARLY_WINDOW: TimeSpan = TimeSpan::from_secs(300);
/// The largest late-arrival tolerance Stream Analytics takes: 20 days, 23:59:59.
pub const ASA_MAX_LATE: TimeSpan = TimeSpan::from_secs(20 * 86_400 + 86_399);

/// The kind of strategy.
#[derive(Clone)]
pub(crate) enum Kind<P> {
    Arrival(ArrivalTolerances<P>),
    Bounded(TimeSpan),
    Partitioned {
        bound: TimeSpan,
        partitions: usize,
        max_drift: Option<TimeSpan>,
        /// YT Flow's look-ahead term (the adapter reports its next batch per partition).
        look_ahead: bool,
        /// Guard: a partition's watermark is at most the least time of its last N events.
        recent: Option<usize>,
        /// Guard: a partition's highest time is the least over these dimensions' highest.
        dimension: Option<SubstreamKey<P>>,
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
                look_ahead,
                recent,
                dimension,
            } => {
                format!(
                    "partitioned({partitions} x bounded({bound:?}), max drift {max_drift:?}, \
                     look-ahead {look_ahead}, recent {recent:?}, dimensions {})",
                    dimension.is_some()
                )
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

    /// Azure Stream Analytics' tolerances (`TIMESTAMP BY time`): per input partition, the
    /// watermark is the highest event time minus `out_of_order` while events come in, and the
    /// estimated arrival time (the last event's arrival plus the time since it was seen) minus
    /// the late-arrival tolerance while none do; the stream's CTI is the minimum over the
    /// partitions. An event more than `early` ahead of its arrival is dropped; one more than
    /// `late` behind it takes time `arrival - late` (or is dropped, with `Drop`); one still
    /// below its partition's watermark (or the stream's CTI) is moved up to it (or dropped).
    /// Each is counted (`early`, `late`, `out_of_order`). Defaults as Stream Analytics': late
    /// 5 s ([`ASA_DEFAULT_LATE`]), early 5 minutes ([`ASA_EARLY_WINDOW`]), `Adjust`, and a final
    /// CTI. Needs arrival times (and partitions, for a partitioned source).
    pub fn arrival(out_of_order: TimeSpan) -> Self {
        Self::new(Kind::Arrival(ArrivalTolerances {
            out_of_order,
            late: Some(ASA_DEFAULT_LATE),
            early: Some(ASA_EARLY_WINDOW),
            policy: AdvanceTimePolicy::Adjust,
            substream: None,
            arrival_time: false,
            partitions: 1,
        }))
    }

    /// Azure Stream Analytics without `TIMESTAMP BY`: each event's time is its arrival time
    /// (an interval keeps its duration), which only grows within a partition, so the
    /// tolerances do not apply; the CTI is the minimum over the partitions of the highest
    /// arrival time (and, for a partition with no events coming in, its estimated arrival
    /// time).
    pub fn arrival_time() -> Self {
        Self::new(Kind::Arrival(ArrivalTolerances {
            out_of_order: TimeSpan::ZERO,
            late: Some(TimeSpan::ZERO),
            early: None,
            policy: AdvanceTimePolicy::Adjust,
            substream: None,
            arrival_time: true,
            partitions: 1,
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

    /// One bounded watermark per partition (events say which; YTsaurus Flow, Flink's
    /// per-split watermarks); CTI = the minimum over the partitions seen within the idle
    /// timeout (all of them without a timeout) of `highest time - bound`.
    pub fn partitioned(partitions: usize, bound: TimeSpan) -> Self {
        Self::new(Kind::Partitioned {
            bound,
            partitions: partitions.max(1),
            max_drift: None,
            look_ahead: false,
            recent: None,
            dimension: None,
        })
    }

    /// Partitioned, YTsaurus Flow's estimate: a partition's watermark is
    /// `max(highest - bound, min(ahead_min, ahead_max - bound))`, where `ahead_min` and
    /// `ahead_max` are the least and highest times of the partition's next batch, which the
    /// adapter has read and not enqueued yet (it reports them with `InputContext::look_ahead`;
    /// without a report the term is left out).
    pub fn look_ahead(mut self) -> Self {
        if let Kind::Partitioned { look_ahead, .. } = &mut self.kind {
            *look_ahead = true;
        }
        self
    }

    /// Partitioned, a guard YTsaurus Flow plans: a partition's watermark is at most the least
    /// time among its last `n` events, so one producer lagging far behind the others writing to
    /// the partition (by more than the bound) does not see its events turn late.
    pub fn recent_min(mut self, n: usize) -> Self {
        if let Kind::Partitioned { recent, .. } = &mut self.kind {
            *recent = Some(n.max(1));
        }
        self
    }

    /// Partitioned, a guard YTsaurus Flow plans: a partition's highest time is the least over
    /// the dimensions `key` tells apart of their highest times, so that one kind of event that
    /// stops (clicks, while impressions go on) holds the partition back instead of turning
    /// late when it resumes.
    pub fn dimensions(mut self, key: impl Fn(&P) -> u64 + Send + Sync + 'static) -> Self {
        if let Kind::Partitioned { dimension, .. } = &mut self.kind {
            *dimension = Some(Arc::new(key));
        }
        self
    }

    /// ASA: an event that arrives more than `late` after its time gets time `arrival - late`
    /// (or is dropped); a partition with no events coming in advances to its estimated arrival
    /// time minus `late`. Stream Analytics takes 0 to 20 days 23:59:59 ([`ASA_MAX_LATE`]);
    /// a plan refuses anything else.
    pub fn late(mut self, late: TimeSpan) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.late = Some(late);
        }
        self
    }

    /// ASA's "wait indefinitely" (a late-arrival tolerance of -1 there): no event is moved for
    /// arriving late, and a quiet partition does not advance the CTI. Substreams refuse it.
    pub fn no_late_limit(mut self) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.late = None;
        }
        self
    }

    /// ASA: an event whose time is more than `early` after its arrival is dropped (default
    /// 5 minutes, [`ASA_EARLY_WINDOW`]).
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

    /// ASA substreams (`TIMESTAMP BY time OVER key`): one watermark per key for the
    /// out-of-order decision. Each partition's watermark is then its highest arrival time
    /// minus the late-arrival tolerance (estimated while no events come in), which bounds how
    /// far substreams can be apart; the stream's CTI is the minimum over the partitions, so it
    /// keeps advancing when a key goes quiet. Needs a late-arrival tolerance (the default,
    /// 5 s, as in Stream Analytics; a plan refuses [`Watermark::no_late_limit`]).
    pub fn substream(mut self, key: impl Fn(&P) -> u64 + Send + Sync + 'static) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.substream = Some(Arc::new(key));
        }
        self
    }

    /// ASA: the input has this many partitions (numbered from 0, as events say in their
    /// [`Arrival::partition`]); each has its own watermark, and the stream's CTI is their
    /// minimum, so it waits until each has been seen (or, with a clock, estimated). Default 1;
    /// partitions beyond the number given count from when they are first seen.
    pub fn input_partitions(mut self, n: usize) -> Self {
        if let Kind::Arrival(a) = &mut self.kind {
            a.partitions = n.clamp(1, MAX_ARRIVAL_PARTITIONS);
        }
        self
    }

    /// Whether the strategy can work as configured: Stream Analytics' limits on the late
    /// tolerance, a late tolerance for substreams, no negative tolerances or bounds.
    ///
    /// ```
    /// use punctual_core::TimeSpan;
    /// use punctual_policies::Watermark;
    /// assert!(Watermark::<()>::arrival(TimeSpan::from_secs(2)).validate().is_ok());
    /// let too_late = Watermark::<()>::arrival(TimeSpan::ZERO).late(TimeSpan::from_secs(30 * 86_400));
    /// assert!(too_late.validate().unwrap_err().contains("20 days"));
    /// let stalled = Watermark::<u64>::arrival(TimeSpan::ZERO).no_late_limit().substream(|k| *k);
    /// assert!(stalled.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        let negative = |what: &str, t: TimeSpan| {
            if t < TimeSpan::ZERO {
                Err(format!("the {what} must not be negative, not {t:?}"))
            } else {
                Ok(())
            }
        };
        match &self.kind {
            Kind::Arrival(a) => {
                negative("out-of-order tolerance", a.out_of_order)?;
                if let Some(e) = a.early {
                    negative("early-arrival window", e)?;
                }
                match a.late {
                    Some(l) => {
                        negative("late-arrival tolerance", l)?;
                        if l > ASA_MAX_LATE {
                            return Err(format!(
                                "the late-arrival tolerance is at most 20 days 23:59:59 (as in Stream Analytics), not {l:?}"
                            ));
                        }
                    }
                    None if a.substream.is_some() => {
                        return Err(
                            "substreams need a late-arrival tolerance: it bounds how far \
                                    they may be apart, and without it the stream's CTI never \
                                    advances"
                                .to_owned(),
                        )
                    }
                    None => {}
                }
            }
            Kind::Bounded(b) => negative("bound", *b)?,
            Kind::Partitioned { bound, .. } => negative("bound", *bound)?,
        }
        if let Some(t) = self.idle_timeout {
            negative("idle timeout", t)?;
        }
        Ok(())
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClockReading {
    /// Items enqueued before the reading.
    pub after_items: u64,
    /// The clock's value.
    pub now: Time,
}

/// Why a watermark dropped an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DropCause {
    /// Its time was too far after its arrival.
    Early,
    /// It arrived too long after its time.
    LateArrival,
    /// Its time was below its (sub)stream's watermark.
    OutOfOrder,
}

mod state;

pub(crate) use state::{Saved, State, Verdict};
