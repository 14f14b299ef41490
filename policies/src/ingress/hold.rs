//! [`Hold`]: where an input's accepted events wait for their CTI. An ordered stream holds them
//! sorted in a [`ReleaseBuffer`] until a CTI passes them; an unordered one releases each at
//! once, in arrival order. Everything in the ingress that depends on the order asks the hold.
//!
//! A filter fused into the ingress decides an event's fate only as far as the CTIs allow, as the
//! filter after the ingress would: an ordered stream keeps the times of the events it refuses
//! (apart, and without their payloads: they are never released), and counts them `filtered`
//! when a CTI passes them; what no CTI passed is `unreleased` when the stream closes, and a
//! refused start edge that its end edge removes is taken back like a kept one.

use punctual_core::ops::{Predicate, ReleaseBuffer};
use punctual_core::{Batch, EventKind, EventOrder, Time};

use super::refused::Refused;
use super::run::PointRun;
use super::select::PointSelection;

/// Where accepted events wait; see the module doc. (One per input: the unordered variant's
/// unused room costs nothing worth a box, and the sorted one is on the hot path.)
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "P: serde::Serialize",
    deserialize = "P: serde::Deserialize<'de>"
))]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Hold<P> {
    /// Held sorted until a CTI passes them (an ordered stream): the events to release, and the
    /// ones the fused filter refused (never released; counted `filtered` as CTIs pass them).
    Sorted {
        /// The events a CTI releases.
        kept: ReleaseBuffer<P>,
        /// The times of the events the fused filter refused, until a CTI passes them.
        refused: Refused,
    },
    /// Released at once, in arrival order (an unordered stream).
    Arrival,
}

/// What one pass of the bulk path read from a run of points.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Taken {
    /// Points read from the start of the range (valid, at or after the CTI).
    pub(crate) read: usize,
    /// The highest start time read (`-inf` if none).
    pub(crate) top: Time,
    /// Points the fused filter kept out, counted `filtered` now (an unordered stream; an
    /// ordered one holds them until a CTI passes them).
    pub(crate) filtered: usize,
    /// Points released at once.
    pub(crate) released: usize,
}

impl<P: Clone> Hold<P> {
    pub(crate) fn new(order: EventOrder) -> Self {
        match order {
            EventOrder::Sorted => Hold::Sorted {
                kept: ReleaseBuffer::new(),
                refused: Refused::default(),
            },
            EventOrder::Arrival => Hold::Arrival,
        }
    }

    /// Events waiting for a CTI (those the fused filter refused included).
    pub(crate) fn len(&self) -> usize {
        match self {
            Hold::Sorted { kept, refused } => kept.len() + refused.len(),
            Hold::Arrival => 0,
        }
    }

    /// The earliest sync time held (`+inf` if none).
    pub(crate) fn earliest(&self) -> Time {
        match self {
            Hold::Sorted { kept, refused } => kept.earliest().min(refused.earliest()),
            Hold::Arrival => Time::INF,
        }
    }

    /// Whether the hold releases events on arrival (and so cannot take edges: an end edge can
    /// still change or remove its start edge, which must wait for its CTI).
    pub(crate) fn on_arrival(&self) -> bool {
        matches!(self, Hold::Arrival)
    }

    /// Takes an accepted event, which the fused filter keeps (or not: `keep`); returns how
    /// many events it released at once and how many it counted `filtered` at once (each 0 or
    /// 1: only an unordered stream decides at once).
    pub(crate) fn accept(
        &mut self,
        kind: EventKind,
        payload: P,
        keep: bool,
        out: &mut Batch<P>,
    ) -> (u64, u64) {
        let (sync, other) = kind.encode();
        match self {
            Hold::Sorted { kept, refused } => {
                if keep {
                    kept.push(sync, other, payload);
                } else {
                    refused.push(sync);
                }
                (0, 0)
            }
            Hold::Arrival if keep => {
                out.push_event(sync, other, payload);
                (1, 0)
            }
            Hold::Arrival => (0, 1),
        }
    }

    /// The CTI `t` was issued: appends what it releases (sorted by sync time, ties in arrival
    /// order), then the CTI, to `out`; returns how many events it released, and how many
    /// refused ones it passed (now `filtered`).
    pub(crate) fn release(&mut self, t: Time, out: &mut Batch<P>) -> (usize, usize) {
        let n = match self {
            Hold::Sorted { kept, refused } => (kept.release_into(t, out), refused.release(t)),
            Hold::Arrival => (0, 0),
        };
        out.push_cti(t);
        n
    }

    /// Takes back a held start edge (one whose end edge leaves nothing of it), kept or
    /// refused by the fused filter (`keep`: a refused one is any refused start edge at
    /// `start`, and its payload the one given, which equals it).
    pub(crate) fn take_back_start_edge(&mut self, start: Time, payload: &P, keep: bool) -> Option<P>
    where
        P: PartialEq,
    {
        let Hold::Sorted { kept, refused } = self else {
            return None;
        };
        if keep {
            let removed = kept.remove_first(|sync, other, p| {
                sync == start && other == Time::INF && *p == *payload
            });
            removed.map(|(_, _, p)| p)
        } else {
            refused.remove(start).then(|| payload.clone())
        }
    }

    /// Takes every held event out (the stream is closed): `(sync, other, payload)`, those the
    /// fused filter refused apart ([`Hold::forget_refused`]).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (Time, Time, P)> + '_ {
        let held = match self {
            Hold::Sorted { kept, .. } => Some(kept.drain_all()),
            Hold::Arrival => None,
        };
        held.into_iter().flatten()
    }

    /// Forgets the events the fused filter refused that no CTI passed (the stream is closed);
    /// returns how many there were.
    pub(crate) fn forget_refused(&mut self) -> usize {
        match self {
            Hold::Sorted { refused, .. } => refused.clear(),
            Hold::Arrival => 0,
        }
    }

    /// The bulk path's pass over `range` of a run of points: reads them from its start while
    /// they are valid (finite, at or after `low`), releases (unordered stream) or holds
    /// (ordered) the ones `keep` keeps (all without a filter), and stops before the first that
    /// is not valid. With a filter, the points go through `selection` (a refused point is
    /// never written out; an ordered stream holds it apart until a CTI passes it); in order,
    /// runs go into the reorder buffer with one copy per column.
    pub(crate) fn take_points(
        &mut self,
        points: &impl PointRun<P>,
        (range, low): (std::ops::Range<usize>, Time),
        (selection, keep): (&mut PointSelection<P>, Option<&dyn Predicate<P>>),
        out: &mut Batch<P>,
    ) -> Taken {
        let (i, end) = (range.start, range.end);
        if let Some(keep) = keep {
            return match self {
                Hold::Arrival => {
                    let (read, top) = points.select::<false>(i..end, selection, (low, keep));
                    let kept = selection.len();
                    selection.append_to(out);
                    Taken {
                        read,
                        top,
                        filtered: read - kept,
                        released: kept,
                    }
                }
                Hold::Sorted { kept, refused } => {
                    let (read, top) = points.select::<true>(i..end, selection, (low, keep));
                    selection.hold_in(kept, refused);
                    Taken {
                        read,
                        top,
                        filtered: 0,
                        released: 0,
                    }
                }
            };
        }
        if let Hold::Sorted { kept: buffer, .. } = self {
            let (read, top) = points.hold(i..end, low..Time::MAX_FINITE, buffer);
            return Taken {
                read,
                top,
                filtered: 0,
                released: 0,
            };
        }
        let (read, top) = points.admitted(i..end, low..Time::MAX_FINITE);
        points.release(i..i + read, out);
        Taken {
            read,
            top,
            filtered: 0,
            released: read,
        }
    }
}
