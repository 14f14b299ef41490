//! Per-event operators.
//!
//! - [`Map`] (project): transforms each payload. CTIs pass unchanged. A start edge and its end
//!   edge carry equal payloads, so a pure function keeps them matched.
//! - [`FlatMap`]: each event made into any number of events with its lifetime (a query
//!   language's `CROSS APPLY`).
//! - [`Shift`]: moves every event and every CTI by the same span.
//! - [`AlterDuration`]: gives every event the lifetime `[start, start + d)`; a start edge becomes
//!   that interval and its end edge is dropped. CTIs pass unchanged.
//! - [`Reorder`]: holds the events of an unordered stream until a CTI passes them and releases
//!   them sorted: an unordered stream made ordinary.
//!
//! Map (like [`Filter`](super::Filter)) also runs on unordered streams (events in arrival order, see
//! [`crate::order`]): it keeps each event where it is, so its output has the order of its input.

use crate::batch::Batch;
use crate::event::{EventKind, EventShape};
use crate::time::{Time, TimeSpan};

use super::state::{self, StateError};
use super::{Held, HeldWhat, ReleaseBuffer, UnaryOperator};

/// Transforms each payload; CTIs pass unchanged.
#[derive(Debug)]
pub struct Map<F> {
    f: F,
}

impl<F> Map<F> {
    /// A projection with this function.
    pub fn new(f: F) -> Self {
        Map { f }
    }
}

impl<P, Q, F> UnaryOperator<P, Q> for Map<F>
where
    P: Send + 'static,
    Q: Send + 'static,
    F: Fn(&P) -> Q + Send + 'static,
{
    const NAME: &'static str = "map";
    const STATELESS: bool = true;

    const PER_EVENT: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<Q>) {
        for (range, cti) in input.segments() {
            // Column by column: the times copied per segment, the payloads extended, rather
            // than one event at a time.
            let (osync, oother, opayload) = out.columns_mut();
            osync.extend_from_slice(&input.sync()[range.clone()]);
            oother.extend_from_slice(&input.other()[range.clone()]);
            opayload.extend(input.payloads()[range].iter().map(&self.f));
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }
}

/// Transforms each payload given the event's start time as well (a query language's
/// `System.Timestamp()`); events stay where they are, CTIs pass unchanged.
#[derive(Debug)]
pub struct MapWithTime<F> {
    f: F,
}

impl<F> MapWithTime<F> {
    /// A projection with this function of `(start, payload)`.
    pub fn new(f: F) -> Self {
        MapWithTime { f }
    }
}

impl<P, Q, F> UnaryOperator<P, Q> for MapWithTime<F>
where
    P: Send + 'static,
    Q: Send + 'static,
    F: Fn(Time, &P) -> Q + Send + 'static,
{
    const NAME: &'static str = "map";
    const STATELESS: bool = true;

    const PER_EVENT: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<Q>) {
        for (range, cti) in input.segments() {
            // Column by column, as `Map` does.
            let (sync, other) = (&input.sync()[range.clone()], &input.other()[range.clone()]);
            let (osync, oother, opayload) = out.columns_mut();
            osync.extend_from_slice(sync);
            oother.extend_from_slice(other);
            let f = &self.f;
            opayload.extend(sync.iter().zip(other).zip(&input.payloads()[range]).map(
                |((&s, &o), p)| {
                    // An end edge's sync time is its end; its start is the other time.
                    f(if o < s { o } else { s }, p)
                },
            ));
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }
}

/// Makes each event into as many events as its payload gives payloads (none, one, several),
/// each with the event's lifetime; CTIs pass unchanged. A start edge and its end edge carry
/// equal payloads, so a pure function gives each edge of the one its match in the other.
#[derive(Debug)]
pub struct FlatMap<F> {
    f: F,
}

impl<F> FlatMap<F> {
    /// The operator with this function of a payload.
    pub fn new(f: F) -> Self {
        FlatMap { f }
    }
}

impl<P, Q, I, F> UnaryOperator<P, Q> for FlatMap<F>
where
    P: Send + 'static,
    Q: Send + 'static,
    I: IntoIterator<Item = Q>,
    F: Fn(&P) -> I + Send + 'static,
{
    const NAME: &'static str = "flat map";
    const STATELESS: bool = true;

    const PER_EVENT: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<Q>) {
        for (range, cti) in input.segments() {
            for i in range {
                let (s, o) = (input.sync()[i], input.other()[i]);
                for q in (self.f)(&input.payloads()[i]) {
                    out.push_event(s, o, q);
                }
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }
}

/// Holds the events of an unordered stream (see [`crate::order`])
/// until a CTI passes them, then releases them sorted by sync time (ties in arrival order),
/// followed by the CTI: the stream an ordered source would have given. CTIs pass unchanged.
/// State: the events at or after the last CTI.
#[derive(Debug)]
pub struct Reorder<P> {
    held: ReleaseBuffer<P>,
}

impl<P> Default for Reorder<P> {
    fn default() -> Self {
        Reorder {
            held: ReleaseBuffer::new(),
        }
    }
}

impl<P: super::Payload> UnaryOperator<P, P> for Reorder<P> {
    const NAME: &'static str = "reorder";
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        state::write("reorder", &self.held, out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.held = state::read("reorder", bytes)?;
        Ok(())
    }

    const FORWARDS: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            let (sync, other, payload) = (
                &input.sync()[range.clone()],
                &input.other()[range.clone()],
                &input.payloads()[range],
            );
            let mut i = 0;
            while i < sync.len() {
                // Points go in as runs (in order, one copy per column); the event that ends
                // a run of points is pushed alone.
                let n = other[i..]
                    .iter()
                    .zip(&sync[i..])
                    .take_while(|(o, s)| **o == s.next_tick())
                    .count();
                self.held
                    .push_point_run(&sync[i..i + n], &payload[i..i + n]);
                i += n;
                if i < sync.len() {
                    self.held.push(sync[i], other[i], payload[i].clone());
                    i += 1;
                }
            }
            if let Some(t) = cti {
                self.held.release(t, out);
            }
        }
    }

    fn state_size(&self) -> usize {
        self.held.len()
    }

    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        self.held
            .for_each(|s, o, p| f(Held::encoded(HeldWhat::Event, s, o, p)));
    }
}

/// Moves events and CTIs by a span (infinities stay put).
#[derive(Debug, Clone, Copy)]
pub struct Shift {
    by: TimeSpan,
}

impl Shift {
    /// Shift by `by` (negative moves back).
    pub fn new(by: TimeSpan) -> Self {
        Shift { by }
    }
}

impl<P: Clone + Send + 'static> UnaryOperator<P, P> for Shift {
    const NAME: &'static str = "shift";
    const STATELESS: bool = true;

    const FORWARDS: bool = true;

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            for i in range {
                out.push_event(
                    input.sync()[i] + self.by,
                    input.other()[i] + self.by,
                    input.payloads()[i].clone(),
                );
            }
            if let Some(t) = cti {
                out.push_cti(t + self.by);
            }
        }
    }
}

/// Sets every event's lifetime to `[start, start + d)`; CTIs pass unchanged.
#[derive(Debug, Clone, Copy)]
pub struct AlterDuration {
    duration: TimeSpan,
}

impl AlterDuration {
    /// New lifetimes of length `duration` (at least one tick; shorter spans are taken as one).
    pub fn new(duration: TimeSpan) -> Self {
        AlterDuration {
            duration: duration.max(TimeSpan::TICK),
        }
    }
}

impl<P: Clone + Send + 'static> UnaryOperator<P, P> for AlterDuration {
    const NAME: &'static str = "alter duration";
    const STATELESS: bool = true;

    const FORWARDS: bool = true;

    /// Points when every lifetime is one tick (`to_point_events`), intervals otherwise.
    fn output_shape(&self, _input: EventShape) -> EventShape {
        if self.duration == TimeSpan::TICK {
            EventShape::Point
        } else {
            EventShape::Interval
        }
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            for i in range {
                if let EventKind::EndEdge { .. } = input.kind(i) {
                    continue;
                }
                let start = input.sync()[i];
                out.push_event(start, start + self.duration, input.payloads()[i].clone());
            }
            if let Some(t) = cti {
                out.push_cti(t);
            }
        }
    }
}

/// New lifetimes from functions of the old ones (StreamInsight's `AlterEventLifetime` with
/// selectors): the start becomes `start(old start)`, the duration `duration(old start, old
/// duration)` (`TimeSpan::MAX` for a start edge, whose end is not known; at least one tick).
/// CTIs go through `start` too, so it must not decrease as its argument grows (a shift, a
/// rounding down to the minute): a start it would put below the last CTI, or before the
/// previous result's, is clamped to it, so the stream keeps its order and its CTIs hold
/// whatever the function does. End edges are dropped (their start edge's lifetime is set
/// once, from its start).
pub struct AlterLifetime<S, D> {
    start: S,
    duration: D,
    /// The last CTI emitted, and the last start emitted.
    cti: Time,
    last: Time,
}

impl<S, D> std::fmt::Debug for AlterLifetime<S, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlterLifetime")
            .field("cti", &self.cti)
            .finish_non_exhaustive()
    }
}

impl<S, D> AlterLifetime<S, D>
where
    S: Fn(Time) -> Time,
    D: Fn(Time, TimeSpan) -> TimeSpan,
{
    /// Lifetimes from `start` and `duration`; see the type's doc.
    pub fn new(start: S, duration: D) -> Self {
        AlterLifetime {
            start,
            duration,
            cti: Time::NEG_INF,
            last: Time::NEG_INF,
        }
    }
}

impl<P, S, D> UnaryOperator<P, P> for AlterLifetime<S, D>
where
    P: Clone + Send + 'static,
    S: Fn(Time) -> Time + Send + 'static,
    D: Fn(Time, TimeSpan) -> TimeSpan + Send + 'static,
{
    const NAME: &'static str = "alter lifetime";
    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        state::write("alter lifetime", &(self.cti, self.last), out)
    }
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        (self.cti, self.last) = state::read("alter lifetime", bytes)?;
        Ok(())
    }

    const FORWARDS: bool = true;

    fn output_shape(&self, _input: EventShape) -> EventShape {
        EventShape::Interval
    }

    fn on_batch(&mut self, input: &Batch<P>, out: &mut Batch<P>) {
        for (range, cti) in input.segments() {
            for i in range {
                let kind = input.kind(i);
                if let EventKind::EndEdge { .. } = kind {
                    continue;
                }
                let (start, end) = (kind.start(), input.other()[i]);
                let old = if end == Time::INF {
                    TimeSpan::MAX
                } else {
                    end - start
                };
                let new_start = (self.start)(start)
                    .max(self.cti)
                    .max(self.last)
                    .max(Time::MIN_FINITE)
                    .min(Time::MAX_FINITE - TimeSpan::TICK);
                let d = (self.duration)(start, old).max(TimeSpan::TICK);
                self.last = new_start;
                out.push_event(new_start, new_start + d, input.payloads()[i].clone());
            }
            if let Some(t) = cti {
                let moved = if t.is_infinite() { t } else { (self.start)(t) };
                if moved > self.cti {
                    self.cti = moved;
                    out.push_cti(moved);
                }
            }
        }
    }
}
