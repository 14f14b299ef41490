//! [`Join`]: the temporal inner join, optionally on an equality key, of a left stream (ordered
//! or unordered) with an ordered right stream.
//!
//! Each pair of a left and a right event whose lifetimes overlap (and whose keys are equal, and
//! for which the combine function returns a payload) yields one event with the intersection
//! lifetime. CTI rule: output CTI = min of both sides' CTIs ([`CtiFrontier`](super::CtiFrontier)).
//!
//! A result is released once its start is below the output CTI: as a point or an interval if its
//! end is already final, otherwise as a start edge, followed by its end edge once the end is final
//! and below the output CTI. An open start edge ends at or after its side's CTI, so a result's end
//! is final when the known end is no later than the CTI of every side whose end is unknown.
//!
//! State: each side keeps its events until their end is known and below the output CTI (no future
//! event of the other side can overlap them then); memory is bounded by the CTI lag and by the
//! open edges, not by the stream. A point that arrives below the other side's CTI is joined at
//! once and never stored: every partner it can have has arrived (the common case of a fast
//! stream of points against a slower reference stream whose CTIs are imported). Its results go
//! straight to the output, without waiting for the CTI, when nothing else is held and its side
//! stores nothing: every result that can still come is at or after it. A left point at or
//! above the right side's CTI waits in a [`ReleaseBuffer`] (not in the left side's table;
//! moved in, not copied, when the join is its batch's last reader) and
//! is joined when the right CTI passes it; a right point is joined at once only below the
//! earliest waiting left point, so that it meets them.
//!
//! With an unordered left input (`M =` [`Unordered`]) the output is unordered too: each result
//! is emitted as soon as it is final, not sorted; per CTI the results are the ordered join's.
//! A left point is final once the right CTI passes it: it is joined at once if it already has,
//! else it waits (unsorted) and is joined when it does. Left events that are not points wait
//! for the left CTI, then go, sorted, through the sweep, whose left CTI is held at the earliest
//! waiting point so that it keeps every right event such a point can still meet.

mod probe;
mod side;
mod sweep;

use crate::event::EventShape;
use std::hash::Hash;
use std::marker::PhantomData;

use crate::batch::Batch;
use crate::order::{EventOrder, Order, Ordered};
use crate::time::Time;

use super::{BinaryOperator, Held, HeldWhat, Key, Payload, ReleaseBuffer, StateError};
use probe::probe_points;
use sweep::Sweep;

/// The temporal join; see the module doc. `combine` returns `None` to reject a pair (a join
/// predicate), `Some(payload)` to emit it. `M` is the order of the left input, and of the
/// output.
pub struct Join<L, R, K, O, KL, KR, C, M = Ordered> {
    sweep: Sweep<L, R, K, O, KL, KR, C>,
    /// An unordered left input's events that are not points, until the left CTI passes them.
    intervals: ReleaseBuffer<L>,
    /// An unordered left input's CTI.
    left_cti: Time,
    /// Scratch: intervals on their way into the sweep.
    released: Batch<L>,
    /// Scratch: results of the sweep, and of points probed on their way to it.
    results: Batch<O>,
    scratch: Batch<O>,
    _order: PhantomData<fn() -> M>,
}

impl<L, R, K, O, KL, KR, C, M> std::fmt::Debug for Join<L, R, K, O, KL, KR, C, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Join")
            .field("left", &self.sweep.left.live)
            .field("right", &self.sweep.right.live)
            .field("waiting", &self.sweep.waiting.len())
            .field("intervals", &self.intervals.len())
            .finish()
    }
}

impl<L, R, K, O, KL, KR, C, M> Join<L, R, K, O, KL, KR, C, M>
where
    L: Clone + PartialEq + serde::Serialize,
    R: Clone + PartialEq + serde::Serialize,
    K: Hash + Eq + Clone + 'static,
    O: Clone,
    KL: Fn(&L) -> K,
    KR: Fn(&R) -> K,
    C: Fn(&L, &R) -> Option<O>,
    M: Order,
{
    /// A join matching `key_left(l) == key_right(r)`, emitting `combine(l, r)` where it is `Some`.
    pub fn new(key_left: KL, key_right: KR, combine: C) -> Self {
        Join {
            sweep: Sweep::new(key_left, key_right, combine),
            intervals: ReleaseBuffer::new(),
            left_cti: Time::NEG_INF,
            released: Batch::new(),
            results: Batch::new(),
            scratch: Batch::new(),
            _order: PhantomData,
        }
    }

    /// Moves what the sweep emitted to the output.
    fn forward(&mut self, out: &mut Batch<O>) {
        out.append(&mut self.results);
        self.results.clear();
    }

    /// An unordered left input: advances the sweep's left CTI to the left CTI, held at the
    /// earliest waiting point, with the intervals it passes.
    fn sync_left(&mut self, out: &mut Batch<O>) {
        let t = self.left_cti.min(self.sweep.waiting.earliest());
        if t <= self.sweep.frontier.input(0) {
            return;
        }
        self.released.clear();
        self.intervals.release(t, &mut self.released);
        for (range, cti) in self.released.segments() {
            self.sweep
                .left_segment(&self.released, range, &mut self.results);
            if let Some(t) = cti {
                self.sweep.left_cti(t, &mut self.results);
            }
        }
        self.forward(out);
    }

    /// One segment of an unordered left input: points below the right CTI are joined at once
    /// (results to `out`), other points wait, intervals wait for the left CTI.
    fn unordered_left_segment(&mut self, input: &Batch<L>, range: std::ops::Range<usize>) {
        let sync = &input.sync()[range.clone()];
        let ends = &input.other()[range.clone()];
        let payloads = &input.payloads()[range];
        let right_cti = self.sweep.frontier.input(1);
        left_runs(sync, ends, right_cti, |run| match run {
            // The waiting buffer takes the run in time order in it with one copy per column.
            LeftRun::Wait(r) => self
                .sweep
                .waiting
                .push_point_run(&sync[r.clone()], &payloads[r]),
            LeftRun::Probe(r) => self.probe_run(&sync[r.clone()], &payloads[r]),
            LeftRun::Other(i) => self.intervals.push(sync[i], ends[i], payloads[i].clone()),
        });
    }

    /// [`Join::unordered_left_segment`] of the payloads `payloads` takes next, a batch's
    /// that no one reads after the join: what waits is moved in, not copied (a row, say, is
    /// neither cloned nor dropped), and what is read is dropped.
    fn owned_left_segment(
        &mut self,
        input: &Batch<L>,
        range: std::ops::Range<usize>,
        payloads: &mut std::vec::Drain<'_, L>,
    ) {
        let sync = &input.sync()[range.clone()];
        let ends = &input.other()[range];
        let right_cti = self.sweep.frontier.input(1);
        left_runs(sync, ends, right_cti, |run| match run {
            LeftRun::Wait(r) => self.sweep.waiting.append_points_from(&sync[r], payloads),
            LeftRun::Probe(r) => {
                let n = r.len();
                self.probe_run(&sync[r], &payloads.as_slice()[..n]);
                // Read: dropped.
                payloads.take(n).for_each(drop);
            }
            LeftRun::Other(i) => {
                if let Some(p) = payloads.next() {
                    self.intervals.push(sync[i], ends[i], p);
                }
            }
        });
    }

    /// Joins points the right side has every partner of at once (results to `results`).
    fn probe_run(&mut self, sync: &[Time], payloads: &[L]) {
        let sweep = &mut self.sweep;
        let (right, key, combine) = (&sweep.right, &sweep.key_left, &sweep.combine);
        probe_points(
            right,
            key,
            combine,
            (sync, payloads),
            &mut sweep.heads,
            &mut self.results,
        );
    }
}

/// A run of one segment of an unordered left input (see [`left_runs`]).
enum LeftRun {
    /// Points at or after the right CTI: they wait for it.
    Wait(std::ops::Range<usize>),
    /// Points below the right CTI: the right side has every partner they can have.
    Probe(std::ops::Range<usize>),
    /// An event that is not a point: it waits for the left CTI.
    Other(usize),
}

/// The runs of a segment of an unordered left input (its start times and ends), in order,
/// given the right CTI: each index is in exactly one.
fn left_runs(sync: &[Time], ends: &[Time], right_cti: Time, mut run: impl FnMut(LeftRun)) {
    let is_point = |k: usize| ends[k] == sync[k].next_tick();
    let mut i = 0;
    while i < sync.len() {
        // A run of points that must wait (the usual case), in one go.
        let start = i;
        while i < sync.len() && sync[i] >= right_cti && is_point(i) {
            i += 1;
        }
        if i > start {
            run(LeftRun::Wait(start..i));
            continue;
        }
        while i < sync.len() && sync[i] < right_cti && is_point(i) {
            i += 1;
        }
        if i > start {
            run(LeftRun::Probe(start..i));
            continue;
        }
        run(LeftRun::Other(i));
        i += 1;
    }
}

impl<L, R, K, O, KL, KR, C, M> BinaryOperator<L, R, O> for Join<L, R, K, O, KL, KR, C, M>
where
    L: Payload,
    R: Payload,
    K: Key,
    O: Payload,
    KL: Fn(&L) -> K + Send + 'static,
    KR: Fn(&R) -> K + Send + 'static,
    C: Fn(&L, &R) -> Option<O> + Send + 'static,
    M: Order,
{
    const NAME: &'static str = match M::ORDER {
        EventOrder::Sorted => "join",
        EventOrder::Arrival => "join (unordered)",
    };

    fn placement(&self) -> crate::ops::Placement {
        crate::ops::Placement::ByKey
    }

    fn replicable_right(&self) -> bool {
        true
    }

    fn save_state(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        self.sweep.save((&self.intervals, self.left_cti), out)
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        (self.intervals, self.left_cti) = self.sweep.restore(bytes)?;
        Ok(())
    }

    fn left_key_hash(&self, payload: &L) -> u64 {
        crate::ops::key_hash(&(self.sweep.key_left)(payload))
    }

    fn right_key_hash(&self, payload: &R) -> u64 {
        crate::ops::key_hash(&(self.sweep.key_right)(payload))
    }

    /// A result lives where both partners do: a point when either is one.
    fn output_shape(&self, left: EventShape, right: EventShape) -> EventShape {
        if left == EventShape::Point || right == EventShape::Point {
            EventShape::Point
        } else {
            left.or(right)
        }
    }

    fn on_left(&mut self, input: &Batch<L>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            match M::ORDER {
                EventOrder::Sorted => {
                    self.sweep.left_segment(input, range, out);
                    if let Some(t) = cti {
                        self.sweep.left_cti(t, out);
                    }
                }
                EventOrder::Arrival => {
                    self.unordered_left_segment(input, range);
                    self.forward(out);
                    if let Some(t) = cti {
                        self.left_cti = self.left_cti.max(t);
                        self.sync_left(out);
                    }
                }
            }
        }
    }

    /// A left batch that no one reads after the join: the payloads of the points that wait,
    /// and of the events the sweep stores, are moved in, not cloned (what is read is dropped).
    fn on_owned_left(&mut self, input: &mut Batch<L>, out: &mut Batch<O>) {
        if !std::mem::needs_drop::<L>() {
            return self.on_left(input, out);
        }
        // The payload column taken out (its room given back, empty, at the end): read and
        // taken from its front, run by run, segment by segment.
        let mut column = std::mem::take(input.columns_mut().2);
        let mut payloads = column.drain(..);
        for (range, cti) in input.segments() {
            match M::ORDER {
                EventOrder::Sorted => {
                    self.sweep
                        .left_segment_owned(input, range, &mut payloads, out);
                    if let Some(t) = cti {
                        self.sweep.left_cti(t, out);
                    }
                }
                EventOrder::Arrival => {
                    self.owned_left_segment(input, range, &mut payloads);
                    self.forward(out);
                    if let Some(t) = cti {
                        self.left_cti = self.left_cti.max(t);
                        self.sync_left(out);
                    }
                }
            }
        }
        drop(payloads);
        *input.columns_mut().2 = column;
    }

    fn on_right(&mut self, input: &Batch<R>, out: &mut Batch<O>) {
        for (range, cti) in input.segments() {
            match M::ORDER {
                EventOrder::Sorted => {
                    self.sweep.right_segment(input, range, out);
                    if let Some(t) = cti {
                        self.sweep.right_cti(t, &mut self.scratch, out);
                    }
                }
                EventOrder::Arrival => {
                    if !range.is_empty() {
                        self.sweep.right_segment(input, range, &mut self.results);
                        self.forward(out);
                    }
                    let Some(t) = cti else { continue };
                    if t <= self.sweep.frontier.input(1) {
                        continue;
                    }
                    // Every right event below `t` is in: the points waiting below it are
                    // final, their results go out now. Then the sweep's left CTI may pass
                    // them (before the right CTI, so that the output CTIs are the ordered
                    // join's).
                    self.sweep.probe_waiting(t, out);
                    self.sync_left(out);
                    self.sweep
                        .right_cti(t, &mut self.scratch, &mut self.results);
                    self.forward(out);
                }
            }
        }
    }

    fn state_size(&self) -> usize {
        self.sweep.state_size() + self.intervals.len()
    }

    fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        self.sweep.held(f);
        self.intervals
            .for_each(|s, o, p| f(Held::encoded(HeldWhat::Event, s, o, p)));
    }
}

#[cfg(test)]
mod tests;
