//! Events, their shapes, and the [`StreamItem`] that adapters enqueue: an event or a CTI.
//!
//! An [`Event`] as an adapter builds it is *not yet validated*: ingress checks it (an interval
//! needs `start < end`, an end edge must close an open start edge) and rejects it with an
//! [`InvalidEvent`] reason otherwise. Past ingress, events travel encoded as `(sync, other)` pairs
//! (see [`EventKind::encode`]), Trill's encoding:
//!
//! | kind | sync | other |
//! |---|---|---|
//! | point `P(t)` | `t` | `t + 1` |
//! | interval `I(s, e)` | `s` | `e` |
//! | start edge `S(s)` | `s` | `+inf` |
//! | end edge `E(s, e)` | `e` | `s` (so `other < sync`) |
//!
//! An interval that ends at `+inf` is therefore the same thing as a start edge that is never
//! closed, and an interval one tick long is a point.

use serde::{Deserialize, Serialize};

use crate::time::{Lifetime, Time};

/// The shape of a stream's events: what an input adapter is asked to produce, and what an
/// input stream takes (a point stream points only, an interval stream points and intervals, an
/// edge stream any kind).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventShape {
    /// One-tick events `[t, t+1)`.
    Point,
    /// Events with a known start and end (points among them).
    Interval,
    /// A start edge opens `[s, +inf)`; a later end edge closes it (and any other kind).
    Edge,
}

impl EventShape {
    /// The shape of a stream that holds the events of both (a union's).
    ///
    /// ```
    /// use punctual_core::EventShape;
    /// assert_eq!(EventShape::Point.or(EventShape::Interval), EventShape::Interval);
    /// assert_eq!(EventShape::Edge.or(EventShape::Point), EventShape::Edge);
    /// ```
    pub fn or(self, other: EventShape) -> EventShape {
        use EventShape::{Edge, Interval, Point};
        match (self, other) {
            (Edge, _) | (_, Edge) => Edge,
            (Interval, _) | (_, Interval) => Interval,
            (Point, Point) => Point,
        }
    }
}

/// When an event happens: the four kinds of event and their times.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum EventKind {
    /// A point event at the given time, lifetime `[t, t+1)`.
    Point(Time),
    /// An interval event `[start, end)`.
    Interval {
        /// Inclusive start.
        start: Time,
        /// Exclusive end.
        end: Time,
    },
    /// A start edge, lifetime `[start, +inf)` until its end edge arrives.
    StartEdge(Time),
    /// An end edge closing the start edge at `start` (with an equal payload) at `end`.
    EndEdge {
        /// The start of the edge it closes.
        start: Time,
        /// Where the lifetime ends.
        end: Time,
    },
}

/// Why an item is not a valid event. Invalid items are rejected at ingress and never forwarded.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum InvalidEvent {
    /// An interval (or end edge) whose end is not after its start.
    #[error("end {end} is not after start {start}")]
    EmptyLifetime {
        /// The start.
        start: Time,
        /// The end.
        end: Time,
    },
    /// A start time at an infinity, or a point at the last finite tick.
    #[error("start {0} is not a finite time at which an event can begin")]
    StartNotFinite(Time),
    /// An end edge that matches no open start edge (same start, equal payload).
    #[error("end edge at {end} matches no open start edge at {start} with an equal payload")]
    UnmatchedEndEdge {
        /// The start named by the end edge.
        start: Time,
        /// Its end.
        end: Time,
    },
    /// A CTI at minus infinity.
    #[error("a CTI at -inf is meaningless")]
    CtiAtNegInf,
    /// An end edge at `+inf`: an open start edge already lasts forever, so it would change
    /// nothing and could never be released.
    #[error("an end edge at +inf ends nothing: the start edge at {0} already lasts forever")]
    EndEdgeAtInfinity(Time),
}

impl EventKind {
    /// The sync time: the start, except for an end edge, whose sync time is its end.
    #[inline]
    pub fn sync_time(self) -> Time {
        self.encode().0
    }

    /// The start of the lifetime.
    #[inline]
    pub fn start(self) -> Time {
        match self {
            EventKind::Point(t) | EventKind::StartEdge(t) => t,
            EventKind::Interval { start, .. } | EventKind::EndEdge { start, .. } => start,
        }
    }

    /// Checks the kind's own constraints (finite start, `start < end`). Whether an end edge
    /// matches an open start edge is up to the stream's ingress.
    #[inline]
    pub fn validate(self) -> Result<(), InvalidEvent> {
        let start = self.start();
        if start.is_infinite() {
            return Err(InvalidEvent::StartNotFinite(start));
        }
        match self {
            EventKind::Point(t) if t >= Time::MAX_FINITE => Err(InvalidEvent::StartNotFinite(t)),
            EventKind::Interval { start, end } | EventKind::EndEdge { start, end }
                if start >= end =>
            {
                Err(InvalidEvent::EmptyLifetime { start, end })
            }
            EventKind::EndEdge { start, end } if end == Time::INF => {
                Err(InvalidEvent::EndEdgeAtInfinity(start))
            }
            _ => Ok(()),
        }
    }

    /// The `(sync, other)` encoding of the table in the module doc.
    #[inline]
    pub fn encode(self) -> (Time, Time) {
        match self {
            EventKind::Point(t) => (t, t.next_tick()),
            EventKind::Interval { start, end } => (start, end),
            EventKind::StartEdge(s) => (s, Time::INF),
            EventKind::EndEdge { start, end } => (end, start),
        }
    }

    /// The inverse of [`EventKind::encode`]: one tick is a point, `other == +inf` a start edge,
    /// `other < sync` an end edge, anything else an interval.
    #[inline]
    pub fn decode(sync: Time, other: Time) -> EventKind {
        if other == Time::INF {
            EventKind::StartEdge(sync)
        } else if other < sync {
            EventKind::EndEdge {
                start: other,
                end: sync,
            }
        } else if other == sync.next_tick() {
            EventKind::Point(sync)
        } else {
            EventKind::Interval {
                start: sync,
                end: other,
            }
        }
    }

    /// The lifetime, for kinds that have a complete one (point, interval, end edge).
    pub fn lifetime(self) -> Option<Lifetime> {
        match self {
            EventKind::Point(t) => Lifetime::point(t).ok(),
            EventKind::Interval { start, end } | EventKind::EndEdge { start, end } => {
                Lifetime::new(start, end).ok()
            }
            EventKind::StartEdge(_) => None,
        }
    }
}

/// An event: when it happens and what it carries.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Event<P> {
    /// Its kind and times.
    pub kind: EventKind,
    /// What it carries.
    pub payload: P,
}

impl<P> Event<P> {
    /// A point event at `t`.
    pub fn point(t: Time, payload: P) -> Event<P> {
        Event {
            kind: EventKind::Point(t),
            payload,
        }
    }

    /// An interval event `[start, end)`.
    pub fn interval(start: Time, end: Time, payload: P) -> Event<P> {
        Event {
            kind: EventKind::Interval { start, end },
            payload,
        }
    }

    /// A start edge at `start`.
    pub fn start_edge(start: Time, payload: P) -> Event<P> {
        Event {
            kind: EventKind::StartEdge(start),
            payload,
        }
    }

    /// An end edge closing the start edge at `start` (with an equal payload) at `end`.
    pub fn end_edge(start: Time, end: Time, payload: P) -> Event<P> {
        Event {
            kind: EventKind::EndEdge { start, end },
            payload,
        }
    }

    /// The same event with its payload transformed.
    pub fn map<Q>(self, f: impl FnOnce(P) -> Q) -> Event<Q> {
        Event {
            kind: self.kind,
            payload: f(self.payload),
        }
    }

    /// The event with a borrowed payload.
    pub fn as_ref(&self) -> Event<&P> {
        Event {
            kind: self.kind,
            payload: &self.payload,
        }
    }
}

/// What flows on a stream: an event to insert, or a CTI (current time increment): the promise
/// that no later item will have a sync time before the given time.
#[derive(Clone, PartialEq, Debug)]
pub enum StreamItem<P> {
    /// An event.
    Insert(Event<P>),
    /// A CTI at the given time.
    Cti(Time),
}

impl<P> StreamItem<P> {
    /// A point event item.
    pub fn point(t: Time, payload: P) -> StreamItem<P> {
        StreamItem::Insert(Event::point(t, payload))
    }

    /// An interval event item.
    pub fn interval(start: Time, end: Time, payload: P) -> StreamItem<P> {
        StreamItem::Insert(Event::interval(start, end, payload))
    }

    /// A start edge item.
    pub fn start_edge(start: Time, payload: P) -> StreamItem<P> {
        StreamItem::Insert(Event::start_edge(start, payload))
    }

    /// An end edge item.
    pub fn end_edge(start: Time, end: Time, payload: P) -> StreamItem<P> {
        StreamItem::Insert(Event::end_edge(start, end, payload))
    }

    /// A CTI item.
    pub fn cti(t: Time) -> StreamItem<P> {
        StreamItem::Cti(t)
    }

    /// The item with its payload borrowed.
    pub fn as_ref(&self) -> StreamItem<&P> {
        match self {
            StreamItem::Insert(e) => StreamItem::Insert(e.as_ref()),
            StreamItem::Cti(t) => StreamItem::Cti(*t),
        }
    }

    /// The item with its payload transformed.
    pub fn map<Q>(self, f: impl FnOnce(P) -> Q) -> StreamItem<Q> {
        match self {
            StreamItem::Insert(e) => StreamItem::Insert(e.map(f)),
            StreamItem::Cti(t) => StreamItem::Cti(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(x: i64) -> Time {
        Time::from_ticks(x)
    }

    #[test]
    fn encoding_round_trips() {
        for kind in [
            EventKind::Point(t(3)),
            EventKind::Interval {
                start: t(3),
                end: t(9),
            },
            EventKind::StartEdge(t(3)),
            EventKind::EndEdge {
                start: t(3),
                end: t(9),
            },
        ] {
            let (sync, other) = kind.encode();
            assert_eq!(EventKind::decode(sync, other), kind);
        }
        assert_eq!(
            EventKind::EndEdge {
                start: t(3),
                end: t(9)
            }
            .sync_time(),
            t(9)
        );
    }

    #[test]
    fn validation() {
        assert!(EventKind::Interval {
            start: t(5),
            end: t(5)
        }
        .validate()
        .is_err());
        assert!(EventKind::Point(Time::INF).validate().is_err());
        assert!(EventKind::Point(Time::MAX_FINITE).validate().is_err());
        assert!(EventKind::StartEdge(Time::NEG_INF).validate().is_err());
        assert!(EventKind::EndEdge {
            start: t(5),
            end: t(4)
        }
        .validate()
        .is_err());
        assert!(EventKind::Interval {
            start: t(5),
            end: Time::INF
        }
        .validate()
        .is_ok());
    }
}
