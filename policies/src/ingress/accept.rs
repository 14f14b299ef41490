//! The general path of one event (docs/semantics.md, section 2, steps 1–4): validate, let a watermark
//! strategy judge it, check the buffer's cap, apply the violation policy ([`policy::rule`]),
//! and accept it into the hold, then generate.

use punctual_core::{Event, EventKind, EventShape, InvalidEvent, StreamItem, Time};

use super::edges::EdgeRef;
use super::output::{DeadLetterReason, Enqueued, IngressOutput};
use super::policy::{self, Ruling, StartEdge};
use super::Ingress;
use crate::watermark::{Arrival, DropCause, Verdict};
use crate::Error;

/// What the watermark strategy made of an event ([`Ingress::judge`]).
enum Judged<P> {
    /// On its way (moved, perhaps), and whether the strategy adjusted it.
    Go(Event<P>, bool),
    /// Dropped: counted and dead-lettered.
    Dropped(Enqueued),
}

impl<P: Clone + PartialEq> Ingress<P> {
    /// Validates, polices and accepts one event. `keep` is the fused filter's verdict (true
    /// without one): an accepted event it refuses is never released, and counted as filtered
    /// when a CTI passes it (at once on an unordered stream).
    pub(super) fn insert(
        &mut self,
        event: Event<P>,
        arrival: Arrival,
        keep: bool,
        out: &mut IngressOutput<P>,
    ) -> Result<Enqueued, Error> {
        if let Err(e) = event.kind.validate() {
            return Err(self.reject(StreamItem::Insert(event), Error::Invalid(e), out));
        }
        if let Some(error) = wrong_shape(self.config.shape, event.kind) {
            return Err(self.reject(StreamItem::Insert(event), error, out));
        }
        let is_edge = matches!(
            event.kind,
            EventKind::StartEdge(_) | EventKind::EndEdge { .. }
        );
        if is_edge && self.hold.on_arrival() {
            return Err(self.reject(StreamItem::Insert(event), Error::EdgeOnArrival, out));
        }
        let (event, watermark_adjusted) = match self.judge(event, arrival, out)? {
            Judged::Go(event, adjusted) => (event, adjusted),
            Judged::Dropped(enqueued) => return Ok(enqueued),
        };
        if self.hold.len() >= self.config.max_buffered {
            let error = Error::BufferFull {
                cap: self.config.max_buffered,
                app: self.app,
                earliest: self.hold.earliest(),
            };
            return Err(self.reject(StreamItem::Insert(event), error, out));
        }
        // The start edge an end edge closes, by the start it came with and its payload.
        let found = match event.kind {
            EventKind::EndEdge { start, end } => match self.edges.find(start, &event.payload) {
                Some(found) => Some(found),
                None => {
                    let error = Error::Invalid(InvalidEvent::UnmatchedEndEdge { start, end });
                    return Err(self.reject(StreamItem::Insert(event), error, out));
                }
            },
            _ => None,
        };
        let state = found.map(|(_, state)| state);
        match policy::rule(event.kind, state, self.app, self.config.policy) {
            Ruling::Reject => {
                let error = Error::Violation {
                    sync: event.kind.sync_time(),
                    app: self.app,
                };
                Err(self.reject(StreamItem::Insert(event), error, out))
            }
            Ruling::Drop => {
                match (event.kind, found) {
                    (EventKind::StartEdge(s), _) => {
                        self.edges.add(s, event.payload.clone(), StartEdge::Dropped);
                    }
                    (EventKind::EndEdge { start, .. }, Some((idx, StartEdge::Dropped))) => {
                        self.edges.remove(start, idx);
                    }
                    (EventKind::EndEdge { start, .. }, Some((idx, StartEdge::Open(s)))) => {
                        // Its start edge stays open: it dangles, until a valid end edge.
                        self.counters.dangling_edges += 1;
                        self.edges.set_state(start, idx, StartEdge::Dangling(s));
                    }
                    _ => {}
                }
                Ok(self.drop_late(StreamItem::Insert(event), out))
            }
            Ruling::RemoveBoth => {
                let (EventKind::EndEdge { start, .. }, Some((idx, state))) = (event.kind, found)
                else {
                    return Ok(self.drop_late(StreamItem::Insert(event), out));
                };
                self.edges.remove(start, idx);
                if let StartEdge::Open(s) | StartEdge::Dangling(s) = state {
                    // Nothing is left of the edge. Its start is still held (had a CTI
                    // released it, that CTI would be at most the end, which is not below
                    // the CTI), so both go: kept or refused by the fused filter alike (it
                    // judged the start edge's equal payload as it judges this one's).
                    if let Some(p) = self.hold.take_back_start_edge(s, &event.payload, keep) {
                        self.drop_late(StreamItem::start_edge(s, p), out);
                    }
                }
                Ok(self.drop_late(StreamItem::Insert(event), out))
            }
            Ruling::Accept { kind, adjusted } => {
                if adjusted {
                    self.counters.adjusted += 1;
                }
                self.accept(event, kind, (found, arrival, keep), out);
                Ok(if adjusted || watermark_adjusted {
                    Enqueued::Adjusted(kind)
                } else {
                    Enqueued::Accepted
                })
            }
        }
    }

    /// Lets the watermark strategy, if any, judge `event` (an end edge goes with its start
    /// edge, unjudged): dropped (counted and dead-lettered), or on its way, moved if the
    /// strategy moves it (and whether that counts as an adjustment).
    #[inline]
    fn judge(
        &mut self,
        mut event: Event<P>,
        arrival: Arrival,
        out: &mut IngressOutput<P>,
    ) -> Result<Judged<P>, Error> {
        let Some(w) = self.watermark.as_ref() else {
            return Ok(Judged::Go(event, false));
        };
        if matches!(event.kind, EventKind::EndEdge { .. }) {
            return Ok(Judged::Go(event, false));
        }
        let start = event.kind.start();
        match w.judge(start, &event.payload, arrival, self.app) {
            Err(why) => {
                let error = Error::InvalidSettings(why.into());
                Err(self.reject(StreamItem::Insert(event), error, out))
            }
            Ok(Verdict::Drop(cause)) => {
                match cause {
                    DropCause::Early => self.counters.early += 1,
                    DropCause::LateArrival => self.counters.late += 1,
                    DropCause::OutOfOrder => self.counters.out_of_order += 1,
                }
                let reason = DeadLetterReason::Watermark(cause);
                Ok(Judged::Dropped(self.drop_for(
                    StreamItem::Insert(event),
                    reason,
                    out,
                )))
            }
            Ok(Verdict::Keep {
                start: moved,
                late,
                out_of_order,
            }) => {
                let mut adjusted = false;
                if moved != start {
                    let kind = shift_start(event.kind, moved);
                    if let Err(why) = kind.validate() {
                        // Moved where no event can be (at an end of the time line): it
                        // cannot be kept as the strategy asks; rejected with the reason.
                        let error = Error::Invalid(why);
                        return Err(self.reject(StreamItem::Insert(event), error, out));
                    }
                    // (Taking the arrival time as the event's time is no adjustment.)
                    if late || out_of_order {
                        adjusted = true;
                        self.counters.adjusted += 1;
                    }
                    event.kind = kind;
                }
                self.counters.late += u64::from(late);
                self.counters.out_of_order += u64::from(out_of_order);
                Ok(Judged::Go(event, adjusted))
            }
        }
    }

    /// Accepts `event` as `kind` (the policy's ruling): keeps the open edges up to date, holds
    /// it (kept or refused by the fused filter), then issues what a watermark strategy or
    /// generation asks.
    fn accept(
        &mut self,
        event: Event<P>,
        kind: EventKind,
        (found, arrival, keep): (Option<(EdgeRef, StartEdge)>, Arrival, bool),
        out: &mut IngressOutput<P>,
    ) {
        let Event {
            kind: came,
            payload,
        } = event;
        match (came, kind, found) {
            (EventKind::EndEdge { start, .. }, _, Some((idx, state))) => {
                if let StartEdge::Dangling(_) = state {
                    self.counters.dangling_edges -= 1;
                }
                self.edges.remove(start, idx);
                // (Its start edge had the same payload: the filter judged it alike.)
                let (released, filtered) = self.hold.accept(kind, payload, keep, &mut out.batch);
                self.counters.released += released;
                self.counters.filtered += filtered;
                return;
            }
            (_, EventKind::StartEdge(s), _) => {
                let came_at = came.start();
                self.edges.add(came_at, payload.clone(), StartEdge::Open(s));
            }
            _ => {}
        }
        let start = kind.start();
        let candidate = self
            .watermark
            .as_mut()
            .and_then(|w| w.observe(start, &payload, arrival));
        let (released, filtered) = self.hold.accept(kind, payload, keep, &mut out.batch);
        self.counters.released += released;
        self.counters.filtered += filtered;
        self.high = self.high.max(start);
        self.since_cti += 1;
        match candidate {
            Some(c) => {
                self.issue(c, out);
            }
            None => self.generate(out),
        }
    }

    pub(super) fn reject(
        &mut self,
        item: StreamItem<P>,
        error: Error,
        out: &mut IngressOutput<P>,
    ) -> Error {
        match item {
            StreamItem::Cti(_) => self.counters.rejected_ctis += 1,
            StreamItem::Insert(_) => self.counters.rejected += 1,
        }
        out.dead_letters.push(super::DeadLetter {
            item: Some(item),
            reason: DeadLetterReason::Rejected(error.clone()),
            cti: self.app,
        });
        error
    }

    fn drop_late(&mut self, item: StreamItem<P>, out: &mut IngressOutput<P>) -> Enqueued {
        self.drop_for(item, DeadLetterReason::Late, out)
    }

    /// Drops an item: counted, sent to the dead letters and, for an event with the late-data
    /// side output on, to that output as a point at the CTI it broke.
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
                out.late.push_point(
                    at,
                    super::LateEvent {
                        event: event.clone(),
                        reason: reason.clone(),
                        cti: self.app,
                    },
                );
            }
        }
        out.dead_letters.push(super::DeadLetter {
            item: Some(item),
            reason,
            cti: self.app,
        });
        Enqueued::Dropped
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

/// The error for an event of a kind the stream's shape does not take, if it is one.
fn wrong_shape(shape: EventShape, kind: EventKind) -> Option<Error> {
    let (name, takes) = match (shape, kind) {
        (_, EventKind::Point(_)) | (EventShape::Edge, _) => return None,
        (EventShape::Interval, EventKind::Interval { .. }) => return None,
        (EventShape::Point, EventKind::Interval { .. }) => ("an interval", "points only"),
        (EventShape::Point, EventKind::StartEdge(_)) => ("a start edge", "points only"),
        (EventShape::Point, EventKind::EndEdge { .. }) => ("an end edge", "points only"),
        (EventShape::Interval, EventKind::StartEdge(_)) => ("a start edge", "points and intervals"),
        (EventShape::Interval, EventKind::EndEdge { .. }) => {
            ("an end edge", "points and intervals")
        }
    };
    Some(Error::WrongShape {
        shape,
        kind: name,
        takes,
    })
}
