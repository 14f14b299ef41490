//! [`Hold`]: where an input's accepted events wait for their CTI. An ordered stream holds them
//! sorted in a [`ReleaseBuffer`] until a CTI passes them; an unordered one releases each at
//! once, in arrival order. Everything in the ingress that depends on the order asks the hold.

use punctual_core::ops::{Predicate, ReleaseBuffer};
use punctual_core::{Batch, EventKind, EventOrder, Time};

use super::run::PointRun;
use super::select::PointSelection;

/// Where accepted events wait; see the module doc. (One per input: the unordered variant's
/// unused room costs nothing worth a box, and the sorted one is on the hot path.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Hold<P> {
    /// Held sorted until a CTI passes them (an ordered stream).
    Sorted(ReleaseBuffer<P>),
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
    /// Points the fused filter kept out.
    pub(crate) filtered: usize,
    /// Points released at once.
    pub(crate) released: usize,
}

impl<P: Clone> Hold<P> {
    pub(crate) fn new(order: EventOrder) -> Self {
        match order {
            EventOrder::Sorted => Hold::Sorted(ReleaseBuffer::new()),
            EventOrder::Arrival => Hold::Arrival,
        }
    }

    /// Events waiting for a CTI.
    pub(crate) fn len(&self) -> usize {
        match self {
            Hold::Sorted(buffer) => buffer.len(),
            Hold::Arrival => 0,
        }
    }

    /// Whether the hold releases events on arrival (and so cannot take edges: an end edge can
    /// still change or remove its start edge, which must wait for its CTI).
    pub(crate) fn on_arrival(&self) -> bool {
        matches!(self, Hold::Arrival)
    }

    /// Takes an accepted event; returns how many events it released at once (0 or 1).
    pub(crate) fn accept(&mut self, kind: EventKind, payload: P, out: &mut Batch<P>) -> u64 {
        let (sync, other) = kind.encode();
        match self {
            Hold::Sorted(buffer) => {
                buffer.push(sync, other, payload);
                0
            }
            Hold::Arrival => {
                out.push_event(sync, other, payload);
                1
            }
        }
    }

    /// The CTI `t` was issued: appends what it releases (sorted by sync time, ties in arrival
    /// order), then the CTI, to `out`; returns how many events it released.
    pub(crate) fn release(&mut self, t: Time, out: &mut Batch<P>) -> usize {
        let n = match self {
            Hold::Sorted(buffer) => buffer.release_into(t, out),
            Hold::Arrival => 0,
        };
        out.push_cti(t);
        n
    }

    /// Takes back a held start edge (one whose end edge leaves nothing of it).
    pub(crate) fn take_back_start_edge(&mut self, start: Time, payload: &P) -> Option<P>
    where
        P: PartialEq,
    {
        let Hold::Sorted(buffer) = self else {
            return None;
        };
        let removed = buffer
            .remove_first(|sync, other, p| sync == start && other == Time::INF && *p == *payload);
        removed.map(|(_, _, p)| p)
    }

    /// Takes every held event out (the stream is closed): `(sync, other, payload)`.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (Time, Time, P)> + '_ {
        let held = match self {
            Hold::Sorted(buffer) => Some(buffer.drain_all()),
            Hold::Arrival => None,
        };
        held.into_iter().flatten()
    }

    /// The bulk path's pass over `range` of a run of points: reads them from its start while
    /// they are valid (finite, at or after `low`), releases (unordered stream) or holds
    /// (ordered) the ones `keep` keeps (all without a filter), and stops before the first that
    /// is not valid. With a filter, the points go through `selection` (a refused point is
    /// never written out); in order, runs go into the reorder buffer with one copy per column.
    pub(crate) fn take_points(
        &mut self,
        points: &impl PointRun<P>,
        (range, low): (std::ops::Range<usize>, Time),
        (selection, keep): (&mut PointSelection<P>, Option<&dyn Predicate<P>>),
        out: &mut Batch<P>,
    ) -> Taken {
        let (i, end) = (range.start, range.end);
        if let Some(keep) = keep {
            let (read, top) = points.select(i..end, selection, (low, keep));
            let kept = selection.len();
            let released = match self {
                Hold::Arrival => {
                    selection.append_to(out);
                    kept
                }
                Hold::Sorted(buffer) => {
                    selection.hold_in(buffer);
                    0
                }
            };
            return Taken {
                read,
                top,
                filtered: read - kept,
                released,
            };
        }
        if let Hold::Sorted(buffer) = self {
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
