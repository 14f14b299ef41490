//! What an ingress gives out besides the released stream: counters, dead letters, the
//! late-data side output, and what became of each item.

use punctual_core::{Batch, Event, EventKind, StreamItem, Time};

use crate::watermark::DropCause;
use crate::Error;

#[cfg(doc)]
use super::Ingress;

/// Per-stream counters. Accounting: `events_in = released + dropped + rejected + buffered +
/// unreleased + filtered` at every moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct IngressCounters {
    /// Events enqueued (valid or not).
    pub events_in: u64,
    /// CTIs enqueued by the adapter (valid or not).
    pub ctis_in: u64,
    /// Events released downstream.
    pub released: u64,
    /// Events dropped by the policy (late).
    pub dropped: u64,
    /// Events changed by the `Adjust` policy (start moved up, end clamped, end edge re-keyed).
    pub adjusted: u64,
    /// Events rejected: invalid, violating with no policy, of a kind the stream's shape does
    /// not take, or over the buffer cap.
    pub rejected: u64,
    /// CTIs rejected (at `-inf`); not part of `events_in`.
    pub rejected_ctis: u64,
    /// Adapter or imported CTIs that did not advance application time.
    pub stale_ctis: u64,
    /// Events left in the reorder buffer when the stream was closed.
    pub unreleased: u64,
    /// Valid events that a filter fused into the ingress ([`Ingress::fuse_filter`]) kept out
    /// of the query: accepted (they count for CTI generation and the CTI checks as any
    /// other), never released, and counted here once a CTI passes them (until then they are
    /// `buffered`, and `unreleased` if the stream closes first).
    pub filtered: u64,
    /// Start edges left open because their end edge was dropped.
    pub dangling_edges: u64,
    /// CTIs emitted downstream.
    pub ctis_out: u64,
    /// Events in the reorder buffer now (those a fused filter refused and no CTI passed yet
    /// included).
    pub buffered: u64,
    /// Start edges whose end edge has not come yet, now, released (or dropped): the ingress
    /// keeps each to match its end edge (they count against a query's budget of what it
    /// holds). One still in the reorder buffer is counted in `buffered`, not here.
    pub open_edges: u64,
    /// Input records the adapter could not parse into items (reported with
    /// [`Ingress::report_malformed`]); not part of `events_in`.
    pub malformed: u64,
    /// Input records that carry no item and need none (blank lines, an `eof` line), reported
    /// with [`Ingress::report_skipped`]; not part of `events_in`. A line-based input reads
    /// `events_in + ctis_in + malformed + skipped` lines.
    pub skipped: u64,
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
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// a malformed record that never became an item, and for an unreleased event that a filter
    /// fused into the ingress refused (the ingress keeps only such an event's times).
    pub item: Option<StreamItem<P>>,
    /// Why it was not released.
    pub reason: DeadLetterReason,
    /// The stream's application time (last CTI) when it happened.
    pub cti: Time,
}

/// An event dropped by a policy or a watermark strategy, as the late-data side output carries
/// it: the event as it arrived, why, and the CTI it broke.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LateEvent<P> {
    /// The event as it arrived.
    pub event: Event<P>,
    /// Why it was dropped.
    pub reason: DeadLetterReason,
    /// The stream's CTI when it was dropped.
    pub cti: Time,
}

/// What [`Ingress::enqueue`] did with an item.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Enqueued {
    /// The event is in the reorder buffer (or already released by a CTI it caused).
    Accepted,
    /// The event was changed (by the `Adjust` policy or a watermark strategy) and accepted as
    /// this kind, with these times.
    Adjusted(EventKind),
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

/// What one call that enqueues several items did, item by item.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct EnqueueSummary {
    /// Events accepted unchanged (including those a fused filter then kept out).
    pub accepted: usize,
    /// Events accepted after an adjustment.
    pub adjusted: usize,
    /// Events dropped by the policy or the watermark strategy.
    pub dropped: usize,
    /// Items rejected (invalid, or violating with no policy); they are dead-lettered.
    pub rejected: usize,
    /// CTIs that advanced application time.
    pub ctis: usize,
    /// CTIs that did not.
    pub stale_ctis: usize,
}

impl EnqueueSummary {
    /// Adds another call's counts to these.
    pub fn add(&mut self, other: EnqueueSummary) {
        self.accepted += other.accepted;
        self.adjusted += other.adjusted;
        self.dropped += other.dropped;
        self.rejected += other.rejected;
        self.ctis += other.ctis;
        self.stale_ctis += other.stale_ctis;
    }

    /// Counts one item's outcome. A full reorder buffer ends the call: its error is returned
    /// (the item was rejected and counted); every other rejection is counted and the call goes
    /// on.
    pub fn record(&mut self, outcome: Result<Enqueued, Error>) -> Result<(), Error> {
        match outcome {
            Ok(Enqueued::Accepted) => self.accepted += 1,
            Ok(Enqueued::Adjusted(_)) => self.adjusted += 1,
            Ok(Enqueued::Dropped) => self.dropped += 1,
            Ok(Enqueued::Cti) => self.ctis += 1,
            Ok(Enqueued::StaleCti) => self.stale_ctis += 1,
            Err(e @ Error::BufferFull { .. }) => {
                self.rejected += 1;
                return Err(e);
            }
            Err(_) => self.rejected += 1,
        }
        Ok(())
    }
}
