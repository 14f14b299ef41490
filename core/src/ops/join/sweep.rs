//! The join's sweep over two ordered inputs: events are stored by side and key until no event
//! of the other side can meet them, pairs are found when the later of the two is no longer
//! pending, and results wait sorted in a [`ReleaseBuffer`] for the output CTI.

use std::any::Any;
use std::hash::Hash;

use crate::batch::Batch;
use crate::event::EventKind;
use crate::time::Time;

use super::super::state::{self, StateError};
use super::super::{CtiFrontier, Held, HeldWhat, Key, Payload, ReleaseBuffer};
use super::probe::{probe, probe_points};
use super::side::{Entry, Side, NONE};

/// A result whose end is not final yet: its start edge is out (or held), its end edge follows.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct OpenResult<O> {
    left: usize,
    right: usize,
    start: Time,
    payload: O,
}

/// The join's state over two ordered inputs (port 0 left, port 1 right).
pub(super) struct Sweep<L, R, K, O, KL, KR, C> {
    pub(super) key_left: KL,
    pub(super) key_right: KR,
    pub(super) combine: C,
    pub(super) frontier: CtiFrontier,
    pub(super) left: Side<L, K>,
    pub(super) right: Side<R, K>,
    open: Vec<OpenResult<O>>,
    pub(super) held: ReleaseBuffer<O>,
    pairs: Vec<(usize, usize)>,
    /// Left points at or above the right side's CTI: they wait here instead of in the left
    /// side's table, and are joined when the right CTI passes them.
    pub(super) waiting: ReleaseBuffer<L>,
    /// Scratch: the heads of the key lists of a block of points being probed.
    pub(super) heads: Vec<usize>,
}

/// The sweep's state as read back, with the join's own (`E`).
type Saved<L, R, K, O, E> = (
    CtiFrontier,
    Side<L, K>,
    Side<R, K>,
    Vec<OpenResult<O>>,
    ReleaseBuffer<O>,
    ReleaseBuffer<L>,
    E,
);

impl<L, R, K, O, KL, KR, C> Sweep<L, R, K, O, KL, KR, C>
where
    L: Payload,
    R: Payload,
    K: Key,
    O: Payload,
{
    /// Writes its state and the join's own (`extra`) for a snapshot.
    pub(super) fn save<E: serde::Serialize>(
        &self,
        extra: E,
        out: &mut Vec<u8>,
    ) -> Result<(), StateError> {
        let state = (
            &self.frontier,
            &self.left,
            &self.right,
            &self.open,
            &self.held,
            &self.waiting,
            extra,
        );
        state::write("join", &state, out)
    }

    /// Reads back what [`Sweep::save`] wrote; returns the join's own part.
    pub(super) fn restore<E: serde::de::DeserializeOwned>(
        &mut self,
        bytes: &[u8],
    ) -> Result<E, StateError> {
        let (frontier, left, right, open, held, waiting, extra): Saved<L, R, K, O, E> =
            state::read("join", bytes)?;
        (self.frontier, self.left, self.right) = (frontier, left, right);
        (self.open, self.held, self.waiting) = (open, held, waiting);
        Ok(extra)
    }
}

impl<L, R, K, O, KL, KR, C> Sweep<L, R, K, O, KL, KR, C>
where
    L: Clone + PartialEq + serde::Serialize,
    R: Clone + PartialEq + serde::Serialize,
    K: Hash + Eq + Clone + 'static,
    O: Clone,
    KL: Fn(&L) -> K,
    KR: Fn(&R) -> K,
    C: Fn(&L, &R) -> Option<O>,
{
    pub(super) fn new(key_left: KL, key_right: KR, combine: C) -> Self {
        Sweep {
            key_left,
            key_right,
            combine,
            frontier: CtiFrontier::new(2),
            left: Side::new(),
            right: Side::new(),
            open: Vec::new(),
            held: ReleaseBuffer::new(),
            pairs: Vec::new(),
            waiting: ReleaseBuffer::new(),
            heads: Vec::new(),
        }
    }

    pub(super) fn state_size(&self) -> usize {
        self.left.live + self.right.live + self.open.len() + self.held.len() + self.waiting.len()
    }

    /// The final end of the pair's intersection, or `None` while it may still change.
    fn final_end(&self, l: &Entry<L, K>, r: &Entry<R, K>) -> Option<Time> {
        match (l.end, r.end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (Some(a), None) => (a <= self.frontier.input(1)).then_some(a),
            (None, Some(b)) => (b <= self.frontier.input(0)).then_some(b),
            (None, None) => None,
        }
    }

    /// Whether results may go straight to the output: nothing is held, so every result that
    /// can still come is at or after them.
    fn direct(&self) -> bool {
        self.held.is_empty() && self.open.is_empty()
    }

    /// Takes one segment of the left input. Left points above the right CTI wait in
    /// [`Sweep::waiting`] when `wait_points` (else they are stored like any event).
    pub(super) fn left_segment(
        &mut self,
        input: &Batch<L>,
        range: std::ops::Range<usize>,
        out: &mut Batch<O>,
    ) {
        let payloads = Payloads::Read(&input.payloads()[range.clone()]);
        self.left_payloads(Segment { input, range }, payloads, out);
    }

    /// [`Sweep::left_segment`] of a batch no one reads after the join, whose payload column
    /// was taken out and is drained from this segment's first payload on: what waits or is
    /// stored is moved in, not cloned.
    pub(super) fn left_segment_owned(
        &mut self,
        input: &Batch<L>,
        range: std::ops::Range<usize>,
        payloads: &mut std::vec::Drain<'_, L>,
        out: &mut Batch<O>,
    ) {
        self.left_payloads(Segment { input, range }, Payloads::Taken(payloads), out);
    }

    fn left_payloads(
        &mut self,
        segment: Segment<'_, L>,
        payloads: Payloads<'_, '_, L>,
        out: &mut Batch<O>,
    ) {
        let direct = self.direct();
        let combine = &self.combine;
        absorb_segment(
            segment,
            payloads,
            Sides {
                own: &mut self.left,
                own_key: &self.key_left,
                waiting: Some(&mut self.waiting),
                other: &self.right,
                other_cti: self.frontier.input(1),
            },
            &|l: &L, r: &R| combine(l, r),
            Sinks {
                direct,
                heads: &mut self.heads,
                held: &mut self.held,
                out,
            },
        );
    }

    /// Takes one segment of the right input.
    pub(super) fn right_segment(
        &mut self,
        input: &Batch<R>,
        range: std::ops::Range<usize>,
        out: &mut Batch<O>,
    ) {
        let direct = self.direct();
        let combine = &self.combine;
        let payloads = Payloads::Read(&input.payloads()[range.clone()]);
        absorb_segment(
            Segment { input, range },
            payloads,
            Sides {
                own: &mut self.right,
                own_key: &self.key_right,
                waiting: None,
                other: &self.left,
                // Below the earliest waiting left point too: a right point at or above it
                // may still meet one, so it is stored.
                other_cti: self.frontier.input(0).min(self.waiting.earliest()),
            },
            &|r: &R, l: &L| combine(l, r),
            Sinks {
                direct,
                heads: &mut self.heads,
                held: &mut self.held,
                out,
            },
        );
    }

    /// The left input's CTI reached `t`.
    pub(super) fn left_cti(&mut self, t: Time, out: &mut Batch<O>) {
        if let Some(t) = self.frontier.advance(0, t) {
            self.release(t, out);
        }
    }

    /// The right input's CTI reached `t`: the waiting left points below it are final, and
    /// their results wait (sorted) for the output CTI; then the output CTI may advance.
    /// `scratch` is an empty batch of results, left empty.
    pub(super) fn right_cti(&mut self, t: Time, scratch: &mut Batch<O>, out: &mut Batch<O>) {
        if t > self.frontier.input(1) {
            self.probe_waiting(t, scratch);
            self.held.push_point_run(scratch.sync(), scratch.payloads());
            scratch.clear();
        }
        if let Some(t) = self.frontier.advance(1, t) {
            self.release(t, out);
        }
    }

    /// Joins the waiting left points below `t` (the right side has every event that can meet
    /// them), appending their results to `out` as they come (not sorted).
    pub(super) fn probe_waiting(&mut self, t: Time, out: &mut Batch<O>) {
        let (right, key, combine, heads) =
            (&self.right, &self.key_left, &self.combine, &mut self.heads);
        self.waiting.release_unsorted(t, |points| match points {
            super::super::Released::Points(times, payloads) => {
                probe_points(right, key, combine, (times, payloads), heads, out);
            }
            super::super::Released::One(s, _, payload) => {
                probe(right, right.head(&key(payload)), s, payload, combine, |r| {
                    out.push_point(s, r)
                });
            }
        });
    }

    /// The output CTI advanced to `t`: emit what it allows.
    fn release(&mut self, t: Time, out: &mut Batch<O>) {
        // 1. Pairs starting before `t`: each is found once, from the side that starts later
        //    (ties go to the left), when that event is no longer pending.
        self.pairs.clear();
        while let Some(&id) = self.left.pending.front() {
            let Some(l) = self.left.slots.get(id).and_then(Option::as_ref) else {
                self.left.pending.pop_front();
                continue;
            };
            if l.start >= t {
                break;
            }
            self.left.pending.pop_front();
            // Each key's entries are in start order: stop at the first that starts later.
            for (rid, r) in self
                .right
                .with_key(&l.key)
                .take_while(|(_, r)| r.start <= l.start)
            {
                if r.end.is_none_or(|e| e > l.start) {
                    self.pairs.push((id, rid));
                }
            }
        }
        while let Some(&rid) = self.right.pending.front() {
            let Some(r) = self.right.slots.get(rid).and_then(Option::as_ref) else {
                self.right.pending.pop_front();
                continue;
            };
            if r.start >= t {
                break;
            }
            self.right.pending.pop_front();
            for (id, l) in self
                .left
                .with_key(&r.key)
                .take_while(|(_, l)| l.start < r.start)
            {
                if l.end.is_none_or(|e| e > r.start) {
                    self.pairs.push((id, rid));
                }
            }
        }
        for k in 0..self.pairs.len() {
            let (id, rid) = self.pairs[k];
            let (Some(l), Some(r)) = (self.left.get(id), self.right.get(rid)) else {
                continue;
            };
            let Some(payload) = (self.combine)(&l.payload, &r.payload) else {
                continue;
            };
            let start = l.start.max(r.start);
            match self.final_end(l, r) {
                Some(end) => self.held.push(start, end, payload),
                None => {
                    self.held.push(start, Time::INF, payload.clone());
                    self.open.push(OpenResult {
                        left: id,
                        right: rid,
                        start,
                        payload,
                    });
                }
            }
        }
        // 2. End edges of earlier results whose end is now final and below `t`.
        let mut k = 0;
        while k < self.open.len() {
            let o = &self.open[k];
            let end = match (self.left.get(o.left), self.right.get(o.right)) {
                (Some(l), Some(r)) => self.final_end(l, r),
                _ => None,
            };
            match end {
                Some(e) if e < t => {
                    let o = self.open.swap_remove(k);
                    self.held.push(e, o.start, o.payload);
                }
                _ => k += 1,
            }
        }
        // 3. Emit, then forget what can no longer match.
        self.held.release(t, out);
        if t == Time::INF {
            // The end: what is still open can never match or change again.
            self.left = Side::new();
            self.right = Side::new();
            self.open.clear();
        } else {
            self.left.expire(t);
            self.right.expire(t);
        }
    }
}

/// Adds event `i` of a batch to a side.
#[inline]
fn absorb<P: Clone + PartialEq + serde::Serialize, K: Hash + Eq + Clone + 'static>(
    side: &mut Side<P, K>,
    key: &impl Fn(&P) -> K,
    batch: &Batch<P>,
    i: usize,
) {
    let payload = &batch.payloads()[i];
    match batch.kind(i) {
        EventKind::EndEdge { start, end } => side.close(&key(payload), start, payload, end),
        kind => insert(side, key, kind, payload.clone()),
    }
}

/// [`absorb`] of an event of this kind whose payload is moved in.
#[inline]
fn absorb_moved<P: PartialEq + serde::Serialize, K: Hash + Eq + Clone + 'static>(
    side: &mut Side<P, K>,
    key: &impl Fn(&P) -> K,
    kind: EventKind,
    payload: P,
) {
    match kind {
        EventKind::EndEdge { start, end } => side.close(&key(&payload), start, &payload, end),
        kind => insert(side, key, kind, payload),
    }
}

/// Stores an event of this kind (not an end edge) in a side.
#[inline]
fn insert<P: PartialEq + serde::Serialize, K: Hash + Eq + Clone + 'static>(
    side: &mut Side<P, K>,
    key: &impl Fn(&P) -> K,
    kind: EventKind,
    payload: P,
) {
    let (start, other) = kind.encode();
    side.insert(Entry {
        start,
        end: (other != Time::INF).then_some(other),
        key: key(&payload),
        payload,
        next: NONE,
        prev: NONE,
    });
}

/// A segment of an input batch.
struct Segment<'a, P> {
    input: &'a Batch<P>,
    range: std::ops::Range<usize>,
}

/// A segment's payloads: read in place, or taken from a drain of the batch's payload column
/// (a batch no one reads after the join) that stands at the segment's next payload.
enum Payloads<'a, 'd, P> {
    Read(&'a [P]),
    Taken(&'a mut std::vec::Drain<'d, P>),
}

impl<P> Payloads<'_, '_, P> {
    /// The payloads from position `k` of the segment on, when every payload before `k` was
    /// passed or taken.
    fn from(&self, k: usize) -> &[P] {
        match self {
            Payloads::Read(all) => &all[k..],
            Payloads::Taken(rest) => rest.as_slice(),
        }
    }

    /// Done with the next `n` payloads, which were read (taken ones are dropped).
    fn pass(&mut self, n: usize) {
        if let Payloads::Taken(rest) = self {
            rest.take(n).for_each(drop);
        }
    }
}

/// The side a segment arrives on, and the other one.
struct Sides<'a, P, Q, K, KF> {
    own: &'a mut Side<P, K>,
    own_key: &'a KF,
    /// Where this side's points above the other side's CTI wait, if not in `own`.
    waiting: Option<&'a mut ReleaseBuffer<P>>,
    other: &'a Side<Q, K>,
    /// The other side's CTI.
    other_cti: Time,
}

/// Where results go: straight to `out` while `direct` (nothing else held), else to `held`.
struct Sinks<'a, O> {
    direct: bool,
    heads: &'a mut Vec<usize>,
    held: &'a mut ReleaseBuffer<O>,
    out: &'a mut Batch<O>,
}

/// Takes one segment of one side. A point below the other side's CTI can gain no partner any
/// more (every event of the other side starting at or before it has arrived): it is joined at
/// once and never stored; its results go straight to the output while nothing else is held
/// and this side stores nothing, else to `held`. Anything else is stored for the release.
/// `combine` takes this side's payload first.
#[inline]
fn absorb_segment<P, Q, K, O, KF>(
    segment: Segment<'_, P>,
    mut payloads: Payloads<'_, '_, P>,
    sides: Sides<'_, P, Q, K, KF>,
    combine: &impl Fn(&P, &Q) -> Option<O>,
    sinks: Sinks<'_, O>,
) where
    P: Clone + PartialEq + serde::Serialize,
    Q: PartialEq,
    K: Hash + Eq + Clone + 'static,
    O: Clone,
    KF: Fn(&P) -> K,
{
    let Segment { input, range } = segment;
    let Sides {
        own,
        own_key,
        mut waiting,
        other,
        other_cti,
    } = sides;
    let Sinks {
        direct,
        heads,
        held,
        out,
    } = sinks;
    let sync = &input.sync()[range.clone()];
    let ends = &input.other()[range.clone()];
    let is_point = |k: usize| ends[k] == sync[k].next_tick();
    let mut first = 0;
    if direct && own.live == 0 {
        // The common case: points below the other side's CTI, joined at once and appended to
        // the output.
        first = (0..sync.len())
            .take_while(|&k| sync[k] < other_cti && is_point(k))
            .count();
        let points = (&sync[..first], &payloads.from(0)[..first]);
        probe_points(other, own_key, combine, points, heads, out);
        payloads.pass(first);
    }
    // The rest, after an event that is stored (or with results held already): results wait
    // for the CTI.
    let mut k = first;
    while k < sync.len() {
        let s = sync[k];
        if s < other_cti && is_point(k) {
            let payload = &payloads.from(k)[0];
            let head = other.head(&own_key(payload));
            probe(other, head, s, payload, combine, |r| held.push_point(s, r));
            payloads.pass(1);
        } else if let (Some(w), true) = (waiting.as_deref_mut(), is_point(k)) {
            // A run of points at or above the other side's CTI (the usual case) waits in one
            // go (in order, it extends the waiting run with one copy per column, or with the
            // payloads moved in).
            let run = k
                + (k..sync.len())
                    .take_while(|&j| sync[j] >= other_cti && is_point(j))
                    .count();
            match &mut payloads {
                Payloads::Read(all) => w.push_point_run(&sync[k..run], &all[k..run]),
                Payloads::Taken(rest) => w.append_points_from(&sync[k..run], *rest),
            }
            k = run;
            continue;
        } else {
            match &mut payloads {
                Payloads::Read(_) => absorb(own, own_key, input, range.start + k),
                Payloads::Taken(rest) => {
                    if let Some(p) = rest.next() {
                        absorb_moved(own, own_key, input.kind(range.start + k), p);
                    }
                }
            }
        }
        k += 1;
    }
}

impl<L: 'static, R: 'static, K, O: 'static, KL, KR, C> Sweep<L, R, K, O, KL, KR, C> {
    /// Visits what [`Sweep::state_size`] counts.
    pub(super) fn held(&self, f: &mut dyn FnMut(Held<'_>)) {
        let left = self
            .left
            .slots
            .iter()
            .flatten()
            .map(|e| (e.start, e.end, &e.payload as &dyn Any));
        let right = self
            .right
            .slots
            .iter()
            .flatten()
            .map(|e| (e.start, e.end, &e.payload as &dyn Any));
        for (start, end, payload) in left.chain(right) {
            f(Held {
                what: HeldWhat::Event,
                start,
                end: end.unwrap_or(Time::INF),
                payload,
            });
        }
        for o in &self.open {
            f(Held {
                what: HeldWhat::Result,
                start: o.start,
                end: Time::INF,
                payload: &o.payload,
            });
        }
        Held::results(&self.held, f);
        self.waiting
            .for_each(|s, o, p| f(Held::encoded(HeldWhat::Event, s, o, p)));
    }
}
